"""Narratives from the store: the facts they are written from, which narrative `/status` shows,
and when a new one is due. Writing prose is not done here: the caller hands in a writer (the
LLM's, `bot.llm.narrative.write_narrative`, bound by `bot.process.wiring`), so this module never
imports the LLM and works the same with or without a key."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from bot.analysis.progress import Progress, projection_margin
from bot.core.mentions import body
from bot.incidents.detectors import incident_of_restart, restart_window_start
from bot.models import Event, Incident, LLMOutput, ReportedCause, Restart
from bot.narrative.discussions import (
    DISCUSSION_WINDOW,
    Discussion,
    select_discussions,
)
from bot.narrative.facts import (
    COUNT_WINDOW,
    INCIDENT_WINDOW,
    NARRATIVE_HIGHLIGHTS,
    IncidentFact,
    NarrativeFacts,
    incident_fact,
    incident_facts,
    open_threads_first,
    open_threads_from,
    select_highlights,
    select_story_highlights,
)
from bot.narrative.templates import template_narrative
from bot.services.status import StatusReport, build_status
from bot.store import Store

NARRATIVE_EVERY = timedelta(minutes=30)  # at most one new narrative per run this often
NARRATIVE_MAX_AGE = timedelta(
    hours=6
)  # past this, a narrative is rewritten even if nothing changed
SCAN_EVENTS = 600  # events read from the store to choose highlights from
# The live template names a few recent highlights and open threads; it reads only this many
# recent events to find them, which keeps /status fast on a store of millions.
TEMPLATE_HIGHLIGHTS = 3
TEMPLATE_SCAN = 80

# Writes, checks and stores a narrative from facts; returns the stored output.
NarrativeWriter = Callable[[NarrativeFacts, datetime], Awaitable[LLMOutput]]
FactsBuilder = Callable[[Store, str, datetime], Awaitable[NarrativeFacts]]


@dataclass(slots=True, frozen=True)
class Narrative:
    """The narrative `/status` shows and where it came from."""

    text: str
    at: datetime | None
    by: str  # "llm" | "template"
    next_at: datetime | None = None  # when the next LLM narrative may be written


# -- facts from the store --------------------------------------------------------------------


def _with_cause(fact: IncidentFact | None, cause: ReportedCause | None) -> IncidentFact | None:
    """The restart's incident with why it restarted in people's words, when its incident holds
    none but someone explained it afterwards (`StatusReport.restart_cause`)."""
    if fact is None or fact.reported_cause is not None or cause is None:
        return fact
    return replace(fact, reported_cause=cause.text, reported_by=cause.author)


def restart_incident(restart: Restart | None, incidents: Sequence[Incident]) -> IncidentFact | None:
    """The incident that most likely caused the restart: the latest outage active just before
    it (`incidents` newest first)."""
    if restart is None:
        return None
    found = incident_of_restart(restart, incidents)
    return incident_fact(found) if found is not None else None


async def shared_facts(
    store: Store,
    run_slug: str,
    now: datetime,
    incidents: Sequence[Incident],
    progress: Progress | None,
    state: str | None,
    report: StatusReport | None = None,
) -> dict[str, Any]:
    """The fields narrative and digest facts share, from the same computation /status shows, so
    the LLM is never told a number the status page disagrees with."""
    report = report or await build_status(store, run_slug, now)
    progress = progress or report.progress
    run = report.run
    restart_incidents = incidents
    restart = report.last_restart
    if restart is not None and not any(i.started_at <= restart.at for i in incidents):
        # the restart is older than the incidents at hand: look up the ones around it
        restart_incidents = await store.incidents.find(
            run_slug, since=restart_window_start(restart)
        )
    return {
        "incidents_total": report.incidents_total,
        "self_healed": report.incidents_self_healed,
        "monitor_stale": report.monitor_stale,
        "wandb_run": report.latest_wandb_run.rsplit("/", 1)[-1]
        if report.latest_wandb_run
        else None,
        "failing_sources": report.failing_sources,
        "run_slug": run_slug,
        "run_name": run.name,
        "now": now,
        "timezone": run.timezone,
        "state": state or report.state,
        "step": progress.step,
        "total_steps": progress.total_steps,
        "percent": progress.percent,
        "tokens": progress.tokens,
        "target_tokens": progress.target_tokens,
        "launched_at": report.launched_at,
        "projected_end": None if progress.finished else progress.projected_end,
        "projected_margin": projection_margin(progress, now, report.launched_at),
        "loss": progress.loss,
        "loss_vs_forecast": (
            report.loss_forecast.reason
            if report.loss_forecast is not None and report.loss_forecast.forecast is not None
            else None
        ),
        "drifting": [view.describe() for view in report.drifting],
        "last_restart": restart,
        "restart_incident": _with_cause(
            restart_incident(restart, restart_incidents), report.restart_cause
        ),
        "incidents": incident_facts(incidents),
        "links": dict(run.links),
    }


async def discussions_of(
    store: Store, run_slug: str, now: datetime, recent: Sequence[Event], *, scan: int = SCAN_EVENTS
) -> tuple[list[Event], list[Discussion]]:
    """The threads most discussed lately (`select_discussions`), from the run's GitHub posts of
    the discussion window (read on their own, so a busy chat never crowds them out of `recent`)
    plus the chat in `recent`, each with its description (state, title, opener) read by
    reference however old the thread is. Returns the events read and the discussions."""
    github = await store.events.timeline(
        run_slug, since=now - DISCUSSION_WINDOW, source="github", limit=scan
    )
    seen = {(e.source, e.external_id) for e in github}
    events = github + [e for e in recent if (e.source, e.external_id) not in seen]
    found = select_discussions(events, now)
    described: dict[str, Event] = {}
    for d in found:
        if d.ref[1:].isdigit():
            event = await store.events.get_by_external(run_slug, "github", f"issue:{d.ref[1:]}")
            if event is not None and not event.deleted:
                described[d.ref] = event
    seen |= {(e.source, e.external_id) for e in events}
    events += [e for e in described.values() if (e.source, e.external_id) not in seen]
    return events, select_discussions(events, now, described)


async def build_narrative_facts(
    store: Store,
    run_slug: str,
    now: datetime,
    *,
    progress: Progress | None = None,
    state: str | None = None,
    highlights: int = NARRATIVE_HIGHLIGHTS,
    report: StatusReport | None = None,
    scan: int = SCAN_EVENTS,
    recent_first: bool = True,
) -> NarrativeFacts:
    """Facts for the status narrative, read from the store. Pass `progress`/`state` (or the
    whole status `report`) when the caller already computed them; `scan` bounds the recent
    events read to pick highlights from (the live template needs far fewer than the LLM).
    `recent_first`: highlights as the model's request takes them (what the most discussed
    threads changed and said last, then the last day, then older ones only from open threads,
    capped in size: `select_story_highlights`); else the template's (by weight and age,
    `select_highlights`). Either way the threads under discussion (`discussions_of`) come
    first among the open threads and are the facts' `discussions`."""
    incidents = await store.incidents.find(run_slug, since=now - INCIDENT_WINDOW)
    recent = await store.events.timeline(run_slug, since=now - COUNT_WINDOW, limit=scan)
    if len(recent) < highlights:  # a quiet week: look further back, still bounded
        recent = await store.events.timeline(run_slug, limit=scan)
    events, discussions = await discussions_of(store, run_slug, now, recent, scan=scan)
    threads = open_threads_first(discussions, open_threads_from(recent))
    chosen = (
        select_story_highlights(
            events, now, {t.ref for t in threads if t.ref}, discussions, highlights
        )
        if recent_first
        else select_highlights(recent, now, highlights)
    )
    return NarrativeFacts(
        **await shared_facts(store, run_slug, now, incidents, progress, state, report),
        counts_by_tag=dict(Counter(e.tag or "other" for e in recent if e.at >= now - COUNT_WINDOW)),
        highlights=chosen,
        open_threads=threads,
        discussions=discussions,
    )


async def ask_facts(store: Store, run_slug: str, now: datetime) -> NarrativeFacts:
    """The run's computed facts an `/ask` answer may state besides its sources: the narrative's
    numbers without its highlights, tag counts or open threads (the sources stand for those)."""
    facts = await build_narrative_facts(store, run_slug, now, highlights=0, scan=1)
    facts.counts_by_tag, facts.highlights, facts.open_threads = {}, [], []
    facts.discussions = []
    return facts


# -- which narrative, and when a new one is due ----------------------------------------------


async def current_narrative(store: Store, report: StatusReport) -> Narrative:
    """The latest LLM narrative, or the template written fresh from the report's numbers (cheap
    and always current, by the same code the LLM's fallback uses)."""
    stored = await store.llm.latest(report.slug, "narrative")
    if stored is not None and not stored.fallback and stored.content.strip():
        return Narrative(
            text=stored.content,
            at=stored.created_at,
            by="llm",
            next_at=next_refresh_at(stored),
        )
    facts = await build_narrative_facts(
        store,
        report.slug,
        report.now,
        report=report,
        highlights=TEMPLATE_HIGHLIGHTS,
        scan=TEMPLATE_SCAN,
        recent_first=False,
    )
    # the template has no links of its own: any in it came with a name or a summary
    return Narrative(text=body(template_narrative(facts)), at=report.now, by="template")


async def status_with_narrative(
    store: Store, slug: str, now: datetime, *, started_at: datetime | None = None
) -> tuple[StatusReport, Narrative]:
    """`started_at`: the bot's start (`build_status`)."""
    report = await build_status(store, slug, now, started_at=started_at)
    return report, await current_narrative(store, report)


def next_refresh_at(last: LLMOutput | None, every: timedelta = NARRATIVE_EVERY) -> datetime | None:
    """When the next narrative may be written (for "updated 12 min ago, next in 18 min")."""
    return None if last is None else last.created_at + every


async def refresh_if_due(
    store: Store,
    write: NarrativeWriter,
    run_slug: str,
    now: datetime,
    *,
    every: timedelta = NARRATIVE_EVERY,
    max_age: timedelta = NARRATIVE_MAX_AGE,
    facts: FactsBuilder | None = None,
) -> LLMOutput | None:
    """Write a new narrative when `every` has passed since the last one AND something new
    happened (state, restart, incidents, highlights or open threads changed — the facts'
    fingerprint), or when the last one is older than `max_age` (its numbers age). Returns the new
    output, or None when nothing was written. Reading facts touches only the store."""
    last = await store.llm.latest(run_slug, "narrative")
    if last is not None and now - last.created_at < every:
        return None
    current = await (facts or build_narrative_facts)(store, run_slug, now)
    if last is not None:
        same = last.cache_key == f"narrative:{run_slug}:{current.fingerprint()}"
        if same and now - last.created_at < max_age:
            return None
    return await write(current, now)


async def refresh_narratives(
    store: Store, write: NarrativeWriter, slugs: Sequence[str], now: datetime
) -> int:
    """A new narrative for each run where one is due; returns how many were written."""
    written = 0
    for slug in slugs:
        written += await refresh_if_due(store, write, slug, now) is not None
    return written
