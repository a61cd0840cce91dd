"""Benchmark the Discord command handlers end to end at 1,000,000 events.

    python bench/bench_bot.py [--events 1000000] [--runs 200] [--db bench/results/bench_bot.db]

Measures, on a real SQLite file:
- `/status`: store read (build_status), chart cache lookup, card, discord.Embed;
- `/timeline`: store read (7 days and the whole history, 500 entries), paging, embeds;
- the chart: rendered cold (off the event loop) against served from the cache;
- `/status` and `/timeline` through the fake Discord: gateway INTERACTION_CREATE → the bot →
  the REST callback, i.e. what Discord's 3-second deadline measures.

The database is built once (bulk SQL, ~30 s) and reused while its event count matches.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.app import card_to_embed, discord_time
from bot.render.cards import status_card, timeline_pages
from bot.render.chart import ChartCache, render_series
from bot.services.narrative import status_with_narrative
from bot.services.status import chart_series
from bot.services.timeline import build_timeline
from bot.store import Database, Store
from bot.timeutil import to_db

SLUG = "bench"
NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
DAYS = 120
TAGS = ["incident", "ablation", "optimizer", "training-dynamics", "evals", "data", "infra", "other"]


def build(path: Path, events: int) -> None:
    """Bulk-load a run with `events` enriched events over DAYS days and a point every 5 min."""
    if path.exists():
        with sqlite3.connect(path) as conn:
            try:
                (count,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()
            except sqlite3.Error:
                count = -1
        if count == events:
            return
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)

    async def migrate() -> None:
        async with Database.open(path):
            pass

    asyncio.run(migrate())
    rng = random.Random(7)
    start = NOW - timedelta(days=DAYS)
    config = (
        '{"config":{"slug":"bench","name":"Bench 500B","wandb_runs":["e/p/r1"]},'
        '"launched_at":"' + to_db(start) + '","links":{"W&B":"https://wandb.ai/e/p"},'  # type: ignore[operator]
        '"target_tokens":1.2e13,"timezone":"UTC","total_steps":500000}'
    )
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute(
            "INSERT INTO runs (slug, name, config, updated_at) VALUES (?, ?, ?, ?)",
            (SLUG, "Bench 500B", config, to_db(NOW)),
        )
        span = DAYS * 86400

        def rows() -> Any:
            for n in range(events):
                at = start + timedelta(seconds=span * n / events)
                source = ("github", "discord", "wandb")[n % 3]
                yield (
                    SLUG, source, f"e:{n}", "comment", to_db(at), None, f"user{n % 97}",
                    f"#{1000 + n % 5000}", f"https://github.com/o/r/issues/{1000 + n % 5000}",
                    "open", f"Event {n}", "body " * 20, f"t:{n % 5000}", "{}", 0, f"h{n}",
                    to_db(at), f"Summary of event {n} about the run", TAGS[n % len(TAGS)],
                    int(n % 500 == 0), "rules", f"h{n}",
                )  # fmt: skip

        conn.executemany(
            "INSERT INTO events (run_slug, source, external_id, kind, at, updated_at, author, ref, "
            "url, state, title, body, thread, extra, deleted, content_hash, ingested_at, summary, "
            "tag, incident, enriched_by, enriched_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows(),
        )
        points = []
        step = 0
        for minute in range(0, DAYS * 24 * 60, 5):
            step += 20
            at = start + timedelta(minutes=minute)
            loss = 1.8 + 8 / (1 + step / 2000) + rng.gauss(0, 0.01)
            points.append((SLUG, "e/p/r1", step, to_db(at), step * 4e6, loss))
        conn.executemany(
            "INSERT INTO metric_points (run_slug, wandb_run, step, at, tokens, loss) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            points,
        )
        conn.execute(
            "INSERT INTO source_health (source, scope, last_attempt_at, last_success_at) "
            "VALUES ('wandb', ?, ?, ?), ('github', ?, ?, ?)",
            (SLUG, to_db(NOW), to_db(NOW), SLUG, to_db(NOW), to_db(NOW)),
        )


async def timed(runs: int, body: Callable[[], Awaitable[object]]) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await body()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def row(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"| {name:<46} | {len(samples):>5} | {statistics.median(samples):>9.1f} | {p99:>9.1f} |"


async def status_chart(store: Store, slug: str, cache: ChartCache) -> bytes:
    """What the /status cog does: the cached chart for this data version, else draw and keep it."""
    version = await store.metrics.version(slug)
    png = cache.get(slug, version)
    if png is None:
        png = await render_series(await chart_series(store, slug))
        cache.put(slug, version, png)
    return png


async def handlers(store: Store, runs: int) -> list[str]:
    cache = ChartCache()
    await status_chart(store, SLUG, cache)  # warm, as a running bot would be

    async def status() -> None:
        report, narrative = await status_with_narrative(store, SLUG, NOW)
        version = await store.metrics.version(SLUG)
        png = cache.get(SLUG, version)
        assert png is not None
        card_to_embed(status_card(report, narrative, discord_time, chart="chart.png"))

    def timeline(days: int) -> Callable[[], Awaitable[None]]:
        async def body() -> None:
            entries = await build_timeline(store, SLUG, NOW, days=days, limit=500)
            pages = timeline_pages(entries, "Timeline", discord_time)
            for page in pages:
                card_to_embed(page)

        return body

    async def chart_cold() -> None:
        await status_chart(store, SLUG, ChartCache())

    async def chart_cached() -> None:
        await status_chart(store, SLUG, cache)

    return [
        row("/status handler (store → embed, chart cached)", await timed(runs, status)),
        row("/timeline handler, 7 days, 500 entries", await timed(runs, timeline(7))),
        row("/timeline handler, 3650 days, 500 entries", await timed(runs, timeline(3650))),
        row("chart cold (query + render in a thread)", await timed(max(3, runs // 20), chart_cold)),
        row("chart served from cache", await timed(runs, chart_cached)),
    ]


async def through_discord(db: Path, runs: int) -> list[str]:
    """Interaction dispatched by the fake gateway → callback received by the fake REST API."""
    from bot.app import LoopIntervals, RunscribeBot, apply_endpoints
    from bot.settings import Settings, parse_runs
    from tests.fakes.discord import FakeDiscord

    async with FakeDiscord(channels={1234567890: "bench"}) as fake:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            discord_token=fake.token,
            discord_api_base=fake.api_base,
            discord_gateway_url=fake.gateway_url,
            discord_guild_id=fake.guild_id,
            runscribe_db=db,
        )
        async with Database.open(db) as database:
            store = Store(database)

            class Runtime:
                def __init__(self) -> None:
                    self.settings = settings
                    self.store = store
                    self.runs = parse_runs(
                        {"runs": [{"slug": SLUG, "name": "Bench 500B", "github_repo": "o/r"}]}
                    )

                async def cycle(self, now: datetime) -> None:
                    return None

            apply_endpoints(settings)
            bot = RunscribeBot(
                Runtime(),  # type: ignore[arg-type]
                guild_ready_timeout=0,
                clock=lambda: NOW,
                intervals=LoopIntervals(poll=3600, outbox=3600, digest=3600),
            )
            task = asyncio.create_task(bot.start(fake.token))
            await asyncio.wait_for(bot.wait_until_ready(), 30)
            first = await fake.slash("status")  # draws and caches the chart
            await first.callback
            await fake.wait_for(lambda: first.followups, within=30)

            async def command(name: str, options: list[dict[str, Any]]) -> list[float]:
                samples = []
                for _ in range(runs):
                    record = await fake.slash(name, options)
                    await record.callback
                    assert record.answered_at is not None
                    samples.append((record.answered_at - record.received_at) * 1000)
                return samples

            out = [
                row("/status via fake Discord (event → callback)", await command("status", [])),
                row(
                    "/timeline via fake Discord (event → callback)",
                    await command("timeline", [{"name": "days", "type": 4, "value": 7}]),
                ),
            ]
            await bot.close()
            task.cancel()
            return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--db", type=Path, default=Path("bench/results/bench_bot.db"))
    args = parser.parse_args()
    started = time.perf_counter()
    build(args.db, args.events)
    ready = time.perf_counter() - started
    print(f"database: {args.db} ({args.events:,} events), ready in {ready:.1f} s")

    async def measure() -> list[str]:
        async with Database.open(args.db) as db:
            rows = await handlers(Store(db), args.runs)
        return rows + await through_discord(args.db, max(10, args.runs // 4))

    rows = asyncio.run(measure())
    print(f"| {'measurement':<46} | {'runs':>5} | {'median ms':>9} | {'p99 ms':>9} |")
    print(f"|{'-' * 48}|{'-' * 7}|{'-' * 11}|{'-' * 11}|")
    for line in rows:
        print(line)


if __name__ == "__main__":
    main()
