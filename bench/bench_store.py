"""Store benchmark: a database of 1,000,000 events and 400,000 metric points.

Reports (median of 20 runs) the time to build the status card and a 7-day timeline from the
store, and the ingest rate through the real repository. Next to them, in the same process, the
naive approach: computing status from the whole metric history instead of the trailing window.
That naive column is the project's early defect, kept as history, not a fair baseline: the fair
comparison for reading a day of metric points (SQLite thinning the day at read time with a
`GROUP BY` minute) is in `bench_rates.py`.

    python bench/bench_store.py [--events N] [--points N] [--db PATH]

The first 100,000 events go through `EventsRepo.upsert_many` (that is the measured ingest rate);
the rest are bulk-copied with SQL to keep the fill quick, then the same indexes serve queries.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.analysis.progress import compute_progress
from bot.models import TAGS, Event, MetricPoint, RunInfo
from bot.render.cards import status_card, timeline_pages
from bot.render.terminal import local_formatter
from bot.services.narrative import status_with_narrative
from bot.services.timeline import build_timeline
from bot.store import Database, Store

RUN = "lab/pretrain/hero-1"
NOW = datetime(2027, 3, 1, tzinfo=UTC)


def make_events(n: int, start: int = 0) -> list[Event]:
    rng = random.Random(start)
    span = timedelta(days=200).total_seconds()
    events = []
    for i in range(start, start + n):
        at = NOW - timedelta(seconds=span * (1 - i / 1_000_000))
        events.append(
            Event(
                run_slug="hero",
                source=rng.choice(("github", "discord")),
                external_id=f"comment:{i}",
                kind="comment",
                at=at,
                author=f"user{i % 97}",
                ref=f"#{8000 + i % 500}",
                url=f"https://github.com/lab/model/issues/{8000 + i % 500}#issuecomment-{i}",
                body="Ran the ablation on the d1024 rung; loss within noise. " * 3,
            )
        )
    return events


async def fill(store: Store, n_events: int, n_points: int) -> float:
    await store.runs.upsert(
        RunInfo(
            slug="hero",
            name="Hero",
            total_steps=390_251,
            target_tokens=18e12,
            config={"wandb_runs": [RUN]},
        )
    )
    measured = min(100_000, n_events)
    batch = make_events(measured)
    t0 = time.perf_counter()
    for i in range(0, measured, 2000):
        await store.events.upsert_many(batch[i : i + 2000])
    rate = measured / (time.perf_counter() - t0)
    rng = random.Random(1)
    # Enrich what was ingested, then bulk-copy the rest.
    await store.db.conn.execute(
        "UPDATE events SET summary = substr(body, 1, 120), tag = ?, enriched_hash = content_hash",
        (TAGS[1],),
    )
    rows = []
    for i in range(measured, n_events):
        at = NOW - timedelta(seconds=200 * 86400 * (1 - i / n_events))
        rows.append(
            (
                "hero",
                "github",
                f"comment:{i}",
                "comment",
                at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                f"user{i % 97}",
                f"#{8000 + i % 500}",
                "body",
                "h",
                "summary text of an event",
                rng.choice(TAGS),
                "h",
            )
        )
        if len(rows) == 50_000:
            await _bulk(store, rows)
            rows = []
    if rows:
        await _bulk(store, rows)
    step_seconds = 200 * 86400 / n_points
    points = [
        MetricPoint(
            RUN,
            step=i,
            at=NOW - timedelta(seconds=step_seconds * (n_points - i)),
            tokens=i * 4.6e7,
            loss=2.0 + 1 / math.log(i + 3),
        )
        for i in range(n_points)
    ]
    for i in range(0, n_points, 50_000):
        await store.metrics.add_points("hero", points[i : i + 50_000])
    await store.db.conn.execute("ANALYZE")
    return rate


async def _bulk(store: Store, rows: list[tuple[object, ...]]) -> None:
    async with store.transaction() as conn:
        await conn.executemany(
            "INSERT INTO events (run_slug, source, external_id, kind, at, author, ref, body, "
            "content_hash, summary, tag, enriched_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


async def timed(fn, runs: int = 20) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--points", type=int, default=400_000)
    parser.add_argument("--db", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "bench.db"
        fresh = not path.exists()
        async with Database.open(path) as db:
            store = Store(db)
            rate = await fill(store, args.events, args.points) if fresh else float("nan")
            fmt = local_formatter("UTC", NOW)

            async def status() -> None:
                status_card(*await status_with_narrative(store, "hero", NOW), fmt)

            async def timeline() -> None:
                entries = await build_timeline(store, "hero", NOW, days=7)
                timeline_pages(entries, "Timeline", fmt)

            async def both() -> None:
                await status()
                await timeline()

            async def naive_status() -> None:
                points = await store.metrics.points("hero")  # the whole history
                compute_progress(points, total_steps=390_251, target_tokens=18e12, now=NOW)

            s = await timed(status)
            t = await timed(timeline)
            b = await timed(both)
            n = await timed(naive_status, runs=5)
        count = sqlite3.connect(path).execute("SELECT COUNT(*) FROM events").fetchone()[0]
    print(f"events in store: {count:,}; metric points: {args.points:,}")
    print(f"{'measure':44} {'median ms':>10} {'p95 ms':>9}")
    print(f"{'status card (windowed read)':44} {s[0]:10.2f} {s[1]:9.2f}")
    print(f"{'7-day timeline (pages)':44} {t[0]:10.2f} {t[1]:9.2f}")
    print(f"{'status + timeline':44} {b[0]:10.2f} {b[1]:9.2f}")
    print(f"{'naive status (whole history read)':44} {n[0]:10.2f} {n[1]:9.2f}")
    print(f"naive / windowed status: {n[0] / s[0]:.0f}x")
    print(f"ingest through EventsRepo.upsert_many: {rate:,.0f} events/s")


if __name__ == "__main__":
    asyncio.run(main())
