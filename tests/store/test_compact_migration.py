"""Migration 0012 (a smaller store) on a database written by the schema before it: the data
survives, stored hashes still match what the code computes (nothing is re-enriched), /ask finds
the same hits as before, and the rebuilt index follows every later insert, edit and delete."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiosqlite

from bot.ask.query import parse_question
from bot.ask.retrieval import retrieve
from bot.core.timeutil import to_db
from bot.models import Event, MetricPoint
from bot.store import Database, Store
from bot.store.db import load_migrations
from bot.store.events import _EVENT_COLUMNS
from tests.ask import corpus

NOW = datetime(2026, 10, 7, tzinfo=UTC)
POINTS_FROM = datetime(2026, 9, 20, tzinfo=UTC)
COMPACT = next(m.version for m in load_migrations() if m.name.endswith("_compact_store.sql"))
#: The corpus entries the old database holds: the hero run's and the first projects after it,
#: enough for the index and /ask's hits to mean something, at a size that does not grow with
#: the corpus.
STORED = 1500


def stored_entries() -> list[dict[str, Any]]:
    return corpus.entries()[:STORED]


def old_hash(event: Event) -> str:
    """The hash as the code before 0012 stored it: 32 hex digits, the new hash their first 16."""
    return event.content_hash + "5e1f0a9b3c7d2e48"


def build_old(path: Path) -> list[Event]:
    """The corpus stored by the schema before 0012: every event, half of them enriched (their
    summaries indexed), one deleted."""
    conn = sqlite3.connect(path)
    for migration in load_migrations():
        if migration.version < COMPACT:
            conn.executescript(migration.sql)
    conn.execute(f"PRAGMA user_version = {COMPACT - 1}")
    conn.execute("INSERT INTO runs VALUES ('hero', 'Hero-8B', '{}', '2026-09-01T00:00:00Z')")
    events = [corpus.to_event(e) for e in stored_entries()]
    for n, e in enumerate(events):
        conn.execute(
            f"INSERT INTO events ({_EVENT_COLUMNS}, ingested_at) VALUES ({', '.join('?' * 17)})",
            (
                *(e.run_slug, e.source, e.external_id, e.kind, to_db(e.at), None, e.author),
                *(e.ref, e.url, e.state, e.title, e.body, e.thread, "{}", int(n == 7)),
                old_hash(e),
                "2026-10-01T00:00:00.000000Z",
            ),
        )
        if n % 2:
            conn.execute(
                "UPDATE events SET summary = ?, tag = 'other', enriched_by = 'rules', "
                "enriched_hash = content_hash WHERE external_id = ?",
                (f"Summary of {e.external_id}: {(e.title or e.body)[:60]}", e.external_id),
            )
    conn.executemany(
        "INSERT INTO metric_points VALUES ('hero', ?, ?, ?, ?, ?)",
        [(run, step, to_db(POINTS_FROM + timedelta(minutes=step)), step * 1e6, 3.0 - step / 1e3)
         for run, steps in (("e/p/a", range(0, 300)), ("e/p/b", range(250, 400)))
         for step in steps],
    )  # fmt: skip
    conn.commit()
    conn.close()
    return events


async def top_hits(store: Store) -> list[list[str]]:
    out = []
    for q in corpus.questions():
        hits = await retrieve(store, "hero", parse_question(q.question), NOW, limit=8)
        out.append([h.event.external_id for h in hits])
    return out


async def test_an_old_database_migrates_with_its_hits_and_hashes(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    events = build_old(path)
    conn = await aiosqlite.connect(path, isolation_level=None)  # the old schema, not migrated
    conn.row_factory = aiosqlite.Row
    before = await top_hits(Store(Database(conn, str(path))))
    await conn.close()
    assert sum(1 for hits in before if hits) >= 40

    async with Database.open(path) as db:
        store = Store(db)
        assert await db.user_version() >= COMPACT
        columns = [r[1] for r in await db.fetchall("PRAGMA table_info(events)")]
        assert "ingested_at" not in columns and "content_hash" in columns
        (options,) = await db.fetchone("SELECT sql FROM sqlite_schema WHERE name = 'events_fts'")
        assert "detail = none" in options

        # the same hits, in the same order
        assert await top_hits(store) == before

        # hashes cut to what the code computes now: polling the same text changes nothing
        result = await store.events.upsert_many([corpus.to_event(e) for e in stored_entries()])
        assert result.changed == [] and result.unchanged == len(events)
        pending = await store.events.pending_enrichment("hero", limit=len(events))
        assert len(pending) == len(events) - len(events) // 2
        stored = await store.events.get_by_external("hero", events[1].source, events[1].external_id)
        assert stored is not None and stored.summary and stored.summary.startswith("Summary of")
        (kept,) = await db.fetchone("SELECT COUNT(*) FROM events WHERE deleted = 1")
        assert kept == 1

        # every metric point kept, read back in time order, counted by the triggers as before
        points = await store.metrics.points("hero")
        assert len(points) == 450 and points == sorted(points, key=lambda p: (p.at, p.wandb_run))
        latest = await store.metrics.latest("hero")
        assert latest is not None and (latest.wandb_run, latest.step) == ("e/p/b", 399)
        window = await store.metrics.window("hero", POINTS_FROM + timedelta(minutes=280))
        assert [(p.wandb_run, p.step) for p in window[:2]] == [("e/p/a", 279), ("e/p/b", 279)]
        assert len(window) == 2 + 20 + 120
        version = await store.metrics.version("hero")
        again = MetricPoint("e/p/a", 5, POINTS_FROM + timedelta(minutes=5), 5e6, 2.995)
        later = MetricPoint("e/p/a", 5, POINTS_FROM + timedelta(days=2), 5e6, 2.9)  # a restore
        assert await store.metrics.add_points("hero", [again, later]) == 1
        assert await store.metrics.version("hero") != version
        (counted,) = await db.fetchone("SELECT points FROM metric_spans WHERE run_slug = 'hero'")
        assert counted == 451
        assert await store.metrics.last_step("hero", "e/p/a") == 5


async def test_the_rebuilt_index_follows_inserts_edits_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    events = build_old(path)
    async with Database.open(path) as db:
        store = Store(db)

        async def found(expression: str) -> list[str]:
            hits = await store.search.newest(expression, "hero", limit=500)
            return sorted(e.external_id for e in hits)

        assert await found('"zorblax"') == []
        new = Event(
            run_slug="hero",
            source="discord",
            external_id="msg:new",
            kind="message",
            at=NOW,
            author="ada",
            body="zorblax kernel fell over on hero-12d8b6f0",
            thread="discord:#hero-run",
        )
        await store.events.upsert_many([new])
        assert await found('"zorblax"') == ["msg:new"]
        assert await found('("hero" AND "12d8b6f0")') == ["msg:new"]

        new.body = "quuxly restored"
        await store.events.upsert_many([new])
        assert await found('"zorblax"') == []
        assert await found('"quuxly"') == ["msg:new"]

        stored = await store.events.get_by_external("hero", "discord", "msg:new")
        assert stored is not None
        await store.events.set_enrichment(
            stored,
            summary="Frobnicated the shards.",
            tag="infra",
            incident=False,
            severity=None,
            newsworthy=True,
            enriched_by="rules",
        )
        assert await found('"frobnic"') == ["msg:new"]  # porter: frobnicated → frobnic

        assert await store.events.mark_deleted("hero", "discord", "msg:new")
        assert await found('"quuxly"') == []

        # an old event edited after the migration: its old words leave the index
        first = corpus.to_event(stored_entries()[0])
        word = next(w for w in (first.body or "").split() if len(w) > 6 and w.isalpha()).lower()
        assert first.external_id in await found(f'"{word}"')
        first.body = "rewritten entirely"
        await store.events.upsert_many([first])
        assert first.external_id not in await found(f'"{word}"')
        async with store.transaction() as conn:  # a hard delete leaves nothing behind
            await conn.execute("DELETE FROM events WHERE external_id = ?", (first.external_id,))
        assert first.external_id not in await found('"rewritten"')
        assert len(events) > 100
