"""Full-text search over events (the `events_fts` index of migration 0005, kept in step by
triggers). Expressions come from `bot.ask.query`, which quotes every term; nothing here takes
raw user text.

Costs at a million events: FTS5 reads a term's whole posting list to count it (tens of ns a
document) and `bm25()` costs a few µs per matching row, so callers bound the work: they count
each term first with `match_counts` (which stops at `cap`) and rank only expressions whose
matches they have counted."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.models import Event
from bot.store.db import Database
from bot.store.events import event_from_row
from bot.timeutil import to_db

# bm25 column weights, in the index's column order: title, body, summary, ref, author.
WEIGHTS = (3.0, 1.0, 2.0, 2.0, 1.0)


@dataclass(slots=True, frozen=True)
class Ranked:
    event: Event
    score: float  # lower is better (bm25 is negative), recency applied


class SearchRepo:
    def __init__(self, db: Database):
        self.db = db

    async def fts5_available(self) -> bool:
        row = await self.db.fetchone("SELECT sqlite_compileoption_used('ENABLE_FTS5')")
        return bool(row and row[0])

    async def match_counts(self, expressions: Sequence[str], cap: int) -> list[int]:
        """How many live events (any run) match each expression, counting no further than
        `cap` + 1: the cost is bounded by the cap, not by how common a word is."""
        if not expressions:
            return []
        parts = " UNION ALL ".join(
            f"SELECT {i}, (SELECT COUNT(*) FROM (SELECT 1 FROM events_fts "
            "WHERE events_fts MATCH ? LIMIT ?))"
            for i in range(len(expressions))
        )
        params: list[object] = []
        for expression in expressions:
            params.extend([expression, cap + 1])
        rows = await self.db.fetchall(parts, params)
        counts = [0] * len(expressions)
        for row in rows:
            counts[row[0]] = int(row[1])
        return counts

    async def ranked(
        self,
        expression: str,
        run_slug: str,
        now: datetime,
        *,
        limit: int,
        per_thread: int,
        pool: int = 200,
        recency_weight: float = 0.3,
        recency_days: float = 30.0,
        scoped: bool = False,
    ) -> tuple[list[Ranked], bool]:
        """The best `limit` events of the run for `expression`: BM25 (column weights in
        `WEIGHTS`) scaled by up to `1 + recency_weight` for recent events (half of that at
        `recency_days` old), at most `per_thread` per thread.

        The `pool` best matches are ranked over the whole index first and only they are joined
        to `events`; returns (hits, saturated) where saturated means the pool was full, so a run
        sharing the index with busier runs may have lost hits to them (`scoped=True` filters by
        run inside the pool instead, at about twice the cost per match)."""
        weights = ", ".join(str(w) for w in WEIGHTS)
        if scoped:
            pool_sql = (
                f"SELECT events_fts.rowid AS id, bm25(events_fts, {weights}) AS score "
                "FROM events_fts JOIN events p ON p.id = events_fts.rowid "
                "WHERE events_fts MATCH :q AND p.run_slug = :run ORDER BY score LIMIT :pool"
            )
        else:
            pool_sql = (
                f"SELECT rowid AS id, bm25(events_fts, {weights}) AS score FROM events_fts "
                "WHERE events_fts MATCH :q ORDER BY score LIMIT :pool"
            )
        sql = (
            f"WITH pool AS MATERIALIZED ({pool_sql}), "
            "hits AS (SELECT e.*, pool.score * (1.0 + :w / (1.0 + "
            "MAX(0.0, julianday(:now) - julianday(e.at)) / :days)) AS final, "
            "(SELECT COUNT(*) FROM pool) AS pooled "
            "FROM pool JOIN events e ON e.id = pool.id "
            "WHERE e.run_slug = :run AND e.deleted = 0), "
            "capped AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY COALESCE(thread, 'id:' || id) "
            "ORDER BY final, id DESC) AS nth FROM hits) "
            "SELECT * FROM capped WHERE nth <= :per_thread ORDER BY final, id DESC LIMIT :limit"
        )
        rows = await self.db.fetchall(
            sql,
            {
                "q": expression,
                "run": run_slug,
                "pool": pool,
                "w": recency_weight,
                "now": to_db(now),
                "days": recency_days,
                "per_thread": per_thread,
                "limit": limit,
            },
        )
        saturated = bool(rows) and int(rows[0]["pooled"]) >= pool
        if not rows:
            count = await self.db.fetchone(
                "SELECT COUNT(*) FROM (SELECT 1 FROM events_fts WHERE events_fts MATCH ? LIMIT ?)",
                (expression, pool),
            )
            saturated = count is not None and int(count[0]) >= pool
        return [Ranked(event_from_row(row), float(row["final"])) for row in rows], saturated

    async def newest(self, expression: str, run_slug: str, *, limit: int) -> list[Event]:
        """The most recently stored events of the run matching `expression`, newest first. FTS5
        walks its posting lists backwards and stops at `limit`: cheap however common the words,
        which is what it is for (questions made only of common words)."""
        rows = await self.db.fetchall(
            "SELECT e.* FROM events_fts JOIN events e ON e.id = events_fts.rowid "
            "WHERE events_fts MATCH ? AND e.run_slug = ? AND e.deleted = 0 "
            "ORDER BY events_fts.rowid DESC LIMIT ?",
            (expression, run_slug, limit),
        )
        return [event_from_row(row) for row in rows]

    async def events(self, ids: Sequence[int]) -> list[Event]:
        """Live events by id, in the order given (missing or deleted ones left out)."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = await self.db.fetchall(
            f"SELECT * FROM events WHERE id IN ({marks}) AND deleted = 0", list(ids)
        )
        by_id = {row["id"]: event_from_row(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def version(self, run_slug: str) -> int:
        """Changes whenever the run's searchable text does (insert, edit, summary, delete)."""
        row = await self.db.fetchone(
            "SELECT version FROM search_versions WHERE run_slug = ?", (run_slug,)
        )
        return int(row[0]) if row else 0

    async def index_bytes(self) -> int | None:
        """Bytes used by the index's shadow tables (None when SQLite lacks the dbstat table)."""
        try:
            row = await self.db.fetchone(
                "SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'events_fts%'"
            )
        except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
            return None
        return int(row[0]) if row and row[0] is not None else 0


__all__ = ["WEIGHTS", "Ranked", "SearchRepo"]
