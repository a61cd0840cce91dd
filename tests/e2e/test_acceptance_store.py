"""Acceptance: the store defends itself, through real processes and the
real bot on real SQLite files:

- a damaged index: `runscribe poll --once` says so in one line and exits 2; the running bot's
  daily check posts an operator alert in the alerts channel and `/healthz` names it;
- a failing outbox round (its table gone from under the bot) is a `/healthz` problem, never a
  silent loop;
- a database another process holds locked: `poll --once` waits `busy_timeout`, then one line
  naming the lock, exit 2, no traceback;
- a full disk says "disk full".
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from bot.core.timeutil import utcnow
from bot.store import Database, Store
from bot.store.integrity import describe_sqlite_error, quick_check
from bot.web.server import serve
from tests.bot.conftest import Seed, StartBot
from tests.fakes.discord import FakeDiscord

pytestmark = pytest.mark.timeout(600)


def damage_an_index(path: Path) -> str:
    """Overwrite the root page of one of the events table's indexes with an empty leaf page, as
    a torn write would leave it. Reads of the table still work; `quick_check` sees it."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        name, root = conn.execute(
            "SELECT name, rootpage FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' "
            "AND sql IS NOT NULL ORDER BY name LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    with path.open("r+b") as f:
        f.seek(page_size * (root - 1))
        page = bytearray(f.read(page_size))
        page[:8] = bytes([0x0A, 0, 0, 0, 0, 0, 0, 0])  # a leaf index page with no cells
        f.seek(page_size * (root - 1))
        f.write(page)
    return str(name)


def write_runs_file(folder: Path) -> Path:
    path = folder / "runscribe.toml"
    path.write_text('[[runs]]\nslug = "hero"\nname = "Hero"\ngithub_repo = "lab/model"\n')
    return path


async def poll_once(db: Path, cwd: Path, **extra: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
    env.update(
        extra,
        RUNSCRIBE_DB=str(db),
        RUNSCRIBE_CONFIG=str(write_runs_file(cwd)),
        GITHUB_API_URL="http://127.0.0.1:9",
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "poll", "--once", cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode is not None
    return process.returncode, out.decode() + err.decode()


def one_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("runscribe: ")]
    assert "Traceback" not in output, output
    assert len(errors) == 1, output
    return errors[0]


async def test_a_damaged_index_stops_poll_at_start_in_one_line(
    db_file: Path, tmp_path: Path
) -> None:
    damage_an_index(db_file)
    code, output = await poll_once(db_file, tmp_path)
    assert code == 2, output
    line = one_line(output)
    assert f"the database {db_file} is damaged" in line and ".recover" in line, line


@pytest.fixture
def damaged(db_file: Path) -> str:
    return damage_an_index(db_file)


async def test_the_running_bot_finds_damage_and_says_so_in_channel_and_healthz(
    damaged: str, start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts = int(seed.config["alerts_channel"])
    bot = await start_bot()
    found = await bot.check_store(force=True)
    assert found, "quick_check saw nothing"
    await fake.wait_for(
        lambda: any("database is damaged" in str(m["content"]) for m in fake.posted(alerts)),
        within=120,
    )
    async with (
        serve(seeded_store, "127.0.0.1", 0, poll_interval=3600) as (_site, port),
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/healthz") as response,
    ):
        body = await response.json()
    assert response.status == 503, body
    assert any(p.startswith("store: quick_check found damage") for p in body["problems"]), body


async def test_a_failing_outbox_round_is_a_healthz_problem(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store
) -> None:
    bot = await start_bot(run_loops=False)
    async with seeded_store.db.transaction() as conn:  # the table is unreadable now
        await conn.execute("ALTER TABLE outbox RENAME TO outbox_gone")
    try:
        with pytest.raises(sqlite3.OperationalError):
            await bot.drain_outbox()
        async with (
            serve(seeded_store, "127.0.0.1", 0, poll_interval=3600) as (_site, port),
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/healthz") as response,
        ):
            body = await response.json()
        assert response.status == 503, body
        assert body["delivery"]["outbox_loop"]["ok"] is False, body["delivery"]
        assert "no such table: outbox" in body["delivery"]["outbox_loop"]["error"]
        assert any("the outbox cannot be read" in p for p in body["problems"]), body["problems"]
    finally:
        async with seeded_store.db.transaction() as conn:
            await conn.execute("ALTER TABLE outbox_gone RENAME TO outbox")
    await bot.drain_outbox()
    health = await seeded_store.health.get("delivery", "outbox:loop")
    assert health is not None and not health.failing


@pytest.fixture
def write_lock(db_file: Path) -> Iterator[threading.Event]:
    """Another process's writer: holds the database's write lock until released."""
    release, held = threading.Event(), threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(db_file, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        release.wait(120)
        conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    held.wait(10)
    yield release
    release.set()
    thread.join(10)


async def test_poll_on_a_locked_database_is_one_line_not_a_traceback(
    db_file: Path, tmp_path: Path, write_lock: threading.Event
) -> None:
    code, output = await poll_once(db_file, tmp_path, RUNSCRIBE_DB_BUSY_TIMEOUT="0.5")
    assert code == 2, output
    line = one_line(output)
    assert "is locked by another process (waited 0.5 s)" in line, line


async def test_a_full_disk_says_disk_full(tmp_path: Path) -> None:
    """SQLite's own "full" condition (`max_page_count` reached is SQLITE_FULL, what a full disk
    gives a write), on a real database."""
    async with Database.open(tmp_path / "full.db") as db:
        store = Store(db)
        pages = (await db.fetchone("PRAGMA page_count"))[0]  # type: ignore[index]
        await db.conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(sqlite3.Error) as info:
            for n in range(2000):
                await store.health.record_failure("w", f"scope-{n}", utcnow(), "x" * 400, None)
        said = describe_sqlite_error(info.value, db.path)
        assert said is not None and said.startswith("disk full: cannot write the database"), said
        assert await quick_check(db) == []
