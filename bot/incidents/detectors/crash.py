"""The W&B run state: the chain's crash episodes (`wandb-state`), and the restart that ended
each, told once for every surface (`resume_text`, `restart_explanation`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.core.numbers import fmt_int
from bot.core.timeutil import humanize_delta
from bot.incidents.detectors.base import (
    CRASH,
    OUTAGE,
    Detection,
    DetectorSpec,
    Finding,
    RunData,
    event_path,
    run_label,
    to_state,
    where,
)
from bot.models import (
    NEW_RUN,
    RESTORE,
    SOURCE_SPECS,
    BadRestart,
    Event,
    MetricPoint,
    ReportedCause,
    Restart,
)

CRASH_STATES = frozenset({"crashed", "failed", "killed", "preempted"})


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
        state = to_state(event)
        path = event_path(event)
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
        if event.kind == "state" and to_state(event) == "running" and relaunched is None:
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
        text = fault_excerpt(event.body or "", source=event.source)
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


#: The crash detector's one registration (listed in `registry.DETECTORS`).
CRASH_DETECTOR = DetectorSpec(
    CRASH,
    detect_crash,
    "wandb",
    words="W&B run state",
    kind="crash",
    kind_words="crash",
    rank=0,
    description="W&B says the run crashed, failed or was killed (kind `crash`)",
)
