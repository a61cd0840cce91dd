"""Long-lived objects out of the garbage collector's way.

A full collection walks every object the process tracks, and with discord.py, anthropic, wandb and
matplotlib imported those are many: full collections were the slowest callbacks on the event loop
(figures in docs/operations.md). Modules, classes and clients built at start live as long as the
process; `freeze_long_lived` moves them to the permanent generation (`gc.freeze`), so later
collections walk only what was made since. O(1); reference counting still frees everything as
before, only cyclic garbage existing at the moment of the call is kept for good (there is little at
start)."""

from __future__ import annotations

import _sqlite3
import asyncio
import contextlib
import ctypes
import functools
import gc
import itertools
import json
import logging
import os
import re
import signal
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


def freeze_long_lived() -> None:
    """Call after a phase that built long-lived state: the bot's start, a loop's first round,
    the first import of a heavy library."""
    gc.freeze()


@functools.cache
def _libc_call(name: str) -> Callable[..., int] | None:
    """The C library's function `name`, looked up once; None where it has none (musl has no
    mallopt or malloc_trim)."""
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


# glibc's mallopt parameter for how many heap arenas malloc may create.
M_ARENA_MAX = -8


def one_malloc_arena() -> bool:
    """Let every thread allocate from glibc's one main heap. By default each thread that allocates
    (aiosqlite's connection threads, the executor's) gets its own arena, up to 8 per core, and
    memory freed in one is kept there: in soaks of `runscribe run` the free-but-kept heap grew with
    many arenas and stayed flat with one (docs/operations.md). Call before the threads start; False
    where the C library has no such setting (musl)."""
    mallopt = _libc_call("mallopt")
    return mallopt is not None and bool(mallopt(M_ARENA_MAX, 1))


# glibc's mallopt parameters for the size from which a block is mapped on its own, and the free
# space at the heap's end past which it is given back; 128 KiB is glibc's own starting value.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
FIXED_THRESHOLD = 128 * 1024


def fixed_malloc_thresholds() -> bool:
    """Keep blocks of 128 KiB and more out of the heap. glibc starts there but raises the threshold
    to the size of each mapped block that is freed (up to 32 MiB), so after a few big reads (a page
    of 500 events, a gateway payload) blocks of that size are carved from the heap, and each one
    freed between longer-lived small blocks leaves a hole: in soaks of `runscribe run`, with the
    heap in use flat, the free-but-kept heap grew. Setting the thresholds turns that adjustment off.
    False where the C library has no such setting (musl)."""
    mallopt = _libc_call("mallopt")
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, FIXED_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, FIXED_THRESHOLD)
    )


def give_back_free_heap() -> bool:
    """Give the whole free pages inside glibc's heap back to the OS (`malloc_trim(0)`), the holes
    between live blocks as well as the heap's end: free() alone returns only the end. With the heap
    in use flat, the holes were what still grew in soaks of `runscribe run`. The running bot calls
    it every 10 s (`LoopIntervals.heap`); what it saves and costs is measured by
    `bench/bench_soak.py` and `bench/bench_trim.py` (docs/benchmarks.md). False where the C library
    has no such call (musl) or nothing was released."""
    trim = _libc_call("malloc_trim")  # looked up once: the bot calls this every 10 s
    return trim is not None and bool(trim(0))


def collect_cycles() -> int:
    """A full garbage collection; returns the unreachable objects found. CPython starts one by
    itself only once the objects promoted to the oldest generation since the last one number a
    quarter of those it held then, and that count still includes everything `gc.freeze` moved
    out of the way: so in the running bot a full collection almost never came, and cyclic
    garbage that had lived through two young collections (a poll round's clients and responses,
    an interaction's objects, anything alive across an await) stayed, with all it referred to,
    while chat kept the young collections busy. The objects not frozen are few, so this is
    cheap; the bot calls it before each heap trim, which then gives back what it freed."""
    return gc.collect()


async def settle_heap() -> bool:
    """One round of the bot's heap loop: cyclic garbage collected (on the loop: a collection
    holds the interpreter either way), then the free pages given back in a worker thread
    (`give_back_free_heap`)."""
    collect_cycles()
    return await asyncio.to_thread(give_back_free_heap)


# --- a memory diagnostic ---------------------------------------------------------------------
#
# `kill -USR1 <pid>` on `runscribe run` appends one JSON line to `runscribe-memory-<pid>.jsonl`
# in the working directory: resident memory and where it is (Python objects when tracing,
# SQLite's own allocator, glibc's heap in use and free). `kill -USR2` does the same and, when
# the process was started with `PYTHONTRACEMALLOC=25` (Python's own switch), also writes
# `runscribe-heap-<pid>-<n>.tracemalloc`, a tracemalloc snapshot that
# `bench/bench_soak.py --process --trace` (or `tracemalloc.Snapshot.load`) diffs.


# glibc's `struct mallinfo2`, every field a size_t
_MALLINFO2_FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2_FIELDS.split()]


def memory_parts() -> dict[str, float]:
    """Where this process's memory is, in MB (each figure only where the platform tells it)."""
    parts: dict[str, float] = {}
    with contextlib.suppress(OSError), open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                parts[name] = int(value.split()[0]) / 1e3
            elif name == "Threads":
                parts[name] = float(value)
    if tracemalloc.is_tracing():
        parts["python"] = tracemalloc.get_traced_memory()[0] / 1e6
    parts.update(_pymalloc())
    with contextlib.suppress(OSError, AttributeError):
        used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
        used.restype = ctypes.c_int64
        parts["sqlite"] = used() / 1e6
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        parts["heap used"] = (info.uordblks + info.hblkhd) / 1e6
        parts["heap free"] = info.fordblks / 1e6
        parts["heap top"] = info.keepcost / 1e6  # of the free: the top chunk, trimmable
    return parts


def _pymalloc() -> dict[str, float]:
    """Python's small-object allocator: the arenas it holds (memory the OS gave it) and the
    blocks in use in them (what live objects take); the difference is fragmentation. CPython
    prints these only to stderr (`sys._debugmallocstats`), so stderr is borrowed for it."""
    stats = getattr(sys, "_debugmallocstats", None)
    if stats is None:
        return {}
    with tempfile.TemporaryFile("w+b") as capture:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(capture.fileno(), 2)
            stats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode("ascii", "replace")
    found = {}
    arenas = re.search(r"^(\d+) arenas \* (\d+) bytes/arena", text, re.M)
    used = re.search(r"^# bytes in allocated blocks\s*=\s*([\d,]+)", text, re.M)
    if arenas:
        found["pymalloc arenas"] = int(arenas[1]) * int(arenas[2]) / 1e6
    if used:
        found["pymalloc used"] = int(used[1].replace(",", "")) / 1e6
    return found


def dump_memory(folder: Path, n: int, *, snapshot: bool = False) -> Path:
    """One diagnostic dump (see above); returns the JSON lines file."""
    gc.collect()
    pid = os.getpid()
    record: dict[str, object] = {"n": n, "at": time.time(), **memory_parts()}
    if snapshot and tracemalloc.is_tracing():
        path = folder / f"runscribe-heap-{pid}-{n}.tracemalloc"
        tracemalloc.take_snapshot().dump(str(path))
        record["snapshot"] = str(path)
    out = folder / f"runscribe-memory-{pid}.jsonl"
    with out.open("a", encoding="utf-8") as file:
        file.write(json.dumps(record) + "\n")
    return out


def install_memory_dump(loop: asyncio.AbstractEventLoop, folder: Path | None = None) -> bool:
    """SIGUSR1 / SIGUSR2 → `dump_memory` on the loop. False where signals cannot be handled."""
    where = folder or Path.cwd()
    count = itertools.count(1)

    def dump(snapshot: bool) -> None:
        try:
            out = dump_memory(where, next(count), snapshot=snapshot)
        except OSError as exc:
            log.warning("memory dump to %s failed: %s", where, exc)
        else:
            log.info("memory dump appended to %s", out)

    try:
        loop.add_signal_handler(signal.SIGUSR1, dump, False)
        loop.add_signal_handler(signal.SIGUSR2, dump, True)
    except (NotImplementedError, RuntimeError, AttributeError):
        return False
    return True
