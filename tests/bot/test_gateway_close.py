"""Gateway close 4004 (authentication failed: the token was reset) ends `runscribe run` with one
clear line and exit 2, at IDENTIFY and after READY, instead of an uncaught ConnectionClosed."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.app import RunscribeBot, apply_endpoints, run_bot
from bot.config.settings import RunsFile
from bot.core.errors import UserFacingError
from bot.process.runtime import Runtime
from bot.store import Store
from tests.bot.conftest import Seed, fake_settings
from tests.fakes.discord import FakeDiscord
from tests.waiting import PATIENCE


async def test_4004_at_identify_is_one_user_facing_error(
    fake: FakeDiscord, seeded_store: Store, db_file: Path, runs: RunsFile, endpoints: Any
) -> None:
    fake.reject_identify = True  # REST accepts the token, the gateway does not
    runtime = Runtime(settings=fake_settings(fake, db_file), runs=runs, store=seeded_store)
    with pytest.raises(UserFacingError, match=r"authentication failed \(4004\)"):
        await asyncio.wait_for(run_bot(runtime), PATIENCE)
    assert len(fake.identifies) == 1  # no retry loop against a dead token


async def test_4004_after_ready_ends_the_process_with_one_line(
    fake: FakeDiscord, seed: Seed, db_file: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runscribe.toml"
    runs.write_text(
        f'[[runs]]\nslug = "aurora"\nname = "Aurora"\ngithub_repo = "aurora-lab/aurora"\n'
        f"watch_channels = {seed.config['watch_channels']}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
    for name in ("GITHUB_TOKEN", "WANDB_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    env.update(
        DISCORD_TOKEN=fake.token,
        DISCORD_API_BASE=fake.api_base,
        DISCORD_GATEWAY_URL=fake.gateway_url,
        RUNSCRIBE_DB=str(db_file),
        RUNSCRIBE_CONFIG=str(runs),
        GITHUB_API_URL="http://127.0.0.1:9",  # nothing listens: the poll fails fast, offline
        RUNSCRIBE_POLL_INTERVAL="3600",
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "run",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await fake.wait_connected(within=PATIENCE)  # READY sent
        await fake.drop_websocket(code=4004)  # the token was reset while running
        stdout, stderr = await asyncio.wait_for(process.communicate(), PATIENCE)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    err, out = stderr.decode(), stdout.decode()
    assert process.returncode == 2, err + out[-2000:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "authentication failed (4004)" in lines[0], err
    assert "DISCORD_TOKEN" in lines[0] and fake.token not in err + out
    assert "Traceback" not in err + out


async def test_stopped_before_discord_says_ready_the_bot_ends_without_a_traceback(
    fake: FakeDiscord, seeded_store: Store, db_file: Path, runs: RunsFile, endpoints: Any
) -> None:
    """Stopped within discord.py's wait for the guilds after READY, nothing is left to die on
    the closed client (a task exception no one retrieves is logged with a traceback)."""
    loop = asyncio.get_running_loop()
    unretrieved: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    runtime = Runtime(settings=fake_settings(fake, db_file), runs=runs, store=seeded_store)
    apply_endpoints(runtime.settings)
    bot = RunscribeBot(runtime, guild_ready_timeout=0.3, warm_charts=False)
    task = asyncio.create_task(bot.start(fake.token))
    try:
        await fake.wait_connected(within=PATIENCE)
        await fake.wait_for(lambda: bot._connection._ready_task is not None)
        await bot.close()
        await asyncio.wait_for(task, PATIENCE)
        await asyncio.sleep(0.6)  # past the wait: the ready task would have woken by now
        gc.collect()  # an unretrieved task exception is reported when the task is freed
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert not unretrieved, unretrieved
