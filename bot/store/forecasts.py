"""Watched metric series (`[[runs.forecasts]]`) and the forecast tracker state of each.

Reads are bounded: new points after a cursor (by arrival id), the newest N points, or a
downsampled view for charts; none walks a whole history on the request path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import aiosqlite

from bot.analysis.forecast import SeriesPoint
from bot.core.timeutil import from_db, to_db
from bot.store.db import Database


def _point(row: aiosqlite.Row) -> SeriesPoint:
    at = from_db(row["at"])
    assert at is not None
    return SeriesPoint(wandb_run=row["wandb_run"], step=row["step"], at=at, value=row["value"])


class SeriesRepo:
    def __init__(self, db: Database):
        self.db = db

    async def add(self, run_slug: str, metric: str, points: Sequence[SeriesPoint]) -> int:
        """Insert values; rows already stored are ignored. Returns rows inserted."""
        if not points:
            return 0
        async with self.db.transaction() as conn:
            before = conn.total_changes
            await conn.executemany(
                "INSERT OR IGNORE INTO metric_series (run_slug, metric, wandb_run, step, at, value)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [(run_slug, metric, p.wandb_run, p.step, to_db(p.at), p.value) for p in points],
            )
            return conn.total_changes - before

    async def after(
        self, run_slug: str, metric: str, cursor: int, limit: int
    ) -> list[tuple[int, SeriesPoint]]:
        """Up to `limit` points stored after id `cursor`, in arrival order, with their ids.
        The index seek makes this O(new points of this metric), however many other metrics
        logged since (the planner would otherwise pick a rowid range and walk theirs too)."""
        rows = await self.db.fetchall(
            "SELECT id, wandb_run, step, at, value FROM metric_series "
            "INDEXED BY metric_series_order "
            "WHERE run_slug = ? AND metric = ? AND id > ? ORDER BY id LIMIT ?",
            (run_slug, metric, cursor, limit),
        )
        return [(row["id"], _point(row)) for row in rows]

    async def tail_cursor(self, run_slug: str, metric: str, keep: int) -> int | None:
        """The id just before the newest `keep` points (None when there are no more than that):
        where a tracker far behind jumps to instead of replaying all history."""
        row = await self.db.fetchone(
            "SELECT id FROM metric_series WHERE run_slug = ? AND metric = ? "
            "ORDER BY id DESC LIMIT 1 OFFSET ?",
            (run_slug, metric, keep),
        )
        return int(row[0]) if row else None

    async def latest(self, run_slug: str, metric: str, limit: int) -> list[SeriesPoint]:
        """The newest `limit` points, oldest first."""
        rows = await self.db.fetchall(
            "SELECT wandb_run, step, at, value FROM metric_series "
            "WHERE run_slug = ? AND metric = ? ORDER BY id DESC LIMIT ?",
            (run_slug, metric, limit),
        )
        return [_point(row) for row in reversed(rows)]


class ForecastStateRepo:
    def __init__(self, db: Database):
        self.db = db

    async def get(self, run_slug: str, metric: str) -> tuple[int, dict[str, Any] | None]:
        row = await self.db.fetchone(
            "SELECT cursor, state FROM forecast_state WHERE run_slug = ? AND metric = ?",
            (run_slug, metric),
        )
        if row is None:
            return 0, None
        return int(row["cursor"]), json.loads(row["state"])

    async def put(
        self, run_slug: str, metric: str, cursor: int, state: dict[str, Any], at: datetime
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO forecast_state (run_slug, metric, cursor, state, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_slug, metric) DO UPDATE SET "
                "cursor = excluded.cursor, state = excluded.state, "
                "updated_at = excluded.updated_at",
                (run_slug, metric, cursor, json.dumps(state, separators=(",", ":")), to_db(at)),
            )
