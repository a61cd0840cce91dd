"""W&B benchmark: history rows, requests and seconds per poll cycle on a 390,000-step run,
incremental `WandbSource` against a cursor reader on the wandb public API (`scan_history` from
`min_step`, the fair baseline) and a naive poller that re-reads the whole history every cycle.

Everything runs in one process against the fake W&B server (tests/fakes/wandb.py) through the
real `wandb` 0.31 package and its wandb-core process; rows and requests are counted from the
fake's request log, i.e. what actually crossed the wire.

    python bench/bench_wandb.py [--steps 390000] [--cycles 10] [--new 100]

1. The run has `--steps` rows (loss, token count, `_timestamp`) before Runscribe first sees it.
   The first incremental poll imports them (a one-time catch-up, reported separately).
2. Each cycle the run logs `--new` rows, then the pollers run:
   - incremental: `WandbSource.poll` (scans only the steps after its cursor, and skips the scan
     when the `Run` query's `lastStep` says nothing was logged);
   - cursor: what a careful user of the public API writes: one `Run` object kept and reloaded
     each cycle (the run's state is needed for crash alerts anyway), then
     `run.scan_history(keys=[loss, tokens, _timestamp], min_step=cursor + 1)`, the cursor moved
     to the last step returned. It starts at the same position as the incremental reader.
   - naive (first `--naive-cycles` cycles): `run.scan_history(keys=[…])` from step 0, one
     combined scan (the cheapest way to re-read everything these keys need).
   Idle cycles (nothing logged) are measured for the incremental and the cursor reader.
3. The naive full read takes a while through wandb-core; with `--naive-fraction F < 1` it
   reads only the first F of the steps and the table extrapolates (clearly marked).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config.settings import MetricKeys, RunConfig  # noqa: E402
from bot.models import RunInfo  # noqa: E402
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
    seconds: float  # the whole call (for the incremental reader: with its SQLite commit)
    fetch: float  # on the W&B worker thread only (talking to wandb-core and the server)
    note: str = ""
    ops: str = ""


def measure(
    fake: FakeWandb, label: str, started: float, fetch: float | None = None, note: str = ""
) -> Measure:
    history = [r for r in fake.requests if r.operation in ("SampledHistoryPage", "HistoryPage")]
    seconds = time.perf_counter() - started
    ops = Counter(r.operation for r in fake.requests)
    return Measure(
        label=label,
        rows=sum(r.rows for r in history),
        requests=len(fake.requests),
        seconds=seconds,
        fetch=seconds if fetch is None else fetch,
        note=note,
        ops=", ".join(f"{name} {n}" for name, n in ops.items()),
    )


class Timed:
    """Wraps the source's worker-side fetch to time it apart from the commit to SQLite."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.last = 0.0

    def __call__(self, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.fn(*args)
        finally:
            self.last = time.perf_counter() - started


class CursorReader:
    """The fair baseline: incremental reads through the public API's `scan_history(min_step=…)`.
    One combined scan returns only rows that carry all three keys, which is every row here."""

    def __init__(self, path: str, cursor: int):
        self.path = path
        self.cursor = cursor  # the last step read
        self.run: Any = None

    def poll(self, api: Any) -> int:
        if self.run is None:
            self.run = api.run(self.path)
        else:
            self.run.load(force=True)
        rows = list(
            self.run.scan_history(keys=[LOSS, TOKENS, "_timestamp"], min_step=self.cursor + 1)
        )
        if rows:
            self.cursor = max(int(r["_step"]) for r in rows)
        return len(rows)


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
        timed = Timed(source._fetch)
        source._fetch = timed  # type: ignore[method-assign]

        fake.clear_log()
        started = time.perf_counter()
        first = await source.poll(clock)
        catch_up = measure(fake, "incremental: first poll (one-time import)", started, timed.last)
        assert first.points == args.steps, first

        cursor_reader = CursorReader(PATH, cursor=args.steps - 1)
        incremental: list[Measure] = []
        cursor: list[Measure] = []
        naive: list[Measure] = []
        naive_max = max(int(args.steps * args.naive_fraction), 1)
        for cycle in range(args.cycles):
            fake.log(PATH, args.new, start=clock, every=EVERY)
            clock += EVERY * args.new
            fake.clear_log()
            started = time.perf_counter()
            result = await source.poll(clock)
            incremental.append(measure(fake, "incremental", started, timed.last))
            assert result.points == args.new, result
            fake.clear_log()
            started = time.perf_counter()
            read = await client.call(cursor_reader.poll)
            cursor.append(measure(fake, "cursor", started))
            assert read == args.new, read
            if cycle < args.naive_cycles:
                fake.clear_log()
                started = time.perf_counter()
                limit = naive_max if args.naive_fraction < 1 else None
                read = await client.call(naive_read, (limit or 10**12))
                naive.append(measure(fake, "naive", started))
                if args.naive_fraction >= 1:
                    assert read == args.steps + args.new * (cycle + 1), read

        idle_incremental: list[Measure] = []
        idle_cursor: list[Measure] = []
        for n in range(args.cycles):
            fake.clear_log()
            started = time.perf_counter()
            idle = await source.poll(clock + timedelta(minutes=1 + n))
            idle_incremental.append(measure(fake, "incremental: idle", started, timed.last))
            assert idle.points == 0
            fake.clear_log()
            started = time.perf_counter()
            read = await client.call(cursor_reader.poll)
            idle_cursor.append(measure(fake, "cursor: idle", started))
            assert read == 0, read
        stored = len(await store.metrics.points("hero"))
    await client.aclose(teardown=True)
    fake.stop()
    shutil.rmtree(work, ignore_errors=True)

    def avg(items: list[Measure], attr: str) -> float:
        return sum(getattr(m, attr) for m in items) / len(items)

    scale = 1 / args.naive_fraction if args.naive_fraction < 1 else 1.0

    def mean(label: str, items: list[Measure]) -> Measure:
        return Measure(
            f"{label}, mean of {len(items)}",
            round(avg(items, "rows")),
            round(avg(items, "requests")),
            avg(items, "seconds"),
            avg(items, "fetch"),
            ops=items[-1].ops,
        )

    results = [
        catch_up,
        mean(f"incremental: active cycle (+{args.new} rows)", incremental),
        mean("incremental: idle cycle", idle_incremental),
        mean(f"cursor scan_history(min_step): active cycle (+{args.new} rows)", cursor),
        mean("cursor scan_history(min_step): idle cycle", idle_cursor),
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
                avg(naive, "fetch") * scale,
                note,
                ops=naive[-1].ops,
            )
        )

    print()
    print(
        f"W&B history transfer per poll cycle: {args.steps:,}-step run, +{args.new} rows/cycle, "
        f"{args.cycles} cycles"
    )
    print(f"{'poller / cycle':<66} {'rows':>9} {'requests':>8} {'W&B ms':>9} {'total ms':>9}")
    print("-" * 105)
    for m in results:
        print(
            f"{m.label:<66} {m.rows:>9,} {m.requests:>8,} {m.fetch * 1000:>9.1f} "
            f"{m.seconds * 1000:>9.1f}"
        )
    print("-" * 105)
    print("W&B ms: on the W&B worker thread (wandb-core and the fake server); total ms: the whole")
    print("call, for the incremental reader with its commit of points, events and cursor to SQLite")
    print("requests by operation (last cycle of each kind):")
    for m in results[1:]:
        print(f"  {m.label.split(',')[0]}: {m.ops or 'none'}")
    per_cycle = results[1].rows
    print(
        f"incremental rows per active cycle = {per_cycle} = {args.new} loss rows + 1 continuity "
        f"row + {args.new} token rows (two keyed scans joined on _step)"
    )
    print(
        f"cursor rows per active cycle = {results[3].rows} ({args.new} rows carrying all three "
        "keys, from one combined scan)"
    )
    for name, ours, theirs in (
        ("active", results[1], results[3]),
        ("idle", results[2], results[4]),
    ):
        requests = theirs.requests / max(ours.requests, 1)
        print(
            f"{name} cycle, cursor / incremental: requests {requests:.1f}x, "
            f"W&B time {theirs.fetch / max(ours.fetch, 1e-9):.1f}x"
        )
    if naive:
        ratio = results[-1].rows / max(per_cycle, 1)
        print(f"naive / incremental rows per active cycle: {ratio:,.0f}x")
    print(f"points stored: {stored:,} (expected {args.steps + args.new * args.cycles:,})")


if __name__ == "__main__":
    asyncio.run(main())
