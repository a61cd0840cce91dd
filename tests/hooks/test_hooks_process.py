"""Acceptance: the way the external check runs it: the real `python -m bot run`
process with its web server (RUNSCRIBE_WEB_PORT), the fake GitHub and the fake Discord, and the
poll interval far longer than the test. Signed GitHub deliveries and Alertmanager messages sent
as their senders send them: each tracked comment is stored within seconds (no poll in between),
forged and malformed requests store nothing, `runscribe poll --once` reading the same comment
adds no duplicate, and a firing Xid alert is posted as an incident naming the alert and its
instance, then resolved when Alertmanager says resolved."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.core.timeutil import utcnow
from bot.store import Database, Store
from tests.fakes.alertmanager import Alert, message, post
from tests.fakes.discord import FakeDiscord
from tests.fakes.github import FakeGitHub, signed_delivery
from tests.waiting import PATIENCE, port_in_log, served_port, until

pytestmark = pytest.mark.timeout(600)  # real processes on a possibly loaded machine

SECRET = "webhook-secret-for-the-test"
TOKEN = "alertmanager-bearer-for-the-test"
ALERTS = 1_300_000_000_000_000_001
REPO = "lab/hero"


async def eventually(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    """A positive signal the process gives on its own schedule (waited for, never timed)."""
    return await until(check, what)


async def comment_rows(db_file: Path, external_id: str) -> list[tuple[int, str]]:
    async with Database.open(db_file, migrate=False) as db:
        rows = await Store(db).db.fetchall(
            "SELECT id, content_hash FROM events WHERE source = 'github' AND external_id = ?",
            (external_id,),
        )
    return [(row[0], row[1]) for row in rows]


async def test_pushes_reach_the_running_bot_within_its_poll_interval(tmp_path: Path) -> None:
    db_file = tmp_path / "runscribe.db"
    runs_path = tmp_path / "runscribe.toml"
    runs_path.write_text(
        "[[runs]]\n"
        'slug = "hero"\nname = "Hero 70B"\n'
        f'github_repo = "{REPO}"\ngithub_labels = ["hero-run"]\n'
        f"alerts_channel = {ALERTS}\n"
    )
    async with (
        FakeDiscord(channels={ALERTS: "training-alerts"}) as fake,
        FakeGitHub() as gh,
        aiohttp.ClientSession() as http,
    ):
        repo = gh.repo(REPO)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
        for name in ("GITHUB_TOKEN", "WANDB_API_KEY", "ANTHROPIC_API_KEY"):
            env.pop(name, None)
        env.update(
            DISCORD_TOKEN=fake.token,
            DISCORD_API_BASE=fake.api_base,
            DISCORD_GATEWAY_URL=fake.gateway_url,
            RUNSCRIBE_DB=str(db_file),
            RUNSCRIBE_CONFIG=str(runs_path),
            GITHUB_API_URL=gh.url,
            RUNSCRIBE_POLL_INTERVAL="3600",
            RUNSCRIBE_WEB_PORT="0",
            GITHUB_WEBHOOK_SECRET=SECRET,
            RUNSCRIBE_HOOK_TOKEN=TOKEN,
        )
        log = tmp_path / "bot.log"
        with log.open("ab") as out:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot", "run", env=env, stdout=out, stderr=out,
                cwd=str(tmp_path),
            )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{await port_in_log(log, process)}"

            # The bot's one poll at start is done: from now on only pushes bring anything.
            async def first_cycle() -> dict[str, Any] | None:
                try:
                    async with http.get(base + "/healthz") as response:
                        body = dict(await response.json())
                except aiohttp.ClientError:
                    return None
                return body if body["last_cycle_at"] is not None else None

            health = await eventually(first_cycle, "the first poll cycle on /healthz")
            assert health["hooks"]["github"] == {"enabled": True, "last_delivery_at": None}
            await fake.wait_connected(within=PATIENCE)

            gh.now = utcnow() - timedelta(minutes=1)  # GitHub's clock: today, for the timeline
            number = repo.add_issue("Hero run: node failures", labels=["hero-run"])
            comment = repo.add_comment(number, "Eval numbers for the 54k checkpoint look fine.")
            payload = repo.delivery("issue_comment", "created", number=number, comment_id=comment)

            async def push(headers: dict[str, str], body: bytes) -> int:
                async with http.post(base + "/hooks/github", data=body, headers=headers) as r:
                    return r.status

            # Forged first: refused, nothing stored.
            headers, body = signed_delivery("issue_comment", payload, "not the secret")
            assert await push(headers, body) == 401
            headers, body = signed_delivery("issue_comment", payload, None)
            assert await push(headers, body) == 401
            # The real one.
            headers, body = signed_delivery("issue_comment", payload, SECRET)
            assert await push(headers, body) == 202
            external = f"comment:{comment}"
            [stored] = await eventually(
                lambda: comment_rows(db_file, external), "the comment stored"
            )
            # In the timeline, as the CLI prints it.
            cli = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot", "timeline", "--json", env=env, cwd=str(tmp_path),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await asyncio.wait_for(cli.communicate(), PATIENCE)
            assert cli.returncode == 0, err.decode()
            entries = json.loads(out)
            assert any("54k checkpoint" in (e["summary"] or "") for e in entries), entries
            # Redelivered: 200, nothing changes.
            assert await push(headers, body) == 200
            # The poller reads the same comment: still one event, unchanged.
            poll = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot", "poll", "--once", env=env, cwd=str(tmp_path),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            _, err = await asyncio.wait_for(poll.communicate(), PATIENCE)
            assert poll.returncode == 0, err.decode()
            assert await comment_rows(db_file, external) == [stored]

            assert fake.posted(ALERTS) == []  # a plain comment raises nothing
            # A GPU Xid alert fires on the run's node: posted within seconds, naming it.
            now = utcnow()
            xid = Alert(
                labels={"alertname": "GPUXidError", "run": "hero", "instance": "r12n4:9400",
                        "severity": "critical"},
                annotations={"summary": "Xid 79 on GPU 3",
                             "description": "GPU 3 on r12n4 has fallen off the bus."},
                starts_at=now - timedelta(minutes=10),
            )  # fmt: skip
            url = base + "/hooks/alertmanager"
            assert (await post(http, url, message([xid]), "wrong"))[0] == 401
            assert (await post(http, url, b"[1, 2", TOKEN))[0] == 400
            status, answer = await post(http, url, message([xid]), TOKEN)
            assert status == 200 and answer["stored"] == 1
            [head] = await fake.wait_for(lambda: fake.posted(ALERTS), within=PATIENCE)
            text = json.dumps(head)
            assert "GPUXidError" in text and "r12n4:9400" in text, text

            # Alertmanager says resolved. (Its end is set past the engine's 2-minute hold, so
            # the resolution is due at once; the hold itself is tests/hooks'.)
            xid.ends_at = now - timedelta(minutes=3)
            status, _ = await post(http, url, message([xid]), TOKEN)
            assert status == 200
            posts = await fake.wait_for(
                lambda: len(fake.posted(ALERTS)) >= 2 and fake.posted(ALERTS), within=PATIENCE
            )
            assert "resolved" in json.dumps(posts[-1]).lower()
            async with http.get(base + "/healthz") as response:
                hooks = (await response.json())["hooks"]
            assert hooks["github"]["last_delivery_at"] and hooks["alertmanager"]["last_delivery_at"]
        finally:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 15)
            except TimeoutError:
                process.kill()
                await process.wait()
        text = log.read_text()
        assert SECRET not in text and TOKEN not in text
        assert "Traceback" not in text, text[-3000:]


async def test_runscribe_web_takes_pushes_without_the_bot(tmp_path: Path) -> None:
    """`runscribe web` with the hooks enabled reads pushes into the store by itself (posting
    stays with `runscribe run`): a tracked comment is stored, an alert opens its incident."""
    db_file = tmp_path / "runscribe.db"
    runs_path = tmp_path / "runscribe.toml"
    runs_path.write_text(
        '[[runs]]\nslug = "hero"\nname = "Hero 70B"\n'
        f'github_repo = "{REPO}"\ngithub_labels = ["hero-run"]\nalerts_channel = {ALERTS}\n'
    )
    async with FakeGitHub() as gh, aiohttp.ClientSession() as http:
        gh.now = utcnow() - timedelta(minutes=1)
        repo = gh.repo(REPO)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
        env.pop("GITHUB_TOKEN", None)
        env.update(
            RUNSCRIBE_DB=str(db_file),
            RUNSCRIBE_CONFIG=str(runs_path),
            GITHUB_API_URL=gh.url,
            GITHUB_WEBHOOK_SECRET=SECRET,
            RUNSCRIBE_HOOK_TOKEN=TOKEN,
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "web", "--port", "0", env=env, cwd=str(tmp_path),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            assert process.stdout is not None
            lines: list[bytes] = []
            while not lines or served_port(lines[-1]) is None:
                lines.append(await asyncio.wait_for(process.stdout.readline(), PATIENCE))
                assert lines[-1], b"".join(lines)  # the process ended before serving
            base = f"http://127.0.0.1:{served_port(lines[-1])}"
            number = repo.add_issue("Hero run: storage", labels=["hero-run"])
            comment = repo.add_comment(number, "The 54k checkpoint is on the new bucket.")
            payload = repo.delivery("issue_comment", "created", number=number, comment_id=comment)
            headers, body = signed_delivery("issue_comment", payload, SECRET)
            async with http.post(base + "/hooks/github", data=body, headers=headers) as response:
                assert response.status == 202
            await eventually(
                lambda: comment_rows(db_file, f"comment:{comment}"), "the comment stored"
            )
            xid = Alert(
                labels={"alertname": "GPUXidError", "run": "hero", "instance": "r3n1:9400"},
                starts_at=utcnow() - timedelta(minutes=5),
            )
            assert (await post(http, base + "/hooks/alertmanager", message([xid]), TOKEN))[0] == 200

            async def incident() -> list[Any]:
                async with Database.open(db_file, migrate=False) as db:
                    return await Store(db).incidents.find("hero", open_only=True)

            [opened] = await eventually(incident, "the alert's incident")
            assert opened.kind == "GPUXidError"
        finally:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 15)
            except TimeoutError:
                process.kill()
                await process.wait()
