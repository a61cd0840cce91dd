"""Single flight: concurrent calls for one key share one computation, errors reach every caller,
and nothing is kept after it ends."""

from __future__ import annotations

import asyncio

import pytest

from bot.core.flight import SingleFlight


async def test_concurrent_calls_share_one_computation() -> None:
    flights: SingleFlight[int] = SingleFlight()
    release = asyncio.Event()
    calls = 0

    async def compute() -> int:
        nonlocal calls
        calls += 1
        await release.wait()
        return 42

    waiters = [asyncio.create_task(flights.run("k", compute)) for _ in range(50)]
    other = asyncio.create_task(flights.run("other", compute))
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiters) == [42] * 50
    assert await other == 42
    assert calls == 2 and flights.started == 2
    assert await flights.run("k", compute) == 42  # finished flights are not reused
    assert calls == 3


async def test_an_error_reaches_every_caller_and_is_not_kept() -> None:
    flights: SingleFlight[int] = SingleFlight()
    gate = asyncio.Event()

    async def broken() -> int:
        await gate.wait()
        raise LookupError("no such run")

    waiters = [asyncio.create_task(flights.run("k", broken)) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    for waiter in waiters:
        with pytest.raises(LookupError):
            await waiter

    async def fine() -> int:
        return 1

    assert await flights.run("k", fine) == 1


async def test_a_cancelled_caller_leaves_the_computation_to_the_others() -> None:
    flights: SingleFlight[str] = SingleFlight()
    release = asyncio.Event()

    async def compute() -> str:
        await release.wait()
        return "done"

    first = asyncio.create_task(flights.run("k", compute))
    second = asyncio.create_task(flights.run("k", compute))
    await asyncio.sleep(0)
    first.cancel()
    release.set()
    assert await second == "done"
    assert first.cancelled()
