"""Migration 0019: the events table no longer lists the sources (their registration does). On a
database written before it, stored events survive, a newly registered source's events are
accepted on the connection that migrated and on any other, an unregistered source is refused by
the store, a name that is no plain identifier still by the table itself, and the integrity check
passes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.models import SOURCE_SPECS, Event, SourceSpec
from bot.store import Database, Store
from bot.store.db import load_migrations
from bot.store.events import UnknownSource
from tests.store.migrating import schema_before, version_of

REGISTERED = version_of("_registered_sources.sql")
AT = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


def build_old(path: Path) -> None:
    conn = schema_before(path, REGISTERED)
    conn.execute(
        "INSERT INTO events (run_slug, source, external_id, kind, at, body, content_hash) "
        "VALUES ('hero', 'github', 'comment:1', 'comment', '2026-09-01T10:00:00.000000Z', "
        "'node lost', 'abc')"
    )
    conn.commit()
    with pytest.raises(sqlite3.IntegrityError):  # the old schema lists its sources
        conn.execute(
            "INSERT INTO events (run_slug, source, external_id, kind, at, content_hash) "
            "VALUES ('hero', 'pager', 'x', 'page', '2026-09-01', 'h')"
        )
    conn.close()


@pytest.fixture
def pager() -> Iterator[None]:
    SOURCE_SPECS.register(SourceSpec("pager", "Pager", people=False, polled=False))
    try:
        yield
    finally:
        SOURCE_SPECS.unregister("pager")


async def test_a_registered_source_needs_no_migration_of_its_own(
    tmp_path: Path, pager: None
) -> None:
    path = tmp_path / "old.db"
    build_old(path)
    async with Database.open(path, readers=1) as db:
        store = Store(db)
        assert await db.user_version() == load_migrations()[-1].version
        result = await store.events.upsert_many([Event("hero", "pager", "page:1", "page", AT)])
        assert len(result.inserted) == 1
        old = await store.reader.events.get_by_external("hero", "github", "comment:1")
        assert old is not None and old.body == "node lost"
        with pytest.raises(UnknownSource, match="elsewhere"):
            await store.events.upsert_many([Event("hero", "elsewhere", "x", "note", AT)])
        [(check,)] = await db.fetchall("PRAGMA integrity_check")
        assert check == "ok"
    other = sqlite3.connect(path)  # a new process reads the loosened schema from the file
    other.execute(
        "INSERT INTO events (run_slug, source, external_id, kind, at, content_hash) "
        "VALUES ('hero', 'pager', 'page:2', 'page', '2026-09-02', 'h')"
    )
    for bad in ("Pager", "pa ger", "pager'); --", ""):
        with pytest.raises(sqlite3.IntegrityError):
            other.execute(
                "INSERT INTO events (run_slug, source, external_id, kind, at, content_hash) "
                "VALUES ('hero', ?, 'page:3', 'page', '2026-09-02', 'h')",
                (bad,),
            )
    other.commit()
    other.close()
