"""Incident detectors: pure functions from what the store holds about one run (a `RunData`) to a
`Detection`: `Finding`s, i.e. conditions with a fingerprint, a start and, when the data already
shows it, an end; or, with no finding, since when the data shows the condition clear. No I/O and
no clock: the engine reads a time window and passes `now`.

Every detector has the same signature, `(RunData) -> Detection`, and is registered once in
`DETECTORS` with everything the rest of the code asks about it (which data it judges, whether a
crash makes it meaningless, how long a clear must hold, what to say when it clears, its words,
its incident kind, its thresholds with their defaults and bounds, the events of other sources
it reads). Adding a detector is therefore a function plus its
`DetectorSpec` here; the engine, the lifecycle, the silences and every surface iterate the
registry and name no detector.

Detectors look at history, not only at the latest sample, so a crash and its resume that both
happened between two cycles (a slow poll, the day-by-day demo) are still seen as one episode with
a start and an end. Conditions only a live sample can show (heartbeat, stall, throughput) are
evaluated at the latest W&B observation.

Fingerprints (one open incident per run and fingerprint):

| fingerprint               | condition                                                 |
|---------------------------|-----------------------------------------------------------|
| `wandb-state`             | the current W&B run of the chain is crashed/failed/killed |
| `heartbeat`               | no heartbeat for N min while W&B says running             |
| `stall`                   | no new step for N min while W&B says running              |
| `loss-nan`                | loss NaN or infinite                                      |
| `loss-spike`              | loss > X % above its trailing trend for K points          |
| `throughput`              | step/token rate > X % below its trailing baseline         |
| `drift:<metric>`          | a watched metric outside its forecast band for K points   |
| `report:<kind>:<thread>`  | an incident reported by people (GitHub/Discord)           |
| `alert:<name>:<fp>`       | a cluster alert firing (Alertmanager; its fingerprint)    |
| `monitor-stale`           | Runscribe cannot reach W&B (says nothing about the run)   |
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from statistics import median
from typing import Any, Literal

from bot.analysis.forecast import Episode, Tracker, drift_title
from bot.analysis.progress import effective_series
from bot.models import (
    MONITOR_STALE_AFTER,
    NEW_RUN,
    RESTORE,
    SOURCE_SPECS,
    AlertData,
    BadRestart,
    Event,
    Incident,
    MetricPoint,
    ReportedCause,
    Restart,
    RunSnapshot,
    SourceHealth,
    WandbState,
)
from bot.numbers import fmt_int, fmt_percent, fmt_rate, fmt_value
from bot.runsfile import BUILT_IN_THRESHOLDS, THRESHOLDS, Threshold, ThresholdRegistry, Thresholds
from bot.timeutil import humanize_delta

CRASH = "wandb-state"
HEARTBEAT = "heartbeat"
STALL = "stall"
NAN = "loss-nan"
SPIKE = "loss-spike"
THROUGHPUT = "throughput"
MONITOR = "monitor-stale"
REPORT_PREFIX = "report:"
DRIFT_PREFIX = "drift:"
ALERT_PREFIX = "alert:"

#: "The run is down" conditions. Findings of this group close in time become one incident.
OUTAGE = "outage"

CRASH_STATES = frozenset({"crashed", "failed", "killed", "preempted"})
TREND_POINTS = 20  # trailing points whose median is the loss trend
MIN_TREND_POINTS = 5
MAX_EXCURSION_POINTS = 60  # a "spike" longer than this is a new level, not a spike
BASELINE = timedelta(hours=6)  # trailing throughput baseline
MIN_BASELINE = timedelta(hours=1)

KIND_LABELS = {
    "crash": "Crash",
    "node-loss": "Node loss",
    "preemption": "Preemption",
    "network": "Network fault",
    "outage": "Outage",
    "hardware": "Hardware fault",
    "oom": "Out-of-memory kill",
    "hang": "Hang",
    "restore-failed": "Failed restore",
    "checkpoint-failed": "Failed checkpoint save",
    "storage": "Storage outage",
    "reported": "Incident",
}


@dataclass(slots=True)
class Finding:
    """One condition over an interval. `until` None means it still holds at `now`."""

    fingerprint: str
    kind: str
    severity: str  # info | warning | critical
    title: str
    cause: str
    since: datetime
    until: datetime | None = None
    resolution: str | None = None  # what cleared it, when `until` is set
    group: str | None = None
    event_ids: list[int] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # evidence, JSON values
    restart: Restart | None = None  # a crash training came back from: how it came back
    last_report_at: datetime | None = None  # reported by people: the latest report
    thread: str | None = None  # reported by people: where

    @property
    def active(self) -> bool:
        return self.until is None


@dataclass(slots=True)
class Detection:
    """What one detector says about one cycle."""

    findings: list[Finding] = field(default_factory=list)
    clear_at: datetime | None = None  # no finding: the data shows it clear since then
    frozen: bool = False  # the data cannot judge the condition now: neither raise nor clear it


@dataclass(slots=True)
class RunData:
    """What the engine read for one run and one cycle."""

    slug: str
    name: str
    now: datetime
    thresholds: Thresholds
    chain: list[str]  # W&B run paths, chain order
    snapshots: dict[str, RunSnapshot]
    points: Sequence[MetricPoint]  # every point since the window start, any member, any order
    wandb_events: list[Event]  # state and restart events, oldest first
    reports: list[Event]  # incident-flagged GitHub/Discord events not yet linked, oldest first
    eval_start: datetime  # W&B episodes that ended before this were judged by earlier cycles
    loss_key: str | None = "train/loss"
    known_down: datetime | None = None  # start of a crash the open incident already tracks
    clear_hold: timedelta = timedelta(minutes=2)
    wandb_health: SourceHealth | None = None  # polling W&B for this run: freshness, failures
    forecasts: Sequence[Tracker] = ()  # watched metrics, brought up to date this cycle
    alerts: list[Event] = field(default_factory=list)  # Alertmanager: firing, or ended lately
    #: the events of each (source, kind) a registered detector `reads` (`DetectorSpec.reads`),
    #: in the window the W&B events cover, oldest first
    events: Mapping[tuple[str, str], Sequence[Event]] = field(default_factory=dict)
    #: every point logged since `tail_start` (`points` is the per-minute rollup: a minute's first
    #: and last), for the detectors that judge point by point; empty: `points` are all there is
    tail: Sequence[MetricPoint] = ()
    tail_start: datetime | None = None
    series: list[MetricPoint] = field(init=False)

    def __post_init__(self) -> None:
        self.series = effective_series(self.points, self.chain)

    @property
    def fine_series(self) -> list[MetricPoint]:
        """`series` with its newest minutes point by point: a loss spike of K points logged
        within one minute is K points here, two in `series`."""
        if self.tail_start is None:
            return self.series
        start = self.tail_start
        older = [p for p in self.points if p.at < start]
        return effective_series([*older, *self.tail], self.chain)

    @property
    def current(self) -> RunSnapshot | None:
        for path in reversed(self.chain):
            if path in self.snapshots:
                return self.snapshots[path]
        return None

    def created_at(self, path: str) -> datetime | None:
        snapshot = self.snapshots.get(path)
        if snapshot is not None and snapshot.created_at is not None:
            return snapshot.created_at
        firsts = [p.at for p in self.points if p.wandb_run == path]
        return min(firsts) if firsts else None

    def current_at(self, path: str, at: datetime) -> bool:
        """Whether `path` was the chain's newest member at `at` (no later member existed)."""
        if path not in self.chain:
            return True
        for later in self.chain[self.chain.index(path) + 1 :]:
            created = self.created_at(later)
            if created is not None and created <= at:
                return False
        return True

    @property
    def blind(self) -> bool:
        """W&B data is too old to judge the run by (the monitor, not the run, is the problem)."""
        return monitor_blind(self.wandb_health, self.now)

    def events_of(self, source: str, kind: str) -> Sequence[Event]:
        """The window's events of one source and kind, oldest first: only those a detector
        declares it reads (`DetectorSpec.reads`) are read for it."""
        try:
            return self.events[(source, kind)]
        except KeyError:
            raise KeyError(
                f"no registered detector reads {source!r} {kind!r} events: name the pair in "
                "its DetectorSpec.reads"
            ) from None

    def first_point_after(self, at: datetime) -> MetricPoint | None:
        return next((p for p in self.series if p.at > at), None)

    def last_point_at_or_before(self, at: datetime) -> MetricPoint | None:
        found = None
        for point in self.series:
            if point.at > at:
                break
            found = point
        return found


def run_label(path: str | None, snapshots: dict[str, RunSnapshot] | None = None) -> str:
    if not path:
        return "?"
    snapshot = (snapshots or {}).get(path)
    if snapshot is not None and snapshot.name:
        return snapshot.name
    return path.rsplit("/", 1)[-1]


def _to_state(event: Event) -> str | None:
    """The state a W&B state change went to (its data, else the event's own state)."""
    return WandbState.of(event).to_state or event.state


def _event_path(event: Event) -> str | None:
    """The W&B run a state change is of (its data, else its thread `wandb:<path>`)."""
    path = WandbState.of(event).wandb_run
    if path:
        return path
    if event.thread and event.thread.startswith("wandb:"):
        return event.thread.removeprefix("wandb:")
    return None


# --- W&B state ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Down:
    at: datetime
    state: str
    path: str | None
    event_id: int | None


def detect_crash(data: RunData) -> Detection:
    """Episodes of the chain being down: from a crashed/failed/killed state of the member that
    was current at the time, to the first training step logged after it. A relaunch that logs
    no step (a hang in restore) does not end the episode; a superseded member's crash never
    starts one."""
    downs: list[_Down] = []
    for event in data.wandb_events:
        if event.kind != "state":
            continue
        state = _to_state(event)
        path = _event_path(event)
        if state not in CRASH_STATES or (path and not data.current_at(path, event.at)):
            continue
        downs.append(_Down(event.at, state, path, event.id))
    current = data.current
    if data.known_down is not None:
        state = current.state if current and current.state in CRASH_STATES else "crashed"
        downs.append(_Down(data.known_down, state, current.wandb_run if current else None, None))
    if current is not None and current.state in CRASH_STATES:
        since = current.heartbeat_at or current.observed_at
        covered = any(d.at >= since - timedelta(hours=1) for d in downs)
        if not covered and data.first_point_after(since) is None:
            downs.append(_Down(since, current.state, current.wandb_run, None))
    if not downs:
        return Detection()
    downs.sort(key=lambda d: d.at)

    episodes: list[tuple[list[_Down], MetricPoint | None]] = []
    for down in downs:
        if episodes:
            members, resumed = episodes[-1]
            if resumed is None or down.at <= resumed.at + data.clear_hold:
                members.append(down)
                episodes[-1] = (members, data.first_point_after(down.at))
                continue
        episodes.append(([down], data.first_point_after(down.at)))

    findings = []
    for members, resumed in episodes:
        start = members[0].at
        if resumed is not None and resumed.at < data.eval_start and data.known_down != start:
            continue  # judged (or deliberately skipped) by an earlier cycle
        findings.append(_crash_finding(data, members, resumed))
    return Detection(findings)


def _crash_finding(data: RunData, downs: list[_Down], resumed: MetricPoint | None) -> Finding:
    first, last = downs[0], downs[-1]
    start = first.at
    end = resumed.at if resumed is not None else None
    before = data.last_point_at_or_before(start)
    path = first.path or (before.wandb_run if before else None)
    name = run_label(path, data.snapshots)
    step = before.step if before is not None else None
    if step is None and path in data.snapshots:
        step = data.snapshots[path].last_step
    states = " then ".join(dict.fromkeys(d.state for d in downs))
    title = f"W&B run {name} {first.state} at step {fmt_int(step)}"
    cause = f"W&B reports run {name} as {states}"
    if before is not None:
        cause += f"; its last step was {fmt_int(before.step)}"
        if start - before.at >= timedelta(minutes=1):  # times are the incident's (run's zone)
            cause += f", logged {humanize_delta(start - before.at)} before"
    cause += "."
    event_ids = [d.event_id for d in downs if d.event_id is not None]
    relaunched = None
    for event in data.wandb_events:
        if event.at < start or (end is not None and event.at > end):
            continue
        if event.id is not None and event.id not in event_ids:
            event_ids.append(event.id)
        if event.kind == "state" and _to_state(event) == "running" and relaunched is None:
            relaunched = event.at
    facts: dict[str, Any] = {
        "wandb_run": path,
        "state": last.state,
        "step": step,
        "last_step_at": before.at.isoformat() if before else None,
    }
    if relaunched is not None:
        facts["relaunched_at"] = relaunched.isoformat()
    resolution = None
    restart = None
    if resumed is not None:
        restart = _restart_after(data, before, resumed)
        resolution = resume_text(data, restart)
    return Finding(
        fingerprint=CRASH,
        kind="crash",
        severity="warning" if first.state == "preempted" else "critical",
        title=title,
        cause=cause,
        since=start,
        until=end,
        resolution=resolution,
        group=OUTAGE,
        event_ids=event_ids,
        facts=facts,
        restart=restart,
    )


#: How far apart the trainer's clock (history rows' `_timestamp`), W&B's (a run's `createdAt`,
#: heartbeats) and Runscribe's may be and still date one moment: a restart record W&B dated up
#: to this long before or after the row it resumed at is that restart.
CLOCK_SKEW = timedelta(minutes=1)


def _restart_after(data: RunData, before: MetricPoint | None, resumed: MetricPoint) -> Restart:
    """The restart that ended a crash: the W&B source's record of it (a new run of the chain,
    or the step going back or on in one run), so every surface reads one computation; else the
    same figures read from the points around the outage (a record not polled yet).

    The record is found by the row training resumed at (`resumed_at`: the trainer's clock on
    both sides), else by its date within `CLOCK_SKEW` of the outage (a new run's `createdAt`
    is W&B's clock, which may be a little after the first row the trainer logged)."""
    lower = (before.at if before is not None else resumed.at) - CLOCK_SKEW
    upper = resumed.at + CLOCK_SKEW
    found: list[Restart] = []
    for event in data.wandb_events:
        if event.kind != "restart" or not lower <= event.at <= upper:
            continue
        try:
            found.append(Restart.of_event(event))
        except BadRestart:
            continue
    same_row = [r for r in found if r.resumed_at == resumed.at and r.wandb_run == resumed.wandb_run]
    if same_row or found:
        return (same_row or found)[-1]
    same = before is not None and before.wandb_run == resumed.wandb_run
    return Restart(
        at=resumed.at,
        kind=RESTORE if same or before is None else NEW_RUN,
        wandb_run=resumed.wandb_run,
        previous_run=None if same or before is None else before.wandb_run,
        from_step=before.step if before is not None else None,
        to_step=resumed.step,
        stopped_at=before.at if before is not None else None,
        resumed_at=resumed.at,
    )


def restart_window_start(restart: Restart) -> datetime:
    """How far before a restart its causing incident may have started."""
    return restart.at - (restart.down_for or timedelta(0)) - timedelta(hours=1)


def incident_of_restart(restart: Restart, incidents: Sequence[Incident]) -> Incident | None:
    """The incident that most likely caused the restart: the latest outage active just before
    it (`incidents` newest first). Its reported cause is the restart's cause in people's
    words; every surface that tells the restart asks here."""
    lower = restart_window_start(restart)
    for incident in incidents:
        spec = spec_for(incident.fingerprint)
        if spec is not None and not spec.stops_training:
            continue
        active = incident.resolved_at is None or incident.resolved_at >= lower
        if incident.started_at <= restart.at + CLOCK_SKEW and active:
            return incident
    return None


#: How long after a restart a person's or the ops log's account of it still explains it.
EXPLAINED_WITHIN = timedelta(hours=24)


def restart_explanation(restart: Restart, events: Iterable[Event]) -> ReportedCause | None:
    """Why the run restarted in the words of a person or the ops log when its incident holds
    none (the account came after the incident resolved: "An InfiniBand port fault on host
    s55sxs64 … Iris restarted the job from the last checkpoint"): the first GitHub or chat
    message, from the stop to `EXPLAINED_WITHIN` after the resume, with a sentence that
    reports a fault; its fault sentences, linked."""
    from bot.enrich.reports import fault_excerpt  # the rules: see `report_kind`

    start = (restart.stopped_at or restart.at) - CLOCK_SKEW
    for event in sorted(events, key=lambda e: e.at):
        people = event.source == "github" or SOURCE_SPECS.is_chat(event.source)
        if not people or event.kind == "conversation" or event.deleted:
            continue
        if not start <= event.at <= restart.at + EXPLAINED_WITHIN:
            continue
        text = fault_excerpt(event.body or "")
        if text:
            return ReportedCause(
                text=text,
                author=event.author,
                source=where(event),
                at=event.at,
                url=event.url,
                event_id=event.id,
            )
    return None


def resume_text(data: RunData, restart: Restart) -> str:
    """'Training resumed from step 54,000 in run X; 195 steps recomputed.' The downtime is the
    restart's own (`bot.posts.incidents.downtime` states it once, with its meaning)."""
    name = run_label(restart.wandb_run, data.snapshots)
    if restart.to_step is None:
        return f"Training resumed in run {name}."
    text = f"Training resumed from step {fmt_int(restart.to_step)} in run {name}"
    recomputed = restart.recomputed_steps
    if recomputed is not None:
        text += f"; {fmt_int(recomputed)} steps recomputed" if recomputed else "; no steps lost"
    return text + "."


# --- live W&B conditions --------------------------------------------------------------------


def detect_heartbeat(data: RunData) -> Detection:
    """Measured against the snapshot's own observation time, so a monitor
    that stopped polling can never turn its own silence into a missing heartbeat."""
    current = data.current
    if current is None or current.state != "running" or current.heartbeat_at is None:
        return Detection()
    minutes = threshold(data, "heartbeat_minutes")
    limit = timedelta(minutes=minutes)
    age = current.observed_at - current.heartbeat_at
    if age <= limit:
        return Detection(clear_at=current.heartbeat_at)
    name = run_label(current.wandb_run, data.snapshots)
    return Detection(
        [
            Finding(
                fingerprint=HEARTBEAT,
                kind="heartbeat",
                severity="warning",
                title=f"No heartbeat from W&B run {name} for {humanize_delta(age)}",
                cause=(
                    f"W&B still shows run {name} as running, but its last heartbeat was "
                    f"{humanize_delta(age)} before the last check (threshold "
                    f"{fmt_value(minutes)} min)."
                ),
                since=current.heartbeat_at + limit,
                group=OUTAGE,
                facts={
                    "wandb_run": current.wandb_run,
                    "heartbeat_at": current.heartbeat_at.isoformat(),
                },
            )
        ]
    )


def last_progress_at(
    current: RunSnapshot, last_point_at: datetime | None, wandb_events: Iterable[Event]
) -> datetime | None:
    """When the current W&B run last made progress: its newest logged step, its creation, or a
    relaunch W&B reported (a state change to running from another state). The monitor's own
    first look at a run (a state event without a previous state) is not progress: a run found
    stalled is stalled. The one judgement of a stall: the stall detector and the status card's
    "stalled" both read it."""
    times = [t for t in (last_point_at, current.created_at) if t is not None]
    for event in wandb_events:
        if (
            event.kind == "state"
            and WandbState.of(event).from_state is not None
            and _event_path(event) == current.wandb_run
            and _to_state(event) == "running"
        ):
            times.append(event.at)
    return max(times) if times else None


def _last_progress(data: RunData, current: RunSnapshot) -> tuple[datetime | None, int | None]:
    last = data.series[-1] if data.series else None
    at = last_progress_at(current, last.at if last else None, data.wandb_events)
    return at, (last.step if last else current.last_step)


def detect_stall(data: RunData) -> Detection:
    """No new step for N minutes while the current W&B run claims to be running (a launch or a
    relaunch counts as progress, so a restore that never logs a step is caught too)."""
    current = data.current
    if current is None or current.state != "running":
        return Detection()
    progress_at, step = _last_progress(data, current)
    if progress_at is None:
        return Detection()
    minutes = threshold(data, "stall_minutes")
    limit = timedelta(minutes=minutes)
    age = current.observed_at - progress_at
    if age <= limit:
        return Detection(clear_at=progress_at)
    name = run_label(current.wandb_run, data.snapshots)
    return Detection(
        [
            Finding(
                fingerprint=STALL,
                kind="stall",
                severity="critical",
                title=f"No new step for {humanize_delta(age)} in {name} (step {fmt_int(step)})",
                cause=(
                    f"W&B shows run {name} as running, but no training step has been logged for "
                    f"{humanize_delta(age)} (threshold {fmt_value(minutes)} min)."
                ),
                since=progress_at + limit,
                group=OUTAGE,
                facts={"wandb_run": current.wandb_run, "step": step},
            )
        ]
    )


def _segments(series: Sequence[MetricPoint]) -> Iterable[tuple[MetricPoint, MetricPoint]]:
    """Consecutive pairs inside one training segment (no restart between them)."""
    for a, b in pairwise(series):
        if a.wandb_run == b.wandb_run and b.step > a.step:
            yield a, b


def _rate(pairs: Sequence[tuple[MetricPoint, MetricPoint]], tokens: bool) -> tuple[float, float]:
    """(value per hour, hours covered)."""
    done = 0.0
    hours = 0.0
    for a, b in pairs:
        if tokens:
            assert a.tokens is not None and b.tokens is not None
            done += b.tokens - a.tokens
        else:
            done += b.step - a.step
        hours += (b.at - a.at).total_seconds() / 3600
    return (done / hours if hours > 0 else 0.0), hours


def detect_throughput(data: RunData) -> Detection:
    """The rate over the last N minutes (inside the current segment) against the 6 h before it;
    tokens when every point has them, else steps."""
    current = data.current
    if current is None or current.state != "running" or len(data.series) < 4:
        return Detection()
    series = data.series
    ref = series[-1].at
    window = timedelta(minutes=threshold(data, "throughput_minutes"))
    drop = threshold(data, "throughput_drop_percent")
    start = ref - window
    recent_pts = [p for p in series if p.at >= start]
    recent = list(_segments(recent_pts))
    if len(recent) < 2 or len(recent) != len(recent_pts) - 1:
        return Detection()  # too few points, or a restart inside the window
    span = recent[-1][1].at - recent[0][0].at
    if span < window / 2:
        return Detection()
    base_pts = [p for p in series if start - BASELINE <= p.at <= recent_pts[0].at]
    base = list(_segments(base_pts))
    use_tokens = all(p.tokens is not None for p in (*recent_pts, *base_pts))
    base_rate, base_hours = _rate(base, use_tokens)
    if base_hours < MIN_BASELINE.total_seconds() / 3600 or base_rate <= 0:
        return Detection()
    rate, _ = _rate(recent, use_tokens)
    floor = base_rate * (1 - drop / 100)
    if rate >= floor:
        return Detection(clear_at=ref)
    unit = "tokens/h" if use_tokens else "steps/h"
    drop = (1 - rate / base_rate) * 100
    name = run_label(current.wandb_run, data.snapshots)
    return Detection(
        [
            Finding(
                fingerprint=THROUGHPUT,
                kind="throughput",
                severity="warning",
                title=f"Throughput down {fmt_percent(drop, 0)} in {name}",
                cause=(
                    f"{fmt_rate(rate, unit)} over the last {humanize_delta(window)} against a "
                    f"trailing baseline of {fmt_rate(base_rate, unit)} (alert below "
                    f"{fmt_percent(100 - drop, None)})."
                ),
                since=start,
                facts={"rate": rate, "baseline": base_rate, "unit": unit},
            )
        ]
    )


# --- loss -----------------------------------------------------------------------------------


def _non_finite(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return not math.isfinite(value)
    if isinstance(value, str):
        return value.strip().lower() in {"nan", "inf", "-inf", "infinity", "-infinity"}
    return False


def detect_nan(data: RunData) -> Detection:
    """Non-finite loss in the logged points, or in the current W&B run's summary (SQLite stores
    NaN as NULL, so the summary is where a NaN loss survives)."""
    episodes: list[list[Any]] = []  # [since, until, first point]
    for point in data.series:
        if point.loss is None:
            continue
        bad = not math.isfinite(point.loss)
        if bad and (not episodes or episodes[-1][1] is not None):
            episodes.append([point.at, None, point])
        elif not bad and episodes and episodes[-1][1] is None:
            episodes[-1][1] = point.at
    current = data.current
    summary_bad = (
        current is not None
        and data.loss_key is not None
        and _non_finite(current.summary.get(data.loss_key))
    )
    if summary_bad and current is not None and (not episodes or episodes[-1][1] is not None):
        last = data.series[-1] if data.series else None
        # a finite point logged after the last observation means the summary is just behind
        if last is None or last.loss is None or last.at <= current.observed_at:
            since = last.at if last is not None else current.observed_at
            episodes.append([since, None, last])
    findings = []
    for since, until, point in episodes:
        if until is not None and until < data.eval_start:
            continue
        step = point.step if point is not None else None
        value = point.loss if point is not None and point.loss is not None else float("nan")
        findings.append(
            Finding(
                fingerprint=NAN,
                kind="loss-nan",
                severity="critical",
                title=f"Loss is {fmt_value(value)} at step {fmt_int(step)}",
                cause=f"The training loss became {value} (not a finite number).",
                since=since,
                until=until,
                resolution="The loss is finite again." if until is not None else None,
                facts={"step": step},
            )
        )
    return Detection(findings)


def detect_spike(data: RunData) -> Detection:
    """Loss more than X % above the median of the trailing points for K consecutive points. The
    trend is frozen during an excursion; one that lasts too long is taken as a new level."""
    percent = threshold(data, "loss_spike_percent")
    points = threshold(data, "loss_spike_points")
    factor = 1 + percent / 100
    baseline: deque[float] = deque(maxlen=TREND_POINTS)
    run: list[MetricPoint] = []
    trend = 0.0
    spiking = False
    findings: list[Finding] = []

    def close(until: datetime, resolution: str) -> None:
        peak = max(run, key=lambda p: p.loss or 0.0)
        assert peak.loss is not None
        pct = (peak.loss / trend - 1) * 100
        findings.append(
            Finding(
                fingerprint=SPIKE,
                kind="loss-spike",
                severity="warning",
                title=(
                    f"Loss spike at step {fmt_int(peak.step)}: {fmt_value(peak.loss)}, "
                    f"{fmt_percent(pct, 0)} above trend"
                ),
                cause=(
                    f"The loss stayed more than {fmt_percent(percent, None)} above "
                    f"its trend ({fmt_value(trend)}) for {len(run)} consecutive points from step "
                    f"{fmt_int(run[0].step)}."
                ),
                since=run[0].at,
                until=until if resolution else None,
                resolution=resolution or None,
                facts={"peak": peak.loss, "peak_step": peak.step, "trend": trend},
            )
        )

    for point in data.fine_series:
        loss = point.loss
        if loss is None or not math.isfinite(loss):
            continue
        if len(baseline) < MIN_TREND_POINTS and not run:
            baseline.append(loss)
            continue
        if not run:
            trend = median(baseline)
        if trend > 0 and loss > trend * factor:
            run.append(point)
            if len(run) >= points:
                spiking = True
            if spiking and len(run) > MAX_EXCURSION_POINTS:
                close(point.at, "The loss settled at a new level.")
                baseline.clear()
                baseline.extend(p.loss for p in run[-TREND_POINTS:] if p.loss is not None)
                run, spiking = [], False
            continue
        if spiking:
            within = fmt_percent(percent, None)
            close(point.at, f"The loss is back within {within} of its trend "
                  f"({fmt_value(loss)} at step {fmt_int(point.step)}).")  # fmt: skip
        run, spiking = [], False
        baseline.append(loss)
    if spiking:
        close(data.now, "")
    return Detection([f for f in findings if f.until is None or f.until >= data.eval_start])


# --- people ---------------------------------------------------------------------------------


def report_kind(event: Event) -> str:
    """The incident kind a report states in its own words. The rules read it in its thread's
    context, where a follow-up that names no cause ("still waiting at the barrier after the
    restore") takes the thread's kind: in a thread about out-of-memory kills that would call a
    hang after a restore an OOM. A kind only the thread names is not this report's: it is then
    a report of no stated kind."""
    # Imported here: the rules compile ~150 patterns, which `/status` and the one-shot CLI
    # (they import this module for its fingerprints) should not pay for.
    from bot.enrich.rules import enrich_event, enrich_text

    kind = enrich_event(event).incident_kind
    if kind is None:
        return "reported"
    if event.kind == "conversation":
        return kind  # judged line by line already, each line in its own words
    own = enrich_text(
        title=event.title, body=event.body or "", kind=event.kind, source=event.source
    )
    return own.incident_kind or "reported"


def where(event: Event) -> str:
    """'GitHub #8818', 'Discord #hero-run', 'W&B <run>'."""
    return f"{SOURCE_SPECS.label(event.source) or event.source} {event.ref or ''}".strip()


def detect_reports(data: RunData) -> Detection:
    """One finding per (kind, thread): all new reports of the same kind in the same GitHub
    thread or Discord channel belong to one incident."""
    by_fp: dict[str, Finding] = {}
    for event in data.reports:
        kind = report_kind(event)
        fp = f"{REPORT_PREFIX}{kind}:{event.thread or event.source + ':' + event.external_id}"
        label = KIND_LABELS.get(kind, kind.replace("-", " ").capitalize())
        found = by_fp.get(fp)
        if found is None:
            who = f" by {event.author}" if event.author else ""
            found = by_fp[fp] = Finding(
                fingerprint=fp,
                kind=kind,
                severity=event.severity or "warning",
                title=f"{label} reported in {where(event)}{who}",
                cause=event.summary or (event.title or event.body)[:300],
                since=event.at,
                group=OUTAGE,
                thread=event.thread,
            )
        elif event.severity == "critical":
            found.severity = "critical"
        found.last_report_at = event.at
        if event.id is not None:
            found.event_ids.append(event.id)
    return Detection(list(by_fp.values()))


# --- cluster alerts -------------------------------------------------------------------------


def alert_fingerprint(event: Event) -> str:
    """`alert:<alertname>:<Alertmanager fingerprint>`: one condition per alert, so a silence can
    name every alert of a name (`alert:GPUXidError:*`) or the name alone (its kind)."""
    data = AlertData.of(event)
    return f"{ALERT_PREFIX}{data.alertname or 'alert'}:{data.fingerprint}"


def alert_words(alert: AlertData) -> tuple[str, str]:
    """(title, cause) of an alert, each saying a thing once: the title names the alert and its
    subject ("GPUXidError on node-17: Xid 79 on GPU 3", the instance only when the summary does
    not already name its host), the cause is the description (or, without one, says it fires).
    The summary is not repeated in the cause, nor the instance added to it."""
    name = alert.alertname or "alert"
    host = (alert.instance or "").rsplit(":", 1)[0] if alert.instance else ""
    summary = alert.summary
    subject = f" on {host}" if host and host not in summary and host not in name else ""
    title = f"{name}{subject}: {summary}" if summary else f"{name}{subject}"
    description = alert.description
    if description and description != summary:
        return title, description
    return title, f"Alertmanager reports {name} firing."


def detect_alerts(data: RunData) -> Detection:
    """One finding per alert episode Alertmanager sent (`bot.hooks.alertmanager`): from its
    start, until Alertmanager said resolved. Of the "run is down" group, so an alert and the
    crash it causes (a GPU Xid and the W&B run crashing) are one incident. The alert already
    waited its own `for:` duration at its source. A `resolved` for an alert never seen firing
    (`AlertData.unseen`) is no finding: the event records it, nothing announces it."""
    findings = []
    for event in data.alerts:
        alert = AlertData.of(event)
        ends = alert.ends_at if event.state == "resolved" else None
        if event.state == "resolved" and (ends is None or ends < data.eval_start):
            continue  # judged by an earlier cycle
        if alert.unseen:
            continue  # resolved before Runscribe saw it fire: recorded (the event), not news
        name = alert.alertname or "alert"
        title, cause = alert_words(alert)
        instance = alert.instance
        links = {"Runbook": alert.runbook_url, "Prometheus": alert.generator_url}
        findings.append(
            Finding(
                fingerprint=alert_fingerprint(event),
                kind=name,
                severity=alert.severity or "warning",
                title=title[:300],
                cause=cause[:1000],
                since=event.at,
                until=ends,
                resolution=f"Alertmanager resolved {name}." if ends else None,
                group=OUTAGE,
                event_ids=[event.id] if event.id is not None else [],
                facts={
                    "alertname": name,
                    "instance": instance,
                    "labels": alert.labels,
                    "truncated": alert.truncated or 0,
                    "links": {label: url for label, url in links.items() if url},
                },
            )
        )
    return Detection(findings)


# --- forecasts ------------------------------------------------------------------------------


def drift_fingerprint(metric: str) -> str:
    return f"{DRIFT_PREFIX}{metric}"


def detect_drift(data: RunData) -> Detection:
    """One finding per drift episode of each watched metric: the open one, and those that
    closed since the last cycle looked (their end resolves the incident). An episode a restore
    undid (training went back before it began) is no finding: an incident already open for it
    clears for want of one."""
    findings = []
    for tracker in data.forecasts:
        episodes = [*tracker.closed]
        if tracker.episode is not None:
            episodes.append(tracker.episode)
        for episode in episodes:
            if episode.undone or (episode.end is not None and episode.end.at < data.eval_start):
                continue
            findings.append(_drift_finding(tracker, episode))
    return Detection(findings)


def _drift_finding(tracker: Tracker, episode: Episode) -> Finding:
    cfg = tracker.config
    name = f"{cfg.label} ({cfg.metric})" if cfg.label else cfg.metric
    c = episode.confirmed
    side = "above" if episode.direction == "up" else "below"
    cause = (
        f"{name} left its forecast band at step {fmt_int(episode.start.step)} and stayed {side} it "
        f"for {cfg.points} consecutive points: {fmt_value(c.value)} at step {fmt_int(c.step)} "
        "against a "
        f"forecast of {fmt_value(c.forecast)} (band {fmt_value(c.low)}–{fmt_value(c.high)}), "
        f"fitted from its own trailing {cfg.window} points."
    )
    end = episode.end
    return Finding(
        fingerprint=drift_fingerprint(cfg.metric),
        kind="drift",
        severity="warning",
        title=drift_title(cfg, episode),
        cause=cause,
        since=episode.start.at,
        until=end.at if end is not None else None,
        resolution=f"{name} is {episode.resolution}." if end is not None else None,
        facts={
            "metric": cfg.metric,
            "direction": episode.direction,
            "since_step": episode.start.step,
            "value": c.value,
            "forecast": c.forecast,
            "low": c.low,
            "high": c.high,
            "peak": episode.peak.value,
            "peak_step": episode.peak.step,
        },
    )


# --- the monitor itself ---------------------------------------------------------------------


def monitor_blind(health: SourceHealth | None, now: datetime) -> bool:
    """W&B data is too old to judge the run by (the monitor, not the run, is the problem)."""
    if health is None:
        return False
    fresh = health.last_success_at
    return fresh is None or now - fresh > MONITOR_STALE_AFTER


def detect_monitor(data: RunData) -> Detection:
    """Runscribe cannot read W&B: a finding from the first failed poll since the last success
    (the lifecycle raises it once W&B has been unreachable for `Policy.monitor_notice_after`,
    and drops it silently when W&B answers sooner), nothing about the run."""
    health, now = data.wandb_health, data.now
    if health is None or health.consecutive_failures <= 0:
        if data.blind:
            return Detection(frozen=True)  # stale without failures: nobody is polling
        return Detection(clear_at=health.last_success_at if health is not None else None)
    fresh = health.last_success_at
    since = health.failing_since or health.last_attempt_at or now
    blind_for = humanize_delta(now - (fresh or since)) if fresh else "ever since it started"
    error = f" Last error: {health.last_error[:200]}" if health.last_error else ""
    finding = Finding(
        fingerprint=MONITOR,
        kind="monitor-stale",
        severity="info",
        title="Monitor blind: W&B unreachable",
        cause=(
            f"Runscribe has not been able to read W&B for {blind_for} "
            f"({health.consecutive_failures} failed polls). This says nothing about the run "
            f"itself: no crash, heartbeat or stall alert is raised from data W&B has not sent."
            f"{error}"
        ),
        since=since,
        resolution="W&B is reachable again; monitoring resumed.",
    )
    return Detection([finding])


# --- the registry ---------------------------------------------------------------------------

Detect = Callable[[RunData], Detection]
#: How long a member's clear must hold before the incident resolves, given the run's thresholds
#: and the engine's base hold.
Hold = Callable[[Thresholds, timedelta], timedelta]


def _base_hold(th: Thresholds, base: timedelta) -> timedelta:
    return base


@dataclass(frozen=True, slots=True)
class DetectorSpec:
    """A detector's one registration: everything the engine, the lifecycle, the silences and
    every surface (posts, `/status`, the digest, the timeline, the page) ask about it."""

    fingerprint: str  # the condition's fingerprint, or a family's prefix ("report:")
    detect: Detect
    #: "wandb": judges W&B data, so it is frozen while W&B is unreachable; "people": reports,
    #: matched after the W&B findings so they join the incident they describe; "monitor": judges
    #: Runscribe's own access to W&B; "alerts": the cluster's alerts, judged by their source.
    judges: Literal["wandb", "people", "monitor", "alerts"]
    inhibited_by_crash: bool = False  # meaningless while the chain is down
    #: None: a clear of this member does not set the hold (report-only incidents use the
    #: engine's quiet period instead).
    hold: Hold | None = _base_hold
    default_resolution: str | None = None  # said when it clears without a resolution of its own
    family: bool = False  # `fingerprint` is a prefix shared by many conditions
    #: how posts name the condition ("W&B run state"); empty: its fingerprint, readable
    words: str = ""
    #: a family member's own part in words, after `words` in brackets (`drift:<metric>`)
    detail: Callable[[str], str] | None = None
    #: the incident kind it stands for in `status --json` (`open_incidents[].kind`) and that
    #: kind in words; None: the incident's own kind (an alert's name)
    kind: str | None = None
    kind_words: str | None = None
    #: how telling its kind is among an incident's conditions, lower first (a crash a person
    #: also reported is a crash)
    rank: int = 100
    description: str = ""  # what silencing it covers (the silence's list of conditions)
    #: an incident of it can be what a restart recovered from (not a drift, not the monitor)
    stops_training: bool = True
    #: its thresholds: name, default, type and bounds, read with `threshold(data, name)`; a
    #: run's `[runs.alerts]` sets any of them (validated against these declarations)
    thresholds: tuple[Threshold, ...] = ()
    #: the events it judges besides those every detector gets (W&B state changes and restarts,
    #: reports, alerts): (source, kind) pairs, e.g. `(("matrix", "message"),)`; the engine reads
    #: exactly these, for the cycle's window, into `RunData.events` (`RunData.events_of`)
    reads: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for pair in self.reads:
            if len(pair) != 2 or not all(isinstance(part, str) and part for part in pair):
                raise ValueError(
                    f"detector {self.fingerprint!r}: reads {pair!r}, not (source, kind)"
                )

    def owns(self, fingerprint: str) -> bool:
        if self.family:
            return fingerprint.startswith(self.fingerprint)
        return fingerprint == self.fingerprint


class DetectorRegistry:
    """The registered detectors, in the order the engine runs them (findings are then matched
    crash first, by start time, reports last). Read on each use, so a detector registered later
    (a test's `register`) is seen everywhere at once."""

    def __init__(
        self, specs: Iterable[DetectorSpec] = (), thresholds: ThresholdRegistry = THRESHOLDS
    ):
        self._specs: list[DetectorSpec] = []
        self.thresholds = thresholds  # where the detectors' thresholds are declared
        for spec in specs:
            self.register(spec)

    def register(self, spec: DetectorSpec) -> DetectorSpec:
        if any(s.owns(spec.fingerprint) or spec.owns(s.fingerprint) for s in self._specs):
            raise ValueError(f"detector {spec.fingerprint!r} overlaps a registered one")
        self.thresholds.declare(spec.fingerprint, spec.thresholds)
        self._specs.append(spec)
        return spec

    def unregister(self, fingerprint: str) -> DetectorSpec:
        spec = next(s for s in self._specs if s.fingerprint == fingerprint)
        self._specs.remove(spec)
        self.thresholds.withdraw(fingerprint)
        return spec

    def __iter__(self) -> Iterator[DetectorSpec]:
        return iter(tuple(self._specs))

    def __len__(self) -> int:
        return len(self._specs)


#: Every detector: the one registration of each.
DETECTORS = DetectorRegistry(
    (
        DetectorSpec(
            CRASH,
            detect_crash,
            "wandb",
            words="W&B run state",
            kind="crash",
            kind_words="crash",
            rank=0,
            description="W&B says the run crashed, failed or was killed (kind `crash`)",
        ),
        DetectorSpec(
            HEARTBEAT,
            detect_heartbeat,
            "wandb",
            inhibited_by_crash=True,
            hold=lambda th, base: timedelta(minutes=th.value("heartbeat_minutes")) + base,
            default_resolution="W&B heartbeats are back.",
            words="heartbeat",
            kind="heartbeat",
            kind_words="heartbeat lost",
            rank=2,
            description="no heartbeat from the run",
            thresholds=BUILT_IN_THRESHOLDS[HEARTBEAT],
        ),
        DetectorSpec(
            STALL,
            detect_stall,
            "wandb",
            inhibited_by_crash=True,
            default_resolution="Training is logging steps again.",
            words="no new step",
            kind="stall",
            kind_words="training stalled",
            rank=1,
            description="no new step",
            thresholds=BUILT_IN_THRESHOLDS[STALL],
        ),
        DetectorSpec(
            THROUGHPUT,
            detect_throughput,
            "wandb",
            inhibited_by_crash=True,
            hold=lambda th, base: max(timedelta(minutes=th.value("throughput_minutes")), base),
            default_resolution="Throughput is back to its baseline.",
            words="throughput",
            kind="throughput",
            kind_words="throughput drop",
            rank=5,
            description="throughput drop",
            thresholds=BUILT_IN_THRESHOLDS[THROUGHPUT],
        ),
        DetectorSpec(
            NAN,
            detect_nan,
            "wandb",
            words="NaN loss",
            kind="nan",
            kind_words="loss became NaN",
            rank=3,
            description="loss NaN or infinite",
        ),
        DetectorSpec(
            SPIKE,
            detect_spike,
            "wandb",
            words="loss spike",
            kind="spike",
            kind_words="loss spike",
            rank=4,
            description="loss spike",
            thresholds=BUILT_IN_THRESHOLDS[SPIKE],
        ),
        DetectorSpec(
            DRIFT_PREFIX,
            detect_drift,
            "wandb",
            inhibited_by_crash=True,
            default_resolution="The metric is back within its forecast band.",
            family=True,
            words="forecast drift",
            detail=lambda metric: metric,
            kind="drift",
            kind_words="metric off its forecast",
            rank=6,
            description="a watched metric drifting off its forecast (one metric: `drift:<metric>`)",
            stops_training=False,
        ),
        DetectorSpec(
            MONITOR,
            detect_monitor,
            "monitor",
            words="W&B unreachable",
            kind="monitor",
            kind_words="W&B unreachable",
            rank=8,
            description="Runscribe cannot reach W&B",
            stops_training=False,
        ),
        DetectorSpec(
            ALERT_PREFIX,
            detect_alerts,
            "alerts",
            default_resolution="Alertmanager resolved the alert.",
            family=True,
            description="every cluster alert from Alertmanager (one alert: its name, e.g. "
            "`GPUXidError`)",
        ),
        DetectorSpec(
            REPORT_PREFIX,
            detect_reports,
            "people",
            hold=None,
            family=True,
            words="a person's report",
            detail=lambda rest: readable(rest.partition(":")[0]),
            kind="reported",
            kind_words="reported by a person",
            rank=7,
            description="every incident people report on GitHub or Discord",
        ),
    )
)


def readable(identifier: str) -> str:
    """An identifier nobody worded, as words: `node-loss` → "node loss"."""
    return identifier.replace("_", " ").replace("-", " ").strip() or "unknown"


def condition_words(fingerprint: str) -> str:
    """A fingerprint such as `wandb-state`, `drift:train/loss` or `report:oom:github:o/r#1`, in
    its detector's words."""
    spec = spec_for(fingerprint)
    head = fingerprint.partition(":")[0]
    if spec is None or not spec.words:
        return readable(head)
    rest = fingerprint[len(spec.fingerprint) :] if spec.family else ""
    if rest and spec.detail is not None:
        return f"{spec.words} ({spec.detail(rest)})"
    return spec.words


def incident_kind_words(kind: str) -> str:
    """An incident's kind (`status --json` `open_incidents[].kind`) in words."""
    spec = next((s for s in DETECTORS if s.kind == kind and s.kind_words), None)
    return spec.kind_words if spec is not None and spec.kind_words else readable(kind)


def telling_kind(fingerprints: Iterable[str]) -> str | None:
    """The most telling kind among an incident's conditions (`DetectorSpec.rank`), or None when
    no detector with a kind owns any of them."""
    fingerprints = list(fingerprints)
    owning = [s for s in DETECTORS if s.kind is not None and any(map(s.owns, fingerprints))]
    best = min(owning, key=lambda s: s.rank, default=None)
    return best.kind if best is not None else None


def threshold(data: RunData, name: str) -> float:
    """A detector's threshold for this run: the runs file's `[runs.alerts]` value, else the
    default its registration declares."""
    return data.thresholds.value(name)


def spec_for(fingerprint: str) -> DetectorSpec | None:
    return next((spec for spec in DETECTORS if spec.owns(fingerprint)), None)


def is_report(fingerprint: str) -> bool:
    spec = spec_for(fingerprint)
    return spec is not None and spec.judges == "people"


def is_alert(fingerprint: str) -> bool:
    spec = spec_for(fingerprint)
    return spec is not None and spec.judges == "alerts"
