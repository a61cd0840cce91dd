"""The daily digest's structured view for a period (default: the last 24 h): progress, restarts,
incidents, the entries worth listing, and whether the day was quiet. Its text starts as the
template digest from `bot.llm.digest`; `wiring.compose_digest` replaces it with the LLM's when
one is configured."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.analysis.progress import Progress, Restart, compute_progress, detect_restarts
from bot.llm.digest import template_digest
from bot.llm.facts import DigestFacts as LLMDigestFacts
from bot.llm.facts import build_digest_facts
from bot.models import Incident, RunInfo
from bot.services.status import UnknownRun
from bot.services.timeline import TimelineEntry, entry_from_event
from bot.store import Store

PERIOD = timedelta(hours=24)
MAX_ENTRIES = 12
# Order in which entries earn a place in a short digest.
_TAG_WEIGHT = {
    "incident": 0,
    "spec": 1,
    "optimizer": 2,
    "training-dynamics": 2,
    "ablation": 3,
    "evals": 3,
    "checkpointing": 4,
    "data": 4,
    "long-context": 4,
    "infra": 5,
    "other": 6,
}


@dataclass(slots=True)
class DigestFacts:
    run: RunInfo
    start: datetime
    end: datetime
    progress: Progress
    step_at_start: int | None
    restarts: list[Restart]
    incidents_opened: list[Incident]
    incidents_resolved: list[Incident]
    incidents_open: list[Incident]
    counts: dict[str, int]  # entries per tag in the period
    entries: list[TimelineEntry]  # the most important ones, newest first
    total_events: int = 0
    text: str = ""
    by: str = "template"
    links: dict[str, str] = field(default_factory=dict)
    # The bounded facts the LLM writes from (and the template digest is built from).
    prompt_facts: LLMDigestFacts | None = None

    @property
    def steps_gained(self) -> int | None:
        if self.progress.step is None or self.step_at_start is None:
            return None
        return self.progress.step - self.step_at_start

    @property
    def quiet(self) -> bool:
        """Nothing happened: no events, no incidents, no restarts and no training progress."""
        return (
            self.total_events == 0
            and not self.restarts
            and not self.incidents_opened
            and not self.incidents_resolved
            and not self.steps_gained
        )


def _pick(entries: list[TimelineEntry]) -> list[TimelineEntry]:
    ranked = sorted(entries, key=lambda e: (_TAG_WEIGHT.get(e.tag, 6), -e.at.timestamp()))
    chosen = ranked[:MAX_ENTRIES]
    return sorted(chosen, key=lambda e: e.at, reverse=True)


async def build_digest(
    store: Store, slug: str, now: datetime, period: timedelta = PERIOD
) -> DigestFacts:
    run = await store.runs.get(slug)
    if run is None:
        raise UnknownRun(slug)
    start = now - period
    chain = run.wandb_chain()
    points = await store.metrics.window(slug, start)
    progress = compute_progress(
        points,
        total_steps=run.total_steps,
        target_tokens=run.target_tokens,
        now=now,
        chain=chain,
        window=period,
    )
    prompt_facts = await build_digest_facts(store, slug, now, period=period, progress=progress)
    restarts = [r for r in detect_restarts(points, chain) if r.at >= start]
    events = await store.events.timeline(slug, since=start, until=now, limit=1000)
    entries = [entry_from_event(e) for e in events]
    incidents = await store.incidents.find(slug, since=start)
    facts = DigestFacts(
        run=run,
        start=start,
        end=now,
        progress=progress,
        step_at_start=prompt_facts.step_at_start,
        restarts=restarts,
        incidents_opened=[i for i in incidents if i.started_at >= start],
        incidents_resolved=[
            i for i in incidents if i.resolved_at is not None and i.resolved_at >= start
        ],
        incidents_open=[i for i in incidents if i.status != "resolved"],
        counts=dict(Counter(e.tag for e in entries)),
        entries=_pick(entries),
        total_events=len(entries),
        links=dict(run.links),
        prompt_facts=prompt_facts,
    )
    facts.text = template_digest(prompt_facts)
    return facts
