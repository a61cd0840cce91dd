"""LLM cost benchmark (a script, not part of the test run):

    python bench/bench_llm.py [--events 300] [--batch 30] [--day-only] [--windows 120 1800]

Every token count here is SET BY THE FAKE: the fake Anthropic server (tests/fakes/anthropic.py)
ESTIMATES usage as ~characters/4 of the request JSON it received (system, messages, tools) and
of the reply it sent; real tokenizer counts differ by a modest factor, so the dollars are
estimates too, while ratios between modes on the same requests hold.

1. Tokens per enriched event, batched (many events per request), over the same synthetic
   events (`--per-event`: also one event per request, to show what the shared prompt costs;
   not a baseline anyone would ship). Goal: <= 300 input tokens per event, batched.
2. A busy live day (500 GitHub comments, 2,000 Discord messages in bursts over two channels, a
   poll a minute, a simulated clock) through the real pipeline (`enrich_step`, the LLM enricher,
   the fake server): events per request, input tokens per event (everything the server counted,
   cache reads included; and as billed, writes at 1.25x and reads at 0.1x), dollars per day and
   how long an event waited for its request, with live batching (`pipeline.Gather`, the default
   window and others) next to the baseline, what a competent engineer writes first: everything
   pending enriched after each poll, in batches of <= 30 (`--per-event` adds one request per
   event). `--day-only` runs just this part.
3. The busy day's whole bill as the bot runs it: enrichment, the narrative loop (a new narrative
   only when its facts changed, at most every 30 min) and the digest, each priced at its own
   model's rates (narratives and the digest on RUNSCRIBE_MODEL's default). The fake answers them
   with prose of the asked length; the token counts are the fake's estimates.
4. The narrative and digest prompt sizes (estimated tokens of system + user text) after one week
   and after three months of synthetic history (~60 events a day, enriched by the rules). Goal: a
   prompt that does not grow with the run's length.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.config.settings import DEFAULT_ENRICH_MODEL, DEFAULT_ENRICH_WINDOW, DEFAULT_MODEL
from bot.enrich.conversations import burst_bounds
from bot.enrich.rules import Enrichment
from bot.llm.client import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    LLMClient,
    cost_usd,
    estimate_tokens,
)
from bot.llm.enrich import LLMEnricher
from bot.llm.grounded import render_prompt
from bot.models import Event, RunInfo
from bot.process.pipeline import Gather, enrich_pending, enrich_step
from bot.process.wiring import digest_composer
from bot.process.wiring import narrative_writer as narrate
from bot.services.digest import build_digest
from bot.services.narrative import build_narrative_facts, refresh_narratives
from bot.store import Database, Store
from tests.fakes.anthropic import FakeAnthropic, auto_reply
from tests.fakes.anthropic import text as fake_text

NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
WORDS = (
    "the",
    "attention",
    "gate",
    "norm",
    "keeps",
    "growing",
    "in",
    "early",
    "layers",
    "so",
    "we",
    "could",
    "add",
    "weight",
    "decay",
    "to",
    "the",
    "router",
    "and",
    "gate;",
    "the",
    "checkpoint",
    "at",
    "step",
    "48k",
    "shows",
    "the",
    "loss",
    "is",
    "still",
    "below",
    "the",
    "ladder",
    "forecast;",
    "node",
    "lost",
    "after",
    "an",
    "InfiniBand",
    "port",
    "flapped",
    "and",
    "the",
    "job",
    "restarted",
    "from",
    "the",
    "last",
    "checkpoint;",
    "eval",
    "on",
    "paloma",
    "improved;",
    "data",
    "mixture",
    "phase",
    "two",
    "starts",
    "next",
    "week",
)


def synthetic_body(rng: random.Random, source: str) -> str:
    if source == "discord":
        length = rng.choice([3, 8, 15, 30, 60])
    else:
        length = rng.choice([40, 80, 150, 300, 600])  # up to ~4,000 characters
    words = [rng.choice(WORDS) for _ in range(length)]
    text = " ".join(words).capitalize() + "."
    if source == "github" and rng.random() < 0.3:
        text += "\n\n```\nTraceback (most recent call last):\n  File x.py, line 1\nOOM\n```\n"
    return text


def synthetic_events(count: int, start: datetime, span: timedelta, seed: int = 7) -> list[Event]:
    rng = random.Random(seed)
    events: list[Event] = []
    for n in range(count):
        source = "discord" if rng.random() < 0.5 else "github"
        at = start + span * (n / max(1, count))
        events.append(
            Event(
                run_slug="hero",
                source=source,
                external_id=f"{'msg' if source == 'discord' else 'comment'}:{n}",
                kind="message" if source == "discord" else "comment",
                at=at,
                author=f"person{rng.randrange(12)}",
                ref="#hero-run" if source == "discord" else f"#{8800 + rng.randrange(40)}",
                url=None
                if source == "discord"
                else f"https://github.com/acme/llm/issues/{8800 + n % 40}#c{n}",
                title=None if source == "discord" else "Attention gate norm growth",
                body=synthetic_body(rng, source),
                thread="discord:1" if source == "discord" else "github:acme/llm#8818",
            )
        )
    return events


async def enrich_tokens(events: list[Event], batch: int, fake: FakeAnthropic) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "bench.db") as db:
            store = Store(db)
            await store.runs.upsert(RunInfo(slug="hero", name="Hero 70B"))
            await store.events.upsert_many([_copy(e) for e in events])
            before = len(fake.message_requests)
            async with LLMClient(
                store,
                api_key="bench",
                base_url=fake.base_url,
                model="claude-haiku-4-5",
                daily_budget_usd=1000,
                max_retry_wait=0.01,
            ) as llm:
                enricher = LLMEnricher(llm, max_batch=batch, clock=lambda: NOW)
                done = await enrich_pending(store, enricher, batch=1000)
            spend = await store.llm.spend(NOW - timedelta(days=1))
            total_in = sum(row["input_tokens"] for row in spend.values())
            total_out = sum(row["output_tokens"] for row in spend.values())
            cost = sum(row["cost_usd"] for row in spend.values())
            return {
                "events": done,
                "requests": len(fake.message_requests) - before,
                "in_per_event": total_in / max(1, done),
                "out_per_event": total_out / max(1, done),
                "usd_per_1k_events": cost / max(1, done) * 1000,
            }


def _copy(event: Event) -> Event:
    return Event(**{name: getattr(event, name) for name in Event.__dataclass_fields__})


def busy_day(seed: int = 11) -> list[Event]:
    """500 GitHub comments over 40 threads and 2,000 Discord messages in bursts (a few minutes
    of back-and-forth, 1-4 minutes apart) over two channels, across 24 hours."""
    rng = random.Random(seed)
    day = timedelta(days=1)
    events: list[Event] = []
    for n in range(500):
        at = NOW + day * rng.random()
        number = 8800 + rng.randrange(40)
        events.append(
            Event(
                run_slug="hero",
                source="github",
                external_id=f"comment:{n}",
                kind="comment",
                at=at,
                author=f"person{rng.randrange(12)}",
                ref=f"#{number}",
                url=f"https://github.com/acme/llm/issues/{number}#c{n}",
                title="Attention gate norm growth",
                body=synthetic_body(rng, "github"),
                thread=f"github:acme/llm#{number}",
            )
        )
    n = 0
    while n < 2000:
        channel = rng.choice(("1", "2"))
        at = NOW + day * rng.random()
        for _ in range(rng.randint(4, 16)):
            if n >= 2000:
                break
            events.append(
                Event(
                    run_slug="hero",
                    source="discord",
                    external_id=f"msg:{n}",
                    kind="message",
                    at=at,
                    author=f"person{rng.randrange(12)}",
                    ref=f"#hero-{channel}",
                    url=f"https://discord.com/channels/9/{channel}/{n}",
                    body=synthetic_body(rng, "discord"),
                    thread=f"discord:{channel}",
                )
            )
            at += timedelta(seconds=rng.randint(20, 240))
            n += 1
    return sorted(events, key=lambda e: e.at)


async def simulate_day(
    events: list[Event],
    gather: Gather | None,
    fake: FakeAnthropic,
    model: str,
    *,
    max_batch: int = 30,
    narrative_model: str | None = None,
) -> dict[str, float]:
    """A day on a simulated clock through the real pipeline (`enrich_step`, the LLM enricher, the
    fake server): a poll a minute stores what arrived. Without `gather`, everything pending is
    enriched after each poll (the old cycle; with `max_batch=1`, one request per event); with it,
    the enrichment loop looks every 10 s, as the bot's does, and sends a request when a batch is
    worth it. Figures come from what the fake server received and billed."""
    clock = [NOW]
    fake.clock = lambda: (clock[0] - NOW).total_seconds()
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "day.db") as db:
            store = Store(db)
            await store.runs.upsert(RunInfo(slug="hero", name="Hero 70B"))
            before = len(fake.message_requests)
            async with LLMClient(
                store,
                api_key="bench",
                base_url=fake.base_url,
                model=narrative_model or model,
                enrich_model=model,
                daily_budget_usd=1000,
                max_retry_wait=0.01,
            ) as llm:
                enricher = Timed(
                    LLMEnricher(llm, clock=lambda: clock[0], max_batch=max_batch), clock
                )
                queue = list(events)
                for minute in range(24 * 60 + 30):
                    poll_at = NOW + timedelta(minutes=minute)
                    arrived = []
                    while queue and queue[0].at <= poll_at:
                        arrived.append(_copy(queue.pop(0)))
                    if arrived:
                        await store.events.upsert_many(arrived)
                    for tick in range(6 if gather is not None else 1):
                        clock[0] = poll_at + timedelta(seconds=10 * tick)
                        await enrich_step(store, clock[0], enricher=enricher, gather=gather)
                    if narrative_model and minute % 5 == 0:  # the bot's narrative loop: 5 min
                        await refresh_narratives(store, narrate(store, llm), ["hero"], clock[0])
                clock[0] += timedelta(hours=1)  # the day's tail: anything still waiting goes
                await enrich_step(store, clock[0], enricher=enricher)
                if narrative_model:  # and the day's digest
                    await digest_composer(store, llm)(await build_digest(store, "hero", clock[0]))
            pending = len(await store.events.pending_enrichment(limit=10_000))
            requests = fake.message_requests[before:]
            usages = fake.usages[-len(requests) :] if requests else []
            sent_events = sum(len(r.event_ids) for r in requests)
            raw_in = sum(
                u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
                for u in usages
            )
            billed_in = sum(
                u["input_tokens"]
                + CACHE_WRITE_MULTIPLIER * u["cache_creation_input_tokens"]
                + CACHE_READ_MULTIPLIER * u["cache_read_input_tokens"]
                for u in usages
            )
            cost = sum(
                cost_usd(
                    model,
                    u["input_tokens"],
                    u["output_tokens"],
                    u["cache_creation_input_tokens"],
                    u["cache_read_input_tokens"],
                )
                for u in usages
            )
            conversations = await store.events.conversations_between(
                "hero", "discord:1", NOW - timedelta(days=1), NOW + timedelta(days=2)
            )
            conversations += await store.events.conversations_between(
                "hero", "discord:2", NOW - timedelta(days=1), NOW + timedelta(days=2)
            )
            waits = sorted(enricher.waits)
            by_task = cost_by_task(requests, usages)
            return {
                **{f"usd_{task}": usd for task, (_, usd) in by_task.items()},
                **{f"calls_{task}": calls for task, (calls, _) in by_task.items()},
                "requests": len(requests),
                "llm_events": sent_events,
                "per_request": sent_events / max(1, len(requests)),
                "in_per_event": raw_in / max(1, sent_events),
                "billed_per_event": billed_in / max(1, sent_events),
                "usd_per_day": cost,
                "left_pending": pending,
                "conversations": len(conversations),
                "wait_p50": waits[len(waits) // 2] / 60 if waits else 0.0,
                "wait_p95": waits[int(len(waits) * 0.95)] / 60 if waits else 0.0,
            }


def task_of(request: Any) -> str:
    """Which job a recorded request was for, from its forced tool or its prompt's opening."""
    if request.body.get("tools"):
        return "enrich"
    opening = request.user_text[:400]
    for marker, task in (("status narrative", "narrative"), ("daily digest", "digest")):
        if marker in opening:
            return task
    return "retry"  # a grounding retry repeats its task's request with the problems named


def cost_by_task(requests: Sequence[Any], usages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """(calls, dollars) per task, each request priced at its own model's rates; a retry counts
    with the task it retries (the request before it)."""
    out: dict[str, list[float]] = {}
    last = "enrich"
    for request, usage in zip(requests, usages, strict=False):
        task = task_of(request)
        task = last if task == "retry" else task
        last = task
        usd = cost_usd(
            request.body["model"],
            usage["input_tokens"],
            usage["output_tokens"],
            usage["cache_creation_input_tokens"],
            usage["cache_read_input_tokens"],
        )
        entry = out.setdefault(task, [0, 0.0])
        entry[0] += 1
        entry[1] += usd
    return {task: (int(calls), usd) for task, (calls, usd) in out.items()}


def written_reply(request: Any) -> Any:
    """What a model writes for a narrative or digest request: prose of the asked length about
    the run (the fake's default is a one-line echo, which the checks refuse); enrichment as the
    fake answers it. Token counts follow the text's length, as the fake estimates them."""
    task = task_of(request)
    if task == "enrich":
        return auto_reply(request)
    sentence = (
        "Hero 70B trained through the day while the team discussed the attention gate norm "
        "growth and the data mixture, and nobody reported a fault that needs attention now. "
    )
    return fake_text(sentence * (4 if task == "narrative" else 8))


class Timed:
    """The enricher, noting how long each event it is given has waited since its newest
    content arrived (a conversation: since its last message)."""

    def __init__(self, inner: LLMEnricher, clock: list[datetime]):
        self.inner = inner
        self.name = inner.name
        self.retry_label = inner.retry_label
        self.clock = clock
        self.waits: list[float] = []

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        for event in events:
            newest = burst_bounds(event)[1] if event.source == "discord" else event.at
            newest = max(newest, event.updated_at or newest)
            self.waits.append((self.clock[0] - newest).total_seconds())
        return await self.inner.enrich(events)


async def prompt_sizes(days: int, per_day: int = 60) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "history.db") as db:
            store = Store(db)
            await store.runs.upsert(RunInfo(slug="hero", name="Hero 70B", total_steps=390_251))
            span = timedelta(days=days)
            events = synthetic_events(days * per_day, NOW - span, span, seed=days)
            await store.events.upsert_many(events)
            await enrich_pending(store, batch=2000)
            narrative = render_prompt(
                "narrative", await build_narrative_facts(store, "hero", NOW), max_words=250
            )
            digest = render_prompt(
                "digest",
                await build_digest(store, "hero", NOW),
                max_words=400,
                window="the last 24 hours",
            )
            return {
                "events": len(events),
                "narrative_tokens": estimate_tokens(narrative.system + narrative.user),
                "digest_tokens": estimate_tokens(digest.system + digest.user),
            }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--batch", type=int, default=30)
    parser.add_argument("--model", default=DEFAULT_ENRICH_MODEL)
    parser.add_argument(
        "--windows", type=float, nargs="*", default=[120.0, DEFAULT_ENRICH_WINDOW], help="seconds"
    )
    parser.add_argument("--cached-model", default="claude-sonnet-4-6")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline")
    parser.add_argument(
        "--per-event", action="store_true", help="also one request per event (not a baseline)"
    )
    parser.add_argument("--day-only", action="store_true", help="only the busy day")
    parser.add_argument("--bill-only", action="store_true", help="only the whole bill")
    args = parser.parse_args()
    if args.bill_only:
        await whole_bill(busy_day(), args)
        return
    if not args.day_only:
        await token_table(args)

    day = busy_day()
    print(
        "A busy live day: 500 GitHub comments, 2,000 Discord messages in bursts over two "
        "channels, a poll a minute; the real pipeline against the fake Anthropic server "
        "(token counts and so dollars: the fake's estimates)"
    )
    print(
        "in/event: every input token the server counted (cache reads included), the fixed prompt"
        " shared by the batch; billed: cache writes at 1.25x, reads at 0.1x. wait: minutes from"
        " an event's newest content (a conversation's last message) to its request, p50/p95."
    )
    print(
        f"{'enrichment':<44}{'requests':>9}{'events':>8}{'ev/req':>8}{'in/event':>10}"
        f"{'billed':>8}{'$/day':>8}{'wait':>11}{'convs':>7}"
    )
    modes: list[tuple[str, Gather | None, int, str]] = []
    if not args.no_baseline:
        modes.append(
            ("baseline: all pending after each poll (<= 30)", None, args.batch, args.model)
        )
    if args.per_event:
        modes.append(("one request per event (not a baseline)", None, 1, args.model))
    modes += [
        (f"live batching, window {w:g} s", Gather(timedelta(seconds=w), args.batch), 30, args.model)
        for w in args.windows
    ]
    if args.cached_model:
        modes.append(
            (
                f"window {DEFAULT_ENRICH_WINDOW:g} s, {args.cached_model}",
                Gather(timedelta(seconds=DEFAULT_ENRICH_WINDOW), args.batch),
                args.batch,
                args.cached_model,
            )
        )
    for name, gather, max_batch, model in modes:
        async with FakeAnthropic() as fake:
            row = await simulate_day(day, gather, fake, model, max_batch=max_batch)
        wait = f"{row['wait_p50']:.0f}/{row['wait_p95']:.0f}"
        print(
            f"{name:<44}{row['requests']:>9.0f}{row['llm_events']:>8.0f}{row['per_request']:>8.1f}"
            f"{row['in_per_event']:>10.0f}{row['billed_per_event']:>8.0f}"
            f"{row['usd_per_day']:>8.3f}{wait:>11}{row['conversations']:>7.0f}"
        )
    print(
        f"goal: >= 8 events per request, <= 300 input tokens per event "
        f"(model {args.model} unless named; it caches no prefix under 4,096 tokens)\n"
    )
    await whole_bill(day, args)
    if args.day_only:
        return
    print("Prompt size vs history length (estimated tokens, system + user)")
    print(f"{'history':<14}{'events':>8}{'narrative':>11}{'digest':>9}")
    for label, days in (("1 week", 7), ("3 months", 90)):
        row = await prompt_sizes(days)
        print(
            f"{label:<14}{row['events']:>8}{row['narrative_tokens']:>11}{row['digest_tokens']:>9}"
        )


async def whole_bill(day: list[Event], args: argparse.Namespace) -> None:
    """The busy day's whole LLM bill as the bot runs it: enrichment (the default window), the
    narrative loop (every 5 min; a new narrative at most every 30 min, only when its facts
    changed, or past 6 h), and the day's digest, each priced at its own model's rates."""
    async with FakeAnthropic() as fake:
        fake.handler = written_reply
        row = await simulate_day(
            day,
            Gather(timedelta(seconds=DEFAULT_ENRICH_WINDOW), args.batch),
            fake,
            args.model,
            max_batch=args.batch,
            narrative_model=DEFAULT_MODEL,
        )
    print(
        f"The busy day's whole bill: enrichment on {args.model}, narratives and the digest on "
        f"{DEFAULT_MODEL} (token counts estimated by the fake server, ~4 characters a token)"
    )
    total = 0.0
    for task in ("enrich", "narrative", "digest"):
        usd = row.get(f"usd_{task}", 0.0)
        total += usd
        print(f"  {task:<10}{row.get(f'calls_{task}', 0):>6.0f} requests  ${usd:.3f}")
    print(f"  total{'':>22}${total:.3f} a day (goal <= $1)\n")


async def token_table(args: argparse.Namespace) -> None:
    events = synthetic_events(args.events, NOW - timedelta(days=2), timedelta(days=2))
    async with FakeAnthropic() as fake:
        rows = [(f"batched (<= {args.batch})", await enrich_tokens(events, args.batch, fake))]
        if args.per_event:
            rows.append(("one per request", await enrich_tokens(events, 1, fake)))
    batched = rows[0][1]
    print(
        f"Enrichment of {args.events} synthetic events (token counts set by the fake server: "
        f"~4 characters a token)"
    )
    print(f"{'mode':<22}{'requests':>9}{'in/event':>10}{'out/event':>11}{'$/1k events':>13}")
    for name, row in rows:
        print(
            f"{name:<22}{row['requests']:>9}{row['in_per_event']:>10.0f}"
            f"{row['out_per_event']:>11.0f}{row['usd_per_1k_events']:>13.3f}"
        )
    goal = "OK" if batched["in_per_event"] <= 300 else "OVER"
    print(f"goal <= 300 input tokens/event batched: {goal}\n")


if __name__ == "__main__":
    asyncio.run(main())
