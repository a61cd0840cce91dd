"""The Discord commands at 1,000,000 events and 400,000 metric points, alone and under load.

    python bench/bench_bot.py [--events 1000000] [--runs 60] [--db bench/results/bench_bot.db]

The store is built through the store API (bench/history.py; reused while its counts match).
Measured, each next to the naive approach it replaced, in the same run:

1. Handlers (store → card → discord.Embed), medians: `/status` with the chart cached, `/timeline`
   7 days and whole history; naive: the chart version by COUNT(*)/MAX(at) over every point.
2. The chart: cold (buckets → PNG in a worker thread) vs the window function over every point;
   25 concurrent misses with single flight vs 25 independent renders (time, renders, RSS).
3. Through the fake Discord, run in its own thread and event loop as an independent server:
   50 concurrent `/status`, and 25 `/status` + 25 `/timeline`, while the bot is idle and while a
   poll cycle ingests and enriches a 20,000-event backlog. Reported: acknowledgement latency
   (interaction sent → first callback) and final reply latency (→ the answer itself: a direct
   reply or the followup after a deferral), p50/p95/max, and how many were acknowledged within
   Discord's 3 s. Naive: the commands as they were: on the writer's connection, each computing
   its own answer, deferring only to draw the chart (the store's counters and buckets stay).
4. One-shot `runscribe status` wall time on the same store, next to `import anthropic` alone
   (which it used to pay for).

The naive columns are this project's earlier versions (history, to show what changed), not fair
baselines: the figures are judged against Discord's 3 s deadline and issue goals. The fair
comparisons live elsewhere: reading a day of points, `bench_rates.py` (SQL thinning at read
time); `/status` on an active run with charts redrawn, `bench_charts.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_bot import FakeServer, fake_discord_settings
from history import NAME, SLUG, counts, grow, naive_chart_data, now_for, record_run

from bot.app import (
    LoopIntervals,
    RunscribeBot,
    card_to_embed,
    discord_time,
)
from bot.config.settings import parse_runs
from bot.incidents.engine import IncidentEngine
from bot.models import Event
from bot.posts.incidents import IncidentPosts
from bot.process.runtime import Runtime
from bot.render.cards import status_card, timeline_pages
from bot.render.chart import ChartCache
from bot.render.drawer import ChartDrawer
from bot.services.narrative import status_with_narrative
from bot.services.status import ChartSeries, chart_series
from bot.services.timeline import build_timeline
from bot.sources.base import PollResult
from bot.store import Database, Store
from tests.fakes.discord import FakeDiscord, Interaction

T = TypeVar("T")
POINTS_PER_EVENT = 0.4
BACKLOG = 20_000


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(samples):8.1f} | {p95:8.1f}"


async def timed(runs: int, body: Callable[[], Awaitable[object]]) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await body()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


# --- 1 and 2: handlers and the chart ----------------------------------------------------------


async def handlers(store: Store, now: datetime, runs: int) -> list[str]:
    reader = store.reader
    cache = ChartCache()
    drawer = ChartDrawer()  # the bot's: a child process
    threads = ChartDrawer(in_process=True)  # the old way: a thread of this process

    async def draw() -> bytes:
        return await drawer.loss_chart(await chart_series(reader, SLUG))

    async def draw_cold_child() -> None:
        await drawer.aclose()
        await draw()

    await cache.get_or_draw(SLUG, await reader.metrics.version(SLUG), draw)

    async def status() -> None:
        report, narrative = await status_with_narrative(reader, SLUG, now)
        assert cache.ready(SLUG, await reader.metrics.version(SLUG)) is not None
        card_to_embed(status_card(report, narrative, discord_time, chart="chart.png"))

    async def status_naive() -> None:
        reader.memo.clear()  # incident statistics recomputed, as before
        report, narrative = await status_with_narrative(reader, SLUG, now)
        await reader.db.fetchone(
            "SELECT COUNT(*), MAX(at) FROM metric_points WHERE run_slug = ?", (SLUG,)
        )
        card_to_embed(status_card(report, narrative, discord_time, chart="chart.png"))

    def timeline(days: int) -> Callable[[], Awaitable[None]]:
        async def body() -> None:
            entries = await build_timeline(reader, SLUG, now, days=days, limit=500)
            for page in timeline_pages(entries, "Timeline", discord_time):
                card_to_embed(page)

        return body

    async def chart_cold() -> None:
        await ChartCache().get_or_draw(SLUG, "cold", draw)

    async def chart_naive() -> None:
        await threads.loss_chart(ChartSeries(await naive_chart_data(reader), []))

    async def chart_data() -> None:
        await chart_series(reader, SLUG)

    async def chart_data_naive() -> None:
        await naive_chart_data(reader)

    cpu = time.process_time()
    status_samples = await timed(runs, status)
    cpu_ms = (time.process_time() - cpu) * 1000 / runs
    rows = [
        f"| /status handler (chart cached) | {ms(status_samples)} | "
        f"{ms(await timed(max(3, runs // 10), status_naive))} |",
        f"| /status handler, CPU ms per call (both threads) | {cpu_ms:8.1f} | | |",
        f"| /timeline handler, 7 days, 500 entries | {ms(await timed(runs, timeline(7)))} | | |",
        f"| /timeline handler, 3650 days, 500 entries | {ms(await timed(runs, timeline(3650)))} "
        "| | |",
        f"| chart data (buckets vs window over every point) | {ms(await timed(10, chart_data))} | "
        f"{ms(await timed(3, chart_data_naive))} |",
        f"| chart cold (data + PNG in the warm chart process) | {ms(await timed(5, chart_cold))} | "
        f"{ms(await timed(3, chart_naive))} |",
        f"| chart with a cold chart process (start + import + draw) "
        f"| {ms(await timed(3, draw_cold_child))} | | |",
    ]

    async def draw_in_thread() -> bytes:
        return await threads.loss_chart(await chart_series(reader, SLUG))

    rows.append(await chart_burst(draw, draw_in_thread))
    await drawer.aclose()
    return rows


async def chart_burst(
    draw: Callable[[], Awaitable[bytes]], naive: Callable[[], Awaitable[bytes]]
) -> str:
    """25 concurrent misses of one version: single flight in the chart process vs every miss
    rendering in a thread of this process (this process's RSS: the child's is its own)."""
    gc.collect()
    base = rss_mb()
    cache = ChartCache()
    start = time.perf_counter()
    await asyncio.gather(*(cache.get_or_draw(SLUG, "burst", draw) for _ in range(25)))
    single = (time.perf_counter() - start) * 1000
    gc.collect()
    after_single = rss_mb() - base
    start = time.perf_counter()
    await asyncio.gather(*(naive() for _ in range(25)))
    naive = (time.perf_counter() - start) * 1000
    peak_naive = rss_mb() - base
    gc.collect()
    return (
        f"| 25 concurrent chart misses | {single:8.0f} ms, {cache.draws} render, "
        f"RSS +{after_single:.0f} MB | {naive:8.0f} ms, 25 renders, RSS +{peak_naive:.0f} MB |"
    )


# --- 3: through the fake Discord ----------------------------------------------------------------


class Backlog:
    """A source whose next poll brings BACKLOG new GitHub comments (a first-start backfill)."""

    name = "github"
    key = "github:o/r:backlog"
    run_slugs = [SLUG]

    def __init__(self, store: Store, now: datetime):
        self.store = store
        self.now = now
        self.round = 0
        self.armed = False
        self.started = asyncio.Event()

    async def poll(self, now: datetime) -> PollResult:
        if not self.armed:
            return PollResult()
        self.armed = False
        self.round += 1
        self.started.set()
        events = [
            Event(
                run_slug=SLUG,
                source="github",
                external_id=f"backlog:{self.round}:{i}",
                kind="comment",
                at=self.now - timedelta(hours=2) + timedelta(seconds=i * 0.3),
                author=f"user{i % 31}",
                ref=f"#{9000 + i % 300}",
                url=f"https://github.com/o/r/issues/{9000 + i % 300}#issuecomment-{i}",
                title="Hero run: loss spike investigation",
                body=f"Reran shard {i} with the fixed loader; loss back on the curve at step {i}.",
                thread=f"github:o/r#{9000 + i % 300}",
            )
            for i in range(BACKLOG)
        ]
        result = await self.store.events.upsert_many(events)
        return PollResult(events=len(result.changed), requests=BACKLOG // 100)


async def burst(
    server: FakeServer, fake: FakeDiscord, bot: RunscribeBot, commands: list[str]
) -> list[Interaction]:
    async def send(name: str) -> Interaction:
        options = [{"name": "days", "type": 4, "value": 7}] if name == "timeline" else []
        return await fake.slash(name, options)

    records = await asyncio.gather(*(server.call(send(name)) for name in commands))
    await until(lambda: all(r.finished_at is not None for r in records), within=120)
    return list(records)


async def until(predicate: Callable[[], bool], *, within: float) -> None:
    for _ in range(int(within / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)


def summarize(label: str, records: list[Interaction]) -> str:
    acks = [(r.answered_at - r.received_at) * 1000 for r in records if r.answered_at]
    finals = [(r.finished_at - r.received_at) * 1000 for r in records if r.finished_at]
    within = sum(1 for a in acks if a <= 3000)
    deferred = sum(1 for r in records if r.followups)
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(len(xs) * q))] if xs else float("nan")  # noqa: E731
    return (
        f"| {label} | {within}/{len(records)} | {p(acks, 0.5):6.0f} / {p(acks, 0.95):6.0f} / "
        f"{max(acks, default=float('nan')):6.0f} | {p(finals, 0.5):6.0f} / {p(finals, 0.95):6.0f} "
        f"| {deferred} | {len(records) - len(finals)} |"
    )


class EachComputes:
    """No single flight: every command computes its own answer (as before)."""

    started = 0

    async def run(self, key: object, compute: Callable[[], Awaitable[T]]) -> T:
        return await compute()


class NaiveBot(RunscribeBot):
    """The commands as they were: on the writer's connection, every one computing its own
    answer, deferring only to draw the chart."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.flights = EachComputes()  # type: ignore[assignment]

    @property
    def busy(self) -> bool:
        return False


async def through_discord(path: Path, now: datetime, readers: int) -> list[str]:
    naive = readers == 0
    label = f"{readers} read-only connections" if readers else "naive"
    rows = []
    server_ref = FakeServer(channels={1234567890: "bench"})
    async with server_ref as fake, Database.open(path, readers=readers) as database:
        store = Store(database)
        settings = fake_discord_settings(fake, path)
        backlog = Backlog(store, now)
        runtime = Runtime(
            settings=settings,
            runs=parse_runs({"runs": [{"slug": SLUG, "name": NAME, "github_repo": "o/r"}]}),
            store=store,
            sources=(backlog,),
            detector=IncidentEngine(IncidentPosts()),
        )
        bot = (NaiveBot if naive else RunscribeBot)(
            runtime,
            guild_ready_timeout=0,
            clock=lambda: now,
            intervals=LoopIntervals(poll=3600, outbox=3600, digest=3600, narrative=3600),
        )
        task = asyncio.create_task(bot.start(fake.token))
        await asyncio.wait_for(bot.wait_until_ready(), 60)
        await until(lambda: bot.cycles >= 1, within=60)
        await burst(server_ref, fake, bot, ["status"])  # a running bot has drawn its chart
        for name, commands in (
            ("50 /status", ["status"] * 50),
            ("25 /status + 25 /timeline", ["status", "timeline"] * 25),
        ):
            records = await burst(server_ref, fake, bot, commands)
            rows.append(summarize(f"{name}, idle, {label}", records))
            backlog.armed = True
            backlog.started.clear()
            cycle = asyncio.create_task(bot.poll_once())
            await backlog.started.wait()
            records = await burst(server_ref, fake, bot, commands)
            await cycle
            during = f"{name}, during a {BACKLOG:,}-event backlog cycle, {label}"
            rows.append(summarize(during, records))
        await bot.close()
        task.cancel()
    return rows


def wall(argv: list[str], env: dict[str, str], runs: int = 5) -> list[float]:
    """Wall ms per run; the CPU ms (user + system) of the same runs are kept in `CPU`."""
    samples = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True, timeout=120)
        samples.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    return samples


CPU: list[float] = []


def cpu_ms() -> str:
    taken = statistics.median(CPU)
    CPU.clear()
    return f"{taken:.0f}"


def one_shot_cli(db: Path) -> list[str]:
    """`runscribe status` as a user runs it, next to what it no longer pays for: the LLM SDK
    import it used to pull in (through render → services → llm)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "ANTHROPIC_"))}
    env["RUNSCRIBE_DB"] = str(db)
    python = sys.executable
    rows = []
    for label, argv in (
        ("one-shot `runscribe status` (wall, start to exit)", [python, "-m", "bot", "status"]),
        ("one-shot `runscribe status --json`", [python, "-m", "bot", "status", "--json"]),
        ("`import anthropic` alone (the old status paid it)", [python, "-c", "import anthropic"]),
        ("python start alone", [python, "-c", "pass"]),
    ):
        timing = ms(wall(argv, env))
        rows.append(f"| {label}; CPU {cpu_ms()} ms | {timing} | | |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--db", type=Path, default=Path("bench/results/bench_bot.db"))
    parser.add_argument("--skip-naive-discord", action="store_true")
    args = parser.parse_args()
    points = int(args.events * POINTS_PER_EVENT)
    started = time.perf_counter()
    if counts(args.db) != (args.events, points):
        args.db.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{args.db}{suffix}").unlink(missing_ok=True)

        async def build() -> None:
            async with Database.open(args.db) as db:
                store = Store(db)
                await record_run(store)
                await grow(store, 0, args.events)

        asyncio.run(build())
    print(
        f"database: {args.db} ({args.events:,} events, {points:,} points), "
        f"ready in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    now = now_for(args.events)

    async def measure() -> tuple[list[str], list[str]]:
        async with Database.open(args.db, readers=2) as db:
            rows = await handlers(Store(db), now, args.runs)
        discord_rows = await through_discord(args.db, now, readers=2)
        if not args.skip_naive_discord:
            discord_rows += await through_discord(args.db, now, readers=0)
        return rows, discord_rows

    rows, discord_rows = asyncio.run(measure())
    rows += one_shot_cli(args.db)
    print("\n| measurement | median ms | p95 ms | naive median ms | naive p95 ms |")
    print("|---|---:|---:|---:|---:|")
    for line in rows:
        print(line)
    print(
        "\n| burst | acked ≤ 3 s | ack ms p50 / p95 / max | final ms p50 / p95 | deferred "
        "| unanswered |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for line in discord_rows:
        print(line)


if __name__ == "__main__":
    main()
