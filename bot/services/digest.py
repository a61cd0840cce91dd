"""The daily digest's facts, computed from the store for a period (default: the last 24 h), and
the template text used when there is no LLM (or the LLM's text fails the grounding check)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.analysis.progress import Progress, Restart, compute_progress, detect_restarts
from bot.models import Incident, RunInfo
from bot.services.status import UnknownRun
from bot.services.timeline import TimelineEntry, entry_from_event
from bot.store import Store
from bot.timeutil import humanize_delta

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
    chain = [str(p) for p in run.config.get("wandb_runs", [])]
    points = await store.metrics.window(slug, start)
    progress = compute_progress(
        points,
        total_steps=run.total_steps,
        target_tokens=run.target_tokens,
        now=now,
        chain=chain,
        window=period,
    )
    before = [p for p in points if p.at <= start]
    step_at_start = max(before, key=lambda p: p.at).step if before else None
    if step_at_start is None and points:
        step_at_start = min(points, key=lambda p: p.at).step
    restarts = [r for r in detect_restarts(points, chain) if r.at >= start]
    events = await store.events.timeline(slug, since=start, until=now, limit=1000)
    entries = [entry_from_event(e) for e in events]
    incidents = await store.incidents.find(slug, since=start)
    facts = DigestFacts(
        run=run,
        start=start,
        end=now,
        progress=progress,
        step_at_start=step_at_start,
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
    )
    facts.text = template_digest(facts)
    return facts


def template_digest(facts: DigestFacts) -> str:
    """A short plain-text digest built only from the facts."""
    run = facts.run
    if facts.quiet:
        return f"{run.name}: nothing happened in the last 24 hours."
    lines: list[str] = []
    p = facts.progress
    if p.step is not None:
        head = f"{run.name} is at step {p.step:,}"
        if p.total_steps:
            head += f" of {p.total_steps:,}"
        if p.percent is not None:
            head += f" ({p.percent:.1f}%)"
        gained = facts.steps_gained
        if gained is not None:
            head += f", {gained:+,} steps in the last 24 hours"
        lines.append(head + ".")
        if p.projected_end is not None and not p.finished:
            lines.append(f"At the current pace it ends around {p.projected_end:%b %d, %Y}.")
    else:
        lines.append(f"{run.name}: no training metrics recorded yet.")
    for restart in facts.restarts:
        down = f" after {humanize_delta(restart.down_for)} down" if restart.down_for else ""
        lines.append(f"Restarted at step {restart.to_step:,}{down}.")
    if facts.incidents_opened or facts.incidents_resolved:
        lines.append(
            f"Incidents: {len(facts.incidents_opened)} opened, "
            f"{len(facts.incidents_resolved)} resolved, {len(facts.incidents_open)} still open."
        )
    if facts.counts:
        spread = ", ".join(f"{n} {tag}" for tag, n in sorted(facts.counts.items()))
        lines.append(f"{facts.total_events} updates ({spread}).")
    for entry in facts.entries:
        who = entry.author or entry.source
        ref = f" {entry.ref}" if entry.ref else ""
        lines.append(f"• {who}{ref}: {entry.summary}")
    return "\n".join(lines)
