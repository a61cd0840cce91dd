"""Which C-level call sites hold more heap at one moment than at another, from a heaptrack file.

    heaptrack -p <pid of runscribe run>     # after warm-up (Debian: apt install heaptrack)
    python bench/heap_growth.py heaptrack.python.<n>.zst --since 150 --until 870 [--top 15]
    python bench/heap_growth.py heaptrack.python.<n>.zst --series [--min-size 3000]

tracemalloc sees Python's allocations only; `bot.core.heap`'s figures say glibc's heap grows but not
who holds it. heaptrack records every malloc and free with its backtrace. Its own report counts
what is still held at exit (after a clean shutdown, almost nothing) or at the peak; this reads
its data file (`zstd` on the PATH) and gives, for each backtrace, the heap it gained between two
moments (seconds since heaptrack attached): allocations in the window minus the frees in it,
whenever the freed block was allocated. Pick two moments in the same phase of the bot's cycles
(two troughs: `--series` prints the heap every 30 s, and how much of it is in blocks of at least
`--min-size` bytes). A Python frame shows as `_PyEval_EvalFrameDefault`; big Python strings
(over 512 bytes) come from `PyUnicode_New`, and `PYTHONTRACEMALLOC` then finds their Python line.

Found this way (2026-12-02): the live `/timeline` pagers' pages, ~4 kB strings, twelve more at
each trough of a 6 messages/s soak; pagers now read their pages from the store.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

# Frames that only say "Python ran here".
INTERPRETER = {"_PyEval_EvalFrameDefault", "_PyEval_EvalFrame", "gen_send_ex2", "PyGen_am_send"}


@dataclass
class Trace:
    """heaptrack's interned tables: strings, instruction pointers, traces, allocation infos."""

    strings: list[str] = field(default_factory=lambda: [""])
    ips: list[list[str]] = field(default_factory=lambda: [[]])
    traces: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])
    infos: list[tuple[int, int]] = field(default_factory=list)  # (size, trace)

    def frame(self, ip: int) -> str:
        parts = self.ips[ip]
        module = self.strings[int(parts[1], 16)].rsplit("/", 1)[-1] if len(parts) > 1 else "?"
        function = self.strings[int(parts[2], 16)] if len(parts) > 2 else parts[0]
        return f"{function} [{module}]"

    def stack(self, trace: int, depth: int) -> list[str]:
        frames: list[str] = []
        while trace and len(frames) < depth:
            ip, trace = self.traces[trace]
            name = self.frame(ip)
            if name.split(" ")[0] not in INTERPRETER:
                frames.append(name)
        return frames


def records(path: str) -> Iterator[str]:
    """The data file's lines (heaptrack writes it zstd-compressed)."""
    command = ["zstdcat", path] if path.endswith(".zst") else ["cat", path]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        yield from process.stdout


def read(
    path: str, since: float, until: float, min_size: int
) -> tuple[Trace, collections.Counter[int], list[tuple[int, int, int, int]]]:
    """The tables, the net count per allocation info in [since, until), and the series: every
    30 s (seconds, heap bytes, bytes in blocks of at least `min_size`, how many such blocks)."""
    trace = Trace()
    net: collections.Counter[int] = collections.Counter()
    series: list[tuple[int, int, int, int]] = []
    now, heap, big, bigs, due = 0.0, 0, 0, 0, 0.0
    for line in records(path):
        kind = line[:1]
        if kind in "+-" and line[1:2] == " ":
            info = int(line[2:], 16)
            sign = 1 if kind == "+" else -1
            size = trace.infos[info][0]
            heap += sign * size
            if size >= min_size:
                big += sign * size
                bigs += sign
            if since <= now < until:
                net[info] += sign
        elif kind == "c":
            now = int(line[2:], 16) / 1000
            while now >= due:
                series.append((int(due), heap, big, bigs))
                due += 30
        elif kind == "a":
            _, size, at = line.split()
            trace.infos.append((int(size, 16), int(at, 16)))
        elif kind == "t":
            _, ip, parent = line.split()
            trace.traces.append((int(ip, 16), int(parent, 16)))
        elif kind == "i":
            trace.ips.append(line.split()[1:])
        elif kind == "s":
            text = line[2:].rstrip("\n")
            trace.strings.append(text.split(" ", 1)[1] if " " in text else "")
    return trace, net, series


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", help="heaptrack's data file (heaptrack.<name>.<pid>.zst)")
    parser.add_argument("--since", type=float, default=0.0, help="seconds after attaching")
    parser.add_argument("--until", type=float, default=float("inf"), help="seconds after attaching")
    parser.add_argument("--top", type=int, default=12, help="backtraces to print")
    parser.add_argument("--depth", type=int, default=10, help="frames per backtrace")
    parser.add_argument("--series", action="store_true", help="the heap every 30 s instead")
    parser.add_argument("--min-size", type=int, default=3000, help="a big block (--series)")
    args = parser.parse_args(argv)
    trace, net, series = read(args.file, args.since, args.until, args.min_size)
    if args.series:
        print(f"seconds, heap kB, kB in blocks >= {args.min_size} B, such blocks")
        for at, heap, big, bigs in series:
            print(f"{at:6d} {heap / 1e3:9.1f} {big / 1e3:9.1f} {bigs:6d}")
        return 0
    by_trace: collections.Counter[int] = collections.Counter()
    blocks: collections.Counter[int] = collections.Counter()
    for info, count in net.items():
        size, at = trace.infos[info]
        by_trace[at] += size * count
        blocks[at] += count
    total = sum(by_trace.values())
    print(f"heap gained from {args.since:g} s to {args.until:g} s: {total / 1e3:+.1f} kB")
    for at, gained in by_trace.most_common(args.top):
        if gained <= 0:
            break
        print(f"\n{gained / 1e3:+.1f} kB in {blocks[at]:+d} blocks")
        for name in trace.stack(at, args.depth):
            print(f"    {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
