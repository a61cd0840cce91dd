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

from bot.config.settings import DEFAULT_ENRICH_BATCH, DEFAULT_ENRICH_WINDOW
from bot.enrich.conversations import GAP, burst_bounds, bursts, conversation_of, folds
from bot.enrich.reports import is_substantive
from bot.enrich.rules import Enrichment, enrich_event
from bot.models import SOURCE_SPECS, UNHEALTHY_STATES, AlertData, Event, WandbState
from bot.process.hindsight import mark_reports_in_hindsight
from bot.sources.base import Source
from bot.sources.poller import CycleReport, PollSession, poll_once
from bot.store import Store

log = logging.getLogger(__name__)


class Enricher(Protocol):
    """Turns events into enrichments. Must not raise for a bad event: fall back instead."""

    name: str

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        """Map event id → (enrichment, enriched_by label)."""
        ...


class RulesEnricher:
    """The deterministic path every install has. The rules are CPU work (markdown parsing,
    pattern matching: ~2 ms an event, a long report more), so a batch is enriched in a worker
    thread: a backlog never holds the event loop, and with it every command's answer."""

    name = "rules"

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        return await asyncio.to_thread(_rules_all, list(events))


def _rules_all(events: Sequence[Event], label: str = "rules") -> dict[int, tuple[Enrichment, str]]:
    return {e.id: (rules_enrichment(e), label) for e in events if e.id is not None}


def rules_enrichment(event: Event) -> Enrichment:
    if from_facts(event):
        return fact_enrichment(event)
    return enrich_event(event)


def from_facts(event: Event) -> bool:
    """Code wrote the event from structured data (W&B state changes and restarts, system notes,
    cluster alerts: a source people do not write in, `SourceSpec.people`): its meaning is known
    exactly, so it is enriched from its fields, never by guessing from its text and never by
    the LLM."""
    return SOURCE_SPECS.is_facts(event.source)


def chat_burst(event: Event) -> bool:
    """A chat message, or the conversation of a burst of them (`SourceSpec.chat`)."""
    return event.kind in ("message", "conversation") and SOURCE_SPECS.is_chat(event.source)


def fact_enrichment(event: Event) -> Enrichment:
    summary = (event.title or event.body or event.kind).strip()
    if len(summary) > 200:
        summary = summary[:199].rstrip() + "…"
    if event.source == "alertmanager":
        # A cluster alert is about one incident by definition (`bot.hooks.alertmanager`), but
        # the alerting pipeline's heartbeat (Watchdog) fires always and tells nothing.
        alert = AlertData.of(event)
        real = not alert.always_firing
        return Enrichment(
            summary=summary,
            tag="incident" if real else "infra",
            incident=real,
            severity=("critical" if alert.severity == "critical" else "warning") if real else None,
            incident_kind=None,  # the alert's own kind is its alertname (the engine reads it)
            newsworthy=real,
        )
    if event.source == "system" and event.external_id.startswith("incident:"):
        # An incident found in data (`bot.incidents.engine.incident_note`): its entry.
        return Enrichment(
            summary=summary,
            tag="incident",
            incident=True,
            severity=None,
            incident_kind=None,
            newsworthy=True,
        )
    failed = event.kind == "state" and event.state in UNHEALTHY_STATES
    return Enrichment(
        summary=summary,
        tag="incident" if failed else ("checkpointing" if event.kind == "restart" else "infra"),
        incident=failed,
        severity="critical" if failed else None,
        incident_kind="crash" if failed else None,
        newsworthy=not routine_observation(event),
        live_report=failed,
    )


#: States a W&B run is expected to be in: seeing one on a first look is no news.
_ROUTINE_STATES = frozenset({"running", "pending"})


def routine_observation(event: Event) -> bool:
    """The monitor's first look at a W&B run that is doing what it should ("W&B run hero-fork
    is running at step 62,004"): bookkeeping, not a timeline entry. A change of state (crashed,
    finished, resumed) is news, and so are restarts and forks (their own `restart` events)."""
    if event.source != "wandb" or event.kind != "state":
        return False
    data = WandbState.of(event)
    return data.from_state is None and (data.to_state or event.state) in _ROUTINE_STATES


def is_thread_state_change(event: Event) -> bool:
    """A GitHub thread closed, merged or reopened. Its text is the thread's title, so reading it
    for symptoms would report the thread's old incident again on the day it is closed: a state
    change is never an incident report (the thread's own events are)."""
    return event.source == "github" and event.kind == "state"


class Detector(Protocol):
    async def detect(self, store: Store, now: datetime) -> int:
        """Evaluate incident rules, queue alerts in the outbox; return the number queued."""
        ...


# How the rules label a chit-chat message folded into a conversation.
IN_CONVERSATION = "rules:in-conversation"


async def group_chat_bursts(store: Store, run_slug: str | None = None) -> int:
    """Fold new chat messages (Discord's, and any source registered with `chat`) into
    conversation events before enrichment.

    For each channel with new (or edited, or deleted) messages, the channel's tail is regrouped
    from the start of the burst they continue (`bursts`): every burst of two or more messages is
    one `conversation` event keyed by its first message, extended in place while the burst goes
    on. The conversation is the context its messages are judged in, never an entry: its
    chit-chat members are enriched by the rules as not newsworthy (`folds`), and every other
    member (a report, an action, a decision) is enriched by itself, as it arrives. A conversation
    the regrouping no longer produces (its first message was deleted) is marked deleted, and a
    message folded in before that is on its own now (or has substance since an edit) is enriched
    again by itself. Reads only the channel's tail, through indexes. Returns the number of
    conversations written."""
    channels: dict[tuple[str, str, str], list[Event]] = {}
    for source in SOURCE_SPECS.chat():
        pending = await store.events.pending_enrichment(
            run_slug, limit=2000, source=source, kind="message"
        )
        for event in pending:
            if event.thread:
                channels.setdefault((event.run_slug, source, event.thread), []).append(event)
    written = 0
    for (slug, source, thread), events in channels.items():
        written += await _regroup_channel(store, slug, source, thread, events)
    return written


async def _regroup_channel(
    store: Store, slug: str, source: str, thread: str, pending: list[Event]
) -> int:
    earliest = min(e.at for e in pending)
    latest = max(e.at for e in pending)
    # Where the burst the new messages continue began: the channel's current conversation if
    # they are within its reach (never earlier: that would cut into a closed conversation),
    # else at most GAP before them (a message on its own has nobody within GAP before it, so
    # it starts its burst).
    start = earliest - GAP
    current = await store.events.conversation_before(slug, thread, earliest)
    if current is not None and burst_bounds(current)[1] + GAP >= earliest:
        start = current.at
    until = latest + GAP
    existing = await store.events.conversations_between(slug, thread, start, until)
    for conversation in existing:
        until = max(until, burst_bounds(conversation)[1] + GAP)
    messages = await store.events.in_thread(slug, thread, since=start, until=until, kind="message")
    fresh = {e.id for e in pending}
    # Grouping, summarising and the rules are CPU work: done in a worker thread.
    folded = await asyncio.to_thread(_fold, [m for m in messages if not m.deleted], thread, fresh)
    produced = {c.external_id for c in folded.conversations}
    async with store.transaction():
        result = await store.events.upsert_many(folded.conversations)
        for stale in existing:
            if stale.external_id not in produced:
                await store.events.mark_deleted(slug, source, stale.external_id)
        await store.events.requeue(folded.alone)
        for member, enrichment in folded.members:
            await store.events.set_enrichment(
                member,
                summary=enrichment.summary,
                tag=enrichment.tag,
                incident=enrichment.incident,
                severity=enrichment.severity,
                newsworthy=False,
                enriched_by=IN_CONVERSATION,
                live_report=enrichment.live_report,
            )
    return len(result.changed)


@dataclass(frozen=True, slots=True)
class _Folded:
    conversations: list[Event]  # one per burst of more than one message
    members: list[tuple[Event, Enrichment]]  # chit-chat to (re)fold in, with the rules' reading
    alone: list[int]  # messages folded in before that stand on their own now: enriched again


def _fold(messages: Sequence[Event], thread: str, fresh: set[int | None]) -> _Folded:
    """A channel's messages grouped into bursts and conversations (pure: no store)."""
    groups = bursts(messages)
    members = [
        (m, rules_enrichment(m))
        for group in groups
        if len(group) > 1
        for m in group
        # a member folded in before and unchanged since keeps its enrichment, and one the
        # thread pass marked since (a pointer at a panel, then the incident) keeps its mark
        if (m.id in fresh or m.enriched_by != IN_CONVERSATION)
        and not (m.id not in fresh and m.incident)
        and folds(m)
    ]
    alone = [
        m.id
        for group in groups
        for m in group
        if m.id is not None
        and m.enriched_by == IN_CONVERSATION
        and m.id not in fresh
        and (len(group) == 1 or not folds(m))
    ]
    conversations = [conversation_of(group, thread) for group in groups if len(group) > 1]
    return _Folded(conversations, members, alone)


def waiting_since(event: Event) -> datetime:
    """Since when an event has been worth enriching: once it was written or edited."""
    return max(event.at, event.updated_at or event.at)


def urgent(event: Event) -> bool:
    """The rules read it as a live incident report: it never waits for a batch. (Not a
    conversation: it is context, never a verdict of its own.)"""
    if from_facts(event) or event.kind == "conversation":
        return False
    return rules_enrichment(event).live_report


def said_in_chat(event: Event) -> bool:
    """A chat message with substance: it may report a fault in words the rules do not read
    ("two GPUs on gb-r14-n3 overheating"), so the model judges it within the round it arrives,
    never after a batch window."""
    return (
        event.kind == "message"
        and SOURCE_SPECS.is_chat(event.source)
        and not event.deleted
        and is_substantive(event.body or "")
    )


def by_rules(event: Event) -> bool:
    """Enriched by code whatever the enricher: facts, and conversations (context only)."""
    return from_facts(event) or (event.kind == "conversation" and chat_burst(event))


async def enrich_pending(
    store: Store,
    enricher: Enricher | None = None,
    *,
    batch: int = 200,
    run_slug: str | None = None,
    budget: Budget | None = None,
    group: bool = True,
    offer: Sequence[Event] = (),
) -> int:
    """Enrich every event that is new or edited since it was last enriched (chat bursts are
    folded into conversations first, unless `group` is false because the caller just did),
    until a batch finds the queue drained. Returns how many were enriched.

    A chat message is enriched as it arrives (with its conversation so far as context), never
    held until its burst settles.

    `offer`: events the rules enriched standing in for the LLM (`RETRY_LABEL`), sent along
    with the first batch; each keeps its enrichment unless the LLM gives one.

    With a `budget`, no new batch starts once it is spent and a call that outlasts it is cut
    off: its events get the rules' enrichment labelled for an LLM retry, and whatever is left
    stays queued for the next cycle."""
    enricher = enricher or RulesEnricher()
    retry_label = getattr(enricher, "retry_label", None)
    if group:
        await group_chat_bursts(store, run_slug)
    done = 0
    offered = list(offer)
    while True:
        if budget is not None and budget.spent:
            return done
        pending = await store.events.pending_enrichment(run_slug, limit=batch)
        if not pending and not offered:
            return done
        results = await _enrich_batch(enricher, pending, offered, budget)
        wrote = await _store_batch(store, pending, offered, results, retry_label)
        await mark_reports_in_hindsight(store, [*pending, *offered])
        done += wrote
        offered = []
        if wrote == 0:  # everything changed under us; try again next cycle
            return done
        if len(pending) < batch:
            # The queue was drained: what arrived since waits for the next round, so a busy
            # channel (a message every few milliseconds) never keeps one round going until
            # its budget is spent, holding the enrichment loop and deferring every command.
            return done


async def _enrich_batch(
    enricher: Enricher,
    pending: Sequence[Event],
    offered: Sequence[Event],
    budget: Budget | None,
) -> dict[int, tuple[Enrichment, str]]:
    """Facts and chat by code, the rest by `enricher`; the rules stand in for a call that
    outlasts the budget."""
    machine = [e for e in pending if from_facts(e)]
    results = {e.id: (fact_enrichment(e), "facts") for e in machine if e.id is not None}
    context = [e for e in pending if by_rules(e) and not from_facts(e)]
    results.update(await asyncio.to_thread(_rules_all, context))
    texts = [e for e in pending if not by_rules(e)] + list(offered)
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
        results.update(await asyncio.to_thread(_rules_all, texts, retry))
    return results


async def _store_batch(
    store: Store,
    pending: Sequence[Event],
    offered: Sequence[Event],
    results: dict[int, tuple[Enrichment, str]],
    retry_label: str | None,
) -> int:
    """Write a batch's enrichments in one transaction; how many were written."""
    wrote = 0
    async with store.transaction():
        for event in pending:
            if event.id is None:
                continue
            enrichment, label = results.get(event.id) or (rules_enrichment(event), "rules")
            wrote += await _write(store, event, enrichment, label)
        for event in offered:
            if event.id is None or event.id not in results:
                continue
            enrichment, label = results[event.id]
            if label == retry_label:
                continue  # the LLM still could not: the rules' enrichment stands
            wrote += await _write(store, event, enrichment, label)
    return wrote


async def _write(store: Store, event: Event, enrichment: Enrichment, label: str) -> bool:
    """Store one event's enrichment (a thread's state change never counts as an incident)."""
    if is_thread_state_change(event):
        enrichment = replace(
            enrichment, incident=False, live_report=False, severity=None, incident_kind=None
        )
    return await store.events.set_enrichment(
        event,
        summary=enrichment.summary,
        tag=enrichment.tag,
        incident=enrichment.incident,
        severity=enrichment.severity,
        newsworthy=enrichment.newsworthy,
        enriched_by=label,
        live_report=enrichment.live_report,
    )


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
            improved += await _write(store, event, enrichment, label)
    await mark_reports_in_hindsight(store, events)
    return improved


@dataclass(slots=True)
class CycleSummary:
    poll: CycleReport
    enriched: int = 0
    alerts_queued: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time of the round, set by whoever timed it (`Runtime`)

    def add(self, other: CycleSummary) -> None:
        self.poll.results.update(other.poll.results)
        self.poll.failures.update(other.poll.failures)
        self.poll.skipped.extend(other.poll.skipped)
        self.poll.retry_at.update(other.poll.retry_at)
        self.poll.backoff_errors.update(other.poll.backoff_errors)
        self.poll.misconfigured |= other.poll.misconfigured
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
    """Live batching: events wait for enrichment until `batch` of them are ready or the oldest
    has waited `window`, so the fixed part of a prompt is shared by many events. An event the
    rules read as an incident report, and a chat message with substance (`said_in_chat`), are
    never kept waiting."""

    window: timedelta = timedelta(seconds=DEFAULT_ENRICH_WINDOW)
    batch: int = DEFAULT_ENRICH_BATCH


async def enrichment_due(
    store: Store,
    now: datetime,
    gather: Gather | None,
    offer: Sequence[Event] = (),
    *,
    reports_wait: bool = False,
) -> bool:
    """Whether the queued text events (and those the rules stood in for, `offer`) are worth a
    request now (see `Gather`). A live incident report makes them due, unless `reports_wait`
    (the rules flag it meanwhile, `flag_reports`)."""
    if gather is None:
        return True
    # Twice the batch: bursts still going on are queued too (a few per watched channel).
    pending = await store.events.pending_enrichment(limit=2 * gather.batch)
    texts = [e for e in pending if not by_rules(e)]
    texts += offer
    if not texts:
        return False
    if len(texts) >= gather.batch:
        return True
    if now - min(waiting_since(e) for e in texts) >= gather.window:
        return True
    if await asyncio.to_thread(lambda: any(said_in_chat(e) for e in texts if e not in offer)):
        return True
    return not reports_wait and await asyncio.to_thread(lambda: any(urgent(e) for e in texts))


async def gathered_round(
    store: Store, now: datetime, gather: Gather, enricher: Enricher | None, budget: Budget | None
) -> int:
    """One round of live batching. Bursts are folded into conversations and W&B facts enriched
    at once. The batch goes when `enrichment_due`, with the events the rules stood in for
    (`RETRY_LABEL`: reports, and events of an LLM outage) in the same request. Until then a live
    incident report the rules flag gets their enrichment at once (so the incident engine sees it
    this round) and waits, like the rest, for the batch, where the LLM may improve it."""
    await group_chat_bursts(store)
    done = await enrich_facts(store)
    retry_label = getattr(enricher, "retry_label", None)
    offer = await store.events.enriched_by_label(retry_label, RETRY_OFFER) if retry_label else []
    # Without a retry label there is nowhere to queue a report for later: it goes now.
    if await enrichment_due(store, now, gather, offer, reports_wait=retry_label is not None):
        return done + await enrich_pending(store, enricher, budget=budget, group=False, offer=offer)
    if retry_label is not None:
        done += await flag_reports(store, now, retry_label, limit=2 * gather.batch)
    return done


# Events the rules stood in for, offered to the LLM with each batch (newest first).
RETRY_OFFER = 60


async def flag_reports(store: Store, now: datetime, label: str, *, limit: int) -> int:
    """Give the queued live incident reports (`urgent`) the rules' enrichment now, labelled
    `label` so the LLM is offered them with the next batch."""
    pending = await store.events.pending_enrichment(limit=limit)
    # the rules are CPU work: read in a worker thread, never on the event loop
    reports = await asyncio.to_thread(_urgent_reports, pending, now)
    written = 0
    if reports:
        async with store.transaction():
            for event, enrichment in reports:
                written += await _write(store, event, enrichment, label)
        await mark_reports_in_hindsight(store, [event for event, _ in reports])
    return written


def _urgent_reports(events: Sequence[Event], now: datetime) -> list[tuple[Event, Enrichment]]:
    """The live incident reports among `events`, with the rules' enrichment of each."""
    return [(e, rules_enrichment(e)) for e in events if urgent(e)]


async def enrich_facts(store: Store) -> int:
    """Enrich the queued W&B, system and alert events (`from_facts`) from their fields, and the
    queued conversations (context for their messages) by the rules: no request, never waits."""
    pending: list[Event] = []
    for source in sorted(SOURCE_SPECS.facts()):
        pending += await store.events.pending_enrichment(limit=500, source=source)
    conversations: list[Event] = []
    for source in sorted(SOURCE_SPECS.chat()):
        conversations += await store.events.pending_enrichment(
            limit=500, source=source, kind="conversation"
        )
    read = await asyncio.to_thread(_rules_all, conversations)
    written = 0
    async with store.transaction():
        for event in pending:
            written += await _write(store, event, fact_enrichment(event), "facts")
        for event in conversations:
            if event.id is not None:
                written += await _write(store, event, *read[event.id])
    return written


async def poll_family(
    store: Store,
    sources: Sequence[Source],
    now: datetime,
    *,
    detector: Detector | None = None,
    session: PollSession | None = None,
) -> CycleSummary:
    """Poll some sources (one family), then detect at once on what they brought."""
    summary = CycleSummary(poll=await poll_once(store, sources, now, session=session))
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
    until the queue is worth a request, and a chat burst is enriched once it has settled."""
    summary = CycleSummary(poll=CycleReport())
    try:
        if gather is None:
            summary.enriched = await enrich_pending(store, enricher, budget=budget)
            if enricher is not None:
                summary.enriched += await retry_llm_fallbacks(store, enricher, budget=budget)
        else:
            summary.enriched = await gathered_round(store, now, gather, enricher, budget)
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
    session: PollSession | None = None,
) -> CycleSummary:
    """One cycle of everything (`runscribe poll --once`, the demo): W&B polled and judged first,
    then the threads polled and judged, then enrichment and a last detection. Detection never
    waits for enrichment (W&B facts need none), so a slow or failing LLM never delays a crash
    alert; the last pass picks up the reports that enrichment has just flagged."""
    summary = await poll_family(
        store, of_family(sources, WANDB), now, detector=detector, session=session
    )
    threads = of_family(sources, THREADS)
    if threads:
        summary.add(await poll_family(store, threads, now, detector=detector, session=session))
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
