"""Migration 0015 (push ingestion) on a database written by the schema before it: stored events
survive untouched, the events table accepts the `alertmanager` source (and still refuses an
unknown one) on the connection that migrated it and on every other, and the integrity check
passes."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.models import AlertData, Event
from bot.store import Database, Store
from bot.store.db import load_migrations
from tests.store.migrating import schema_before, version_of

HOOKS = version_of("_hooks.sql")
AT = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


def build_old(path: Path) -> None:
    conn = schema_before(path, HOOKS)
    conn.execute(
        "INSERT INTO events (run_slug, source, external_id, kind, at, body, content_hash) "
        "VALUES ('hero', 'github', 'comment:1', 'comment', '2026-09-01T10:00:00.000000Z', "
        "'node lost', 'abc')"
    )
    conn.commit()
    with pytest.raises(sqlite3.IntegrityError):  # the old schema refuses the new source
        conn.execute(
            "INSERT INTO events (run_slug, source, external_id, kind, at, content_hash) "
            "VALUES ('hero', 'alertmanager', 'x', 'alert', '2026-09-01', 'h')"
        )
    conn.close()


def alert(external_id: str) -> Event:
    data = AlertData(fingerprint=external_id.split(":")[1], alertname="Xid")
    return Event(
        "hero",
        "alertmanager",
        external_id,
        "alert",
        AT,
        state="firing",
        title="Xid",
        extra=data.to_json(),
    )


async def test_an_old_database_takes_alerts_after_the_migration(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_old(path)
    async with Database.open(path, readers=1) as db:
        store = Store(db)
        assert await db.user_version() == load_migrations()[-1].version  # every later one too
        result = await store.events.upsert_many([alert("alert:a:1")])
        assert len(result.inserted) == 1
        old = await store.reader.events.get_by_external("hero", "github", "comment:1")
        assert old is not None and old.body == "node lost"
        with pytest.raises(sqlite3.IntegrityError):
            await store.events.upsert_many([Event("hero", "elsewhere", "x", "note", AT)])
        [(check,)] = await db.fetchall("PRAGMA integrity_check")
        assert check == "ok"
    # A new process (a fresh connection) reads the widened schema from the file.
    other = sqlite3.connect(path)
    other.execute(
        "INSERT INTO events (run_slug, source, external_id, kind, at, content_hash) "
        "VALUES ('hero', 'alertmanager', 'alert:b:2', 'alert', '2026-09-02', 'h')"
    )
    other.commit()
    other.close()
