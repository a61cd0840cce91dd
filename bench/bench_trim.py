"""What the bot's heap trim (every 10 s) costs and gives back (`bot.core.heap.give_back_free_heap`).

    python bench/bench_trim.py [--mb 33] [--rounds 20] [--churn 0.05]

A glibc heap shaped like `runscribe run`'s at steady state (about 33 MB in use, in blocks of
0.5–64 kB: what Python hands to malloc past pymalloc's 512 bytes, SQLite's pages and
statements), with the thresholds `run` sets. Each round frees and reallocates `churn` of the
blocks at random (a minute of the bot's traffic, which leaves holes between blocks that stay),
then trims. Reported: the trim's wall time (p50 / p95 / max; it runs in a worker thread, and
while it runs other threads' mallocs wait for glibc's lock), the resident memory each round's
trim gave back, and how the heap's resident memory grew over `rounds` rounds left alone (the
baseline, first) and over as many with a trim after each, in this process.
"""

from __future__ import annotations

import argparse
import ctypes
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.core.heap import fixed_malloc_thresholds, give_back_free_heap

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]


def anon_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon:"))


def block_size(rng: random.Random) -> int:
    return int(min(64_000, 512 * rng.lognormvariate(1.0, 1.2)))


def allocate(rng: random.Random) -> tuple[int, int]:
    size = block_size(rng)
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    return block, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=33.0, help="heap in use")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--churn", type=float, default=0.05, help="blocks replaced each round")
    args = parser.parse_args()
    if not fixed_malloc_thresholds():
        sys.exit("this C library has no mallopt (not glibc): nothing to measure")
    rng = random.Random(7)
    blocks: list[tuple[int, int]] = []
    while sum(size for _, size in blocks) < args.mb * 1e6:
        blocks.append(allocate(rng))

    def churn() -> None:
        for i in rng.sample(range(len(blocks)), int(len(blocks) * args.churn)):
            libc.free(blocks[i][0])
            blocks[i] = allocate(rng)

    start = anon_kb()
    for _ in range(args.rounds):  # the baseline: glibc left alone
        churn()
    kept = anon_kb() - start
    times, released = [], []
    for _ in range(args.rounds):
        churn()
        before = anon_kb()
        began = time.perf_counter()
        give_back_free_heap()
        times.append((time.perf_counter() - began) * 1e3)
        released.append(before - anon_kb())
    trimmed = anon_kb() - start
    times.sort()
    print(
        f"{len(blocks):,} blocks, {sum(s for _, s in blocks) / 1e6:.1f} MB in use, "
        f"{args.churn:.0%} replaced a round, {args.rounds} rounds each way"
    )
    print(
        f"trim wall time p50 {statistics.median(times):.2f} ms, "
        f"p95 {times[int(len(times) * 0.95) - 1]:.2f} ms, max {times[-1]:.2f} ms"
    )
    print(
        f"resident growth over the rounds: {kept / 1e3:+.2f} MB untrimmed, then "
        f"{(trimmed - kept) / 1e3:+.2f} MB with a trim each round (the first gave back "
        f"{released[0] / 1e3:.2f} MB, later ones {statistics.median(released) / 1e3:.2f} MB "
        f"at the median)"
    )


if __name__ == "__main__":
    main()
