"""W&B benchmark: history rows transferred per poll cycle on a 390,000-step run, incremental
`WandbSource` against a naive poller that re-reads the whole history every cycle.

Everything runs in one process against the fake W&B server (tests/fakes/wandb.py) through the
real `wandb` 0.31 package and its wandb-core process; rows and requests are counted from the
fake's request log, i.e. what actually crossed the wire.

    /work/venv/bin/python bench/bench_wandb.py [--steps 390000] [--cycles 10] [--new 100]

1. The run has `--steps` rows (loss, token count, `_timestamp`) before Runscribe first sees it.
   The first incremental poll imports them (a one-time catch-up, reported separately).
2. Each cycle the run logs `--new` rows, then both pollers run:
   - incremental: `WandbSource.poll` (scans only the steps after its cursor);
   - naive: `run.scan_history(keys=[loss, tokens, _timestamp])` from step 0, one combined
     scan (the cheapest way to re-read everything these keys need).
   An idle cycle (nothing logged) is measured too.
3. The naive full read takes a while through wandb-core; with `--naive-fraction F < 1` it
   reads only the first F of the steps and the table extrapolates (clearly marked).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.models import RunInfo  # noqa: E402
from bot.settings import MetricKeys, RunConfig  # noqa: E402
from bot.sources.wandb import WandbSource  # noqa: E402
from bot.sources.wandb_client import WandbClient, default_api_factory  # noqa: E402
from bot.store import Database, Store  # noqa: E402
from tests.fakes.wandb import FakeWandb  # noqa: E402

PATH = "ent/bench/hero-1"
LOSS, TOKENS = "train/loss", "throughput/total_tokens"
T0 = datetime(2026, 8, 20, tzinfo=UTC)
EVERY = timedelta(seconds=20)


@dataclass
class Measure:
    label: str
    rows: int
    requests: int
    seconds: float
    note: str = ""


def measure(fake: FakeWandb, label: str, started: float, note: str = "") -> Measure:
    history = [r for r in fake.requests if r.operation in ("SampledHistoryPage", "HistoryPage")]
    return Measure(
        label=label,
        rows=sum(r.rows for r in history),
        requests=len(fake.requests),
        seconds=time.perf_counter() - started,
        note=note,
    )


def naive_read(api: Any, max_step: int) -> int:
    run = api.run(PATH)
    run.load(force=True)
    return sum(1 for _ in run.scan_history(keys=[LOSS, TOKENS, "_timestamp"], max_step=max_step))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=390_000)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--new", type=int, default=100, help="rows logged per cycle")
    parser.add_argument("--naive-fraction", type=float, default=1.0)
    parser.add_argument("--naive-cycles", type=int, default=2)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-wandb-"))
    os.environ.setdefault("WANDB_DIR", str(work / "wandb"))
    fake = FakeWandb().start()
    fake.add_run(PATH, display_name="hero-1", created_at=T0)
    started = time.perf_counter()
    fake.log(PATH, args.steps, start=T0, every=EVERY)
    clock = T0 + EVERY * args.steps
    print(f"fake history: {args.steps:,} rows in {time.perf_counter() - started:.1f} s")

    factory = default_api_factory(
        base_url=fake.base_url, api_key=fake.api_key, entity="ent", timeout=60, state_dir=work
    )
    client = WandbClient(factory, poll_timeout=3600)
    run_cfg = RunConfig(
        slug="hero",
        name="Bench run",
        wandb_runs=[PATH],
        metrics=MetricKeys(step="_step", loss=LOSS, tokens=TOKENS),
    )
    results: list[Measure] = []
    async with Database.open(work / "bench.db") as db:
        store = Store(db)
        await store.runs.upsert(RunInfo(slug="hero", name="Bench run"))
        source = WandbSource(store, run_cfg, client)

        fake.clear_log()
        started = time.perf_counter()
        first = await source.poll(clock)
        catch_up = measure(fake, "incremental: first poll (one-time import)", started)
        assert first.points == args.steps, first

        incremental: list[Measure] = []
        naive: list[Measure] = []
        naive_max = max(int(args.steps * args.naive_fraction), 1)
        for cycle in range(args.cycles):
            fake.log(PATH, args.new, start=clock, every=EVERY)
            clock += EVERY * args.new
            fake.clear_log()
            started = time.perf_counter()
            result = await source.poll(clock)
            incremental.append(measure(fake, "incremental", started))
            assert result.points == args.new, result
            if cycle < args.naive_cycles:
                fake.clear_log()
                started = time.perf_counter()
                limit = naive_max if args.naive_fraction < 1 else None
                read = await client.call(naive_read, (limit or 10**12))
                naive.append(measure(fake, "naive", started))
                if args.naive_fraction >= 1:
                    assert read == args.steps + args.new * (cycle + 1), read

        fake.clear_log()
        started = time.perf_counter()
        idle = await source.poll(clock + timedelta(minutes=1))
        idle_m = measure(fake, "incremental: idle cycle", started)
        assert idle.points == 0
        stored = len(await store.metrics.points("hero"))
    await client.aclose(teardown=True)
    fake.stop()

    def avg(items: list[Measure], attr: str) -> float:
        return sum(getattr(m, attr) for m in items) / len(items)

    scale = 1 / args.naive_fraction if args.naive_fraction < 1 else 1.0
    results = [
        catch_up,
        Measure(
            f"incremental: active cycle (+{args.new} rows), mean of {len(incremental)}",
            round(avg(incremental, "rows")),
            round(avg(incremental, "requests")),
            avg(incremental, "seconds"),
        ),
        idle_m,
    ]
    if naive:
        label = f"naive full re-read, mean of {len(naive)}"
        note = ""
        if scale != 1.0:
            label += f" (EXTRAPOLATED x{scale:.1f} from {args.naive_fraction:.0%} of the steps)"
            note = "extrapolated"
        results.append(
            Measure(
                label,
                round(avg(naive, "rows") * scale),
                round(avg(naive, "requests") * scale),
                avg(naive, "seconds") * scale,
                note,
            )
        )

    print()
    print(
        f"W&B history transfer per poll cycle: {args.steps:,}-step run, +{args.new} rows/cycle, "
        f"{args.cycles} cycles"
    )
    print(f"{'poller / cycle':<72} {'rows':>10} {'requests':>9} {'seconds':>8}")
    print("-" * 102)
    for m in results:
        print(f"{m.label:<72} {m.rows:>10,} {m.requests:>9,} {m.seconds:>8.2f}")
    print("-" * 102)
    per_cycle = results[1].rows
    print(
        f"incremental rows per active cycle = {per_cycle} = {args.new} loss rows + 1 continuity "
        f"row + {args.new} token rows (two keyed scans joined on _step)"
    )
    if naive:
        ratio = results[-1].rows / max(per_cycle, 1)
        print(f"naive / incremental rows per active cycle: {ratio:,.0f}x")
    print(f"points stored: {stored:,} (expected {args.steps + args.new * args.cycles:,})")


if __name__ == "__main__":
    asyncio.run(main())
