"""Benchmark the outbox drain under a 429 storm, through discord.py and the fake Discord.

    python bench/bench_drain.py [--posts 40] [--storm 60] [--retry-after 0.3] [--repeat 3]

Queues `posts` alerts for one channel, makes the fake answer the next `storm` posts with 429
(`Via` header, JSON body, `retry_after`), and drains the way the bot's outbox loop does (one
drain, then the loop's 2 s interval while anything is left). Reports, medians of `repeat` runs:
- the same posts without faults (the baseline of this machine),
- the storm's delivery time against the sum of its `retry_after` values (goal: under 2×),
and checks every post arrived once, in order.

The `retry_after` values are SET BY THE FAKE (`--retry-after`, 0.3 s): the storm's time is only
meaningful as a ratio to their sum. That sum is the comparison: no client that obeys the 429s
can deliver sooner, so it is the bound a competent implementation is judged against (the bot's
earlier growing backoff, 137 s, is history, not a baseline).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.app import LoopIntervals, RunscribeBot, apply_endpoints
from bot.config.settings import Settings, parse_runs
from bot.models import OutboxItem
from bot.outbox.payload import make_payload
from bot.process.runtime import Runtime
from bot.store import Database, Store
from tests.fakes.discord import FakeDiscord

CHANNEL = 1234567890


async def drain_once(posts: int, storm: int, retry_after: float) -> float:
    """Seconds from the first drain until every post is delivered and marked."""
    async with FakeDiscord(channels={CHANNEL: "alerts"}) as fake:
        with tempfile.TemporaryDirectory() as folder:
            db = Path(folder) / "drain.db"
            settings = Settings(
                _env_file=None,  # type: ignore[call-arg]
                discord_token=fake.token,
                discord_api_base=fake.api_base,
                discord_gateway_url=fake.gateway_url,
                discord_guild_id=None,
                runscribe_db=db,
                runscribe_config=Path(folder) / "runscribe.toml",
            )
            async with Database.open(db) as database:
                store = Store(database)
                run = {"slug": "bench", "name": "Bench", "github_repo": "o/r"}
                runs = parse_runs({"runs": [run]})
                for n in range(posts):
                    await store.outbox.enqueue(
                        OutboxItem(CHANNEL, "alert", make_payload(f"alert {n}"), f"drain:{n}")
                    )
                apply_endpoints(settings)
                bot = RunscribeBot(
                    Runtime(settings=settings, runs=runs, store=store),
                    guild_ready_timeout=0,
                    run_loops=False,
                )
                task = asyncio.create_task(bot.start(fake.token))
                await asyncio.wait_for(bot.wait_until_ready(), 30)
                if storm:
                    fake.inject(
                        "POST", rf"^/channels/{CHANNEL}/messages$", 429, count=storm,
                        retry_after=retry_after,
                    )  # fmt: skip
                interval = LoopIntervals().outbox
                started = time.perf_counter()
                while True:
                    await bot.drain_outbox()
                    if not await store.outbox.pending_count():
                        break
                    await asyncio.sleep(interval)  # the outbox loop's pace
                elapsed = time.perf_counter() - started
                texts = [str(m["content"]).split("\u2063")[0] for m in fake.posted(CHANNEL)]
                assert texts == [f"alert {n}" for n in range(posts)], "lost, doubled or reordered"
                limited = sum(1 for r in fake.requests if r.status == 429)
                assert limited == storm, (limited, storm)
                await bot.close()
                task.cancel()
                return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--posts", type=int, default=40)
    parser.add_argument("--storm", type=int, default=60)
    parser.add_argument("--retry-after", type=float, default=0.3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    async def measure() -> tuple[list[float], list[float]]:
        calm, storm = [], []
        for _ in range(args.repeat):
            calm.append(await drain_once(args.posts, 0, args.retry_after))
            storm.append(await drain_once(args.posts, args.storm, args.retry_after))
        return calm, storm

    calm, storm = asyncio.run(measure())
    budget = args.storm * args.retry_after
    calm_s, storm_s = statistics.median(calm), statistics.median(storm)
    print(f"{args.posts} posts, {args.storm} × 429 with retry_after {args.retry_after} s "
          f"(sum {budget:.1f} s), median of {args.repeat}")  # fmt: skip
    print(f"  no faults (baseline):   {calm_s:6.2f} s")
    print(f"  under the 429 storm:    {storm_s:6.2f} s  = {storm_s / budget:.2f} × the sum "
          f"of retry_after (goal < 2×)")  # fmt: skip
    print(f"  storm minus baseline:   {storm_s - calm_s:6.2f} s  = "
          f"{(storm_s - calm_s) / budget:.2f} × the sum")  # fmt: skip


if __name__ == "__main__":
    main()
