"""How per-request and idle costs grow with history: one store grown through the store API to
10k, 100k, 1M and 5M events at constant density (and 0.4 metric points per event), measured at
each size next to the naive queries they replaced, run in the same process on the same store.

    python bench/bench_scaling.py [--sizes 10000,100000,1000000,5000000] [--db PATH] [--keep]

At each size:
- `/status` handler: report + narrative + chart version + card + embed (chart cached), median;
  naive: the same with the chart version by COUNT(*)/MAX(at) over every point and the incident
  statistics recomputed from every incident;
- idle poll cycle (no source has anything new): pending enrichment, conversation lookup, LLM
  fallback retry, incident detection twice; naive: the pending (`OR`) and retry (unindexed)
  queries it used to run;
- cold chart: chart data (pre-aggregated buckets) and the PNG drawn in the bot's warm chart
  process (`bot.render.drawer`); naive: the window function over every point, drawn in a thread;
- ingest: events/s of the whole import while growing to this size (events through
  `upsert_many`, `set_enrichment_many`, 0.4 metric points per event, the incidents), one
  transaction per 20,000 events;
- database bytes per event (events, points, incidents, indexes, everything), and where they go
  (`dbstat`) at the largest size.

The naive columns are earlier versions of these queries (the project's own defects, kept as
history), not fair baselines. The claim measured here is flatness: each figure's baseline is the
same code on the 10,000-event store (the ratio 5M / 10k), which is what "independent of history"
means.

The first chart also starts the chart process, which imports matplotlib and loads its fonts:
that is reported once, apart ("first chart"), and every cold-chart figure is a warm chart process
drawing a version it has not drawn before.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from history import (
    SLUG,
    counts,
    db_bytes,
    grow,
    naive_chart_data,
    now_for,
    record_run,
    where_the_bytes_go,
)

from bot.app import card_to_embed, discord_time
from bot.enrich.rules import Enrichment
from bot.incidents.engine import IncidentEngine
from bot.models import Event
from bot.posts.incidents import IncidentPosts
from bot.process.pipeline import rules_enrichment, run_cycle
from bot.render.cards import status_card
from bot.render.chart import ChartCache
from bot.render.drawer import ChartDrawer
from bot.services.narrative import status_with_narrative
from bot.services.status import ChartSeries, chart_series
from bot.store import Database, Store
from bot.store.events import RETRY_LABEL, event_from_row


class LLMStillDown:
    """An LLM enricher (it has a retry label, so the cycle looks for rules fallbacks)."""

    name = "llm"
    retry_label = RETRY_LABEL

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        return {e.id: (rules_enrichment(e), RETRY_LABEL) for e in events if e.id is not None}


async def timed(runs: int, body: Callable[[], Awaitable[object]]) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await body()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


async def status_handler(store: Store, cache: ChartCache, now: datetime) -> None:
    report, narrative = await status_with_narrative(store, SLUG, now)
    version = await store.metrics.version(SLUG)
    png = cache.ready(SLUG, version)
    assert png is not None
    card_to_embed(status_card(report, narrative, discord_time, chart="chart.png"))


async def naive_status_handler(store: Store, now: datetime) -> None:
    store.memo.clear()  # incident statistics from every incident, as before
    report, narrative = await status_with_narrative(store, SLUG, now)
    await store.db.fetchone(
        "SELECT COUNT(*), MAX(at) FROM metric_points WHERE run_slug = ?", (SLUG,)
    )
    card_to_embed(status_card(report, narrative, discord_time, chart="chart.png"))


async def naive_idle_reads(store: Store) -> None:
    """The pending and retry queries an idle cycle used to run (the OR defeats the partial
    index; the retry label was not indexed)."""
    pending = "SELECT * FROM events WHERE (enriched_hash IS NULL OR enriched_hash != content_hash)"
    await store.db.fetchall(pending + " AND source = 'discord' AND kind = 'message' LIMIT 2000")
    await store.db.fetchall(pending + " ORDER BY at LIMIT 200")
    rows = await store.db.fetchall(
        "SELECT * FROM events WHERE enriched_by = ? AND deleted = 0 "
        "AND enriched_hash = content_hash ORDER BY at DESC LIMIT 60",
        (RETRY_LABEL,),
    )
    [event_from_row(r) for r in rows]


#: The bot's chart process, and the old way (a thread of this process) for the naive figure.
DRAWER = ChartDrawer()
THREADS = ChartDrawer(in_process=True)


async def naive_chart(store: Store) -> bytes:
    """The window function over every point, then the same drawing in a thread."""
    return await THREADS.loss_chart(ChartSeries(await naive_chart_data(store), []))


async def measure(store: Store, path: Path, size: int, ingest_rate: float) -> dict[str, float]:
    reader = store.reader
    now = now_for(size)
    cache = ChartCache()
    started = time.perf_counter()
    await cache.get_or_draw(SLUG, await reader.metrics.version(SLUG), lambda: draw(reader))
    first_chart = (time.perf_counter() - started) * 1000
    engine = IncidentEngine(IncidentPosts())
    await run_cycle(store, [], now, enricher=LLMStillDown(), detector=engine)
    heavy = size >= 1_000_000
    out = {
        "status": await timed(30, lambda: status_handler(reader, cache, now)),
        "status_naive": await timed(3 if heavy else 10, lambda: naive_status_handler(reader, now)),
        "idle": await timed(
            10, lambda: run_cycle(store, [], now, enricher=LLMStillDown(), detector=engine)
        ),
        "idle_naive": await timed(3 if heavy else 5, lambda: naive_idle_reads(store)),
        "chart": await timed(5, lambda: ChartCache().get_or_draw(SLUG, "x", lambda: draw(reader))),
        "chart_naive": await timed(2 if heavy else 3, lambda: naive_chart(reader)),
        "ingest": ingest_rate,
        "bytes": db_bytes(path) / size,
        "first_chart": first_chart,
    }
    return out


async def draw(store: Store) -> bytes:
    return await DRAWER.loss_chart(await chart_series(store, SLUG))


async def main_async(sizes: list[int], path: Path) -> list[tuple[int, dict[str, float]]]:
    results = []
    have = max(counts(path)[0], 0)  # a kept store (`--keep`) grows on from where it is
    async with Database.open(path, readers=2) as db:
        store = Store(db)
        await record_run(store)
        for size in sizes:
            if size < have:
                continue  # a kept store already past this size: it cannot be measured there
            started = time.perf_counter()
            grown = await grow(store, have, size)  # nothing to grow: rate 0, no ingest figure
            have = size
            print(
                f"{size:,} events: grown in {time.perf_counter() - started:.0f} s, measuring",
                flush=True,
            )
            results.append((size, await measure(store, path, size, grown.rate)))
            print_table(results)
    await DRAWER.aclose()
    print(
        "first chart (starts the chart process, which imports matplotlib): "
        f"{results[0][1]['first_chart']:.0f} ms"
    )
    print(f"bytes per event at {sizes[-1]:,} events, by table and index:")
    for name, size in where_the_bytes_go(path, sizes[-1]):
        print(f"  {name:32s} {size:6.1f}")
    return results


def print_table(results: list[tuple[int, dict[str, float]]]) -> None:
    print()
    print(
        "| events | points | /status ms (naive) | idle cycle ms (naive reads) "
        "| cold chart ms (naive) | ingest events/s | bytes/event |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size, r in results:
        print(
            f"| {size:,} | {int(size * 0.4):,} | {r['status']:.1f} ({r['status_naive']:.1f}) "
            f"| {r['idle']:.1f} ({r['idle_naive']:.1f}) "
            f"| {r['chart']:.0f} ({r['chart_naive']:.0f}) "
            f"| {r['ingest']:,.0f} | {r['bytes']:.0f} |"
        )
    if len(results) > 1:
        first, last = results[0][1], results[-1][1]
        print(
            f"\n{results[-1][0]:,} / {results[0][0]:,} events: /status ×"
            f"{last['status'] / first['status']:.2f}, "
            f"idle cycle ×{last['idle'] / first['idle']:.2f}, "
            f"cold chart ×{last['chart'] / first['chart']:.2f}"
        )
    print(flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000,5000000")
    parser.add_argument("--db", type=Path, default=None, help="default: a temporary file")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="grow an existing --db on from its size instead of starting afresh (sizes it has "
        "passed are skipped; the size it has is measured without an ingest figure)",
    )
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="runscribe-scaling-") as tmp:
        path = args.db or Path(tmp) / "scaling.db"
        if path.exists() and not args.keep:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        asyncio.run(main_async(sizes, path))
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
