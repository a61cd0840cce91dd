"""Nothing may block the event loop: the e2e fixtures run the loop in asyncio's debug mode with a
100 ms slow-callback threshold and fail the test on a report of a callback that held the loop.

asyncio measures wall time, and on a shared machine (two cores, several test suites) a callback
of 5 ms can take 150 ms of wall time while its thread waits for a CPU. So each callback is also
measured from the kernel's side (`/proc/thread-self/schedstat`: time on a CPU, time waiting in
the run queue) and with `time.thread_time`. A report fails the test when the callback held the
loop for the threshold *excluding the time its thread waited for a CPU*: running (parsing, SQL,
an import, a garbage collection) or blocked (a sleep, a synchronous read, waiting for the GIL)
both count. Only run-queue wait, which no code of ours causes, is taken off; a report that is
starvation alone is printed with its figures, not failed.

`RUNSCRIBE_LOOP_STACKS=1` samples the loop thread's stack during slow callbacks and prints it,
to find what blocks.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

THRESHOLD = 0.1  # seconds


@dataclass(frozen=True)
class Cost:
    """One callback as the loop thread lived it, in seconds."""

    wall: float
    cpu: float  # on a CPU (time.thread_time)
    waited: float  # runnable but waiting for a CPU (the run-queue delay)
    gc: float = 0.0  # of the wall time, in garbage collections

    @property
    def held(self) -> float:
        """The time the callback held the loop itself: all but the wait for a CPU."""
        return self.wall - self.waited

    def blocked_loop(self, threshold: float) -> bool:
        return self.held >= threshold

    def __str__(self) -> str:
        return (
            f"wall {self.wall * 1000:.0f} ms, waiting for a CPU {self.waited * 1000:.0f} ms, "
            f"CPU {self.cpu * 1000:.0f} ms, GC {self.gc * 1000:.0f} ms"
        )


class RunQueue:
    """Nanoseconds this thread has waited for a CPU (the second field of its schedstat)."""

    def __init__(self) -> None:
        path = f"/proc/self/task/{threading.get_native_id()}/schedstat"
        self._fd: int | None = os.open(path, os.O_RDONLY) if os.path.exists(path) else None

    def waited(self) -> float:
        if self._fd is None:
            return 0.0  # no schedstat: wall time is judged as it is
        return int(os.pread(self._fd, 128, 0).split()[1]) / 1e9

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SlowCallbacks(logging.Handler):
    """Pairs asyncio's "Executing … took" reports with the cost measured around the same
    callback (asyncio logs right after the callback returns, on the loop thread)."""

    def __init__(self, threshold: float) -> None:
        super().__init__(logging.WARNING)
        self.threshold = threshold
        self.last: Cost | None = None
        self.gc_time = 0.0  # wall time in collections on the loop thread, running total
        self._gc_began = 0.0
        self.blocked: list[str] = []
        self.starved: list[str] = []

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_began = time.perf_counter()
        else:
            self.gc_time += time.perf_counter() - self._gc_began

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not (message.startswith("Executing ") and " took " in message):
            return
        cost, self.last = self.last, None
        if cost is not None and not cost.blocked_loop(self.threshold):
            self.starved.append(f"{message} ({cost})")
        else:
            self.blocked.append(f"{message} ({cost or 'not measured'})")


class _Sampler(threading.Thread):
    """Diagnosis (RUNSCRIBE_LOOP_STACKS=1): the loop thread's stack every 10 ms while one
    callback has run for 30 ms or more, printed with the report, to find what blocks."""

    def __init__(self, thread: int) -> None:
        super().__init__(daemon=True)
        self.thread = thread
        self.started: float | None = None
        self.stacks: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.01):
            started = self.started
            if started is None or time.perf_counter() - started < 0.03:
                continue
            frame = sys._current_frames().get(self.thread)
            if frame is not None:
                self.stacks.append("".join(traceback.format_stack(frame, limit=12)))


def _measured(
    run: Callable[[asyncio.Handle], None],
    handler: SlowCallbacks,
    thread: int,
    queue: RunQueue,
    sampler: _Sampler | None,
) -> Callable[[asyncio.Handle], None]:
    def _run(handle: asyncio.Handle) -> None:
        if threading.get_ident() != thread:
            run(handle)
            return
        if sampler is not None:
            sampler.stacks = []
            sampler.started = time.perf_counter()
        # The wall clock outermost: a wait for a CPU between two readings counts as held, never
        # the other way round (the check may be strict by a few microseconds, never lenient).
        wall = time.perf_counter()
        waited, cpu, collecting = queue.waited(), time.thread_time(), handler.gc_time
        try:
            run(handle)
        finally:
            cpu, waited = time.thread_time() - cpu, queue.waited() - waited
            handler.last = Cost(
                wall=time.perf_counter() - wall,
                cpu=cpu,
                waited=waited,
                gc=handler.gc_time - collecting,
            )
            if sampler is not None:
                sampler.started = None
                if handler.last.wall >= handler.threshold:
                    print(f"--- {handle!r:.200} {handler.last}", file=sys.stderr)
                    for stack in sampler.stacks:
                        print(stack, file=sys.stderr)

    return _run


@asynccontextmanager
async def no_slow_callbacks(threshold: float = THRESHOLD) -> AsyncIterator[SlowCallbacks]:
    loop = asyncio.get_running_loop()
    debug, duration = loop.get_debug(), loop.slow_callback_duration
    handler = SlowCallbacks(threshold)
    original = asyncio.Handle._run
    sampler = _Sampler(threading.get_ident()) if os.environ.get("RUNSCRIBE_LOOP_STACKS") else None
    if sampler is not None:
        sampler.start()
    queue = RunQueue()
    asyncio.Handle._run = _measured(original, handler, threading.get_ident(), queue, sampler)  # type: ignore[method-assign]
    loop.set_debug(True)
    loop.slow_callback_duration = threshold
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    gc.callbacks.append(handler.on_gc)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        gc.callbacks.remove(handler.on_gc)
        loop.set_debug(debug)
        loop.slow_callback_duration = duration
        asyncio.Handle._run = original  # type: ignore[method-assign]
        queue.close()
        if sampler is not None:
            sampler.done.set()
    for line in handler.starved:
        print("starved, not blocked:", line)
    if handler.blocked:
        pytest.fail("the event loop was blocked:\n" + "\n".join(handler.blocked[:5]), pytrace=False)
