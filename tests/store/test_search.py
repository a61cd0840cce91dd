"""The full-text index on a real SQLite file: kept in step with every write by triggers,
indexes what was stored before its migration, and never raises on a hostile question."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bot.ask.query import any_of, parse_question
from bot.models import Event, RunInfo
from bot.store import Database, Store
from bot.store.db import load_migrations
from tests.ask.test_query import HOSTILE


def event(n: int, now: datetime, body: str, **kw: object) -> Event:
    fields: dict[str, object] = {
        "run_slug": "hero",
        "source": "github",
        "external_id": f"comment:{n}",
        "kind": "comment",
        "at": now - timedelta(hours=n),
        "author": "ada",
        "ref": "#8818",
        "url": f"https://github.com/acme/llm/issues/8818#issuecomment-{n}",
        "body": body,
        "thread": "github:acme/llm#8818",
    }
    fields.update(kw)
    return Event(**fields)  # type: ignore[arg-type]


async def found(store: Store, word: str) -> list[str]:
    events = await store.search.newest(f'"{word}"', "hero", limit=50)
    return [e.external_id for e in events]


@pytest.fixture
async def hero(store: Store) -> Store:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    return store


async def test_sqlite_has_fts5(hero: Store) -> None:
    row = await hero.db.fetchone("SELECT sqlite_compileoption_used('ENABLE_FTS5')")
    assert row is not None and row[0]


async def test_insert_edit_enrich_and_delete_keep_the_index_in_step(
    hero: Store, now: datetime
) -> None:
    store = hero
    first = event(1, now, "the gate norm keeps growing")
    await store.events.upsert_many([first])
    assert await found(store, "gate") == ["comment:1"]
    v1 = await store.search.version("hero")

    edited = event(1, now, "the router bias drifts", updated_at=now)
    await store.events.upsert_many([edited])
    assert await found(store, "gate") == []
    assert await found(store, "router") == ["comment:1"]
    v2 = await store.search.version("hero")
    assert v2 > v1

    stored = await store.events.get_by_external("hero", "github", "comment:1")
    assert stored is not None
    enrich = {"tag": "optimizer", "incident": False, "severity": None, "newsworthy": True}
    await store.events.set_enrichment(
        stored, summary="Loss plateau.", enriched_by="rules", **enrich
    )
    assert await found(store, "plateau") == ["comment:1"]
    v3 = await store.search.version("hero")
    assert v3 > v2
    # the same summary again changes nothing, not even the version
    await store.events.set_enrichment(stored, summary="Loss plateau.", enriched_by="llm", **enrich)
    assert await store.search.version("hero") == v3
    # a new summary replaces the old one in the index
    await store.events.set_enrichment(stored, summary="Expert skew.", enriched_by="llm", **enrich)
    assert await found(store, "plateau") == []
    assert await found(store, "skew") == ["comment:1"]

    assert await store.events.mark_deleted("hero", "github", "comment:1")
    assert await found(store, "router") == []
    assert await store.search.version("hero") > v3


async def test_hard_delete_and_run_cascade_leave_nothing_behind(hero: Store, now: datetime) -> None:
    store = hero
    await store.events.upsert_many([event(1, now, "nvlink fault"), event(2, now, "nvlink again")])
    await store.events.mark_deleted("hero", "github", "comment:2")  # not indexed any more
    async with store.transaction() as conn:
        await conn.execute("DELETE FROM runs WHERE slug = 'hero'")  # cascades to events
    rows = await store.db.fetchall(
        "SELECT rowid FROM events_fts WHERE events_fts MATCH '\"nvlink\"'"
    )
    assert rows == []
    async with store.transaction() as conn:  # raises if the index disagrees with the table
        await conn.execute(
            "INSERT INTO events_fts (events_fts, rank) VALUES ('integrity-check', 1)"
        )


async def test_migration_indexes_events_stored_before_it(tmp_path: Path, now: datetime) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    ask = next(m.version for m in load_migrations() if m.name.endswith("_ask_search.sql"))
    for migration in load_migrations():
        if migration.version < ask:
            conn.executescript(migration.sql)
    conn.execute(f"PRAGMA user_version = {ask - 1}")
    conn.execute("INSERT INTO runs VALUES ('hero', 'Hero', '{}', '2026-09-01T00:00:00Z')")
    for n, (body, deleted) in enumerate([("gate decay lowered", 0), ("gate removed", 1)], 1):
        conn.execute(
            "INSERT INTO events (run_slug, source, external_id, kind, at, body, deleted, "
            "content_hash, ingested_at) VALUES ('hero', 'github', ?, 'comment', "
            "'2026-09-01T00:00:00Z', ?, ?, 'h', '2026-09-01T00:00:00Z')",
            (f"c{n}", body, deleted),
        )
    conn.commit()
    conn.close()
    async with Database.open(path) as db:
        store = Store(db)
        assert await db.user_version() >= ask
        assert await found(store, "gate") == ["c1"]
        assert await store.search.version("hero") >= 2  # (0012 bumps it again: new ranking)
        # the deleted one was never indexed, so purging it must not touch the index
        async with store.transaction() as conn2:
            await conn2.execute("DELETE FROM events WHERE external_id = 'c2'")
            await conn2.execute(
                "INSERT INTO events_fts (events_fts, rank) VALUES ('integrity-check', 1)"
            )


@pytest.mark.parametrize("question", HOSTILE)
async def test_hostile_questions_run_without_error(
    hero: Store, now: datetime, question: str
) -> None:
    await hero.events.upsert_many([event(1, now, 'restart "gate" NEAR(decay) title:crash')])
    query = parse_question(question)
    expressions = [t.expression for t in query.terms]
    counts = await hero.search.match_counts(expressions, cap=100)
    assert len(counts) == len(expressions)
    await hero.search.ranked(any_of(query.terms), "hero", now, limit=5, per_thread=2)
    await hero.search.newest(any_of(query.terms), "hero", limit=5)


async def test_search_reads_the_index_not_the_table(hero: Store, now: datetime) -> None:
    """Guard the hot paths: no query may walk the events table."""
    await hero.events.upsert_many([event(n, now, f"loss spike {n}") for n in range(1, 30)])
    plans = []
    for sql, params in (
        (
            "SELECT e.* FROM events_fts JOIN events e ON e.id = events_fts.rowid "
            "WHERE events_fts MATCH ? AND e.run_slug = ? AND e.deleted = 0 "
            "ORDER BY events_fts.rowid DESC LIMIT ?",
            ('"loss"', "hero", 5),
        ),
    ):
        rows = await hero.db.fetchall("EXPLAIN QUERY PLAN " + sql, params)
        plans.append(" | ".join(str(r["detail"]) for r in rows))
    for plan in plans:
        assert "VIRTUAL TABLE INDEX" in plan, plan
        assert "SCAN e" not in plan.replace("SCAN events_fts", ""), plan
        assert "TEMP B-TREE" not in plan, plan  # FTS5 walks rowids backwards itself
