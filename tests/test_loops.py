"""The one loop supervisor (`bot.loops.repeat`): a failing round is retried with a doubling wait,
a good round resets it, `first_done` runs once, cancellation goes through."""

from __future__ import annotations

import asyncio

import pytest

from bot.loops import repeat


async def test_failures_back_off_and_a_success_resets_the_wait() -> None:
    outcomes = [ValueError, ValueError, None, ValueError, None]
    waits: list[float] = []
    frozen: list[int] = []

    async def body() -> None:
        error = outcomes.pop(0)
        if error is not None:
            raise error("round failed")

    async def sleep(delay: float) -> None:
        waits.append(delay)

    await repeat(
        "test",
        10,
        body,
        max_backoff=35,
        running=lambda: bool(outcomes),
        first_done=lambda: frozen.append(1),
        sleep=sleep,
    )
    assert waits == [20, 35, 10, 20, 10]
    assert frozen == [1]


async def test_cancellation_is_never_swallowed() -> None:
    started = asyncio.Event()

    async def body() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(repeat("test", 1, body))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_wake_cuts_a_healthy_wait_short() -> None:
    wake = asyncio.Event()
    rounds = 0

    async def body() -> None:
        nonlocal rounds
        rounds += 1
        asyncio.get_running_loop().call_soon(wake.set)  # work queued during the round

    await repeat("test", 3600, body, wake=wake, running=lambda: rounds < 3)
    assert rounds == 3  # three waits of an hour, each cut short by the wake-up
