"""How long the bot holds its event loop: every callback of a working bot, measured.

    python bench/bench_loop.py [--rounds 5]

The bundled sample run is replayed into a fresh SQLite file; the bot runs in this process (as
`runscribe run` does) against the fake Discord, which runs on its own thread and event loop as
an independent server. While the bot starts, draws its charts, answers `rounds` bursts of
10 `/status`, 10 `/timeline`, 5 `/forecast` and 5 `/incidents list`, stores 20 messages from a
watched channel and runs a poll cycle after each burst, every callback its loop runs is
measured by the instrument the tests use (`tests/slow_callbacks.py`): its wall time, and the
time it *held* the loop (wall time less the waits for a CPU, from `/proc/…/schedstat`).

Reported: callbacks, held and wall p50 / p99 / max, how many held the loop for 100 ms or more,
and the longest five. The tests fail only on a callback that holds the loop for seconds (a real
blocking call); this figure is where a 100 ms goal is watched.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_bot import FakeServer, fake_discord_settings

from bot.app import LoopIntervals, RunscribeBot
from bot.core.timeutil import utcnow
from bot.process.demo import replay_into, sample_runs_file
from bot.process.runtime import Runtime
from bot.sources.replay import load_sample
from bot.store import Database, Store
from tests.fakes.discord import Interaction
from tests.slow_callbacks import Cost, no_slow_callbacks
from tests.waiting import until

GOAL = 0.1  # seconds: what a callback should never hold the loop for


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def measure(rounds: int, directory: Path) -> tuple[list[tuple[Cost, str]], int]:
    now = utcnow()
    sample = load_sample(now)
    path = directory / "bench_loop.db"
    async with Database.open(path) as db:
        await replay_into(Store(db), sample)
    runs = sample_runs_file(sample)
    watched = int(runs.runs[0].watch_channels[0])
    server = FakeServer(
        guild_id=sample.discord_guild_id or 900_000_000_000_000_001,
        channels=sample.discord_channels,
    )
    answered = 0
    async with server as fake, Database.open(path, readers=2) as database:
        store = Store(database)
        settings = fake_discord_settings(fake, path, directory / "runscribe.toml")
        runtime = Runtime(settings=settings, runs=runs, store=store)
        bot = RunscribeBot(
            runtime,
            guild_ready_timeout=0,
            intervals=LoopIntervals(poll=3600, outbox=0.05, digest=3600, narrative=3600),
        )
        async with no_slow_callbacks(GOAL, record=True, fail=False) as check:
            task = asyncio.create_task(bot.start(fake.token))
            await asyncio.wait_for(bot.wait_until_ready(), 120)
            await until(lambda: bot.cycles >= 1, "the first poll cycle")
            for round_ in range(rounds):
                commands: list[tuple[str, str | None]] = (
                    [("status", None)] * 10
                    + [("timeline", None)] * 10
                    + [("forecast", None)] * 5
                    + [("incidents", "list")] * 5
                )
                records: list[Interaction] = await asyncio.gather(
                    *(server.call(fake.slash(name, subcommand=sub)) for name, sub in commands)
                )
                for n in range(20):
                    await server.call(fake.say(watched, f"bench round {round_} line {n}"))
                await until(lambda: all(r.finished_at for r in records), "answers")  # noqa: B023
                answered += len(records)
                await bot.poll_once()
            await bot.close()
            await asyncio.wait_for(task, 30)
        assert check.costs is not None
        return check.costs, answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    directory = Path(tempfile.mkdtemp(prefix="bench_loop-"))
    started = time.perf_counter()
    try:
        costs, answered = asyncio.run(measure(args.rounds, directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    held = [cost.held for cost, _ in costs]
    wall = [cost.wall for cost, _ in costs]
    print(f"load average {load:.1f} → {os.getloadavg()[0]:.1f}; {answered} commands answered")
    print(f"{len(costs)} callbacks in {time.perf_counter() - started:.0f} s")
    for label, values in (("held", held), ("wall", wall)):
        print(
            f"{label}: p50 {ms(quantile(values, 0.5))}, p99 {ms(quantile(values, 0.99))}, "
            f"max {ms(max(values))}; {sum(v >= GOAL for v in values)} at or over {ms(GOAL)}"
        )
    print("the longest five (held):")
    for cost, name in sorted(costs, key=lambda c: c[0].held, reverse=True)[:5]:
        print(f"  {ms(cost.held)} held, {cost}: {name or '(short)'}")


if __name__ == "__main__":
    main()
