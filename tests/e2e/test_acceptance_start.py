"""Acceptance: start without Discord: `runscribe run` as a real process
while Discord cannot be reached (nothing listens where DISCORD_API_BASE points). It says so in
one line per attempt (no traceback), keeps polling GitHub and queueing meanwhile, and once the
fake Discord comes up it connects and delivers what was queued."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import pytest

from bot.models import OutboxItem
from bot.outbox.payload import make_payload
from bot.store import Database, Store
from tests.fakes.discord import FakeDiscord
from tests.fakes.github import FakeGitHub
from tests.waiting import PATIENCE, until

pytestmark = pytest.mark.timeout(600)
ALERTS = 1_300_000_000_000_000_001


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_run_without_discord_retries_polls_and_queues_then_delivers(
    tmp_path: Path,
) -> None:
    fake = FakeDiscord(channels={ALERTS: "training-alerts"})
    fake.port = free_port()  # nothing listens there yet: connection refused
    async with FakeGitHub() as github:
        github.repo("lab/model").add_issue("Hero run log", "step 1,000 reached", user="ada")
        (tmp_path / "runscribe.toml").write_text(
            '[[runs]]\nslug = "hero"\nname = "Hero"\ngithub_repo = "lab/model"\n'
            f"alerts_channel = {ALERTS}\n"
        )
        db_path = tmp_path / "runscribe.db"
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("RUNSCRIBE_", "DISCORD_", "GITHUB_", "ANTHROPIC_", "WANDB_"))
        }
        env.update(
            RUNSCRIBE_DB=str(db_path),
            RUNSCRIBE_CONFIG=str(tmp_path / "runscribe.toml"),
            DISCORD_TOKEN=fake.token,
            DISCORD_API_BASE=fake.api_base,
            DISCORD_GATEWAY_URL=fake.gateway_url,
            GITHUB_API_URL=github.url,
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "run", cwd=tmp_path, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        lines: list[str] = []

        async def read() -> None:
            assert process.stdout is not None
            async for raw in process.stdout:
                lines.append(raw.decode(errors="replace").rstrip())

        reader = asyncio.create_task(read())
        try:

            async def attempts(n: int) -> bool:
                return sum("cannot reach Discord (attempt" in line for line in lines) >= n

            await until(lambda: attempts(2), "no retry lines:\n" + "\n".join(lines))
            assert process.returncode is None  # still running, not exit 1 after 0.7 s
            async with Database.open(db_path, migrate=False) as db:
                store = Store(db)

                async def polled() -> bool:
                    health = await store.health.get("github", "hero")
                    return health is not None and health.last_success_at is not None

                await until(polled, "GitHub was not polled while Discord was away")
                item = OutboxItem(
                    channel_id=ALERTS, kind="alert", payload=make_payload("queued while away"),
                    dedup_key="start:away",
                )  # fmt: skip
                assert await store.outbox.enqueue(item) is not None

            await fake.start()  # Discord is back
            await fake.wait_for(
                lambda: any("queued while away" in str(m["content"]) for m in fake.posted(ALERTS)),
                within=PATIENCE,
            )
            assert fake.identifies, "the bot never opened the gateway"
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), PATIENCE)
            await reader
            await fake.close()
        output = "\n".join(lines)
        assert "Traceback" not in output, output
        retry_lines = [line for line in lines if "cannot reach Discord (attempt" in line]
        assert all("trying again in" in line for line in retry_lines), retry_lines
        assert process.returncode == 0, output
