"""Nothing may block the event loop: the bot and e2e fixtures measure every callback the loop
runs and fail the test when one held the loop for THRESHOLD (5 s) or more. That bound is for a
real blocking call only (a synchronous sleep or network call, a wait on a lock, a long
computation on the loop); a test never fails because the machine is busy. How long callbacks
take is a figure, measured by `bench/bench_loop.py` with this same instrument, never a test.

asyncio measures wall time, and on a shared machine (two cores, several test suites) a callback
of 5 ms can take 150 ms of wall time while its thread waits for a CPU. So each callback is also
measured from the kernel's side (`/proc/self/task/*/schedstat`: time waiting in the run queue)
and with `time.thread_time`. A callback held the loop for its wall time *excluding waits for a
CPU*; running (parsing, SQL, an import, a garbage collection) and blocking (a sleep, a
synchronous read) count. The waits taken off, none of which code of ours causes:

- the loop thread's own run-queue wait;
- the run-queue wait of a thread or process the callback started (`Thread.start` and a fork
  return only once the new one has run);
- while the loop thread was off its CPU without being runnable, the run-queue wait of the
  process's other threads, up to that off-CPU time: a worker preempted while it holds the GIL
  stalls the loop until the worker gets a CPU again.

The run queue is read once a callback has run for a moment (`_Before`), not before every
callback: the waits before that reading are not taken off, so the check is stricter by at most
that moment. The callback's own CPU time is never taken off. A callback whose wall time reached
the bound but which held the loop for less is printed with its figures, not failed. The loop is
not put in asyncio's debug mode (its per-callback tracebacks cost the whole suite CPU time); the
wrapper around `Handle._run` sees every callback itself.

`RUNSCRIBE_LOOP_STACKS=1` samples the loop thread's stack during slow callbacks and prints it,
to find what blocks.
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

THRESHOLD = 5.0  # seconds: only a real blocking call holds the loop this long


@dataclass(frozen=True)
class Cost:
    """One callback as the loop thread lived it, in seconds."""

    wall: float
    cpu: float  # on a CPU (time.thread_time)
    waited: float  # runnable but waiting for a CPU (the run-queue delay)
    gc: float = 0.0  # of the wall time, in garbage collections
    # Starting a thread or a process waits until it runs: for the part of that wait the new
    # thread or process spent waiting for a CPU, the loop waited for a CPU too.
    started: float = 0.0
    others: float = 0.0  # run-queue wait of the process's other threads meanwhile
    others_ran: float = 0.0  # CPU time of the process's other threads meanwhile

    @property
    def stalled(self) -> float:
        """Off-CPU, not runnable, waiting for no thread it started: asleep, blocked in a
        system call, or waiting for the GIL."""
        return max(0.0, self.wall - self.waited - self.started - self.cpu)

    @property
    def held(self) -> float:
        """The time the callback held the loop itself: all but the waits for a CPU."""
        return self.wall - self.waited - self.started - min(self.others, self.stalled)

    def blocked_loop(self, threshold: float) -> bool:
        return self.held >= threshold

    def __str__(self) -> str:
        return (
            f"wall {self.wall * 1000:.0f} ms, waiting for a CPU {self.waited * 1000:.0f} ms, "
            f"for a started thread's CPU {self.started * 1000:.0f} ms, other threads waiting "
            f"for a CPU {self.others * 1000:.0f} ms (running {self.others_ran * 1000:.0f} ms), "
            f"CPU {self.cpu * 1000:.0f} ms, "
            f"GC {self.gc * 1000:.0f} ms"
        )


def queue_wait(path: str) -> float:
    """Seconds the task of a schedstat file has waited for a CPU (its second field); 0 when
    the kernel keeps no schedstat or the task is gone."""
    try:
        with open(path, "rb") as file:
            return int(file.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class RunQueue:
    """Run-queue waits of the loop thread and of the process's other threads, in seconds (one
    pread per thread per reading; the thread list is refreshed when Python's thread count
    changes)."""

    def __init__(self) -> None:
        self.own = threading.get_native_id()
        self._fds: dict[int, int] = {}
        self._count = -1
        self._lock = threading.Lock()
        self.available = os.path.exists(f"/proc/self/task/{self.own}/schedstat")
        self._refresh()

    def _refresh(self) -> None:
        count = threading.active_count()
        if count == self._count or not self.available:
            return
        self._count = count
        try:
            present = {int(name) for name in os.listdir("/proc/self/task")}
        except OSError:
            present = set()
        for tid in set(self._fds) - present:
            os.close(self._fds.pop(tid))
        for tid in present - set(self._fds):
            try:
                self._fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            except OSError:
                pass

    def read(self) -> dict[int, bytes]:
        """Each thread's schedstat as read, unparsed (the loop thread and `_Before` both read)."""
        with self._lock:
            self._refresh()
            readings: dict[int, bytes] = {}
            for tid, fd in self._fds.items():
                try:
                    readings[tid] = os.pread(fd, 128, 0)
                except OSError:
                    continue  # the thread has ended
            return readings

    @staticmethod
    def times(readings: dict[int, bytes]) -> dict[int, tuple[float, float]]:
        """Each thread's total (time on a CPU, run-queue wait) in a reading."""
        times: dict[int, tuple[float, float]] = {}
        for tid, raw in readings.items():
            try:
                ran, waited = raw.split()[:2]
                times[tid] = (int(ran) / 1e9, int(waited) / 1e9)
            except ValueError:
                continue
        return times

    def since(self, readings: dict[int, bytes]) -> tuple[float, float, float]:
        """(the loop thread's wait, the other threads' waits, the other threads' CPU time)
        since `readings` (a `read()`)."""
        before, after = self.times(readings), self.times(self.read())
        # No reading on either side (the files closed while the callback ran, as the check's
        # own exit does): no wait known, none taken off.
        if self.own in after and self.own in before:
            own = max(0.0, after[self.own][1] - before[self.own][1])
        else:
            own = 0.0
        others = [
            (ran - before[tid][0], waited - before[tid][1])
            for tid, (ran, waited) in after.items()
            if tid != self.own and tid in before
        ]
        return (
            own,
            sum(max(0.0, waited) for _, waited in others),
            sum(max(0.0, ran) for ran, _ in others),
        )

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


class _Before(threading.Thread):
    """The readings before a callback, taken only for one that runs long: every `every`
    seconds, the first time it sees a callback still running, it reads the run queue. That
    reading comes after the callback began, so the waits it leaves out count as held: the check
    is stricter by at most `every`, never lenient. Reading before every callback instead cost
    the suite about 10 µs of CPU per callback; almost all of them end within a millisecond."""

    def __init__(self, queue: RunQueue, every: float) -> None:
        super().__init__(daemon=True)
        self.queue = queue
        self.every = every
        self.running: float | None = None  # when the callback running now began
        self.readings: tuple[float, dict[int, bytes]] | None = None  # (its start, the reading)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every):
            began = self.running
            if began is not None and (self.readings is None or self.readings[0] != began):
                self.readings = (began, self.queue.read())

    def since(self, began: float) -> dict[int, bytes] | None:
        """The reading taken while the callback that began at `began` ran, if any."""
        readings = self.readings
        return readings[1] if readings is not None and readings[0] == began else None


class SlowCallbacks:
    """What the loop lived through: every callback that held it for `threshold` or more
    (`blocked`), the ones that only looked slow because they waited for a CPU (`starved`), and,
    when `record` is set (the benchmark), the cost of every callback."""

    def __init__(self, threshold: float, *, record: bool = False) -> None:
        self.threshold = threshold
        self.gc_time = 0.0  # wall time in collections on the loop thread, running total
        self.start_wait = 0.0  # waits for started threads and processes to get a CPU, total
        self._gc_began = 0.0
        self.blocked: list[str] = []
        self.starved: list[str] = []
        self.costs: list[tuple[Cost, str]] | None = [] if record else None

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_began = time.perf_counter()
        else:
            self.gc_time += time.perf_counter() - self._gc_began

    def report(self, handle: asyncio.Handle, cost: Cost) -> None:
        if self.costs is not None:
            # The handle's repr is costly: kept only for the callbacks worth naming.
            self.costs.append((cost, f"{handle!r:.200}" if cost.wall >= 0.002 else ""))
        if cost.blocked_loop(self.threshold):
            self.blocked.append(f"{handle!r:.300} held the loop ({cost})")
        elif cost.wall >= self.threshold:
            self.starved.append(f"{handle!r:.300} ({cost})")


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
    before: _Before | None,
) -> Callable[[asyncio.Handle], None]:
    """`before` None: the run queue is read before every callback (the benchmark records every
    cost); else only while a callback runs long (`_Before`)."""

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
        waits = queue.read() if before is None else None
        cpu = time.thread_time()
        collecting, starting = handler.gc_time, handler.start_wait
        if before is not None:
            before.running = wall
        try:
            run(handle)
        finally:
            took = time.perf_counter() - wall
            if before is not None:
                before.running = None
                waits = before.since(wall)
            # A callback holds the loop for at most its wall time (`Cost.held`), so one shorter
            # than the threshold is neither blocked nor starved: unless every cost is recorded,
            # its figures are not worked out (the readings after it and the parsing are most
            # of what the check costs the suite).
            if handler.costs is not None or took >= handler.threshold:
                cpu = time.thread_time() - cpu
                # no reading while it ran: no wait known, none taken off
                waited, others, others_ran = (
                    queue.since(waits) if waits is not None else (0.0, 0.0, 0.0)
                )
                cost = Cost(
                    wall=time.perf_counter() - wall,
                    cpu=cpu,
                    waited=waited,
                    gc=handler.gc_time - collecting,
                    started=handler.start_wait - starting,
                    others=others,
                    others_ran=others_ran,
                )
                handler.report(handle, cost)
            else:
                cost = None
            if sampler is not None:
                sampler.started = None
                if cost is not None and cost.wall >= handler.threshold:
                    print(f"--- {handle!r:.200} {cost}", file=sys.stderr)
                    for stack in sampler.stacks:
                        print(stack, file=sys.stderr)

    return _run


def _starts(
    start: Callable[..., Any], handler: SlowCallbacks, thread: int, schedstat: Callable[[Any], str]
) -> Callable[..., Any]:
    """`Thread.start` or `Popen._execute_child`, adding to `handler.start_wait` the part of the
    wait that the new thread or process spent waiting for a CPU."""

    def starting(self: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != thread:
            return start(self, *args, **kwargs)
        began = time.perf_counter()
        try:
            return start(self, *args, **kwargs)
        finally:
            took = time.perf_counter() - began
            handler.start_wait += min(took, queue_wait(schedstat(self)))

    return starting


@asynccontextmanager
async def no_slow_callbacks(
    threshold: float = THRESHOLD, *, record: bool = False, fail: bool = True
) -> AsyncIterator[SlowCallbacks]:
    """Measure every callback the running loop runs on this thread; on leaving, fail the test
    if one held the loop for `threshold` or more (`fail=False`: only report)."""
    handler = SlowCallbacks(threshold, record=record)
    original = asyncio.Handle._run
    sampler = _Sampler(threading.get_ident()) if os.environ.get("RUNSCRIBE_LOOP_STACKS") else None
    if sampler is not None:
        sampler.start()
    queue = RunQueue()
    before = None if record else _Before(queue, every=min(0.1, threshold / 20))
    if before is not None:
        before.start()
    loop_thread = threading.get_ident()
    asyncio.Handle._run = _measured(original, handler, loop_thread, queue, sampler, before)  # type: ignore[method-assign]
    thread_start, spawn = threading.Thread.start, subprocess.Popen._execute_child  # type: ignore[attr-defined]
    threading.Thread.start = _starts(  # type: ignore[method-assign]
        thread_start, handler, loop_thread, lambda t: f"/proc/self/task/{t.native_id}/schedstat"
    )
    subprocess.Popen._execute_child = _starts(  # type: ignore[attr-defined]
        spawn, handler, loop_thread, lambda p: f"/proc/{getattr(p, 'pid', None)}/schedstat"
    )
    gc.callbacks.append(handler.on_gc)
    try:
        yield handler
    finally:
        gc.callbacks.remove(handler.on_gc)
        asyncio.Handle._run = original  # type: ignore[method-assign]
        threading.Thread.start = thread_start  # type: ignore[method-assign]
        subprocess.Popen._execute_child = spawn  # type: ignore[attr-defined]
        if before is not None:
            before.done.set()
            before.join()
        queue.close()
        if sampler is not None:
            sampler.done.set()
    for line in handler.starved:
        print("starved, not blocked:", line)
    if fail and handler.blocked:
        pytest.fail("the event loop was blocked:\n" + "\n".join(handler.blocked[:5]), pytrace=False)
