"""The data flow in one place: sources → store → enrich → detect incidents → outbox.

`run_cycle` is what `runscribe poll --once` does and what the bot's poll loop does each interval.
Enrichment and detection are plug-ins so the LLM and the incident engine stay optional."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

from bot.enrich.conversations import GAP, group_conversations
from bot.enrich.rules import Enrichment, enrich_event
from bot.models import UNHEALTHY_STATES, Event
from bot.sources.base import Source
from bot.sources.poller import CycleReport, poll_once
from bot.store import Store

log = logging.getLogger(__name__)


class Enricher(Protocol):
    """Turns events into enrichments. Must not raise for a bad event: fall back instead."""

    name: str

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        """Map event id → (enrichment, enriched_by label)."""
        ...


# Events the rules enrich between two turns of the event loop (a backlog of thousands must not
# hold the loop, and with it every command's acknowledgement, for seconds).
RULES_PER_TURN = 20


class RulesEnricher:
    """The deterministic path every install has."""

    name = "rules"

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        out: dict[int, tuple[Enrichment, str]] = {}
        for n, event in enumerate(events, 1):
            if event.id is None:
                continue
            out[event.id] = (rules_enrichment(event), "rules")
            if n % RULES_PER_TURN == 0:
                await asyncio.sleep(0)  # the rules are CPU work: let commands have the loop
        return out


def rules_enrichment(event: Event) -> Enrichment:
    if event.source in MACHINE_SOURCES:
        return fact_enrichment(event)
    return enrich_event(event)


# Events that code wrote from structured data (W&B state changes and restarts, system notes):
# their meaning is known exactly, so they are enriched from their fields, never by guessing from
# their text and never by the LLM.
MACHINE_SOURCES = frozenset({"wandb", "system"})


def fact_enrichment(event: Event) -> Enrichment:
    summary = (event.title or event.body or event.kind).strip()
    if len(summary) > 200:
        summary = summary[:199].rstrip() + "…"
    failed = event.kind == "state" and event.state in UNHEALTHY_STATES
    return Enrichment(
        summary=summary,
        tag="incident" if failed else ("checkpointing" if event.kind == "restart" else "infra"),
        incident=failed,
        severity="critical" if failed else None,
        incident_kind="crash" if failed else None,
        newsworthy=True,
    )


def is_thread_state_change(event: Event) -> bool:
    """A GitHub thread closed, merged or reopened. Its text is the thread's title, so reading it
    for symptoms would report the thread's old incident again on the day it is closed: a state
    change is never an incident report (the thread's own events are)."""
    return event.source == "github" and event.kind == "state"


class Detector(Protocol):
    async def detect(self, store: Store, now: datetime) -> int:
        """Evaluate incident rules, queue alerts in the outbox; return the number queued."""
        ...


async def group_discord_bursts(
    store: Store, run_slug: str | None = None, *, lookback: timedelta = timedelta(hours=2)
) -> int:
    """Fold new Discord messages into conversation events before enrichment.

    For each channel with unenriched messages, the messages around them (from `lookback` before
    the earliest) are grouped; every burst of two or more becomes (or updates) one
    `conversation` event, keyed by its first message, and its member messages are enriched by
    rules as not newsworthy, so the timeline and the LLM see the exchange once. A lone message is
    left for ordinary enrichment. Returns the number of conversations written."""
    pending = await store.events.pending_enrichment(
        run_slug, limit=2000, source="discord", kind="message"
    )
    channels: dict[tuple[str, str], list[Event]] = {}
    for event in pending:
        if event.thread and not event.deleted:
            channels.setdefault((event.run_slug, event.thread), []).append(event)
    written = 0
    for (slug, thread), events in channels.items():
        earliest = min(e.at for e in events)
        latest = max(e.at for e in events)
        messages = await store.events.in_thread(
            slug, thread, since=earliest - lookback, until=latest + GAP, kind="message"
        )
        grouped = group_conversations([m for m in messages if not m.deleted])
        conversations = [e for e in grouped if e.kind == "conversation"]
        if not conversations:
            continue
        by_id = {m.external_id: m for m in messages}
        async with store.transaction():
            result = await store.events.upsert_many(conversations)
            written += len(result.changed)
            for conversation in conversations:
                for member_id in conversation.extra.get("messages", []):
                    member = by_id.get(member_id)
                    if member is None:
                        continue
                    enrichment = rules_enrichment(member)
                    await store.events.set_enrichment(
                        member,
                        summary=enrichment.summary,
                        tag=enrichment.tag,
                        incident=enrichment.incident,
                        severity=enrichment.severity,
                        newsworthy=False,
                        enriched_by="rules:in-conversation",
                    )
    return written


async def enrich_pending(
    store: Store,
    enricher: Enricher | None = None,
    *,
    batch: int = 200,
    run_slug: str | None = None,
    budget: Budget | None = None,
) -> int:
    """Enrich every event that is new or edited since it was last enriched (Discord bursts are
    folded into conversations first), until a batch finds the queue drained. Returns how many
    were enriched.

    With a `budget`, no new batch starts once it is spent and a call that outlasts it is cut
    off: its events get the rules' enrichment labelled for an LLM retry, and whatever is left
    stays queued for the next cycle."""
    enricher = enricher or RulesEnricher()
    await group_discord_bursts(store, run_slug)
    done = 0
    while True:
        if budget is not None and budget.spent:
            return done
        pending = await store.events.pending_enrichment(run_slug, limit=batch)
        if not pending:
            return done
        machine = [e for e in pending if e.source in MACHINE_SOURCES]
        results = {e.id: (fact_enrichment(e), "facts") for e in machine if e.id is not None}
        texts = [e for e in pending if e.source not in MACHINE_SOURCES]
        try:
            async with asyncio.timeout(budget.remaining if budget is not None else None):
                results.update(await enricher.enrich(texts))
        except TimeoutError:
            retry = getattr(enricher, "retry_label", None) or "rules"
            log.warning(
                "enrichment of %d event(s) outlasted the cycle's budget; rules stand in (%s)",
                len(texts),
                retry,
            )
            for event in texts:
                if event.id is not None:
                    results[event.id] = (rules_enrichment(event), retry)
        wrote = 0
        async with store.transaction():
            for event in pending:
                if event.id is None:
                    continue
                enrichment, label = results.get(event.id) or (rules_enrichment(event), "rules")
                if is_thread_state_change(event):
                    enrichment = replace(
                        enrichment, incident=False, severity=None, incident_kind=None
                    )
                stored = await store.events.set_enrichment(
                    event,
                    summary=enrichment.summary,
                    tag=enrichment.tag,
                    incident=enrichment.incident,
                    severity=enrichment.severity,
                    newsworthy=enrichment.newsworthy,
                    enriched_by=label,
                )
                wrote += int(stored)
        done += wrote
        if wrote == 0:  # everything changed under us; try again next cycle
            return done
        if len(pending) < batch:
            # The queue was drained: what arrived since waits for the next round, so a busy
            # channel (a message every few milliseconds) never keeps one round going until
            # its budget is spent, holding the enrichment loop and deferring every command.
            return done


async def retry_llm_fallbacks(
    store: Store,
    enricher: Enricher,
    *,
    limit: int = 60,
    run_slug: str | None = None,
    budget: Budget | None = None,
) -> int:
    """Offer events the rules enriched during an LLM outage to the LLM again (newest first, a
    bounded number per cycle). Those it still cannot do keep their rules enrichment. Skipped
    when the cycle's `budget` is spent; a call that outlasts it changes nothing."""
    retry_label = getattr(enricher, "retry_label", None)
    if not retry_label or (budget is not None and budget.spent):
        return 0
    events = await store.events.enriched_by_label(retry_label, limit, run_slug=run_slug)
    if not events:
        return 0
    try:
        async with asyncio.timeout(budget.remaining if budget is not None else None):
            results = await enricher.enrich(events)
    except TimeoutError:
        log.warning("LLM retry of %d event(s) outlasted the cycle's budget", len(events))
        return 0
    improved = 0
    async with store.transaction():
        for event in events:
            if event.id is None or event.id not in results:
                continue
            enrichment, label = results[event.id]
            if label == retry_label:
                continue  # still unavailable: nothing changes
            improved += await store.events.set_enrichment(
                event,
                summary=enrichment.summary,
                tag=enrichment.tag,
                incident=enrichment.incident,
                severity=enrichment.severity,
                newsworthy=enrichment.newsworthy,
                enriched_by=label,
            )
    return improved


@dataclass(slots=True)
class CycleSummary:
    poll: CycleReport
    enriched: int = 0
    alerts_queued: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, other: CycleSummary) -> None:
        self.poll.results.update(other.poll.results)
        self.poll.failures.update(other.poll.failures)
        self.poll.skipped.extend(other.poll.skipped)
        self.poll.retry_at.update(other.poll.retry_at)
        self.poll.backoff_errors.update(other.poll.backoff_errors)
        self.enriched += other.enriched
        self.alerts_queued += other.alerts_queued
        self.errors.extend(other.errors)


class Budget:
    """Seconds of work allowed from now (on `clock`, monotonic by default)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.deadline = clock() + seconds

    @property
    def remaining(self) -> float:
        return max(0.0, self.deadline - self.clock())

    @property
    def spent(self) -> bool:
        return self.remaining <= 0


# Source families, each polled on its own schedule by the bot and by `runscribe poll`: W&B (the
# crash alerts: polled and judged at once, never behind a GitHub backfill) and the threads
# (GitHub and the other text sources, whose events then wait for enrichment).
WANDB = "wandb"
THREADS = "threads"
FAMILIES = (WANDB, THREADS)


def family_of(source: Source) -> str:
    return WANDB if source.name == "wandb" else THREADS


def of_family(sources: Sequence[Source], family: str) -> list[Source]:
    return [s for s in sources if family_of(s) == family]


@dataclass(frozen=True, slots=True)
class Gather:
    """Live batching: events wait for enrichment until `batch` of them are queued or the oldest
    has waited `window`, so the fixed part of a prompt is shared by many events. An event the
    rules read as an incident report is never kept waiting."""

    window: timedelta = timedelta(seconds=120)
    batch: int = 30


async def enrichment_due(store: Store, now: datetime, gather: Gather | None) -> bool:
    """Whether the queued events are worth a request now (see `Gather`)."""
    if gather is None:
        return True
    pending = await store.events.pending_enrichment(limit=gather.batch)
    texts = [e for e in pending if e.source not in MACHINE_SOURCES]
    if len(texts) < len(pending) or len(texts) >= gather.batch:
        return True  # machine facts cost no request; a full batch is worth one
    if not texts:
        return False
    oldest = min(max(e.at, e.updated_at or e.at) for e in texts)
    if now - oldest >= gather.window:
        return True
    return any(rules_enrichment(e).incident for e in texts)


async def poll_family(
    store: Store,
    sources: Sequence[Source],
    now: datetime,
    *,
    detector: Detector | None = None,
) -> CycleSummary:
    """Poll some sources (one family), then detect at once on what they brought."""
    summary = CycleSummary(poll=await poll_once(store, sources, now))
    await _detect(store, detector, now, summary)
    return summary


async def enrich_step(
    store: Store,
    now: datetime,
    *,
    enricher: Enricher | None = None,
    detector: Detector | None = None,
    budget: Budget | None = None,
    gather: Gather | None = None,
) -> CycleSummary:
    """One bounded round of enrichment (what is queued, within `budget`; the rest resumes next
    round), then detection on the reports it has just flagged. With `gather`, nothing is sent
    until the queue is worth a request."""
    summary = CycleSummary(poll=CycleReport())
    try:
        if not await enrichment_due(store, now, gather):
            return summary
        summary.enriched = await enrich_pending(store, enricher, budget=budget)
        if enricher is not None:
            summary.enriched += await retry_llm_fallbacks(store, enricher, budget=budget)
    except Exception as exc:
        log.exception("enrichment failed; events stay queued for the next cycle")
        summary.errors.append(f"enrich: {exc}")
    if summary.enriched:
        await _detect(store, detector, now, summary)
    return summary


async def run_cycle(
    store: Store,
    sources: Sequence[Source],
    now: datetime,
    *,
    enricher: Enricher | None = None,
    detector: Detector | None = None,
    budget: Budget | None = None,
) -> CycleSummary:
    """One cycle of everything (`runscribe poll --once`, the demo): W&B polled and judged first,
    then the threads polled and judged, then enrichment and a last detection. Detection never
    waits for enrichment (W&B facts need none), so a slow or failing LLM never delays a crash
    alert; the last pass picks up the reports that enrichment has just flagged."""
    summary = await poll_family(store, of_family(sources, WANDB), now, detector=detector)
    threads = of_family(sources, THREADS)
    if threads:
        summary.add(await poll_family(store, threads, now, detector=detector))
    summary.add(await enrich_step(store, now, enricher=enricher, detector=detector, budget=budget))
    return summary


async def _detect(
    store: Store, detector: Detector | None, now: datetime, summary: CycleSummary
) -> None:
    if detector is None:
        return
    # The families' loops may detect at the same moment: the engine judges each run inside one
    # write transaction, so two passes are serialised by the store and never queue twice.
    try:
        summary.alerts_queued += await detector.detect(store, now)
    except Exception as exc:
        log.exception("incident detection failed")
        summary.errors.append(f"detect: {exc}")
