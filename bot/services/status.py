"""The numbers `/status` and `runscribe status` show, computed from the store alone (no network,
no LLM on the request path). Words are not made here: the narrative comes from
`bot.services.narrative`, sentences and cards from `bot.render`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from bot.analysis.goodput import RunGoodput
from bot.analysis.progress import (
    LONG_WINDOW,
    Downtime,
    Progress,
    compute_progress,
    projection_margin,
)
from bot.config.runsfile import RunConfig
from bot.incidents.detectors import (
    EXPLAINED_WITHIN,
    incident_of_restart,
    last_progress_at,
    restart_explanation,
    restart_window_start,
)
from bot.incidents.service import incident_stats
from bot.models import (
    MONITOR_STALE_AFTER,
    SOURCE_SPECS,
    UNHEALTHY_STATES,
    Incident,
    MetricPoint,
    ReportedCause,
    Restart,
    RunInfo,
    RunSnapshot,
    SourceHealth,
)
from bot.services.delivery import GATEWAY
from bot.services.delivery import SOURCE as DELIVERY
from bot.services.forecasts import ForecastView, forecast_views, loss_curve
from bot.services.goodput import run_goodput_of
from bot.services.runs import UnknownRun
from bot.store import Store

WINDOW = timedelta(hours=24)
STATE_SCAN = 20  # newest W&B state changes read for the last relaunch (a stall's clock)


@dataclass(slots=True, frozen=True)
class SourceStatus:
    """One configured source of a run: whether its last poll worked, and if not, since when
    it has been failing and why (the poller's own one-line error)."""

    ok: bool
    error: str | None = None
    failing_since: datetime | None = None
    last_success_at: datetime | None = None
    # A chat source (Discord) is fed by the bot's gateway, not polled: whether the gateway is
    # connected (None: no bot has run on this store) and when the newest message was written,
    # which says how busy the channels are, not whether the source works.
    connected: bool | None = None
    last_message_at: datetime | None = None
    # A repository with no issue, label or keyword to follow: polled, yet it tracks nothing, so
    # a fresh poll time would read as all well.
    tracks_nothing: bool = False

    @classmethod
    def from_health(cls, row: SourceHealth | None) -> SourceStatus:
        if row is None:
            return cls(ok=True)
        if not row.failing:
            return cls(ok=True, last_success_at=row.last_success_at)
        return cls(
            ok=False,
            error=row.last_error or "failed",
            failing_since=row.failing_since or row.last_attempt_at,
            last_success_at=row.last_success_at,
        )


def source_statuses(
    config: RunConfig, rows: dict[str, SourceHealth]
) -> dict[str, SourceStatus | None]:
    """Every polled source, in freshness order: None when the run does not use it (its
    registration's `configured`)."""
    statuses = {
        spec.name: SourceStatus.from_health(rows.get(spec.name))
        if spec.configured(config)
        else None
        for spec in SOURCE_SPECS.polled()
    }
    github = statuses.get("github")
    if github is not None and tracks_no_thread(config):
        statuses["github"] = replace(github, tracks_nothing=True)
    return statuses


def tracks_no_thread(config: RunConfig) -> bool:
    """A `github_repo` alone: no issue, label or keyword says which threads to follow."""
    return bool(config.github_repo) and not (
        config.github_issues or config.github_labels or config.github_keywords
    )


@dataclass(slots=True)
class StatusReport:
    run: RunInfo
    now: datetime
    state: str  # running | crashed | failed | killed | stalled | finished | pending | unknown
    health: str  # ok | warning | bad | stale | done | unknown
    progress: Progress
    launched_at: datetime | None
    last_restart: Restart | None  # the newest, as the W&B source recorded it
    open_incidents: list[Incident]
    freshness: dict[str, datetime | None]
    monitor_stale: bool
    heartbeat_at: datetime | None
    links: dict[str, str] = field(default_factory=dict)
    latest_wandb_run: str | None = None
    incidents_total: int = 0  # incidents that alerted over the whole run
    incidents_self_healed: int = 0  # crashes training recovered from with no human report
    # Each polled source: None when the run does not use it.
    sources: dict[str, SourceStatus | None] = field(default_factory=dict)
    forecasts: list[ForecastView] = field(default_factory=list)  # the loss first, if forecast
    # how far either side of the projected end it plausibly lies (`projection_margin`)
    projected_margin: timedelta | None = None
    # When this process has not heard from W&B yet (restarted): the time of the last state
    # stored before the restart, which the report shows, judged as of then (`stored_state_at`).
    restored_at: datetime | None = None
    # the incident the last restart recovered from, and why it restarted in the words of a
    # person or the ops log (the incident's reported cause, else an account written after it)
    restart_incident: Incident | None = None
    restart_cause: ReportedCause | None = None
    # effective training time since launch and over the last 7 days (`bot.analysis.goodput`)
    goodput: RunGoodput | None = None

    @property
    def loss_forecast(self) -> ForecastView | None:
        return next((f for f in self.forecasts if f.kind == "loss"), None)

    @property
    def drifting(self) -> list[ForecastView]:
        return [f for f in self.forecasts if f.state == "drifting"]

    @property
    def slug(self) -> str:
        return self.run.slug

    @property
    def failing_sources(self) -> list[str]:
        return [name for name, src in self.sources.items() if src is not None and not src.ok]


async def chat_connected(
    store: Store, config: RunConfig, sources: dict[str, SourceStatus | None]
) -> dict[str, SourceStatus | None]:
    """Each chat source with whether the bot's gateway is connected and when its newest message
    in a watched channel was written (one indexed read per channel: `events_thread`)."""
    out = dict(sources)
    for name, status in sources.items():
        if status is None or not SOURCE_SPECS.is_chat(name):
            continue
        gateway = await store.health.get(DELIVERY, GATEWAY)
        newest = [
            await store.events.latest_in_thread(config.slug, name, f"{name}:{channel}")
            for channel in config.watch_channels  # a channel's thread key (`chat.thread_key`)
        ]
        times = [e.at for e in newest if e is not None]
        out[name] = replace(
            status,
            connected=None if gateway is None else not gateway.failing,
            last_message_at=max(times) if times else None,
        )
    return out


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
    progress_at: datetime | None = None,
) -> tuple[str, str, bool]:
    """(state, health, monitor_stale). A monitor that cannot reach W&B makes the report 'stale',
    never 'crashed': we only say what W&B last told us. `progress_at` is when the run last made
    progress as the stall detector judges it (`last_progress_at`; default: the last point)."""
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
    last = progress_at or progress.last_point_at
    if state == "running" and last is not None and now - last > stall_after:
        return "stalled", "warning", False
    return state, ("ok" if state == "running" else "warning"), False


def stored_state_at(
    started_at: datetime | None,
    wandb_at: datetime | None,
    snapshot: RunSnapshot | None,
    last_point_at: datetime | None,
) -> datetime | None:
    """When the process started at `started_at` has had no W&B round yet (W&B's last success is
    older, or none is stored), the time of the newest W&B state stored before it: the report
    then shows that state as of then, never "unknown" or "stale" because the bot was down.
    None when W&B answered since the start, or nothing of W&B is stored."""
    if started_at is None or (wandb_at is not None and wandb_at >= started_at):
        return None
    observed = snapshot.observed_at if snapshot is not None else None
    times = [t for t in (wandb_at, observed, last_point_at) if t is not None and t <= started_at]
    return max(times, default=None)


async def pace_inputs(
    store: Store, slug: str, now: datetime
) -> tuple[list[Downtime], list[MetricPoint]]:
    """What the training pace behind the projected end takes out and measures from: the
    stretches the run was down (each restart's stop to resume, as the W&B source recorded it)
    over `LONG_WINDOW`, and each W&B run's last point before that window. /status and the
    digest project with the same."""
    since = now - LONG_WINDOW
    restarts = await store.events.restarts(slug, since=since - timedelta(days=1), until=now)
    downtime = [
        (r.stopped_at, r.resumed_at)
        for r in restarts
        if r.stopped_at is not None and r.resumed_at is not None and r.resumed_at > since
    ]
    return downtime, await store.metrics.last_before(slug, since)


async def _restart_incident(store: Store, slug: str, restart: Restart | None) -> Incident | None:
    """The incident the restart recovered from (its reported cause is the restart's)."""
    if restart is None:
        return None
    around = await store.incidents.find(slug, since=restart_window_start(restart))
    return incident_of_restart(restart, around)


#: The most events read around a restart for a person's account of it.
EXPLANATION_SCAN = 300


async def _restart_cause(store: Store, slug: str, report: StatusReport) -> ReportedCause | None:
    """Why the last restart happened, in the words of a person or the ops log, linked."""
    restart, incident = report.last_restart, report.restart_incident
    if restart is None:
        return None
    if incident is not None and incident.details.reported_cause is not None:
        return incident.details.reported_cause
    since = (restart.stopped_at or restart.at) - timedelta(minutes=1)
    events = await store.events.timeline(
        slug,
        since=since,
        until=min(report.now, restart.at + EXPLAINED_WITHIN),
        limit=EXPLANATION_SCAN,
    )
    return restart_explanation(restart, events)


async def _progress(
    store: Store,
    slug: str,
    run: RunInfo,
    chain: list[str],
    points: list[MetricPoint],
    now: datetime,
) -> Progress:
    downtime, baseline = await pace_inputs(store, slug, now)
    return compute_progress(
        points,
        total_steps=run.total_steps,
        target_tokens=run.target_tokens,
        now=now,
        chain=chain,
        window=WINDOW,
        downtime=downtime,
        baseline=baseline,
    )


async def _progress_at(
    store: Store, slug: str, current: RunSnapshot | None, progress: Progress
) -> datetime | None:
    """When the run last made progress as the stall detector judges it (None: no snapshot)."""
    if current is None:
        return None
    states = await store.events.of_kind(slug, "wandb", "state", limit=STATE_SCAN)
    return last_progress_at(current, progress.last_point_at, states)


def _launched_at(run: RunInfo, snapshots: list[RunSnapshot]) -> datetime | None:
    """The configured launch, else the earliest W&B run's creation."""
    launched = run.launched_at
    if launched is None and snapshots:
        created = [s.created_at for s in snapshots if s.created_at is not None]
        launched = min(created) if created else None
    return launched


async def build_status(
    store: Store, slug: str, now: datetime, *, started_at: datetime | None = None
) -> StatusReport:
    """`started_at`: when this process started, for a bot that shows what it stored before a
    restart until its first W&B round (`stored_state_at`); None for a one-off reader."""
    run = await store.runs.get(slug)
    if run is None:
        raise UnknownRun(slug)
    snapshots = await store.snapshots.chain(slug)
    chain = run.wandb_chain(snapshots)
    points = await store.metrics.window(slug, now - WINDOW)
    progress = await _progress(store, slug, run, chain, points, now)
    health_rows = await store.health.for_run(slug)
    freshness = {
        spec.name: (health_rows[spec.name].last_success_at if spec.name in health_rows else None)
        for spec in SOURCE_SPECS.polled()
    }
    current = _current_snapshot(chain, snapshots)
    progress_at = await _progress_at(store, slug, current, progress)
    restored_at = stored_state_at(started_at, freshness["wandb"], current, progress.last_point_at)
    state, health, monitor_stale = derive_state(
        current,
        progress,
        restored_at or now,  # a restored state is judged as of when it was stored
        wandb_fresh_at=freshness["wandb"],
        stall_after=timedelta(minutes=run.config.alerts.value("stall_minutes")),
        progress_at=progress_at,
    )
    launched = _launched_at(run, snapshots)
    report = StatusReport(
        run=run,
        now=now,
        state=state,
        health=health,
        progress=progress,
        launched_at=launched,
        last_restart=await store.events.last_restart(slug),
        open_incidents=await store.incidents.find(slug, open_only=True),
        freshness=freshness,
        monitor_stale=monitor_stale,
        heartbeat_at=current.heartbeat_at if current else None,
        links=dict(run.links),
        latest_wandb_run=current.wandb_run if current else None,
        sources=await chat_connected(store, run.config, source_statuses(run.config, health_rows)),
        forecasts=await forecast_views(store, run, chain, now, points, progress.step),
        projected_margin=projection_margin(progress, now, launched),
        restored_at=restored_at,
        goodput=await run_goodput_of(store, slug, launched_at=launched, now=now),
    )

    report.restart_incident = await _restart_incident(store, slug, report.last_restart)
    report.restart_cause = await _restart_cause(store, slug, report)
    stats = await incident_stats(store, slug)
    report.incidents_total = stats.count
    report.incidents_self_healed = stats.self_healed_restarts
    return report


#: The most restarts the chart marks (the newest); a run has a handful, this only bounds a read.
CHART_RESTARTS = 500


@dataclass(slots=True, frozen=True)
class ChartSeries:
    """What the /status chart plots: the run's downsampled points, every restart the W&B source
    recorded (not the ones visible in the downsampled points, which can fall between two
    buckets), and the run's time zone for the time axis."""

    points: list[MetricPoint]
    restarts: list[datetime]  # when training resumed, oldest first
    zone: str = "UTC"  # the run's IANA time zone
    loss_curve: Callable[[float], float | None] | None = None  # `loss_forecast`, by step


async def chart_series(store: Store, slug: str) -> ChartSeries:
    """The chart's data (drawing is `bot.render.chart`'s, caching the caller's)."""
    run = await store.runs.get(slug)
    points = await store.metrics.downsampled(slug)
    restarts = await store.events.restarts(slug, limit=CHART_RESTARTS)
    curve = loss_curve(run) if run else None
    return ChartSeries(
        points=points,
        restarts=[r.at for r in restarts],
        zone=run.timezone if run else "UTC",
        loss_curve=curve.at if curve else None,
    )
