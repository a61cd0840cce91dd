"""The incident engine's CPU per poll round, as shipped and as it was.

    python bench/bench_engine.py [--cycles 5] [--repeat 3]

One run that crashes and resumes `cycles` times (an hour of training between crashes, ten
minutes down, ten minutes back: the scenario of `tests/incidents/test_repeat_crashes.py`),
through the real engine on a real SQLite file, one poll round per simulated minute. Timed three
ways in the same process, each `repeat` times on a new database (the best run reported):

- **shipped**: store reads are one trip to the connection's thread (`execute_fetchall`), and a
  round's rollback copies of its incidents are a pickle round trip;
- **history, cursor reads**: reads through an aiosqlite cursor, three trips each (execute, fetch,
  close), as the store read before;
- **history, deepcopy**: the rollback copies by `copy.deepcopy`, as the engine copied before.

CPU is the process's (every thread: SQLite's work runs on the connection's thread), per round.
The alerts each way posts are compared: the three must tell the same story.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bot.incidents.engine as engine_module
import bot.incidents.rounds as rounds_module
from bot.store import Database, Store
from bot.store import db as db_module
from tests.incidents.scenario import RUN_A, RUN_B, Scenario, content

T0 = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


async def _cursor_fetchall(conn: Any, sql: str, params: Any) -> list[Any]:
    async with conn.execute(sql, params) as cursor:
        return list(await cursor.fetchall())


async def _cursor_fetchone(conn: Any, sql: str, params: Any) -> Any:
    async with conn.execute(sql, params) as cursor:
        return await cursor.fetchone()


@contextmanager
def patched(module: Any, **names: Any) -> Iterator[None]:
    old = {name: getattr(module, name) for name in names}
    for name, value in names.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(module, name, value)


async def scenario(cycles: int) -> tuple[float, int, list[str]]:
    """(CPU seconds, poll rounds, the alerts posted) of one run of the scenario."""
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "bench.db") as db:
            sc = Scenario(Store(db), T0)
            rounds = 0
            start = time.process_time()
            await sc.start(RUN_A)
            for _ in range(30):
                await sc.tick()
                rounds += 1
            for _ in range(cycles):
                await sc.tick(minutes=60)
                sc.training = sc.beating = False
                await sc.tick()
                await sc.set_state("crashed")
                for _ in range(10):
                    await sc.tick()
                assert sc.current is not None
                await sc.launch(RUN_B, sc.members[sc.current].step - 500)
                for _ in range(10):
                    await sc.tick()
                rounds += 22
            cpu = time.process_time() - start
            alerts = [content(a) for a in await sc.alerts_posted()]
    return cpu, rounds, alerts


def best(cycles: int, repeat: int, setup: Callable[[], Any]) -> tuple[float, int, list[str]]:
    runs = []
    for _ in range(repeat):
        with setup():
            runs.append(asyncio.run(scenario(cycles)))
    return min(runs, key=lambda r: r[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    ways: dict[str, Callable[[], Any]] = {
        "shipped": lambda: patched(db_module),
        "history, cursor reads": lambda: patched(
            db_module, _fetchall=_cursor_fetchall, _fetchone=_cursor_fetchone
        ),
        "history, deepcopy": lambda: _deepcopy(),
    }
    results = {name: best(args.cycles, args.repeat, setup) for name, setup in ways.items()}
    shipped_cpu, rounds, alerts = results["shipped"]
    print(f"{args.cycles} crash-and-resume cycles, {rounds} poll rounds, best of {args.repeat}")
    for name, (cpu, _, told) in results.items():
        same = "same alerts" if told == alerts else "DIFFERENT ALERTS"
        print(
            f"  {name:<24} {cpu:6.2f} s CPU  {1000 * cpu / rounds:6.1f} ms/round  "
            f"×{cpu / shipped_cpu:4.2f}  {len(told)} alerts, {same}"
        )
    return 0 if all(told == alerts for _, _, told in results.values()) else 1


@contextmanager
def _deepcopy() -> Iterator[None]:
    with (
        patched(rounds_module, replica=copy.deepcopy),
        patched(engine_module, replica=copy.deepcopy),
    ):
        yield


if __name__ == "__main__":
    raise SystemExit(main())
