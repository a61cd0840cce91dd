"""The one loop supervisor (`bot.core.loops.repeat`): a failing round is retried with a doubling
wait, a good round resets it, `first_done` runs once, cancellation goes through."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from bot.core.loops import Retries, repeat
from bot.store import Store


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


class Refused(AssertionError):
    """A loop waited out its whole backoff: nothing cut it short."""


async def never(delay: float) -> None:
    raise Refused(f"waited out a {delay:g} s backoff")


async def test_a_wake_cuts_a_backoff_short() -> None:
    """The store was full for a round; an alert queued meanwhile wakes the poster, which tries
    again at once instead of waiting out its backoff (issue 35: a 64 s wait after space came
    back)."""
    wake = asyncio.Event()
    rounds: list[str] = []

    async def body() -> None:
        rounds.append("round")
        asyncio.get_running_loop().call_soon(wake.set)  # an alert queued during the round
        if len(rounds) == 1:
            raise sqlite3.OperationalError("database or disk is full")

    await repeat("outbox", 3600, body, wake=wake, running=lambda: len(rounds) < 2, sleep=never)
    assert rounds == ["round", "round"]


async def test_a_loop_going_through_again_retries_the_others_at_once() -> None:
    """Two loops failed on a full disk and back off; the moment one goes through (space is
    back, and news woke it), the other tries again instead of waiting out its hour."""
    retries = Retries()
    outbox_failed, poll_wake = asyncio.Event(), asyncio.Event()
    outbox_rounds: list[bool] = []
    poll_rounds: list[bool] = []

    async def outbox() -> None:
        outbox_rounds.append(True)
        if len(outbox_rounds) == 1:
            outbox_failed.set()
            raise sqlite3.OperationalError("database or disk is full")

    async def poll() -> None:
        poll_rounds.append(True)
        # new data pushed during each round: ends its backoff, then its healthy wait
        asyncio.get_running_loop().call_soon(poll_wake.set)
        if len(poll_rounds) == 1:
            raise sqlite3.OperationalError("database or disk is full")

    async def idle(delay: float) -> None:
        assert delay == 3600  # the healthy wait after the retry, not a backoff
        outbox_rounds.append(False)

    waiting = asyncio.create_task(
        repeat(
            "outbox",
            3600,
            outbox,
            max_backoff=3600,
            retries=retries,
            running=lambda: len(outbox_rounds) < 2,
            sleep=idle,
        )
    )
    await outbox_failed.wait()  # the outbox loop now waits out its backoff
    await repeat(
        "poll",
        3600,
        poll,
        wake=poll_wake,
        retries=retries,
        running=lambda: len(poll_rounds) < 2,
        sleep=never,
    )
    await waiting
    assert outbox_rounds[:2] == [True, True]


async def test_a_probe_ends_a_backoff_once_the_store_takes_writes() -> None:
    seen: list[BaseException] = []
    answers = [False, False, True]
    rounds: list[str] = []
    healthy: list[float] = []

    async def body() -> None:
        rounds.append("round")
        if len(rounds) == 1:
            raise sqlite3.OperationalError("database is locked")

    async def probe(error: Exception) -> bool:
        seen.append(error)
        return answers.pop(0)

    async def sleep(delay: float) -> None:
        healthy.append(delay)

    await repeat(
        "poll",
        3600,
        body,
        probe=probe,
        probe_every=0.001,
        running=lambda: len(rounds) < 2,
        sleep=sleep,
    )
    assert rounds == ["round", "round"] and answers == []
    assert [str(e) for e in seen] == ["database is locked"] * 3
    assert healthy == [3600]  # only the wait after the good round


async def test_the_store_probe(store: Store) -> None:
    """`Database.came_back`: true for a full disk or a lock once the store takes a write; a
    damaged page or any other error is never cut short."""
    full = sqlite3.OperationalError("database or disk is full")
    assert await store.db.came_back(full)
    assert await store.db.came_back(sqlite3.OperationalError("database is locked"))
    assert not await store.db.came_back(sqlite3.DatabaseError("database disk image is malformed"))
    assert not await store.db.came_back(ValueError("a bug"))
    assert await store.db.user_version() > 0  # the version it rewrote is unchanged
