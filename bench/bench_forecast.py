"""Forecast benchmark: one watched metric with 400,000 stored points.

Reports (median and p95 of 30 poll cycles) the forecast work of one cycle: `advance_forecasts`
reading the points stored since the tracker's cursor, updating the tracker and saving it, inside
one transaction on a real SQLite file, for 60 new points per cycle (a minute of a fast run).

Baseline, in the same process on the same data: a stateless windowed refit, what a competent
engineer writes without a tracker kept between polls: each cycle reads the newest
`window + holdout + new` points through the same index (`ORDER BY id DESC LIMIT`), fits the same
robust trend and band (`fit_trend`) on the trailing `window` before the holdout, and judges the
new points against it. It keeps no state, so it cannot tell a drift's first point from its
tenth (the tracker's K-consecutive rule, episodes, restores); its cost is the floor the
tracker's bookkeeping is measured against. (`--whole N`: the same fit over the whole history for
N cycles, what no one should write; not a fair baseline.)

    python bench/bench_forecast.py [--points N] [--new N] [--cycles N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.analysis.forecast import SeriesPoint, Tracker, fit_trend
from bot.config.settings import RunConfig
from bot.incidents.forecasts import advance_forecasts
from bot.models import RunInfo
from bot.store import Database, Store

RUN = "lab/pretrain/hero-1"
METRIC = "train/grad_norm"
T0 = datetime(2026, 9, 1, tzinfo=UTC)


def points(start: int, count: int, rng: random.Random) -> list[SeriesPoint]:
    return [
        SeriesPoint(
            RUN,
            step,
            T0 + timedelta(seconds=20 * step),
            (1.5 + 0.3 / math.sqrt(1 + step / 1000)) * (1 + rng.gauss(0, 0.02)),
        )
        for step in range(start, start + count)
    ]


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=400_000)
    parser.add_argument("--new", type=int, default=60)
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--whole", type=int, default=0, help="cycles refitting all history")
    args = parser.parse_args()
    rng = random.Random(14)
    config = RunConfig(
        slug="hero",
        name="Hero",
        wandb_runs=[RUN],
        forecasts=[{"metric": METRIC, "label": "gradient norm", "direction": "up"}],
    )
    run = RunInfo.from_config(config)
    chain = [RUN]
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "bench.db") as db:
            store = Store(db)
            await store.runs.upsert(run)
            t0 = time.perf_counter()
            for start in range(0, args.points, 50_000):
                count = min(50_000, args.points - start)
                await store.series.add("hero", METRIC, points(start, count, rng))
            fill_s = time.perf_counter() - t0
            await store.db.conn.execute("ANALYZE")
            async with store.transaction():  # the first cycle: jump to the newest points
                t0 = time.perf_counter()
                await advance_forecasts(store, run, chain, T0)
                first_ms = (time.perf_counter() - t0) * 1000

            step = args.points
            incremental, windowed, whole, pure = [], [], [], []
            window, holdout = config.forecasts[0].window, config.forecasts[0].holdout
            flagged = 0
            trackers: list[Tracker] = []
            for _ in range(args.cycles):
                new = points(step, args.new, rng)
                step += args.new
                await store.series.add("hero", METRIC, new)
                gc.collect()
                async with store.transaction():
                    t0 = time.perf_counter()
                    trackers = await advance_forecasts(store, run, chain, new[-1].at)
                    incremental.append((time.perf_counter() - t0) * 1000)

                # the tracker alone (no store): the per-point update
                copy = Tracker.from_json(trackers[0].config, trackers[0].as_json())
                more = points(step, args.new, random.Random(step))
                t0 = time.perf_counter()
                copy.update(more, chain)
                pure.append((time.perf_counter() - t0) * 1000)

                # the baseline: the trailing window read and refitted, the new points judged
                gc.collect()
                t0 = time.perf_counter()
                recent = await store.series.latest("hero", METRIC, window + holdout + args.new)
                fitted = recent[: -(holdout + args.new)][-window:]
                fit = fit_trend([float(p.step) for p in fitted], [p.value for p in fitted], 5.0)
                assert fit is not None
                flagged = sum(
                    abs(p.value - fit.at(p.step)) > fit.width for p in recent[-args.new :]
                )
                windowed.append((time.perf_counter() - t0) * 1000)

            outside = 0
            for _ in range(args.whole):
                # naive: read every point, refit over the whole history, judge the newest ones
                gc.collect()
                t0 = time.perf_counter()
                everything = await store.series.latest("hero", METRIC, step + 1)
                xs = [float(p.step) for p in everything[: -args.new]]
                ys = [p.value for p in everything[: -args.new]]
                fit = fit_trend(xs, ys, band=5.0)
                assert fit is not None
                outside = sum(
                    abs(p.value - fit.at(p.step)) > fit.width for p in everything[-args.new :]
                )
                whole.append((time.perf_counter() - t0) * 1000)
                del everything, xs, ys
            state = trackers[0].state

    inc, win, pur = summary(incremental), summary(windowed), summary(pure)
    print(
        f"stored points: {args.points:,} (+{args.new} per cycle, {args.cycles} cycles); "
        f"fill {fill_s:.1f} s; tracker state: {state}; the baseline flagged {flagged} of the "
        f"last batch"
    )
    print(f"{'measure':52} {'median ms':>10} {'p95 ms':>9}")
    print(f"{'first cycle (jump to the newest 2,000 points)':52} {first_ms:10.2f} {'':>9}")
    print(f"{'forecast cycle: read new, update, save (SQLite)':52} {inc[0]:10.2f} {inc[1]:9.2f}")
    print(f"{'tracker update alone (60 points, no store)':52} {pur[0]:10.2f} {pur[1]:9.2f}")
    label = f"baseline: read the newest {window + holdout + args.new}, refit the window"
    print(f"{label:52} {win[0]:10.2f} {win[1]:9.2f}")
    if whole:
        nai = summary(whole)
        label = f"whole history refitted (not a fair baseline; {outside} flagged)"
        print(f"{label:52} {nai[0]:10.2f} {nai[1]:9.2f}")
    print(f"baseline / incremental (median): {win[0] / inc[0]:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
