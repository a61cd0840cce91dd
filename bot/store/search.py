"""Full-text search over events: the `events_fts` index of the `NNNN_ask_search.sql`
migration, kept in step by triggers. Expressions come from `bot.ask.query`, which quotes
every term; nothing here takes raw user text.

Costs at a million events: FTS5 reads a term's whole posting list to count it (tens of ns a
document) and `bm25()` costs a few µs per matching row, so callers bound the work: they count
each term first with `match_counts` (which stops at `cap`) and rank only expressions whose
matches they have counted."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.core.timeutil import to_db
from bot.models import Event
from bot.store.db import Database
from bot.store.events import event_from_row

# bm25 column weights, in the index's column order: title, body, summary, ref, author.
WEIGHTS = (3.0, 1.0, 2.0, 2.0, 1.0)


_ON_DAY = (
    "EXISTS (SELECT 1 FROM json_each(:ranges) d WHERE {e}.at >= json_extract(d.value, '$[0]') "
    "AND {e}.at < json_extract(d.value, '$[1]'))"
)
_NAMED = "lower({e}.ref) IN (SELECT value FROM json_each(:refs)) OR " + _ON_DAY


@dataclass(slots=True, frozen=True)
class Boosts:
    """Multipliers on BM25 (which is negative: a factor above 1 ranks higher)."""

    recency: float = 0.3  # up to +30 % for an event from today, half that at `recency_days`
    recency_days: float = 30.0
    opener: float = 1.2  # an issue or pull request description: the thread's own summary
    refs: tuple[str, ...] = ()  # references the question names (#845)
    ref: float = 1.5
    named_opener: float = 2.5  # the description of a thread the question names ("#845")
    days: tuple[tuple[datetime, datetime], ...] = ()  # UTC ranges of days the question names
    day: float = 2.0


@dataclass(slots=True, frozen=True)
class Ranked:
    event: Event
    score: float  # bm25 × boost: lower is better (bm25 is negative)
    bm25: float = 0.0
    boost: float = 1.0


def _ranked_sql(*, scoped: bool, named_only: bool) -> str:
    """The query of `SearchRepo.ranked`: the BM25 pool, its boosts, the per-thread cap."""
    weights = ", ".join(str(w) for w in WEIGHTS)
    if scoped or named_only:
        named = f" AND ({_NAMED.format(e='p')})" if named_only else ""
        pool_sql = (
            f"SELECT events_fts.rowid AS id, bm25(events_fts, {weights}) AS score "
            "FROM events_fts JOIN events p ON p.id = events_fts.rowid "
            f"WHERE events_fts MATCH :q AND p.run_slug = :run{named} "
            "ORDER BY score LIMIT :pool"
        )
    else:
        pool_sql = (
            f"SELECT rowid AS id, bm25(events_fts, {weights}) AS score FROM events_fts "
            "WHERE events_fts MATCH :q ORDER BY score LIMIT :pool"
        )
    return (
        f"WITH pool AS MATERIALIZED ({pool_sql}), "
        "hits AS (SELECT e.*, pool.score AS bm25, 1.0"
        " * (1.0 + :w / (1.0 + MAX(0.0, julianday(:now) - julianday(e.at)) / :days))"
        " * (CASE WHEN e.kind IN ('issue', 'pull') THEN :opener ELSE 1.0 END)"
        " * (CASE WHEN lower(e.ref) IN (SELECT value FROM json_each(:refs))"
        " THEN (CASE WHEN e.kind IN ('issue', 'pull') THEN :named_opener ELSE :refw END)"
        " ELSE 1.0 END)"
        f" * (CASE WHEN {_ON_DAY.format(e='e')} THEN :dayw ELSE 1.0 END) AS boost, "
        "(SELECT COUNT(*) FROM pool) AS pooled "
        "FROM pool JOIN events e ON e.id = pool.id "
        "WHERE e.run_slug = :run AND e.deleted = 0), "
        "scored AS (SELECT *, bm25 * boost AS final FROM hits), "
        "capped AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY COALESCE(thread, 'id:' || id) "
        "ORDER BY final, id DESC) AS nth FROM scored) "
        "SELECT * FROM capped WHERE nth <= :per_thread ORDER BY final, id DESC LIMIT :limit"
    )


def _ranked_params(
    boosts: Boosts,
    expression: str,
    run_slug: str,
    now: datetime,
    pool: int,
    per_thread: int,
    limit: int,
) -> dict[str, object]:
    return {
        "q": expression,
        "run": run_slug,
        "pool": pool,
        "now": to_db(now),
        "w": boosts.recency,
        "days": boosts.recency_days,
        "opener": boosts.opener,
        "refs": json.dumps(list(boosts.refs)),
        "refw": boosts.ref,
        "named_opener": boosts.named_opener,
        "ranges": json.dumps([[to_db(a), to_db(b)] for a, b in boosts.days]),
        "dayw": boosts.day,
        "per_thread": per_thread,
        "limit": limit,
    }


class SearchRepo:
    def __init__(self, db: Database):
        self.db = db

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
        boosts: Boosts | None = None,
        pool: int = 200,
        scoped: bool = False,
        named_only: bool = False,
    ) -> tuple[list[Ranked], bool]:
        """The best `limit` events of the run for `expression`, at most `per_thread` per thread.

        Score: BM25 (column weights `WEIGHTS`) times `boosts` (recency, thread openers, the
        references and days the question names). The `pool` best matches by BM25 alone are
        taken from the whole index first and only they are joined to `events`. Returns (hits,
        saturated): saturated means the pool was full, so busier runs sharing the index may have
        crowded this one out (`scoped=True` filters by run inside the pool instead, at about
        twice the cost per match). `named_only` ranks only events with a named reference or on
        a named day (scoped), so those are found even when they are not in the global pool."""
        boosts = boosts or Boosts()
        rows = await self.db.fetchall(
            _ranked_sql(scoped=scoped, named_only=named_only),
            _ranked_params(boosts, expression, run_slug, now, pool, per_thread, limit),
        )
        saturated = bool(rows) and int(rows[0]["pooled"]) >= pool
        if not rows and not named_only:
            count = await self.db.fetchone(
                "SELECT COUNT(*) FROM (SELECT 1 FROM events_fts WHERE events_fts MATCH ? LIMIT ?)",
                (expression, pool),
            )
            saturated = count is not None and int(count[0]) >= pool
        ranked = [
            Ranked(
                event_from_row(row), float(row["final"]), float(row["bm25"]), float(row["boost"])
            )
            for row in rows
        ]
        return ranked, saturated

    async def size(self) -> int:
        """About how many events are stored (the highest id: O(1), unlike COUNT(*))."""
        row = await self.db.fetchone("SELECT MAX(id) FROM events")
        return int(row[0] or 0) if row else 0

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


__all__ = ["WEIGHTS", "Boosts", "Ranked", "SearchRepo"]
