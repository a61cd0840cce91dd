"""What the benchmarks that run `runscribe run` as its own process share: an environment that
points it at the fakes (and carries none of this shell's Runscribe, Discord, GitHub, Anthropic or
W&B settings), and the process itself, ended when the benchmark is done."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from tests.fakes.discord import FakeDiscord
from tests.fakes.wandb import FakeWandb

PREFIXES = ("RUNSCRIBE_", "DISCORD_", "GITHUB_", "ANTHROPIC_", "WANDB_")
# The fake Discord's guild and the channels the benchmarks' runs files name.
GUILD = 900_000_000_000_000_001
CHAT = 910_000_000_000_000_002  # watched
ALERTS = 910_000_000_000_000_003


def bot_env(
    *,
    fake: FakeDiscord,
    guild: int,
    db: Path,
    config: Path,
    code: Path,
    wb: FakeWandb | None = None,
    folder: Path | None = None,
    **extra: str,
) -> dict[str, str]:
    """The process's environment: this one without our settings, then the fake Discord's, the
    store and runs file, the fake W&B's (its state under `folder`), `extra`, and `code` on the
    path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    env.update(
        DISCORD_TOKEN=fake.token,
        DISCORD_API_BASE=fake.api_base,
        DISCORD_GATEWAY_URL=fake.gateway_url,
        DISCORD_GUILD_ID=str(guild),
        RUNSCRIBE_DB=str(db),
        RUNSCRIBE_CONFIG=str(config),
        PYTHONPATH=str(code),
    )
    if wb is not None:
        state = (folder or db.parent) / "wandb"
        env.update(
            WANDB_BASE_URL=wb.base_url,
            WANDB_API_KEY=wb.api_key,
            WANDB_DIR=str(state),
            WANDB_CACHE_DIR=str(state / "cache"),
            WANDB_CONFIG_DIR=str(state / "config"),
            WANDB_SILENT="true",
        )
    env.update(extra)
    return env


@asynccontextmanager
async def bot_process(
    argv: Sequence[str], env: dict[str, str], cwd: Path, log: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """The process, its output appended to `log`; terminated on leaving (killed after 30 s)."""
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            *argv, env=env, cwd=cwd, stdout=out, stderr=out
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()
