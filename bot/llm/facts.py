"""Facts for the narrative and the digest: computed in code, bounded in size, rendered as the text
the model sees (and the grounding check reads).

Size is bounded whatever the run's length: at most `MAX_HIGHLIGHTS` enriched summaries (each
capped at 200 characters, chosen by recency and tag weight from a bounded window of the store),
at most `MAX_OPEN_THREADS` open threads and `MAX_INCIDENTS` incidents; counts by tag are a
handful of integers. Raw bodies never enter these prompts, only enriched summaries, and those are
fenced as untrusted data (they were derived from untrusted text)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.analysis.progress import Progress, compute_progress, detect_restarts
from bot.llm.prompts import short_hash
from bot.llm.safety import fence
from bot.models import Event, Incident
from bot.services.status import RestartInfo, StatusReport, build_status
from bot.store import Store
from bot.timeutil import humanize_delta

MAX_HIGHLIGHTS = 40
MAX_OPEN_THREADS = 10
MAX_INCIDENTS = 8
SCAN_EVENTS = 600  # events read from the store to choose highlights from
COUNT_WINDOW = timedelta(days=7)
INCIDENT_WINDOW = timedelta(days=7)

# Lower is more important.
TAG_WEIGHT = {
    "incident": 0,
    "spec": 1,
    "optimizer": 1,
    "training-dynamics": 1,
    "ablation": 2,
    "evals": 2,
    "checkpointing": 2,
    "data": 3,
    "long-context": 3,
    "infra": 3,
    "other": 5,
}


@dataclass(slots=True)
class Highlight:
    at: datetime
    summary: str
    source: str
    author: str | None = None
    ref: str | None = None
    url: str | None = None
    tag: str | None = None
    state: str | None = None
    incident: bool = False


@dataclass(slots=True)
class RestartFact:
    at: datetime
    cause: str | None = None
    down_for: timedelta | None = None
    resumed_step: int | None = None
    from_step: int | None = None


@dataclass(slots=True)
class IncidentFact:
    title: str
    status: str  # pending | firing | resolved
    started_at: datetime
    resolved_at: datetime | None = None
    severity: str = "warning"
    cause: str | None = None
    resolution: str | None = None

    def duration(self, now: datetime) -> timedelta:
        return (self.resolved_at or now) - self.started_at


@dataclass(slots=True)
class OpenThread:
    title: str
    ref: str | None = None
    url: str | None = None
    author: str | None = None
    opened_at: datetime | None = None
    kind: str | None = None


@dataclass(slots=True)
class NarrativeFacts:
    run_slug: str
    run_name: str
    now: datetime
    timezone: str = "UTC"
    state: str = "unknown"
    step: int | None = None
    total_steps: int | None = None
    percent: float | None = None
    tokens: float | None = None
    target_tokens: float | None = None
    launched_at: datetime | None = None
    projected_end: datetime | None = None
    loss: float | None = None
    loss_vs_forecast: str | None = None  # "0.012 below the predicted curve"
    drifting: list[str] = field(default_factory=list)  # watched metrics off their forecast
    last_restart: RestartFact | None = None
    incidents: list[IncidentFact] = field(default_factory=list)
    counts_by_tag: dict[str, int] = field(default_factory=dict)
    counts_window: timedelta = COUNT_WINDOW
    highlights: list[Highlight] = field(default_factory=list)
    open_threads: list[OpenThread] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)
    incidents_total: int = 0  # over the whole run
    self_healed: int = 0  # crashes training recovered from with no human report
    monitor_stale: bool = False  # W&B unreachable lately: figures may be behind

    def fingerprint(self) -> str:
        """What changes the story (not the ever-moving step count): state, last restart,
        incidents and their status, the newest highlights and open threads."""
        parts = [
            self.state,
            self.last_restart.at.isoformat() if self.last_restart else "",
            ";".join(f"{i.title}|{i.status}" for i in self.incidents),
            ";".join(f"{h.at.isoformat()}|{h.ref}|{h.summary}" for h in self.highlights[:10]),
            ";".join(t.ref or t.title for t in self.open_threads),
        ]
        return short_hash(*parts, length=16)


@dataclass(slots=True)
class DigestFacts(NarrativeFacts):
    window_start: datetime | None = None
    window_end: datetime | None = None
    step_at_start: int | None = None
    events_in_window: int = 0
    restarts_in_window: list[RestartFact] = field(default_factory=list)

    @property
    def steps_gained(self) -> int | None:
        if self.step is None or self.step_at_start is None:
            return None
        return self.step - self.step_at_start

    @property
    def window_hours(self) -> int:
        if self.window_start is None or self.window_end is None:
            return 24
        return round((self.window_end - self.window_start).total_seconds() / 3600)

    @property
    def quiet(self) -> bool:
        return (
            self.events_in_window == 0
            and not self.restarts_in_window
            and not self.incidents
            and not self.steps_gained
        )


# -- formatting ----------------------------------------------------------------------------


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def fmt_date(value: datetime, tz: str) -> str:
    local = value.astimezone(zone(tz))
    return f"{local:%b} {local.day}, {local.year}"


def fmt_time(value: datetime, tz: str) -> str:
    local = value.astimezone(zone(tz))
    hour = local.hour % 12 or 12
    half = "a.m." if local.hour < 12 else "p.m."
    return f"{fmt_date(value, tz)}, {hour}:{local.minute:02d} {half} {local.tzname() or tz}"


def sentence(text: str) -> str:
    """End with exactly one full stop, unless the text already ends a sentence (? ! …)."""
    text = text.rstrip().rstrip(".")
    return text if text.endswith(("?", "!", "…")) else text + "."


def fmt_int(value: float | int) -> str:
    return f"{int(value):,}"


def fmt_big(value: float) -> str:
    """2.46e12 → '2.46T'; 18e12 → '18T'; 5.3e8 → '530M'."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            scaled = value / scale
            digits = max(0, 2 - math.floor(math.log10(abs(scaled))))
            text = f"{scaled:.{digits}f}".rstrip("0").rstrip(".")
            return text + suffix
    return f"{value:g}"


def fmt_duration(delta: timedelta) -> str:
    return humanize_delta(delta)


def _inline(text: str | None, limit: int = 200) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_facts(facts: NarrativeFacts) -> str:
    """The trusted facts block, one fact per line."""
    tz = facts.timezone
    lines = [f"run: {facts.run_name} (slug {facts.run_slug})", f"state: {facts.state}"]
    lines.append(f"time now: {fmt_time(facts.now, tz)}")
    if facts.step is not None:
        line = f"progress: step {fmt_int(facts.step)}"
        if facts.total_steps:
            line += f" of {fmt_int(facts.total_steps)}"
        if facts.percent is not None:
            line += f" ({facts.percent:.1f}% done)"
        lines.append(line)
    if facts.tokens is not None:
        line = f"tokens trained: {fmt_big(facts.tokens)}"
        if facts.target_tokens:
            line += f" of {fmt_big(facts.target_tokens)}"
        lines.append(line)
    if facts.launched_at:
        lines.append(f"launched: {fmt_date(facts.launched_at, tz)}")
    if facts.projected_end:
        lines.append(f"projected end: {fmt_date(facts.projected_end, tz)}")
    if facts.loss is not None:
        lines.append(f"latest loss: {facts.loss:.3f}")
    if facts.loss_vs_forecast:
        lines.append(f"loss against its predicted curve: {facts.loss_vs_forecast}")
    for line in facts.drifting:
        lines.append(f"metric off its forecast: {line}")
    if isinstance(facts, DigestFacts):
        lines.append(f"window: the last {facts.window_hours} hours")
        gained = facts.steps_gained
        if gained is not None:
            lines.append(f"steps trained in the window: {fmt_int(gained)}")
        lines.append(f"events in the window: {facts.events_in_window}")
        lines.append(f"restarts in the window: {len(facts.restarts_in_window)}")
        for restart in facts.restarts_in_window:
            lines.append("- " + _restart_line(restart, facts))
    if facts.last_restart is not None:
        lines.append("last restart: " + _restart_line(facts.last_restart, facts))
    if facts.incidents:
        lines.append(f"incidents ({len(facts.incidents)}):")
        for incident in facts.incidents:
            line = f"- {incident.status}, {incident.severity}: {_inline(incident.title, 120)}; "
            line += f"started {fmt_time(incident.started_at, tz)}"
            if incident.resolved_at:
                line += f", resolved {fmt_time(incident.resolved_at, tz)}"
                line += f", lasted {fmt_duration(incident.duration(facts.now))}"
            else:
                line += f", open for {fmt_duration(incident.duration(facts.now))}"
            if incident.cause:
                line += "; cause: " + fence(_inline(incident.cause), source="system")
            lines.append(line)
    else:
        lines.append("incidents: none")
    if facts.monitor_stale:
        lines.append(
            "monitor: Runscribe has not reached W&B recently, so these figures may be behind; "
            "this says nothing about the run itself"
        )
    if facts.incidents_total:
        lines.append(
            f"incidents over the whole run: {facts.incidents_total}; training recovered on its "
            f"own (no human report before it resumed) from {facts.self_healed} of them"
        )
    if facts.counts_by_tag:
        window = (
            "the window"
            if isinstance(facts, DigestFacts)
            else (f"the last {facts.counts_window.days} days")
        )
        counts = ", ".join(f"{tag} {n}" for tag, n in sorted(facts.counts_by_tag.items()))
        lines.append(f"events by tag in {window}: {counts}")
    for name, url in facts.links.items():
        lines.append(f"link: {_inline(name, 60)} {url}")
    return "\n".join(lines)


def _restart_line(restart: RestartFact, facts: NarrativeFacts) -> str:
    line = fmt_time(restart.at, facts.timezone)
    if restart.resumed_step is not None:
        line += f", resumed from step {fmt_int(restart.resumed_step)}"
    if restart.from_step is not None:
        line += f" (had reached step {fmt_int(restart.from_step)})"
    if restart.down_for is not None:
        line += f", down for {fmt_duration(restart.down_for)}"
    line += f", {fmt_duration(facts.now - restart.at)} ago"
    if restart.cause:
        line += "; cause: " + fence(_inline(restart.cause), source="system")
    return line


def render_highlights(highlights: Sequence[Highlight], tz: str) -> str:
    if not highlights:
        return "(none)"
    return "\n".join(
        fence(
            _inline(h.summary),
            source=h.source,
            date=fmt_date(h.at, tz),
            author=h.author,
            ref=h.ref,
            state=h.state,
            tag=h.tag,
            url=h.url,
        )
        for h in highlights
    )


def render_open_threads(threads: Sequence[OpenThread], tz: str) -> str:
    if not threads:
        return "(none)"
    return "\n".join(
        fence(
            _inline(t.title, 160),
            source="github" if (t.ref or "").startswith("#") else "discord",
            kind=t.kind,
            ref=t.ref,
            author=t.author,
            opened=fmt_date(t.opened_at, tz) if t.opened_at else None,
            url=t.url,
        )
        for t in threads
    )


# -- selection (pure) ------------------------------------------------------------------------


def select_highlights(
    events: Sequence[Event], now: datetime, limit: int = MAX_HIGHLIGHTS
) -> list[Highlight]:
    """The `limit` most relevant enriched, newsworthy events: score = tag weight + age in half
    days, lower first; returned newest first."""
    scored: list[tuple[float, Event]] = []
    for event in events:
        if event.deleted or not event.newsworthy or not (event.summary or "").strip():
            continue
        age = max(0.0, (now - event.at).total_seconds() / 43200)
        weight = TAG_WEIGHT.get(event.tag or "other", 5) - (1 if event.incident else 0)
        scored.append((weight + age, event))
    scored.sort(key=lambda pair: (pair[0], -pair[1].at.timestamp()))
    chosen = sorted((event for _, event in scored[:limit]), key=lambda e: e.at, reverse=True)
    return [
        Highlight(
            at=e.at,
            summary=e.summary or "",
            source=e.source,
            author=e.author,
            ref=e.ref,
            url=e.url,
            tag=e.tag,
            state=e.state,
            incident=e.incident,
        )
        for e in chosen
    ]


def open_threads_from(events: Sequence[Event], limit: int = MAX_OPEN_THREADS) -> list[OpenThread]:
    """Open issues and pull requests, newest first, one per reference."""
    seen: set[str] = set()
    threads: list[OpenThread] = []
    for event in sorted(events, key=lambda e: e.at, reverse=True):
        if event.kind not in ("issue", "pull") or event.state != "open" or event.deleted:
            continue
        key = event.ref or event.external_id
        if key in seen:
            continue
        seen.add(key)
        threads.append(
            OpenThread(
                title=event.title or event.summary or key,
                ref=event.ref,
                url=event.url,
                author=event.author,
                opened_at=event.at,
                kind=event.kind,
            )
        )
        if len(threads) >= limit:
            break
    return threads


def incident_facts(incidents: Sequence[Incident], limit: int = MAX_INCIDENTS) -> list[IncidentFact]:
    ordered = sorted(incidents, key=lambda i: (i.status == "resolved", -i.started_at.timestamp()))
    return [
        IncidentFact(
            title=i.title,
            status=i.status,
            started_at=i.started_at,
            resolved_at=i.resolved_at,
            severity=i.severity,
            cause=i.cause,
            resolution=i.resolution,
        )
        for i in ordered[:limit]
    ]


# -- builders from the store -----------------------------------------------------------------


def _restart_fact(restart: RestartInfo | None, incidents: Sequence[Incident]) -> RestartFact | None:
    """The status service's last restart, with the incident that most likely caused it."""
    if restart is None:
        return None
    cause = None
    lower = restart.at - (restart.down_for or timedelta(0)) - timedelta(hours=1)
    for incident in incidents:
        if lower <= incident.started_at <= restart.at:
            cause = incident.cause or incident.title
            break
    return RestartFact(
        at=restart.at,
        cause=cause,
        down_for=restart.down_for,
        resumed_step=restart.to_step,
        from_step=restart.from_step,
    )


async def _common(
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
    return {
        "incidents_total": report.incidents_total,
        "self_healed": report.incidents_self_healed,
        "monitor_stale": report.monitor_stale,
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
        "loss": progress.loss,
        "loss_vs_forecast": (
            report.loss_forecast.reason
            if report.loss_forecast is not None and report.loss_forecast.forecast is not None
            else None
        ),
        "drifting": [view.describe() for view in report.drifting],
        "last_restart": _restart_fact(report.last_restart, incidents),
        "incidents": incident_facts(incidents),
        "links": dict(run.links),
    }


async def build_narrative_facts(
    store: Store,
    run_slug: str,
    now: datetime,
    *,
    progress: Progress | None = None,
    state: str | None = None,
    highlights: int = MAX_HIGHLIGHTS,
    report: StatusReport | None = None,
    scan: int = SCAN_EVENTS,
) -> NarrativeFacts:
    """Facts for the status narrative, read from the store. Pass `progress`/`state` (or the
    whole status `report`) when the caller already computed them; `scan` bounds the recent
    events read to pick highlights from (the live template needs far fewer than the LLM)."""
    incidents = await store.incidents.find(run_slug, since=now - INCIDENT_WINDOW)
    recent = await store.events.timeline(run_slug, since=now - COUNT_WINDOW, limit=scan)
    if len(recent) < highlights:  # a quiet week: look further back, still bounded
        recent = await store.events.timeline(run_slug, limit=scan)
    return NarrativeFacts(
        **await _common(store, run_slug, now, incidents, progress, state, report),
        counts_by_tag=dict(Counter(e.tag or "other" for e in recent if e.at >= now - COUNT_WINDOW)),
        highlights=select_highlights(recent, now, highlights),
        open_threads=open_threads_from(recent),
    )


async def build_digest_facts(
    store: Store,
    run_slug: str,
    now: datetime,
    *,
    period: timedelta = timedelta(hours=24),
    progress: Progress | None = None,
    state: str | None = None,
    highlights: int = MAX_HIGHLIGHTS,
) -> DigestFacts:
    """Facts for the daily digest over [now - period, now)."""
    run = await store.runs.get(run_slug)
    start = now - period
    chain = run.wandb_chain() if run else []
    points = await store.metrics.window(run_slug, start)
    if progress is None:
        progress = compute_progress(
            points,
            total_steps=run.total_steps if run else None,
            target_tokens=run.target_tokens if run else None,
            now=now,
            chain=chain,
            window=period,
        )
    before = [p for p in points if p.at <= start]
    step_at_start = max(before, key=lambda p: p.at).step if before else None
    if step_at_start is None and points:
        step_at_start = min(points, key=lambda p: p.at).step
    incidents = await store.incidents.find(run_slug, since=start)
    events = await store.events.timeline(run_slug, since=start, until=now, limit=SCAN_EVENTS)
    total = await store.events.count(run_slug, since=start)
    older = await store.events.timeline(run_slug, limit=SCAN_EVENTS, until=now)
    restarts = [
        RestartFact(at=r.at, down_for=r.down_for, resumed_step=r.to_step, from_step=r.from_step)
        for r in detect_restarts(points, chain)
        if r.at >= start
    ]
    return DigestFacts(
        **await _common(store, run_slug, now, incidents, progress, state),
        counts_by_tag=dict(Counter(e.tag or "other" for e in events)),
        highlights=select_highlights(events, now, highlights),
        open_threads=open_threads_from(older),
        window_start=start,
        window_end=now,
        step_at_start=step_at_start,
        events_in_window=total,
        restarts_in_window=restarts,
    )


__all__ = [
    "DigestFacts",
    "Highlight",
    "IncidentFact",
    "NarrativeFacts",
    "OpenThread",
    "RestartFact",
    "build_digest_facts",
    "build_narrative_facts",
    "open_threads_from",
    "render_facts",
    "render_highlights",
    "render_open_threads",
    "select_highlights",
]
