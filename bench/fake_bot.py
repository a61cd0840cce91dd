"""What the benchmarks that run the bot against the fake Discord share: the fake on its own
thread and event loop (an independent server, as Discord is, so its callbacks are not the
bot's), and the bot's settings pointed at it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from bot.app import apply_endpoints
from bot.config.settings import Settings
from tests.fakes.discord import FakeDiscord

T = TypeVar("T")


class FakeServer:
    """The fake Discord (built with `options`) on its own thread and event loop."""

    def __init__(self, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.options = options
        self.fake: FakeDiscord

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def __aenter__(self) -> FakeDiscord:
        self.thread.start()

        async def start() -> FakeDiscord:
            return await FakeDiscord(**self.options).start()

        self.fake = await self.call(start())
        return self.fake

    async def __aexit__(self, *exc: object) -> None:
        await self.call(self.fake.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def fake_discord_settings(fake: FakeDiscord, db: Path, config: Path | None = None) -> Settings:
    """Settings for a bot on `fake` and the database `db` (no env file, no other service), with
    discord.py's endpoints pointed at the fake."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        discord_token=fake.token,
        discord_api_base=fake.api_base,
        discord_gateway_url=fake.gateway_url,
        discord_guild_id=fake.guild_id,
        runscribe_db=db,
        **({"runscribe_config": config} if config is not None else {}),
    )
    apply_endpoints(settings)
    return settings
