"""The memory diagnostic (bot.core.heap): a real SIGUSR1 / SIGUSR2 to this process appends where the
memory is to a JSON lines file, and SIGUSR2 under tracemalloc writes a snapshot that loads."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from bot.core.heap import install_memory_dump, memory_parts
from bot.store import Database
from tests.waiting import PATIENCE, until


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_memory_parts_name_resident_sqlite_and_heap(tmp_path: Path) -> None:
    async with Database.open(tmp_path / "a.db") as db:
        await db.fetchall("SELECT count(*) FROM events")
        parts = memory_parts()
    assert parts["VmRSS"] > 0 and parts["RssAnon"] > 0 and parts["Threads"] >= 1
    assert parts["sqlite"] > 0  # an open connection holds SQLite memory
    assert parts["heap used"] > 0 and parts["heap free"] >= parts["heap top"] >= 0
    assert 0 < parts["pymalloc used"] <= parts["pymalloc arenas"]  # live objects, their arenas


async def test_usr1_appends_a_line_and_usr2_a_snapshot(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    assert install_memory_dump(loop, tmp_path)
    out = tmp_path / f"runscribe-memory-{os.getpid()}.jsonl"
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start(5)
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        (first,) = await until(lambda: lines(out), "the SIGUSR1 line")
        assert first["n"] == 1 and "snapshot" not in first
        assert float(first["VmRSS"]) > 0  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGUSR2)
        second = (await until(lambda: lines(out)[1:], "the SIGUSR2 line"))[0]
    finally:
        if started:
            tracemalloc.stop()
        for sig in (signal.SIGUSR1, signal.SIGUSR2):
            loop.remove_signal_handler(sig)
    assert second["n"] == 2 and float(second["python"]) > 0  # type: ignore[arg-type]
    snapshot = tracemalloc.Snapshot.load(str(second["snapshot"]))
    assert snapshot.traces  # a real snapshot, with the allocations made since tracing began


ARENAS = """
import ctypes, sys, threading
from bot.core.heap import one_malloc_arena
if sys.argv[1] == "one":
    assert one_malloc_arena()
def work():
    buffers = [ctypes.create_string_buffer(2000) for _ in range(1000)]
    del buffers
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fdopen.restype = ctypes.c_void_p
out = ctypes.c_void_p(libc.fdopen(1, b"w"))
libc.malloc_info(0, out)
libc.fflush(out)
"""


@pytest.mark.parametrize(("mode", "one"), [("one", True), ("default", False)])
def test_threads_allocate_from_one_heap_once_limited(mode: str, one: bool) -> None:
    """glibc's own account (malloc_info) of its heaps after four threads allocated: one, once
    `one_malloc_arena` ran first; more without it (each thread its own)."""
    done = subprocess.run(
        [sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    heaps = done.stdout.count("<heap nr=")
    assert heaps == 1 if one else heaps > 1, done.stdout[:300]


THRESHOLDS = """
import ctypes, sys
from bot.core.heap import _MallInfo2, fixed_malloc_thresholds
if sys.argv[1] == "fixed":
    assert fixed_malloc_thresholds()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = _MallInfo2
libc.free(libc.malloc(8 << 20))  # a mapped 8 MiB block, freed: glibc raises its threshold
mapped = libc.mallinfo2().hblkhd
block = libc.malloc(1 << 20)
print(libc.mallinfo2().hblkhd - mapped)
"""


@pytest.mark.parametrize(("mode", "fixed"), [("fixed", True), ("default", False)])
def test_big_blocks_stay_out_of_the_heap_once_thresholds_are_fixed(mode: str, fixed: bool) -> None:
    """glibc's own account (mallinfo2: bytes in mapped blocks) of where a 1 MiB block goes after
    an 8 MiB one was freed: mapped on its own once `fixed_malloc_thresholds` ran; carved from
    the heap without it (the threshold rose to 8 MiB)."""
    done = subprocess.run(
        [sys.executable, "-c", THRESHOLDS, mode], capture_output=True, text=True, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    grew = int(done.stdout)
    assert grew >= 1 << 20 if fixed else grew == 0, grew


HOLES = """
import ctypes, sys
from bot.core.heap import fixed_malloc_thresholds, give_back_free_heap
assert fixed_malloc_thresholds()  # as `run` sets them: 32 KiB blocks are carved from the heap
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
def anon_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon:"))
size = 32 << 10
blocks = [libc.malloc(size) for _ in range(512)]
for block in blocks:
    ctypes.memset(block, 1, size)
for block in blocks[::2]:  # 8 MiB of holes between live blocks, none at the heap's end
    libc.free(block)
before = anon_kb()
if sys.argv[1] == "trim":
    give_back_free_heap()
print(before - anon_kb())
"""


@pytest.mark.parametrize(("mode", "trim"), [("trim", True), ("kept", False)])
def test_free_pages_between_live_blocks_go_back_once_trimmed(mode: str, trim: bool) -> None:
    """The kernel's account (RssAnon) of 8 MiB of 32 KiB holes between live heap blocks: glibc
    keeps every page of them resident on its own (free() gives back only the heap's end); most
    go back once `give_back_free_heap` ran (each hole's first page also holds glibc's
    bookkeeping)."""
    done = subprocess.run(
        [sys.executable, "-c", HOLES, mode], capture_output=True, text=True, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    released_kb = int(done.stdout)
    assert released_kb >= 6 * 1024 if trim else released_kb < 512, released_kb
