"""Soak: an accelerated day of a busy run through the fake Discord, RSS sampled.

    python bench/bench_soak.py [--messages 5760] [--poll-every 4] [--command-every 40]
                               [--trace] [--unbounded]
    python bench/bench_soak.py --minutes 30 --rate 6 [--slope-minutes 10]

One process: the fake Discord and a RunscribeBot on a real SQLite file seeded with the bundled
sample run. A simulated day: a member message every 15 s (5,760), a poll cycle (enrich, detect,
outbox) every minute, `/status` and `/timeline` every 10 minutes, each as fast as the machine
goes. RSS (resident set, after a garbage collection) is sampled 20 times; the first quarter is
warm-up (SQLite's page cache, the first chart). Goal: flat within 10 % after warm-up. The fake's
own records are trimmed as it goes, so only the bot is measured.

`--minutes M --rate R`: in real time instead, the way the chaos check soaks the bot: R member
messages a second for M minutes, a poll cycle every minute, `/status` and `/timeline` every two
minutes; RSS sampled every 30 s, and the slope of the last `--slope-minutes` (least squares,
MB/min) printed. Goal: ≤ 0.05 MB/min.

`--unbounded`: the same day with the library's defaults, the baseline a competent engineer
starts from (discord.py's 1,000-message cache, every `/timeline` pager kept until its view's
timeout). `--trace`: the ten allocation sites
that grew most after warm-up (tracemalloc), to find a leak.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_bot import fake_discord_settings

from bot.app import LoopIntervals, RunscribeBot
from bot.demo import replay_into, sample_runs_file
from bot.runtime import Runtime
from bot.sources.replay import load_sample
from bot.store import Database, Store
from bot.timeutil import utcnow
from tests.fakes.discord import FakeDiscord

PAGE = os.sysconf("SC_PAGE_SIZE")
WORDS = (
    "loss spiked at step {n} after the data shard swap; rolling back to the last checkpoint",
    "node {n} lost, the scheduler restarted the job",
    "eval numbers for checkpoint {n} look fine, MMLU up a bit",
    "anyone seeing NCCL timeouts on rack {n}?",
    "merged the fix for the tokenizer edge case (#{n})",
)


def rss_mb() -> float:
    gc.collect()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 1e6


async def soak(args: argparse.Namespace) -> tuple[list[tuple[int, float]], list[str]]:
    now = utcnow()
    sample = load_sample(now)
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    db = folder / "soak.db"
    async with Database.open(db) as database:
        await replay_into(Store(database), sample)
    guild = sample.discord_guild_id or 900_000_000_000_000_001
    async with FakeDiscord(guild_id=guild, channels=sample.discord_channels) as fake:
        settings = fake_discord_settings(fake, db, folder / "runscribe.toml")
        async with Database.open(db) as database:
            store = Store(database)
            runtime = Runtime(settings=settings, runs=sample_runs_file(sample), store=store)
            options = {"max_messages": 1000} if args.unbounded else {}
            bot = RunscribeBot(
                runtime,
                guild_ready_timeout=0,
                intervals=LoopIntervals(poll=3600, outbox=0.5, digest=3600, narrative=3600),
                **options,
            )
            task = asyncio.create_task(bot.start(fake.token))
            await asyncio.wait_for(bot.wait_until_ready(), 30)
            if args.unbounded:  # every /timeline pager lives until its timeout
                bot.get_cog("Timeline").live_pagers = 10**9  # type: ignore[union-attr]
            channel = int(sample.run_config["watch_channels"][0])
            samples: list[tuple[int, float]] = []
            every = max(1, args.messages // 20)
            snapshot = None
            if args.minutes:
                samples = await timed_soak(args, bot, fake, channel)
                await bot.close()
                task.cancel()
                return samples, []
            for n in range(1, args.messages + 1):
                text = WORDS[n % len(WORDS)].format(n=n)
                await fake.say(channel, text, author_id=10_000 + n % 37, author_name=f"m{n % 37}")
                if n % args.poll_every == 0:
                    await bot.poll_once()
                    await bot.drain_outbox()
                if n % args.command_every == 0:
                    for name, options in (
                        ("status", []),
                        ("timeline", [{"name": "days", "type": 4, "value": 1}]),
                    ):
                        record = await fake.slash(name, options)
                        answer = await asyncio.wait_for(record.callback, 120)
                        if answer.get("type") == 5:  # deferred: the card follows
                            await fake.wait_for(
                                lambda r=record: r.followups or r.original, within=120
                            )
                if n % 200 == 0:  # the fake's own records are not the bot's memory
                    fake.requests.clear()
                    fake.interactions.clear()
                    fake.nonces.clear()
                    del fake._backlog[:]  # events kept for a RESUME replay
                    for messages in fake.messages.values():
                        del messages[:-200]
                if n % every == 0:
                    samples.append((n, rss_mb()))
                    if args.trace and len(samples) == 5:
                        snapshot = tracemalloc.take_snapshot()
            top: list[str] = []
            if snapshot is not None:
                stats = tracemalloc.take_snapshot().compare_to(snapshot, "lineno")
                top = [str(stat) for stat in stats[:10]]
            await bot.close()
            task.cancel()
    return samples, top


async def commands_once(fake: FakeDiscord) -> None:
    for name, options in (("status", []), ("timeline", [{"name": "days", "type": 4, "value": 1}])):
        record = await fake.slash(name, options)
        answer = await asyncio.wait_for(record.callback, 120)
        if answer.get("type") == 5:  # deferred: the card follows
            await fake.wait_for(lambda r=record: r.followups or r.original, within=120)


def trim(fake: FakeDiscord) -> None:
    """The fake's own records are not the bot's memory."""
    fake.requests.clear()
    fake.interactions.clear()
    fake.nonces.clear()
    del fake._backlog[:]
    for messages in fake.messages.values():
        del messages[:-200]


async def timed_soak(
    args: argparse.Namespace, bot: RunscribeBot, fake: FakeDiscord, channel: int
) -> list[tuple[int, float]]:
    """Real time: `rate` messages a second for `minutes`; samples are (elapsed s, RSS MB)."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    end = began + args.minutes * 60
    samples: list[tuple[int, float]] = [(0, rss_mb())]
    n = 0
    next_poll, next_commands, next_sample = began + 60, began + 120, began + 30
    while (now := loop.time()) < end:
        due = int((now - began) * args.rate)
        while n < due:
            n += 1
            text = WORDS[n % len(WORDS)].format(n=n)
            await fake.say(channel, text, author_id=10_000 + n % 37, author_name=f"m{n % 37}")
            if n % 200 == 0:
                trim(fake)
        if now >= next_poll:
            await bot.poll_once()
            await bot.drain_outbox()
            next_poll += 60
        if now >= next_commands:
            await commands_once(fake)
            next_commands += 120
        if now >= next_sample:
            samples.append((int(now - began), rss_mb()))
            next_sample += 30
        await asyncio.sleep(0.05)
    print(f"{n:,} messages in {args.minutes} min ({n / (args.minutes * 60):.1f}/s)")
    return samples


def slope_mb_per_min(samples: list[tuple[int, float]], minutes: float) -> float:
    last = samples[-1][0]
    window = [(t / 60, mb) for t, mb in samples if t >= last - minutes * 60]
    if len(window) < 2:
        return 0.0
    mean_t = sum(t for t, _ in window) / len(window)
    mean_m = sum(m for _, m in window) / len(window)
    num = sum((t - mean_t) * (m - mean_m) for t, m in window)
    den = sum((t - mean_t) ** 2 for t, _ in window)
    return num / den if den else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=5760)
    parser.add_argument("--poll-every", type=int, default=4, help="messages per poll cycle")
    parser.add_argument("--command-every", type=int, default=40, help="messages per command pair")
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--minutes", type=float, default=0, help="real-time soak length")
    parser.add_argument("--rate", type=float, default=6.0, help="messages a second (real time)")
    parser.add_argument("--slope-minutes", type=float, default=10.0)
    parser.add_argument(
        "--unbounded",
        action="store_true",
        help="the old behaviour: discord.py's 1,000-message cache, every pager kept",
    )
    args = parser.parse_args()
    if args.trace:
        tracemalloc.start(10)
    start = rss_mb()
    began = time.perf_counter()
    samples, top = asyncio.run(soak(args))
    took = time.perf_counter() - began
    if args.minutes:
        print("RSS MB every 30 s: " + " ".join(f"{mb:.0f}" for _, mb in samples))
        slope = slope_mb_per_min(samples, args.slope_minutes)
        print(
            f"  start {samples[0][1]:.1f} MB, end {samples[-1][1]:.1f} MB; slope of the last "
            f"{args.slope_minutes:g} min: {slope:+.3f} MB/min (goal: at most +0.05)"
        )
        return
    warm = samples[len(samples) // 4 - 1][1]
    after = [mb for _, mb in samples[len(samples) // 4 :]]
    growth = (max(after) - warm) / warm * 100
    print(f"{args.messages:,} messages, {args.messages // args.poll_every:,} polls, "
          f"{2 * (args.messages // args.command_every):,} commands in {took:.0f} s")  # fmt: skip
    print("RSS MB: " + " ".join(f"{mb:.0f}" for _, mb in samples))
    print(
        f"  before start {start:.0f} MB; after warm-up {warm:.0f} MB; end {samples[-1][1]:.0f} MB"
    )
    during = (warm - samples[0][1]) / samples[0][1] * 100
    print(f"  growth after warm-up: {growth:+.1f} % (goal: within 10 %); "
          f"during warm-up (baseline): {during:+.1f} %")  # fmt: skip
    for line in top:
        print("  " + line)


if __name__ == "__main__":
    main()
