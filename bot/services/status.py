"""What `/status` and `runscribe status` show, computed from the store alone (no network, no
LLM on the request path). Numbers come from code; the narrative is the latest stored one, or a
template written from the same numbers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.analysis.progress import Progress, compute_progress, detect_restarts
from bot.errors import UserFacingError
from bot.models import UNHEALTHY_STATES, Event, Incident, RunInfo, RunSnapshot
from bot.render.chart import ChartCache, render_chart_async
from bot.services.forecasts import ForecastView, forecast_views, loss_curve
from bot.store import Store
from bot.timeutil import humanize_delta

WINDOW = timedelta(hours=24)
# W&B silent this long while we keep polling it fine → the run itself is quiet, not the monitor.
MONITOR_STALE_AFTER = timedelta(minutes=15)
FRESHNESS_SOURCES = ("wandb", "github", "discord")
NARRATIVE_EVERY = timedelta(minutes=30)
# The live template names a few recent highlights and open threads; it reads only this many
# recent events to find them, which keeps /status fast on a store of millions.
TEMPLATE_HIGHLIGHTS = 3
TEMPLATE_SCAN = 80  # how often the poll cycle considers a new narrative


class UnknownRun(UserFacingError):
    """No run with that slug is recorded in the store."""

    def __init__(self, slug: str, known: list[str] | None = None):
        self.slug = slug
        hint = f"; known runs: {', '.join(known)}" if known else ""
        super().__init__(f"unknown run {slug!r}{hint}")


@dataclass(slots=True)
class RestartInfo:
    at: datetime
    description: str
    from_step: int | None = None
    to_step: int | None = None
    down_for: timedelta | None = None


@dataclass(slots=True)
class StatusReport:
    run: RunInfo
    now: datetime
    state: str  # running | crashed | failed | killed | stalled | finished | pending | unknown
    health: str  # ok | warning | bad | stale | done | unknown
    progress: Progress
    launched_at: datetime | None
    last_restart: RestartInfo | None
    open_incidents: list[Incident]
    freshness: dict[str, datetime | None]
    monitor_stale: bool
    heartbeat_at: datetime | None
    narrative: str
    narrative_at: datetime | None
    narrative_by: str  # "llm" | "template"
    links: dict[str, str] = field(default_factory=dict)
    latest_wandb_run: str | None = None
    narrative_next_at: datetime | None = None
    incidents_total: int = 0  # incidents that alerted over the whole run
    incidents_self_healed: int = 0  # crashes training recovered from with no human report
    forecasts: list[ForecastView] = field(default_factory=list)  # the loss first, if forecast

    @property
    def loss_forecast(self) -> ForecastView | None:
        return next((f for f in self.forecasts if f.kind == "loss"), None)

    @property
    def drifting(self) -> list[ForecastView]:
        return [f for f in self.forecasts if f.state == "drifting"]

    @property
    def slug(self) -> str:
        return self.run.slug


def _current_snapshot(chain: list[str], snapshots: list[RunSnapshot]) -> RunSnapshot | None:
    by_path = {s.wandb_run: s for s in snapshots}
    for path in reversed(chain):
        if path in by_path:
            return by_path[path]
    return None


def derive_state(
    snapshot: RunSnapshot | None,
    progress: Progress,
    now: datetime,
    *,
    wandb_fresh_at: datetime | None,
    stall_after: timedelta = timedelta(minutes=20),
) -> tuple[str, str, bool]:
    """(state, health, monitor_stale). A monitor that cannot reach W&B makes the report 'stale',
    never 'crashed': we only say what W&B last told us."""
    monitor_stale = wandb_fresh_at is not None and now - wandb_fresh_at > MONITOR_STALE_AFTER
    if progress.finished:
        return "finished", "done", monitor_stale
    if snapshot is None:
        if progress.step is None:
            return "unknown", "unknown", monitor_stale
        state = "running"
    else:
        state = snapshot.state
    if state in UNHEALTHY_STATES:
        return state, "bad", monitor_stale
    if state == "finished":
        return state, "done", monitor_stale
    if monitor_stale:
        return state, "stale", True
    last = progress.last_point_at
    if state == "running" and last is not None and now - last > stall_after:
        return "stalled", "warning", False
    return state, ("ok" if state == "running" else "warning"), False


def _restart_from_event(event: Event) -> RestartInfo:
    down = event.extra.get("down_seconds")
    return RestartInfo(
        at=event.at,
        description=event.summary or event.title or "restarted",
        from_step=event.extra.get("from_step"),
        to_step=event.extra.get("to_step"),
        down_for=timedelta(seconds=float(down)) if down is not None else None,
    )


def _last_restart(
    progress: Progress, stored: Event | None, window_start: datetime
) -> RestartInfo | None:
    """The newest restart: a stored fact from the W&B source, or one seen in the window's
    points. A restart computed from the window counts only if its downtime lies inside the
    window; otherwise the gap is an artefact of reading a window, not an observed outage."""
    computed = None
    r = progress.last_restart
    if r is not None and (r.down_for is None or r.at - r.down_for >= window_start):
        down = f" after {humanize_delta(r.down_for)} down" if r.down_for else ""
        verb = "resumed in a new W&B run" if r.kind == "new-run" else "restored from a checkpoint"
        text = f"{verb} at step {r.to_step:,}{down}"
        if r.recomputed_steps:
            text += f"; {r.recomputed_steps:,} steps recomputed"
        computed = RestartInfo(r.at, text, r.from_step, r.to_step, r.down_for)
    if stored is not None and (computed is None or stored.at > computed.at):
        return _restart_from_event(stored)
    return computed


async def build_status(store: Store, slug: str, now: datetime) -> StatusReport:
    run = await store.runs.get(slug)
    if run is None:
        raise UnknownRun(slug)
    snapshots = await store.snapshots.chain(slug)
    chain = run.wandb_chain(snapshots)
    points = await store.metrics.window(slug, now - WINDOW)
    progress = compute_progress(
        points,
        total_steps=run.total_steps,
        target_tokens=run.target_tokens,
        now=now,
        chain=chain,
        window=WINDOW,
    )
    health_rows = await store.health.for_run(slug)
    freshness = {
        source: (health_rows[source].last_success_at if source in health_rows else None)
        for source in FRESHNESS_SOURCES
    }
    current = _current_snapshot(chain, snapshots)
    state, health, monitor_stale = derive_state(
        current,
        progress,
        now,
        wandb_fresh_at=freshness["wandb"],
        stall_after=timedelta(minutes=run.config.alerts.stall_minutes),
    )
    launched = run.launched_at
    if launched is None and snapshots:
        created = [s.created_at for s in snapshots if s.created_at is not None]
        launched = min(created) if created else None
    stored_restart = await store.events.last_of_kind(slug, "wandb", "restart")
    report = StatusReport(
        run=run,
        now=now,
        state=state,
        health=health,
        progress=progress,
        launched_at=launched,
        last_restart=_last_restart(progress, stored_restart, now - WINDOW),
        open_incidents=await store.incidents.find(slug, open_only=True),
        freshness=freshness,
        monitor_stale=monitor_stale,
        heartbeat_at=current.heartbeat_at if current else None,
        narrative="",
        narrative_at=None,
        narrative_by="template",
        links=dict(run.links),
        latest_wandb_run=current.wandb_run if current else None,
        forecasts=await forecast_views(store, run, chain, now, points, progress.step),
    )
    from bot.incidents.service import incident_stats  # late: the engine imports this module

    stats = await incident_stats(store, slug)
    report.incidents_total = stats.count
    report.incidents_self_healed = stats.self_healed_restarts
    stored = await store.llm.latest(slug, "narrative")
    if stored is not None and not stored.fallback and stored.content.strip():
        report.narrative = stored.content
        report.narrative_at = stored.created_at
        report.narrative_by = "llm"
        report.narrative_next_at = stored.created_at + NARRATIVE_EVERY
    else:
        # The template is cheap and always current, so it is written fresh for every reader,
        # from the same facts (and by the same code) the LLM's fallback uses.
        from bot.llm.facts import build_narrative_facts  # late: facts build on this module
        from bot.llm.narrative import template_narrative

        facts = await build_narrative_facts(
            store, slug, now, report=report, highlights=TEMPLATE_HIGHLIGHTS, scan=TEMPLATE_SCAN
        )
        report.narrative = template_narrative(facts)
        report.narrative_at = now
    return report


async def status_chart(store: Store, slug: str, cache: ChartCache) -> bytes:
    """The /status chart, served from the cache while no new point has arrived."""
    version = await store.metrics.version(slug)
    png = cache.get(slug, version)
    if png is not None:
        return png
    run = await store.runs.get(slug)
    points = await store.metrics.downsampled(slug)
    chain = run.wandb_chain() if run else []
    restarts = detect_restarts(points, chain)
    curve = loss_curve(run) if run else None
    png = await render_chart_async(
        points, restarts, title=run.name if run else slug, loss_curve=curve.at if curve else None
    )
    cache.put(slug, version, png)
    return png
