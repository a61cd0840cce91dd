"""W&B history points, reduced to step, tokens and loss."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import aiosqlite

from bot.analysis.goodput import Pace, pace_of
from bot.core.timeutil import from_db, to_db
from bot.models import (
    MetricPoint,
    Restart,
)
from bot.store.db import Database

#: How long a stretch of steps measures the pace around a restart (`pace_around`).
PACE_SPAN = timedelta(hours=1)
_TICK = timedelta(microseconds=1)  # `points` reads [since, until): take the last step in

#: `MetricsRepo.version` of a run with no points.
NO_POINTS = "0:"


class MetricsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def add_points(self, run_slug: str, points: Sequence[MetricPoint]) -> int:
        """Insert history rows; rows already stored are ignored. Returns rows inserted."""
        if not points:
            return 0
        async with self.db.transaction() as conn:
            # rowcount, not total_changes: the insert triggers (series counter, chart buckets)
            # make changes of their own.
            cursor = await conn.executemany(
                "INSERT OR IGNORE INTO metric_points (run_slug, wandb_run, step, at, tokens, loss) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(run_slug, p.wandb_run, p.step, to_db(p.at), p.tokens, p.loss) for p in points],
            )
            return max(cursor.rowcount, 0)

    @staticmethod
    def _point(row: aiosqlite.Row) -> MetricPoint:
        return MetricPoint(
            wandb_run=row[0],
            step=row[1],
            at=from_db(row[2]),  # type: ignore[arg-type]
            tokens=row[3],
            loss=row[4],
        )

    async def points(
        self, run_slug: str, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[MetricPoint]:
        """Oldest first. A time range reads only its own points: one range of the primary key
        (run, W&B run, time) per W&B run of the chain."""
        runs = await self.wandb_runs(run_slug)
        if not runs:
            return []
        marks = ",".join("?" * len(runs))
        sql = (
            "SELECT wandb_run, step, at, tokens, loss FROM metric_points "
            f"WHERE run_slug = ? AND wandb_run IN ({marks})"
        )
        params: list[Any] = [run_slug, *runs]
        if since is not None:
            sql += " AND at >= ?"
            params.append(to_db(since))
        if until is not None:
            sql += " AND at < ?"
            params.append(to_db(until))
        sql += " ORDER BY at, wandb_run, step"
        return [self._point(row) for row in await self.db.fetchall(sql, params)]

    async def pace_around(self, run_slug: str, restart: Restart) -> Pace:
        """The run's pace when a restart happened: over the hour up to the last step logged
        before the interruption, else the hour from the first step logged after it."""
        if restart.stopped_at is not None:
            stop = restart.stopped_at
            pace = pace_of(await self.points(run_slug, since=stop - PACE_SPAN, until=stop + _TICK))
            if pace.seconds_per_step is not None:
                return pace
        if restart.resumed_at is not None:
            start = restart.resumed_at
            return pace_of(await self.points(run_slug, since=start, until=start + PACE_SPAN))
        return Pace()

    async def wandb_runs(self, run_slug: str) -> list[str]:
        """The W&B runs with points for this run. DISTINCT would walk every point; this
        skip-scan does one primary-key seek per W&B run."""
        rows = await self.db.fetchall(
            "WITH RECURSIVE r(w) AS (SELECT MIN(wandb_run) FROM metric_points "
            "WHERE run_slug = ?1 UNION ALL SELECT (SELECT MIN(wandb_run) FROM metric_points "
            "WHERE run_slug = ?1 AND wandb_run > r.w) FROM r WHERE r.w IS NOT NULL) "
            "SELECT w FROM r WHERE w IS NOT NULL",
            (run_slug,),
        )
        return [row[0] for row in rows]

    async def window(self, run_slug: str, since: datetime) -> list[MetricPoint]:
        """Points since `since` at a bounded resolution, oldest first, plus the last point of
        each W&B run before it, so a trailing rate can be measured from the window's start.

        Read from the per-minute rollup (migration 0016): the first and the last point of each
        minute of each W&B run. A day is at most 2,880 points per W&B run however often the run
        logs; a run logging at most twice a minute gets exactly its raw points. What the
        readers measure survives the thinning: the newest point, the last step before a gap
        and the first after it (a restart's resume step and downtime), the rate between any
        two minutes. Points inside a minute, between its first and last, are left out."""
        before = await self.last_before(run_slug, since)
        start = to_db(since)
        assert start is not None
        rows = await self.db.fetchall(
            "SELECT wandb_run, first_step, first_at, first_tokens, first_loss, "
            "step, at, tokens, loss, points FROM metric_minutes "
            "WHERE run_slug = ? AND minute >= ?",
            (run_slug, int(since.timestamp()) // 60),
        )
        points: list[MetricPoint] = []
        for run, f_step, f_at, f_tokens, f_loss, step, at, tokens, loss, count in rows:
            if f_at >= start:  # the minute holding `since` may begin before it
                points.append(MetricPoint(run, f_step, from_db(f_at), f_tokens, f_loss))  # type: ignore[arg-type]
            if count > 1 and at >= start and (at, step) != (f_at, f_step):
                points.append(MetricPoint(run, step, from_db(at), tokens, loss))  # type: ignore[arg-type]
        points.sort(key=lambda p: (p.at, p.wandb_run, p.step))
        return before + points

    async def last_before(self, run_slug: str, at: datetime) -> list[MetricPoint]:
        """Each W&B run's last point before `at` (one indexed lookup per run): where a trailing
        rate over a window starting at `at` measures from."""
        before = []
        for wandb_run in await self.wandb_runs(run_slug):
            row = await self.db.fetchone(
                "SELECT wandb_run, step, at, tokens, loss FROM metric_points WHERE run_slug = ? "
                "AND wandb_run = ? AND at < ? ORDER BY at DESC LIMIT 1",
                (run_slug, wandb_run, to_db(at)),
            )
            if row is not None:
                before.append(self._point(row))
        return before

    async def raw_since(self, run_slug: str, since: datetime, until: datetime) -> list[MetricPoint]:
        """Every point logged from `since` through `until`, oldest first: what a detector
        judges point by point in the newest minutes (K consecutive points of a loss spike,
        logged within one minute at a step a second, which the per-minute rollup would thin to
        two). Its cost is that tail's points, read by the primary key's range of each W&B run."""
        raw: list[MetricPoint] = []
        for wandb_run in await self.wandb_runs(run_slug):
            raw.extend(
                self._point(row)
                for row in await self.db.fetchall(
                    "SELECT wandb_run, step, at, tokens, loss FROM metric_points "
                    "WHERE run_slug = ? AND wandb_run = ? AND at >= ? AND at <= ?",
                    (run_slug, wandb_run, to_db(since), to_db(until)),
                )
            )
        raw.sort(key=lambda p: (p.at, p.wandb_run, p.step))
        return raw

    async def latest(self, run_slug: str) -> MetricPoint | None:
        """The newest point of any W&B run of the chain (the newest of each run's last)."""
        rows = []
        for wandb_run in await self.wandb_runs(run_slug):
            row = await self.db.fetchone(
                "SELECT wandb_run, step, at, tokens, loss FROM metric_points WHERE run_slug = ? "
                "AND wandb_run = ? ORDER BY at DESC, step DESC LIMIT 1",
                (run_slug, wandb_run),
            )
            if row is not None:
                rows.append(row)
        if not rows:
            return None
        return self._point(max(rows, key=lambda r: (r[2], r[0], r[1])))

    async def last_step(self, run_slug: str, wandb_run: str) -> int | None:
        row = await self.db.fetchone(
            "SELECT step FROM metric_points WHERE run_slug = ? AND wandb_run = ? "
            "ORDER BY at DESC LIMIT 1",
            (run_slug, wandb_run),
        )
        return int(row[0]) if row else None

    # Chart bucket widths maintained at ingest (migration 0005), finest first.
    BUCKET_WIDTHS = (300, 3600, 43200)

    async def downsampled(self, run_slug: str, buckets: int = 400) -> list[MetricPoint]:
        """At most about `buckets` points per W&B run for charts: the last point of each time
        bucket. Read from the coarsest pre-aggregated resolution finer than a display bucket (at
        most ~12 rows per display bucket), so the cost does not grow with the history; a span
        too short for the finest resolution is downsampled from its raw points (a bounded
        range of the time index)."""
        series = await self.db.fetchone(
            "SELECT points, first_at, last_at FROM metric_spans WHERE run_slug = ?", (run_slug,)
        )
        if not series or not series[0]:
            return []
        if series[0] <= buckets:
            return await self.points(run_slug)
        first, last = from_db(series[1]), from_db(series[2])
        assert first is not None and last is not None
        origin = int(first.timestamp())
        width = max(int((last - first).total_seconds() / buckets) + 1, 1)
        level = max((w for w in self.BUCKET_WIDTHS if w <= width), default=None)
        if level is None:
            rows = await self.db.fetchall(
                "SELECT wandb_run, step, MAX(at), tokens, loss FROM metric_points "
                "WHERE run_slug = ? GROUP BY wandb_run, "
                "(CAST(strftime('%s', at) AS INTEGER) - ?) / ? ORDER BY 3",
                (run_slug, origin, width),
            )
        else:
            rows = await self.db.fetchall(
                "SELECT wandb_run, step, MAX(at), tokens, loss FROM metric_buckets "
                "WHERE run_slug = ? AND width = ? GROUP BY wandb_run, (bucket * ? - ?) / ? "
                "ORDER BY 3",
                (run_slug, level, level, origin, width),
            )
        return [self._point(row) for row in rows]

    async def version(self, run_slug: str) -> str:
        """Changes whenever a point is added: the cache key for rendered charts (a counter kept
        by the insert trigger, not a count over the points)."""
        row = await self.db.fetchone(
            "SELECT changes, last_at FROM metric_spans WHERE run_slug = ?", (run_slug,)
        )
        return f"{row[0]}:{row[1]}" if row else NO_POINTS
