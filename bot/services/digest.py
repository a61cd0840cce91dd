"""The daily digest's view of a period (default: the last 24 h): the narrative facts over the
window, the entries worth listing, whether the day was quiet, and the template text. A
configured LLM may replace the text later (`bot.outputs.digests.compose_text`)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from bot.analysis.progress import compute_progress
from bot.narrative.entries import entry_from_event
from bot.narrative.facts import (
    MAX_HIGHLIGHTS,
    DigestFacts,
    open_threads_from,
    pick_entries,
    routine,
    select_highlights,
    what_happened,
)
from bot.narrative.templates import template_digest
from bot.services.goodput import goodput_moved
from bot.services.narrative import SCAN_EVENTS, shared_facts
from bot.services.runs import UnknownRun
from bot.services.status import pace_inputs
from bot.store import Store

PERIOD = timedelta(hours=24)
WINDOW_EVENTS = 1000  # newsworthy events a digest reads from its window (and counts, at most)


async def build_digest(
    store: Store,
    run_slug: str,
    now: datetime,
    period: timedelta = PERIOD,
    *,
    highlights: int = MAX_HIGHLIGHTS,
) -> DigestFacts:
    """The digest of [now - period, now): its facts, the entries it lists, the template text."""
    run = await store.runs.get(run_slug)
    if run is None:
        raise UnknownRun(run_slug)
    start = now - period
    chain = run.wandb_chain()
    points = await store.metrics.window(run_slug, start)
    downtime, baseline = await pace_inputs(store, run_slug, now)
    progress = compute_progress(
        points,
        total_steps=run.total_steps,
        target_tokens=run.target_tokens,
        now=now,
        chain=chain,
        window=period,
        downtime=downtime,
        baseline=baseline,
    )
    before = [p for p in points if p.at <= start]
    step_at_start = max(before, key=lambda p: p.at).step if before else None
    if step_at_start is None and points:
        step_at_start = min(points, key=lambda p: p.at).step
    incidents = await store.incidents.find(run_slug, since=start)
    window_events = await store.events.timeline(
        run_slug, since=start, until=now, limit=WINDOW_EVENTS
    )
    events = [e for e in window_events if not routine(e)]  # no "running → running" news
    older = await store.events.timeline(run_slug, limit=SCAN_EVENTS, until=now)
    entries = [entry_from_event(e) for e in events]
    restarts = await store.events.restarts(run_slug, since=start, until=now)
    facts = DigestFacts(
        **await shared_facts(store, run_slug, now, incidents, progress, None),
        counts_by_tag=dict(Counter(e.tag or "other" for e in entries)),
        highlights=what_happened(
            select_highlights(events[:SCAN_EVENTS], now, highlights), highlights
        ),
        open_threads=open_threads_from(older),
        window_start=start,
        window_end=now,
        step_at_start=step_at_start,
        events_in_window=len(events),  # routine W&B state lines left out
        restarts_in_window=restarts,
        incidents_opened=sum(i.started_at >= start for i in incidents),
        incidents_resolved=sum(
            i.resolved_at is not None and i.resolved_at >= start for i in incidents
        ),
        incidents_open=sum(i.status != "resolved" for i in incidents),
        entries=pick_entries(entries),
        goodput_moved=await goodput_moved(store, run, start, now),
    )
    facts.text = template_digest(facts)
    return facts
