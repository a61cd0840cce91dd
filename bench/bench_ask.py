"""/ask benchmark: retrieval over 1,000,000 events, next to a hand-built word index, same run.

Reports:
- retrieval (`bot.ask.retrieval.retrieve`): median and p95 over a few hundred questions;
- the `/ask` handler without an LLM (parse, retrieve, answer, build the Discord card);
- the full-text index's size per event (the index's own pages, from `dbstat`);
- the baseline, what a competent engineer writes without FTS5: an inverted index kept in an
  ordinary table (`event_words(term, event_id)`, primary key (term, event_id), WITHOUT ROWID:
  one B-tree range per question word), events ranked by how many of the question's words they
  hold, newest first among equals; its build time, bytes per event, and the same questions;
- (`--like N`, off by default) a `LIKE '%word%'` scan over every event: no index at all, the
  floor of what search costs, not a fair comparison;
- how often the event a question was written from is among the first three hits (synthetic
  questions, so a sanity figure, not the quality test: that is tests/ask/test_quality.py).

    python bench/bench_ask.py [--events N] [--questions N] [--db PATH]

With `--db` naming an existing file, its events are reused (no fill, no ingest figure).

Text is generated: a Zipf-distributed vocabulary of 30,000 made-up words mixed with a few hundred
words of training-run talk, bodies of 8 to 150 words, GitHub threads of about 20 events, step
numbers written with and without thousands separators, W&B run ids. The first 100,000 events go
through `EventsRepo.upsert_many` (the measured ingest rate, index triggers included); the rest
are inserted with executemany, so the same triggers build the same index.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.ask.query import parse_question
from bot.ask.retrieval import retrieve
from bot.ask.service import AskService
from bot.models import Event, RunInfo
from bot.render.ask import answer_card
from bot.render.terminal import local_formatter
from bot.store import Database, Store

NOW = datetime(2027, 3, 1, tzinfo=UTC)
SPAN = timedelta(days=200)
DOMAIN = """loss spike restart checkpoint restore node nccl timeout allreduce watchdog hang oom
killed gate weight decay router expert balancing bias aux load ratio gradient norm clip warmup
schedule cosine decay learning rate batch tokens throughput step time mfu flops eval mmlu
humaneval gsm8k perplexity data mixture dedup filter shard loader tokenizer vocab rope base
context extension attention head layer norm embedding fp8 bf16 precision overflow nan inf
infiniband nvlink ecc xid gpu host memory preemption quota bucket storage upload save async
ablation sweep ladder scaling exponent fit baseline config seed rerun fork resume rollback
kernel cublas gemm fused flash sdpa compile graph pipeline parallel tensor fsdp zero optimizer
adam beta epsilon momentum lion muon soap shampoo spectral curvature plateau divergence""".split()  # noqa: SIM905


class Words:
    """A Zipf-weighted vocabulary: a few words very common, most rare."""

    def __init__(self, rng: random.Random, size: int = 30_000):
        letters = "abcdefghiklmnoprstuvwy"
        made = {"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(size)}
        self.vocab = sorted(made)
        rng.shuffle(self.vocab)
        total = 0.0
        self.cum = []
        for rank in range(len(self.vocab)):
            total += 1 / (rank + 1) ** 1.05
            self.cum.append(total)
        self.total = total
        self.rng = rng

    def word(self) -> str:
        if self.rng.random() < 0.3:
            return self.rng.choice(DOMAIN)
        return self.vocab[bisect.bisect(self.cum, self.rng.random() * self.total)]

    def text(self, n: int) -> str:
        return " ".join(self.word() for _ in range(n))


def make_event(i: int, n: int, words: Words, rng: random.Random) -> Event:
    at = NOW - SPAN * (1 - i / n)
    thread_no = 8000 + i // 20
    body = words.text(rng.choice((8, 15, 25, 40, 70, 150)))
    if rng.random() < 0.05:
        step = rng.randint(1, 390) * 1000 + rng.choice((0, 250, 500))
        body += f" at step {step:,}" if rng.random() < 0.5 else f" at step {step}"
    if rng.random() < 0.02:
        body += f" in W&B run hero-{rng.getrandbits(32):08x}"
    source = "github" if rng.random() < 0.7 else "discord"
    first = i % 20 == 0 and source == "github"
    return Event(
        run_slug="hero",
        source=source,
        external_id=f"e{i}",
        kind="issue" if first else ("comment" if source == "github" else "message"),
        at=at,
        author=f"user{i % 211}",
        ref=f"#{thread_no}" if source == "github" else "#hero-run",
        url=f"https://github.com/lab/model/issues/{thread_no}#issuecomment-{i}"
        if source == "github"
        else f"https://discord.com/channels/1/2/{10_000_000 + i}",
        title=words.text(7) if first else None,
        body=body,
        thread=f"github:lab/model#{thread_no}" if source == "github" else "discord:hero-run",
    )


def question_for(event: Event, rng: random.Random, rarity: dict[str, int]) -> str:
    """What someone who half-remembers the event might type."""
    words = [w for w in (event.title or event.body).split() if w.isalpha()]
    if rng.random() < 0.15 and "step" in event.body:
        return f"what happened at step {event.body.split('step ')[-1].split()[0]}?"
    if rng.random() < 0.1 and event.ref and event.ref.startswith("#8"):
        return f"what is {event.ref} about?"
    # One or two of the event's rarer words (what sticks in memory), one to three others.
    ranked = sorted(set(words), key=lambda w: rarity.get(w, 0), reverse=True)
    picked = ranked[: rng.randint(1, 2)]
    picked += rng.sample(words, min(len(words), rng.randint(1, 3)))
    rng.shuffle(picked)
    return "why did " + " ".join(picked) + "?"


async def fill(store: Store, n: int, rng: random.Random) -> tuple[float, list[Event]]:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero", timezone="UTC"))
    words = Words(rng)
    measured = min(100_000, n)
    events = [make_event(i, n, words, rng) for i in range(measured)]
    t0 = time.perf_counter()
    for start in range(0, measured, 2000):
        await store.events.upsert_many(events[start : start + 2000])
    rate = measured / (time.perf_counter() - t0)
    sample = rng.sample(events, min(2000, len(events)))
    rows = []
    for i in range(measured, n):
        e = make_event(i, n, words, rng)
        if rng.random() < 0.002:
            sample.append(e)
        rows.append(
            (e.run_slug, e.source, e.external_id, e.kind, e.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
             e.author, e.ref, e.url, e.title, e.body, e.thread, "h")
        )  # fmt: skip
        if len(rows) == 50_000:
            await _bulk(store, rows)
            rows = []
    if rows:
        await _bulk(store, rows)
    await store.db.conn.execute("ANALYZE")
    return rate, sample


async def _bulk(store: Store, rows: list[tuple[object, ...]]) -> None:
    async with store.transaction() as conn:
        await conn.executemany(
            "INSERT INTO events (run_slug, source, external_id, kind, at, author, ref, url, "
            "title, body, thread, content_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


TOKEN = re.compile(r"[a-z0-9]+")


async def build_word_index(store: Store) -> tuple[float, int]:
    """The baseline's index: each distinct lowercase word of an event's title, body and
    summary, once per event. Returns (seconds to build it, its bytes)."""
    t0 = time.perf_counter()
    async with store.transaction() as conn:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS event_words (term TEXT NOT NULL, event_id INTEGER NOT "
            "NULL, PRIMARY KEY (term, event_id)) WITHOUT ROWID"
        )
        await conn.execute("DELETE FROM event_words")
    text = "coalesce(title, '') || ' ' || body || ' ' || coalesce(summary, '')"
    last = 0
    while True:
        rows = await store.db.fetchall(
            f"SELECT id, {text} FROM events WHERE id > ? ORDER BY id LIMIT 20000", (last,)
        )
        if not rows:
            break
        last = rows[-1][0]
        pairs = [(term, row[0]) for row in rows for term in set(TOKEN.findall(row[1].lower()))]
        async with store.transaction() as conn:
            await conn.executemany(
                "INSERT OR IGNORE INTO event_words (term, event_id) VALUES (?, ?)", pairs
            )
    await store.db.conn.execute("ANALYZE event_words")
    seconds = time.perf_counter() - t0
    size = await store.db.fetchone("SELECT SUM(pgsize) FROM dbstat WHERE name = 'event_words'")
    return seconds, int(size[0]) if size and size[0] else 0


async def word_index(store: Store, question: str) -> list[str]:
    """The baseline: each question word (any of its spellings) looked up in `event_words`,
    events ranked by how many of the words they hold, newest first among equals."""
    terms = [t for t in parse_question(question).terms if not t.pair]
    pairs = [
        (token, n) for n, t in enumerate(terms) for s in t.spellings for token in TOKEN.findall(s)
    ]
    if not pairs:
        return []
    values = ", ".join("(?, ?)" for _ in pairs)
    rows = await store.db.fetchall(
        f"WITH q(tok, n) AS (VALUES {values}), "
        "s AS (SELECT w.event_id, COUNT(DISTINCT q.n) AS score FROM q "
        "JOIN event_words w ON w.term = q.tok GROUP BY w.event_id) "
        "SELECT e.external_id FROM s JOIN events e ON e.id = s.event_id "
        "WHERE e.run_slug = ? AND e.deleted = 0 ORDER BY s.score DESC, e.at DESC LIMIT 8",
        [*(v for pair in pairs for v in pair), "hero"],
    )
    return [row[0] for row in rows]


async def naive(store: Store, question: str) -> list[str]:
    """No index at all: each word as LIKE '%word%' over every event's text, ranked by how
    many of the words an event contains, newest first among equals."""
    words = [t.text for t in parse_question(question).terms if not t.pair]
    text = "(coalesce(title, '') || ' ' || body || ' ' || coalesce(summary, ''))"
    score = " + ".join(f"({text} LIKE ?)" for _ in words)
    rows = await store.db.fetchall(
        f"SELECT external_id FROM (SELECT external_id, at, {score} AS score FROM events "
        "WHERE run_slug = ? AND deleted = 0) WHERE score > 0 "
        "ORDER BY score DESC, at DESC LIMIT 8",
        [*(f"%{w}%" for w in words), "hero"],
    )
    return [row[0] for row in rows]


async def timed(
    fn: Callable[[str], Awaitable[object]], questions: list[str]
) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds per question. CPU time (this process, aiosqlite's thread
    included) is the work itself; wall time also counts waiting for a core on a busy machine."""
    wall, cpu = [], []
    for question in questions:
        t0, c0 = time.perf_counter(), time.process_time()
        await fn(question)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return wall, cpu


def line(label: str, samples: tuple[list[float], list[float]]) -> str:
    wall, cpu = sorted(samples[0]), sorted(samples[1])
    p95 = wall[max(0, int(len(wall) * 0.95) - 1)]
    return (
        f"{label:42} {statistics.median(wall):10.2f} {p95:9.2f} "
        f"{statistics.median(cpu):8.2f} {len(wall):5d}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument(
        "--like", type=int, default=0, help="questions for the LIKE scan (no index; 0: skip)"
    )
    parser.add_argument("--db", type=Path)
    args = parser.parse_args()
    rng = random.Random(13)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "bench_ask.db"
        reuse = path.exists()
        async with Database.open(path) as db:
            store = Store(db)
            t0 = time.perf_counter()
            if reuse:  # a database left by an earlier run (--db): sample its events
                rate, sample = float("nan"), []
                top = await store.search.size()
                while len(sample) < 2000:
                    event = await store.events.get(rng.randint(1, top))
                    if event is not None:
                        sample.append(event)
            else:
                rate, sample = await fill(store, args.events, rng)
            fill_s = time.perf_counter() - t0
            targets = rng.sample(sample, min(args.questions, len(sample)))
            rarity = {w: rank for rank, w in enumerate(Words(random.Random(13)).vocab)}
            questions = [question_for(e, rng, rarity) for e in targets]
            found = 0
            for event, question in zip(targets, questions, strict=True):
                hits = await retrieve(store, "hero", parse_question(question), NOW)
                if question.startswith("what is #"):  # a thread question: any of its events
                    found += any(h.event.thread == event.thread for h in hits[:3])
                else:
                    found += any(h.event.external_id == event.external_id for h in hits[:3])
            service = AskService(store, None)
            fmt = local_formatter("UTC", NOW)

            async def one(question: str) -> None:
                await retrieve(store, "hero", parse_question(question), NOW)

            async def handler(question: str) -> None:
                answer = await service.ask("hero", question, NOW)
                answer_card(answer, fmt, run_name="Hero")

            retrieval = await timed(one, questions)
            handled = await timed(handler, questions)
            build_s, words_bytes = await build_word_index(store)
            baseline = await timed(lambda q: word_index(store, q), questions)
            baseline_found = ours_found = 0
            for event, question in zip(targets, questions, strict=True):
                if question.startswith("what is #"):
                    continue  # a thread question: counted above for retrieval only
                baseline_found += event.external_id in (await word_index(store, question))[:3]
                hits = await retrieve(store, "hero", parse_question(question), NOW)
                ours_found += event.external_id in [h.event.external_id for h in hits[:3]]
            like = await timed(lambda q: naive(store, q), questions[: args.like])
            index_bytes = await store.search.index_bytes()
        count = sqlite3.connect(path).execute("SELECT COUNT(*) FROM events").fetchone()[0]
        table_bytes = (
            sqlite3.connect(path)
            .execute("SELECT SUM(pgsize) FROM dbstat WHERE name = 'events'")
            .fetchone()[0]
        )
    filled = "reused" if reuse else f"filled in {fill_s:.0f} s"
    print(f"events in store: {count:,} ({filled})")
    print(f"{'measure':42} {'median ms':>10} {'p95 ms':>9} {'CPU ms':>8} {'runs':>5}")
    print(line("retrieval (FTS5 BM25, bounded)", retrieval))
    print(line("/ask handler without LLM (answer + card)", handled))
    print(line("baseline: word index table, same questions", baseline))
    if like[0]:
        print(line("LIKE scan, no index (not a fair baseline)", like))
    ratio = statistics.median(baseline[0]) / statistics.median(retrieval[0])
    print(f"baseline / retrieval (median wall): {ratio:.1f}x")
    asked = sum(1 for q in questions if not q.startswith("what is #"))
    print(
        f"source event in the top 3 (the {asked} questions about one event): retrieval "
        f"{ours_found}, baseline {baseline_found}"
    )
    print(
        f"baseline's word index: built in {build_s:.0f} s after the fill, "
        f"{words_bytes / count:.0f} bytes per event"
    )
    if index_bytes is not None:
        print(
            f"full-text index: {index_bytes / count:.0f} bytes per event "
            f"({index_bytes / 2**20:.0f} MiB; the events table itself: "
            f"{table_bytes / count:.0f} bytes per event)"
        )
    print(f"synthetic recall: source event in the top 3 for {found} of {len(questions)} questions")
    print(f"ingest through EventsRepo.upsert_many (index triggers included): {rate:,.0f} events/s")


if __name__ == "__main__":
    asyncio.run(main())
