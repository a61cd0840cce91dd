"""The live status message survives `kill -9`: a real `python -m bot run` process
against the fake Discord. Killed after Discord created the message but before the bot heard
back, the next process finds it by its marker (no second message) and pins it; killed again, the
process after that edits the same message."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.core.timeutil import to_db, utcnow
from bot.models import LiveMessage
from bot.store import Database, Store
from tests.bot.conftest import Seed
from tests.bot.test_e2e import _spawn, _toml
from tests.fakes.discord import MANAGE_MESSAGES, FakeDiscord
from tests.waiting import until


def live_posts(fake: FakeDiscord, channel: int) -> list[dict[str, Any]]:
    return [m for m in fake.posted(channel) if "Live status" in str(m["content"])]


async def stored(db_file: Path, slug: str) -> LiveMessage | None:
    async with Database.open(db_file) as db:
        return await Store(db).live.get(slug)


async def kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGKILL)
        await process.wait()


async def test_kill_9_never_makes_a_second_live_message_and_the_same_one_is_edited(
    fake: FakeDiscord, db_file: Path, seed: Seed, tmp_path: Path
) -> None:
    channel = int(seed.config["alerts_channel"])
    config = {k: v for k, v in seed.config.items() if k not in ("wandb_runs", "wandb_run_pattern")}
    config["status_channel"] = channel
    runs_path = tmp_path / "runscribe.toml"
    runs_path.write_text(_toml(config))
    env = {
        **os.environ,
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "RUNSCRIBE_DB": str(db_file),
        "RUNSCRIBE_CONFIG": str(runs_path),
        "GITHUB_API_URL": "http://127.0.0.1:9",  # nothing listens: offline
        "RUNSCRIBE_POLL_INTERVAL": "3600",
    }
    for name in ("GITHUB_TOKEN", "WANDB_API_KEY", "ANTHROPIC_API_KEY", "DISCORD_GUILD_ID"):
        env.pop(name, None)
    fake.bot_permissions |= MANAGE_MESSAGES
    fake.honor_nonce = False  # the history marker alone must find it
    # Discord creates the message, then the answer never comes: the process dies waiting.
    fake.inject("POST", rf"^/channels/{channel}/messages$", 0, hang=60, record_first=True)
    log = tmp_path / "bot.log"
    slug = str(seed.config["slug"])

    process = await _spawn(env, log)
    try:
        await fake.wait_for(lambda: live_posts(fake, channel), within=60)
    finally:
        await kill(process)
    [message] = live_posts(fake, channel)
    row = await stored(db_file, slug)
    assert row is None or row.message_id is None  # posted, never recorded

    process = await _spawn(env, log)
    try:

        async def pinned() -> Any:
            row = await stored(db_file, slug)
            return row if row is not None and row.message_id is not None and row.pinned else None

        row = await until(pinned, "the live message recorded and pinned", every=0.1)
        assert row is not None and row.message_id == int(message["id"]), log.read_text()[-3000:]
        assert live_posts(fake, channel) == [message] and fake.pinned(channel) == [message]
    finally:
        await kill(process)

    # Down for 20 minutes (past status_refresh_minutes): the next process edits that message.
    async with Database.open(db_file) as db, db.transaction() as conn:
        await conn.execute(
            "UPDATE live_messages SET rendered_at = ? WHERE run_slug = ?",
            (to_db(utcnow() - timedelta(minutes=20)), slug),
        )
    process = await _spawn(env, log)
    try:
        await fake.wait_for(lambda: message.get("_edits"), within=60)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 15)
        except TimeoutError:
            await kill(process)
    assert live_posts(fake, channel) == [message]
    row = await stored(db_file, slug)
    assert row is not None and row.message_id == int(message["id"])
    patches = [r for r in fake.requests if r.method == "PATCH" and r.path.endswith(message["id"])]
    assert patches and all(r.json["allowed_mentions"] == {"parse": []} for r in patches)
