"""`runscribe repair` on real SQLite files damaged the way a torn write leaves them: a damaged
index is rebuilt with nothing lost; a damaged page of a table costs that page's rows and no
more; in both cases the damaged file is kept, the check passes after, and the store works."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.models import Event, RunInfo
from bot.store import Database, Store, StoreError
from bot.store.integrity import check_integrity, quick_check
from bot.store.repair import repair
from tests.waiting import PATIENCE

T0 = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
EVENTS = 600


async def seed(path: Path) -> None:
    async with Database.open(path) as db:
        store = Store(db)
        await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
        await store.events.upsert_many(
            [
                Event(
                    run_slug="hero",
                    source="github",
                    external_id=f"comment:{n}",
                    kind="comment",
                    at=T0 + timedelta(minutes=n),
                    author="amara",
                    body=f"checkpoint {n} written to the bucket " + "x" * 200,
                )
                for n in range(EVENTS)
            ]
        )


def pages(path: Path) -> tuple[int, dict[str, int]]:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        roots = dict(conn.execute("SELECT name, rootpage FROM sqlite_master WHERE rootpage > 0"))
    finally:
        conn.close()
    return size, roots


def overwrite(path: Path, page: int, size: int, data: bytes) -> None:
    with path.open("r+b") as f:
        f.seek(size * (page - 1))
        f.write(data.ljust(size, b"\xa5")[:size])


def damage_an_index(path: Path) -> None:
    size, roots = pages(path)
    # the root of an index of events becomes an empty leaf, as a torn write leaves it
    overwrite(
        path, roots["events_run_at"], size, bytes([0x0A, 0, 0, 0, 0, 0, 0, 0]).ljust(size, b"\0")
    )


def damage_a_table_page(path: Path) -> None:
    """Garbage over one leaf page in the middle of the events table."""
    size, roots = pages(path)
    with path.open("rb") as f:
        f.seek(size * (roots["events"] - 1))
        root = f.read(size)
    assert root[0] == 0x05, "the events table fits one page: seed more"
    cells = int.from_bytes(root[3:5], "big")
    pointer = int.from_bytes(root[12 + 2 * (cells // 2) : 14 + 2 * (cells // 2)], "big")
    leaf = int.from_bytes(root[pointer : pointer + 4], "big")
    overwrite(path, leaf, size, b"\x0d\xff\xff\xff" + os.urandom(64))


async def test_a_damaged_index_is_rebuilt_and_nothing_is_lost(db_path: Path) -> None:
    await seed(db_path)
    damage_an_index(db_path)
    async with Database.open(db_path) as db:
        with pytest.raises(StoreError, match="run `runscribe repair`"):
            await check_integrity(db)
    done = await repair(db_path)
    assert done.how == "reindexed"
    assert done.backup is not None and done.backup.exists()
    async with Database.open(db_path) as db:
        assert await quick_check(db) == []
        store = Store(db)
        assert len(await store.events.of_kind("hero", "github", "comment", limit=10_000)) == EVENTS


async def test_a_damaged_table_page_costs_its_rows_only(db_path: Path) -> None:
    await seed(db_path)
    damage_a_table_page(db_path)
    async with Database.open(db_path) as db:
        assert await quick_check(db) != []
    done = await repair(db_path)
    assert done.how == "salvaged", done
    assert done.lost.get("events"), done
    kept = done.kept["events"]
    assert EVENTS / 2 < kept < EVENTS, done
    assert done.backup is not None and done.backup.exists()
    async with Database.open(db_path) as db:
        assert await quick_check(db) == []
        store = Store(db)
        events = await store.events.of_kind("hero", "github", "comment", limit=10_000)
        assert len(events) == kept
        hits = await db.fetchall("SELECT rowid FROM events_fts WHERE events_fts MATCH 'checkpoint'")
        assert len(hits) == kept  # the search index was rebuilt from the rows kept
        await store.runs.upsert(RunInfo(slug="second", name="Second"))  # it takes writes


async def test_repair_from_the_command_line(db_path: Path, tmp_path: Path) -> None:
    await seed(db_path)
    damage_an_index(db_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
    env["RUNSCRIBE_DB"] = str(db_path)
    for expected in ("its indexes were rebuilt", "nothing to repair"):
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "repair", cwd=tmp_path, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
        assert process.returncode == 0, out + err
        assert expected in out.decode(), out + err
