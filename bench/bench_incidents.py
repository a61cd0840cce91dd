"""Incident engine benchmark (not part of the test run).

1. Alert latency: a run crashes at a random moment inside a poll interval; polls (W&B writes,
   then `detect`) run every POLL seconds of simulated time. Reported: poll cycles from the W&B
   state change to the outbox row, the simulated delay, and the engine's own wall time.
2. detect() cost per cycle on a run with 400,000 metric points and 1,000,000 events.

    /work/venv/bin/python bench/bench_incidents.py [--points N] [--events N] [--cycles N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.incidents.engine import IncidentEngine
from bot.models import Event, MetricPoint, RunSnapshot
from bot.runtime import record_runs
from bot.settings import parse_runs
from bot.store import Database, Store
from bot.timeutil import to_db

SLUG = "hero"
RUN = "lab/pretrain/hero-a"
CHANNEL = 1213463398226931745
POLL = 60.0


async def setup_run(store: Store) -> None:
    runs = parse_runs(
        {
            "runs": [
                {
                    "slug": SLUG,
                    "name": "Hero",
                    "wandb_runs": [RUN],
                    "alerts_channel": CHANNEL,
                    "total_steps": 10_000_000,
                }
            ]
        }
    )
    await record_runs(store, runs)


async def snapshot(store: Store, state: str, now: datetime, heartbeat: datetime, step: int) -> None:
    await store.snapshots.upsert(
        SLUG,
        RunSnapshot(RUN, "hero-a", state, datetime(2026, 1, 1, tzinfo=UTC), heartbeat, step, now),
    )
    await store.health.record_success("wandb", SLUG, now)


async def latency_trial(path: Path, seed: int) -> tuple[int, float, float]:
    """(poll cycles, simulated seconds, engine wall seconds) from the state change to the row."""
    rng = random.Random(seed)
    async with Database.open(path) as db:
        store = Store(db)
        await setup_run(store)
        engine = IncidentEngine()
        t = datetime(2026, 9, 1, tzinfo=UTC)
        step = 0
        for _ in range(30):  # a healthy half hour
            t += timedelta(seconds=POLL)
            step += 100
            await store.metrics.add_points(SLUG, [MetricPoint(RUN, step, t, loss=2.0)])
            await snapshot(store, "running", t, t, step)
            await engine.detect(store, t)
        crash_at = t + timedelta(seconds=rng.uniform(0, POLL))
        cycles = 0
        engine_time = 0.0
        while True:
            t += timedelta(seconds=POLL)
            cycles += 1
            # the W&B source observes the new state at this poll and writes it
            await snapshot(store, "crashed", t, crash_at, step)
            await store.events.upsert_many(
                [
                    Event(SLUG, "wandb", f"state:{RUN}:crashed:{t.isoformat()}", "state", t,
                          state="crashed", thread=f"wandb:{RUN}",
                          extra={"wandb_run": RUN, "from_state": "running",
                                 "to_state": "crashed"})
                ]
            )  # fmt: skip
            started = time.perf_counter()
            queued = await engine.detect(store, t)
            engine_time += time.perf_counter() - started
            if queued:
                rows = await store.outbox.due(datetime(2100, 1, 1, tzinfo=UTC))
                assert any(r.kind == "alert" for r in rows)
                return cycles, (t - crash_at).total_seconds() + engine_time, engine_time
            if cycles > 10:
                raise RuntimeError("no alert after 10 cycles")


async def fill(store: Store, points: int, events: int, now: datetime) -> None:
    """Bulk rows straight through SQL (the repositories are not what is measured here)."""
    start = now - timedelta(minutes=points)
    conn = store.db.conn
    async with store.db.transaction():
        batch = []
        for i in range(points):
            at = start + timedelta(minutes=i)
            batch.append((SLUG, RUN, i * 10, to_db(at), i * 10 * 4e6, 2.0 + 1 / (1 + i / 1e4)))
            if len(batch) >= 50_000:
                await conn.executemany("INSERT INTO metric_points VALUES (?, ?, ?, ?, ?, ?)", batch)
                batch = []
        if batch:
            await conn.executemany("INSERT INTO metric_points VALUES (?, ?, ?, ?, ?, ?)", batch)
    rng = random.Random(7)
    span = points * 60
    cols = (
        "run_slug, source, external_id, kind, at, author, ref, url, body, thread, extra, "
        "content_hash, incident, severity, tag, summary, enriched_hash"
    )
    async with store.db.transaction():
        batch2: list[tuple[object, ...]] = []
        for i in range(events):
            at = to_db(start + timedelta(seconds=rng.uniform(0, span)))
            source = "github" if i % 3 else "discord"
            incident = 1 if i % 500 == 0 else 0
            thread = f"github:lab/hero#{i % 2000}" if source == "github" else "discord:2"
            batch2.append(
                (SLUG, source, f"x:{i}", "comment", at, "someone", "#1", None, "text " * 20,
                 thread, "{}", f"h{i}", incident, "critical" if incident else None,
                 "incident" if incident else "other", "summary", f"h{i}")
            )  # fmt: skip
            if len(batch2) >= 50_000:
                await conn.executemany(
                    f"INSERT INTO events ({cols}) VALUES ({', '.join('?' * 17)})", batch2
                )
                batch2 = []
        if batch2:
            await conn.executemany(
                f"INSERT INTO events ({cols}) VALUES ({', '.join('?' * 17)})", batch2
            )
    await conn.execute("ANALYZE")


async def cost(path: Path, points: int, events: int, cycles: int) -> dict[str, float]:
    now = datetime(2026, 9, 1, tzinfo=UTC)
    async with Database.open(path) as db:
        store = Store(db)
        await setup_run(store)
        t0 = time.perf_counter()
        await fill(store, points, events, now)
        fill_s = time.perf_counter() - t0
        engine = IncidentEngine()
        step = (points - 1) * 10
        await snapshot(store, "running", now, now, step)
        first_start = time.perf_counter()
        await engine.detect(store, now)  # first cycle: a brand-new engine's 6 h lookback
        first = time.perf_counter() - first_start
        times = []
        t = now
        for _ in range(cycles):
            t += timedelta(seconds=POLL)
            step += 10
            await store.metrics.add_points(SLUG, [MetricPoint(RUN, step, t, loss=2.0)])
            await snapshot(store, "running", t, t, step)
            started = time.perf_counter()
            await engine.detect(store, t)
            times.append(time.perf_counter() - started)
        # an open crash incident with grouping and thread follow-ups
        await snapshot(store, "crashed", t, t, step)
        open_times = []
        for _ in range(cycles):
            t += timedelta(seconds=POLL)
            await snapshot(store, "crashed", t, t - timedelta(minutes=1), step)
            started = time.perf_counter()
            await engine.detect(store, t)
            open_times.append(time.perf_counter() - started)
        times.sort()
        open_times.sort()
        return {
            "fill_s": fill_s,
            "first_ms": first * 1000,
            "median_ms": statistics.median(times) * 1000,
            "p95_ms": times[int(len(times) * 0.95) - 1] * 1000,
            "open_median_ms": statistics.median(open_times) * 1000,
            "open_p95_ms": open_times[int(len(open_times) * 0.95) - 1] * 1000,
        }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=400_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = []
        for trial in range(args.trials):
            results.append(await latency_trial(Path(tmp) / f"lat{trial}.db", trial))
        cycles = [r[0] for r in results]
        delays = [r[1] for r in results]
        engine = [r[2] for r in results]
        print(f"Alert latency (poll every {POLL:.0f} s, {args.trials} crashes at random moments)")
        print(f"  {'poll cycles':<34}{'max':>10}{'median':>10}")
        print(f"  {'W&B change -> outbox row':<34}{max(cycles):>10}{statistics.median(cycles):>10}")
        print(f"  {'seconds (simulated + engine)':<34}{max(delays):>10.1f}"
              f"{statistics.median(delays):>10.1f}")  # fmt: skip
        print(f"  {'engine seconds in those cycles':<34}{max(engine):>10.4f}"
              f"{statistics.median(engine):>10.4f}")  # fmt: skip
        print(f"  goal: <= one poll interval + 5 s = {POLL + 5:.0f} s")
        print()
        stats = await cost(Path(tmp) / "big.db", args.points, args.events, args.cycles)
        print(f"detect() per cycle, {args.points:,} points, {args.events:,} events "
              f"(filled in {stats['fill_s']:.0f} s)")  # fmt: skip
        print(f"  {'case':<34}{'median ms':>10}{'p95 ms':>10}")
        print(f"  {'healthy run':<34}{stats['median_ms']:>10.1f}{stats['p95_ms']:>10.1f}")
        print(f"  {'open crash incident':<34}{stats['open_median_ms']:>10.1f}"
              f"{stats['open_p95_ms']:>10.1f}")  # fmt: skip
        print(f"  {'first cycle of a new engine':<34}{stats['first_ms']:>10.1f}")
        print(json.dumps(stats))


if __name__ == "__main__":
    asyncio.run(main())
