"""The slow-callback check itself: it fails a test whose callback held the loop (running or
blocked), and lets pass only what was time spent waiting for a CPU. The checks that must fire
pass a small threshold and block for well over it: they depend on no timing (a blocked
callback holds the loop at least as long as it blocks, however busy the machine)."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.slow_callbacks import THRESHOLD, Cost, RunQueue, _Before, no_slow_callbacks


def burn(seconds: float) -> None:
    """Busy for `seconds` of this thread's CPU time, however loaded the machine is."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_the_tests_bound_is_for_blocking_calls_only() -> None:
    assert THRESHOLD >= 2.0


async def test_a_callback_that_computes_for_longer_than_the_bound_fails_the_test() -> None:
    with pytest.raises(pytest.fail.Exception, match="the event loop was blocked"):
        async with no_slow_callbacks(0.05):
            await asyncio.sleep(0)  # the check measures from the next callback on
            burn(0.15)
            await asyncio.sleep(0)


async def test_a_callback_that_sleeps_longer_than_the_bound_fails_the_test() -> None:
    with pytest.raises(pytest.fail.Exception, match="the event loop was blocked"):
        async with no_slow_callbacks(0.05):
            await asyncio.sleep(0)
            time.sleep(0.5)  # noqa: ASYNC251 - the blocking call under test
            await asyncio.sleep(0)


async def test_short_callbacks_pass_and_the_loop_is_restored() -> None:
    original = asyncio.Handle._run
    async with no_slow_callbacks(record=True) as check:
        assert asyncio.Handle._run is not original
        for _ in range(20):
            await asyncio.sleep(0.001)
    assert not check.blocked
    assert check.costs is not None and len(check.costs) >= 20  # every callback was measured
    assert asyncio.Handle._run is original


async def test_reporting_only_never_fails() -> None:
    async with no_slow_callbacks(0.05, fail=False) as check:
        await asyncio.sleep(0)
        burn(0.1)
        await asyncio.sleep(0)
    assert len(check.blocked) == 1


def test_only_the_wait_for_a_cpu_is_excused() -> None:
    # 300 ms of wall time, 290 of them waiting for a CPU: starvation, the callback held 10 ms
    assert not Cost(wall=0.3, cpu=0.01, waited=0.29).blocked_loop(0.1)
    # the same wall time with no wait: it slept or blocked for 290 ms
    assert Cost(wall=0.3, cpu=0.01, waited=0.0).blocked_loop(0.1)
    # starved, but it also ran for 120 ms
    assert Cost(wall=0.5, cpu=0.12, waited=0.38).blocked_loop(0.1)
    # it started a thread, which waited 200 ms for a CPU before it could say it was running
    assert not Cost(wall=0.25, cpu=0.01, waited=0.03, started=0.2).blocked_loop(0.1)
    # off-CPU for 290 ms while a worker (holding the GIL) waited 250 ms for a CPU
    assert not Cost(wall=0.3, cpu=0.01, waited=0.0, others=0.25).blocked_loop(0.1)
    # the same, but the callback ran for 150 ms itself: its CPU time is never excused
    assert Cost(wall=0.3, cpu=0.15, waited=0.0, others=0.3).blocked_loop(0.1)
    # off-CPU for 290 ms while the other threads hardly waited: a sleep or a blocking call
    assert Cost(wall=0.3, cpu=0.01, waited=0.0, others=0.02).blocked_loop(0.1)


def test_the_reading_before_a_long_callback_is_its_own() -> None:
    queue = RunQueue()
    before = _Before(queue, every=0.001)
    before.start()
    try:
        before.running = 1.0  # a callback that began at 1.0 runs long: it is read while it runs
        until = time.monotonic() + 10
        while before.since(1.0) is None and time.monotonic() < until:
            time.sleep(0.001)
        assert before.since(1.0) is not None
        assert before.since(2.0) is None  # never another callback's reading
        before.running = None
    finally:
        before.done.set()
        before.join()
        queue.close()
