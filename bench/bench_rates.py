"""`/status` and incident detection against the W&B logging rate, at 1,000,000 events.

    python bench/bench_rates.py [--events 1000000] [--rates 3333,86400,864000] [--db PATH]

One store (bench/history.py: 1M events and their incidents, built once and reused) holds, beside
its own run, one run per logging rate with 25 hours of points at that rate (a step per point),
fresh W&B snapshots and source health. For each rate:

- `/status` CPU: `build_status` plus the narrative's template (what the handler computes before
  the card), CPU time (`time.process_time`, this process only), median of 20;
- detection per W&B round: `IncidentEngine.detect` for that run after a minute of new points
  at its rate was added (what a live round does), CPU time, median of 10 rounds.

Each next to two other ways to read the day, in the same process on the same store, by
swapping `MetricsRepo.window`:
- raw: every point of the window turned into a Python object (main before the rollup);
- SQL thinning at read time: the same first/last point of each minute, computed by SQLite
  with a `GROUP BY` over the raw points on every read (what a competent engineer writes
  without a table kept at ingest). It keeps Python's share flat but SQLite still walks every
  point of the day.

The bot's own way reads the per-minute rollup kept by a trigger at ingest (migration 0016).
Goals: flat within 2x from 3,333 to 864,000 points a day; `/status` CPU <= 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from history import counts, grow, now_for, record_run

from bot.core.timeutil import to_db
from bot.incidents.engine import IncidentEngine
from bot.models import MetricPoint, RunInfo, RunSnapshot
from bot.posts.incidents import IncidentPosts
from bot.services.narrative import status_with_narrative
from bot.store import Database, Store
from bot.store.metrics import MetricsRepo

DAY = 86_400
BOT_WINDOW = MetricsRepo.window


async def raw_window(
    self: MetricsRepo, run_slug: str, since: datetime, raw_after: datetime | None = None
) -> list[MetricPoint]:
    """main before the rollup: each W&B run's last point before `since`, then every point."""
    before = []
    for wandb_run in await self.wandb_runs(run_slug):
        row = await self.db.fetchone(
            "SELECT wandb_run, step, at, tokens, loss FROM metric_points WHERE run_slug = ? "
            "AND wandb_run = ? AND at < ? ORDER BY at DESC LIMIT 1",
            (run_slug, wandb_run, to_db(since)),
        )
        if row is not None:
            before.append(self._point(row))
    return before + await self.points(run_slug, since=since)


async def sql_thinned_window(
    self: MetricsRepo, run_slug: str, since: datetime, raw_after: datetime | None = None
) -> list[MetricPoint]:
    """The first and last point of each minute, grouped by SQLite over the raw points; from the
    minute holding `raw_after` on, every point (as the bot's detection reads them)."""
    before = await raw_window(self, run_slug, since + timedelta(days=3650))  # nothing after
    before = [p for p in before if p.at < since]
    tail_start = None
    if raw_after is not None:
        minute = datetime.fromtimestamp(int(raw_after.timestamp()) // 60 * 60, tz=since.tzinfo)
        tail_start = max(since, minute)
    rows = []
    for pick in ("MIN", "MAX"):
        rows += await self.db.fetchall(
            f"SELECT wandb_run, step, {pick}(at), tokens, loss FROM metric_points "
            "WHERE run_slug = ? AND at >= ? AND at < ? "
            "GROUP BY wandb_run, CAST(strftime('%s', at) AS INTEGER) / 60",
            (run_slug, to_db(since), to_db(tail_start) if tail_start else "9999"),
        )
    points = sorted({self._point(r) for r in rows}, key=lambda p: (p.at, p.wandb_run, p.step))
    tail = await self.points(run_slug, since=tail_start) if tail_start is not None else []
    return before + points + tail


WAYS: dict[str, Any] = {"rollup": BOT_WINDOW, "raw": raw_window, "sql": sql_thinned_window}


def rate_points(slug: str, per_day: int, since: datetime, until: datetime, step0: int) -> list:
    gap = DAY / per_day
    n = int((until - since).total_seconds() / gap)
    return [
        MetricPoint(
            f"e/p/{slug}",
            step=step0 + i,
            at=since + timedelta(seconds=i * gap),
            tokens=(step0 + i) * 4e6,
            loss=2.0 + 1 / (1 + (step0 + i) / 1e5),
        )
        for i in range(n)
    ]


async def record_rate_run(store: Store, per_day: int, now: datetime) -> str:
    slug = f"rate{per_day}"
    if await store.runs.get(slug) is None:
        await store.runs.upsert(
            RunInfo(
                slug=slug,
                name=f"{per_day:,} points a day",
                total_steps=50_000_000,
                target_tokens=2e14,
                config={"wandb_runs": [f"e/p/{slug}"]},
            )
        )
        points = rate_points(slug, per_day, now - timedelta(hours=25), now, 1)
        for i in range(0, len(points), 50_000):
            await store.metrics.add_points(slug, points[i : i + 50_000])
        print(f"  {slug}: {len(points):,} points", flush=True)
    return slug


async def mark_live(store: Store, slug: str, now: datetime) -> int:
    last = await store.metrics.latest(slug)
    assert last is not None
    wandb_run = f"e/p/{slug}"
    snapshot = RunSnapshot(wandb_run, slug, "running", now - timedelta(days=2), now, last.step, now)
    await store.snapshots.upsert(slug, snapshot)
    await store.health.record_success("wandb", slug, now)
    return last.step


async def cpu_ms(runs: int, body: Callable[[], Awaitable[object]]) -> float:
    samples = []
    for _ in range(runs):
        start = time.process_time()
        await body()
        samples.append((time.process_time() - start) * 1000)
    return statistics.median(samples)


async def measure(store: Store, slug: str, per_day: int, now: datetime) -> dict[str, float]:
    out: dict[str, float] = {}
    for way, window in WAYS.items():
        MetricsRepo.window = window  # type: ignore[method-assign]
        try:
            out[f"status_{way}"] = await cpu_ms(
                20 if way == "rollup" else 5,
                lambda at=now: status_with_narrative(store.reader, slug, at),  # type: ignore[misc]
            )
            engine = IncidentEngine(IncidentPosts(), runs=[slug])
            clock = now
            await engine.detect(store, clock)
            rounds = []
            for _ in range(10 if way == "rollup" else 3):
                last = await store.metrics.latest(slug)
                assert last is not None
                gap = timedelta(seconds=DAY / per_day)
                newer = rate_points(
                    slug,
                    per_day,
                    last.at + gap,
                    last.at + gap + timedelta(minutes=1),
                    last.step + 1,
                )
                await store.metrics.add_points(slug, newer)
                clock += timedelta(minutes=1)
                await mark_live(store, slug, clock)
                start = time.process_time()
                await engine.detect(store, clock)
                rounds.append((time.process_time() - start) * 1000)
            out[f"detect_{way}"] = statistics.median(rounds)
            now = clock
        finally:
            MetricsRepo.window = BOT_WINDOW  # type: ignore[method-assign]
    out["points_read"] = float(len(await store.reader.metrics.window(slug, now - timedelta(1))))
    out["points_raw"] = float(len(await raw_window(store.reader.metrics, slug, now - timedelta(1))))
    return out


async def main_async(args: argparse.Namespace) -> None:
    args.db.parent.mkdir(parents=True, exist_ok=True)
    have = max(counts(args.db)[0], 0) if args.db.exists() else 0
    async with Database.open(args.db, readers=2) as db:
        store = Store(db)
        await record_run(store)
        if have < args.events:
            print(f"growing the store to {args.events:,} events …", flush=True)
            await grow(store, have, args.events)
        now = now_for(args.events)
        results = []
        for per_day in args.rates:
            slug = await record_rate_run(store, per_day, now)
            await mark_live(store, slug, now)
            results.append((per_day, await measure(store, slug, per_day, now)))
    print()
    print(f"{args.events:,} events; CPU ms (median); day read = points a /status reads")
    print(
        f"{'points/day':>11} | {'day read':>13} | {'/status':>7} {'raw':>7} {'sql':>7} | "
        f"{'detect':>7} {'raw':>7} {'sql':>7}"
    )
    for per_day, r in results:
        print(
            f"{per_day:>11,} | {r['points_read']:>5,.0f} of {r['points_raw']:>6,.0f} | "
            f"{r['status_rollup']:7.1f} {r['status_raw']:7.1f} {r['status_sql']:7.1f} | "
            f"{r['detect_rollup']:7.1f} {r['detect_raw']:7.1f} {r['detect_sql']:7.1f}"
        )
    low, high = results[0][1], results[-1][1]
    print(
        f"highest / lowest rate: /status x{high['status_rollup'] / low['status_rollup']:.2f}, "
        f"detection x{high['detect_rollup'] / low['detect_rollup']:.2f} (goal <= 2)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rates", type=lambda s: [int(x) for x in s.split(",")],
                        default=[3_333, 86_400, 864_000])  # fmt: skip
    parser.add_argument("--db", type=Path, default=Path("bench/results/bench_rates.db"))
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
