"""`runscribe page` (in-process) and `runscribe web` (a real process, stopped by a signal), on
a database that `poll --once` filled from the fake GitHub (a tracked thread with hostile
comments) and the fake W&B (a crashed run continued by a fork). The written page has the right
step and the timeline's links, nothing hostile is active, nothing is loaded from elsewhere,
Chromium renders the file, and `web` answers `/`, `/runs/hero` and `/healthz`."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from bot.cli import main
from bot.services.timeline import build_timeline
from bot.store import Database, Store
from tests.cli.test_poll_e2e import cli, environment
from tests.fakes.github import FakeGitHub
from tests.fakes.wandb import FakeWandb
from tests.waiting import PATIENCE
from tests.web.browser import FLAGS, chromium
from tests.web.test_page import assert_inert

HOSTILE = (
    "<script>window.__pwned = 1</script> the loader hangs again",
    '<img src="x" onerror="window.__pwned = 2"> trace attached',
    "[full log](javascript:window.__pwned = 3) node s12 lost",
)

HOSTILE_LOGIN = '"><svg onload="window.__pwned = 4">'


@pytest.fixture(scope="module")
def wandb_server() -> Iterator[FakeWandb]:
    fake = FakeWandb().start()
    yield fake
    fake.stop()


async def test_page_and_web_from_a_polled_database(tmp_path: Path, wandb_server: FakeWandb) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    wandb_server.reset()
    first = wandb_server.add_run("ent/proj/hero-1", created_at=now - timedelta(hours=6))
    wandb_server.log(first.path, 300, start=now - timedelta(hours=6), every=timedelta(seconds=48))
    wandb_server.set_state(first.path, "crashed", heartbeat_at=now - timedelta(hours=2))
    fork = wandb_server.add_run("ent/proj/hero-2", created_at=now - timedelta(hours=1))
    wandb_server.append_rows(
        fork.path,
        [
            {
                "_step": 250 + i,
                "_timestamp": (now - timedelta(hours=1) + timedelta(seconds=60 * i)).timestamp(),
                "train/loss": 2.5 - i * 0.001,
                "throughput/total_tokens": 4_000_000.0 * (251 + i),
            }
            for i in range(50)
        ],
    )
    wandb_server.set_state(fork.path, "running", heartbeat_at=now)

    async with FakeGitHub() as github:
        repo = github.repo("lab/model")
        number = repo.add_issue(
            "Hero run: loader hangs", "The data loader hangs after a restore.", labels=["hero-run"]
        )
        ids = [
            repo.add_comment(number, text, user=login)
            for text, login in zip(HOSTILE, (HOSTILE_LOGIN, "eve", "trudy"), strict=True)
        ]
        env = environment(tmp_path, github, wandb_server)
        code, out, err = await cli(tmp_path, env, "poll", "--once")
        assert code == 0, out + err

    code, out, err = await cli(tmp_path, env, "page", "--out", "site", "--days", "365")
    assert code == 0, err
    site = tmp_path / "site"
    assert out.split() == ["site/index.html", "site/hero.html"]
    html = (site / "hero.html").read_text()
    doc = assert_inert(html)
    text = " ".join(" ".join(doc.text).split())
    assert "step 299 of 1,000" in text and "1.2B of 4B tokens" in text
    # Every timeline entry with an http(s) URL is linked: the issue and its comments.
    async with Database.open(tmp_path / "hero.db") as db:
        entries = await build_timeline(Store(db), "hero", datetime.now(UTC), days=365)
    urls = {e.url for e in entries if e.source == "github"}
    assert f"https://github.com/lab/model/issues/{number}" in urls
    assert {u.rsplit("-", 1)[-1] for u in urls if "#issuecomment-" in u} <= set(map(str, ids))
    assert urls and urls <= set(doc.attrs("href"))
    assert HOSTILE_LOGIN in text  # the login is shown, as text
    # poll recorded its cycle (seconds ago: "just now" under 10 s, a loaded machine may be slower)
    assert re.search(r"updated (just now|\d+ s ago)", text) and "next in" in text
    assert '<a href="index.html">All runs</a>' in html
    assert 'href="hero.html"' in (site / "index.html").read_text()

    # Chromium renders the written file; the hostile markup is text in its DOM.
    done = await asyncio.to_thread(
        subprocess.run,
        [
            chromium(),
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            (site / "hero.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    dom = done.stdout
    assert "step 299 of 1,000" in dom
    assert "&lt;svg onload=" in dom and "window.__pwned" not in dom.split("<script")[1]
    assert "<img" not in dom and dom.count("<script") == 1

    # `web` serves the same store.
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "web",
        "--port",
        "0",
        cwd=tmp_path,
        env={**env, "PYTHONFAULTHANDLER": "1"},  # a hang prints its stacks (`stopped`)
        # started as a shell's background job is: SIGINT ignored, which `web` must not inherit
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        port = None
        while port is None:
            line = (await asyncio.wait_for(process.stdout.readline(), PATIENCE)).decode()
            assert line, "web exited before serving"
            match = re.search(r"serving the status page on http://127\.0\.0\.1:(\d+)/", line)
            port = int(match.group(1)) if match else None
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/") as response:
                assert response.status == 200 and 'href="/runs/hero"' in await response.text()
            async with http.get(base + "/runs/hero") as response:
                assert response.status == 200 and "step 299 of 1,000" in await response.text()
            async with http.get(base + "/healthz") as response:
                assert response.status == 200, await response.text()
                health = json.loads(await response.text())
            assert health["runs"]["hero"]["github"]["ok"] is True
            assert health["runs"]["hero"]["wandb"]["ok"] is True
            assert health["last_cycle_at"] is not None
    finally:
        process.send_signal(signal.SIGINT)
        await stopped(process)
    assert process.returncode == 0  # stopped cleanly, not killed


async def test_web_stops_cleanly_on_sigterm(tmp_path: Path, wandb_server: FakeWandb) -> None:
    """`docker stop` sends SIGTERM: `web` closes its server and store and exits 0."""
    async with FakeGitHub() as github:
        env = environment(tmp_path, github, wandb_server)
        await _empty_database(tmp_path / "hero.db")  # the database `web` reads
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "web", "--port", "0", cwd=tmp_path,
            env={**env, "PYTHONFAULTHANDLER": "1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        assert process.stdout is not None
        line = b""
        while b"serving the status page" not in line:
            line = await asyncio.wait_for(process.stdout.readline(), PATIENCE)
            assert line, "web exited before serving"
        process.send_signal(signal.SIGTERM)
        await stopped(process)
    assert process.returncode == 0


async def stopped(process: asyncio.subprocess.Process) -> None:
    """Wait for a process asked to stop to exit; one that hangs is made to print every thread's
    stack (faulthandler, on SIGABRT) and the test fails with what it printed, so a hang says
    where it is."""
    try:
        await asyncio.wait_for(process.wait(), PATIENCE)
        return
    except TimeoutError:
        process.send_signal(signal.SIGABRT)
    assert process.stdout is not None
    try:
        said = await asyncio.wait_for(process.stdout.read(), 30)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
    pytest.fail(
        f"web did not exit within {PATIENCE:.0f} s of the signal; it printed:\n"
        + said.decode()[-6000:]
    )


def test_page_and_web_bad_input_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUNSCRIBE_DB", str(tmp_path / "missing.db"))
    for argv, message in (
        (["page", "--out", "site"], "runscribe: no database at"),
        (["page", "--out", "site", "--days", "0"], "runscribe: days must be between 1 and"),
        (["web", "--port", "70000"], "runscribe: --port must be between 0 and 65535"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(message) and len(err.splitlines()) == 1, err

    asyncio.run(_empty_database(tmp_path / "there.db"))
    monkeypatch.setenv("RUNSCRIBE_DB", str(tmp_path / "there.db"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["web", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"runscribe: cannot listen on 127.0.0.1:{port}: ")
        and len(err.splitlines()) == 1
    ), err


async def _empty_database(path: Path) -> None:
    async with Database.open(path):
        pass
