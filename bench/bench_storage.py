"""Bytes per event with text of the size people really write, next to the short synthetic text
the other benchmarks use.

    python bench/bench_storage.py [--events 100000] [--sizes 80,1000,3000]

Each size builds its own store through the store API (bench/history.py: events, their
enrichment, 0.4 metric points per event, incidents), with every GitHub and Discord body `size`
characters long on average (a log-normal spread around it: real threads mix one-line replies
with long reports). The words follow a Zipf law over a 30,000-word vocabulary with numbers,
step counts, hostnames and identifiers mixed in, as in training-run threads; the median of the
real GitHub comments and issue bodies is about 1,000 characters.

Reported per size: database bytes per event, and where they go (SQLite's `dbstat`): the events
table (the text itself), the /ask search index (FTS5), the other indexes. Bytes per event do not
depend on the number of events (the default 100,000 keeps a run to a minute or two).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import history
from history import db_bytes, grow, record_run, where_the_bytes_go

from bot.store import Database, Store

VOCABULARY = 30_000
SYLLABLES = ["ka", "ro", "mi", "te", "su", "na", "lo", "ve", "di", "pa", "zu", "qi", "ex", "or"]
COMMON = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "it",
    "we",
    "on",
    "for",
    "that",
    "with",
    "this",
    "at",
    "loss",
    "step",
    "run",
    "node",
    "from",
    "after",
    "was",
    "be",
    "checkpoint",
    "restart",
    "eval",
    "data",
    "gpu",
    "not",
    "are",
    "by",
    "but",
    "so",
    "if",
    "have",
    "ablation",
    "rerun",
    "lr",
    "grad",
]


def vocabulary(rng: random.Random) -> list[str]:
    words = list(COMMON)
    while len(words) < VOCABULARY:
        words.append("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return words


class Writer:
    """Text of about `size` characters per body, log-normally spread, Zipf-distributed words."""

    def __init__(self, size: int, seed: int = 5):
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        self.size = size
        weights = [1 / (rank + 1) for rank in range(len(self.words))]
        self.cum = list(_accumulate(weights))

    def word(self) -> str:
        roll = self.rng.random()
        if roll < 0.04:
            return f"{self.rng.randint(1, 400_000):,}"
        if roll < 0.05:
            return f"host-{self.rng.randint(1, 512)}"
        if roll < 0.06:
            return f"{self.rng.getrandbits(32):08x}"
        return self.rng.choices(self.words, cum_weights=self.cum)[0]

    def body(self) -> str:
        target = max(12, int(self.rng.lognormvariate(math.log(self.size), 0.9)))
        out: list[str] = []
        length = 0
        while length < target:
            word = self.word()
            out.append(word)
            length += len(word) + 1
        return " ".join(out)


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for v in values:
        total += v
        out.append(total)
    return out


async def build(path: Path, events: int, size: int) -> float:
    writer = Writer(size)
    real_make = history.make_events

    def make_events(first: int, last: int) -> list:
        batch = real_make(first, last)
        for event in batch:
            if event.body:
                event.body = writer.body()
        return batch

    history.make_events = make_events  # grow() builds its events through this
    try:
        async with Database.open(path) as db:
            store = Store(db)
            await record_run(store)
            started = time.perf_counter()
            await grow(store, 0, events, log=False)
            return time.perf_counter() - started
    finally:
        history.make_events = real_make


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--sizes", default="80,1000,3000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="runscribe-storage-") as tmp:
        for size in sizes:
            path = Path(tmp) / f"store-{size}.db"
            seconds = asyncio.run(build(path, args.events, size))
            parts = dict(where_the_bytes_go(path, args.events, top=40))
            fts = sum(v for k, v in parts.items() if k.startswith("events_fts"))
            events_table = parts.get("events", 0.0)
            rows.append((size, db_bytes(path) / args.events, events_table, fts, seconds))
            print(f"  {size} chars: built in {seconds:.0f} s; largest parts:", flush=True)
            for name, value in sorted(parts.items(), key=lambda kv: -kv[1])[:8]:
                print(f"    {name:34s} {value:7.1f} bytes/event")
    print()
    print(f"{args.events:,} events (60 % with a body), bytes per event")
    print("| body chars (mean of bodies) | total | events table | /ask index (FTS5) |")
    print("|---:|---:|---:|---:|")
    for size, total, table, fts, _ in rows:
        print(f"| {size:,} | {total:,.0f} | {table:,.0f} | {fts:,.0f} |")


if __name__ == "__main__":
    main()
