"""Live W&B conditions of the current run: no heartbeat, no new step (a stall)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from bot.config.runsfile import BUILT_IN_THRESHOLDS
from bot.core.numbers import fmt_int, fmt_value
from bot.core.timeutil import humanize_delta
from bot.incidents.detectors.base import (
    HEARTBEAT,
    OUTAGE,
    STALL,
    Detection,
    DetectorSpec,
    Finding,
    RunData,
    event_path,
    run_label,
    threshold,
    to_state,
)
from bot.models import Event, RunSnapshot, WandbState


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
            and event_path(event) == current.wandb_run
            and to_state(event) == "running"
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


#: The heartbeat detector's one registration (listed in `registry.DETECTORS`).
HEARTBEAT_DETECTOR = DetectorSpec(
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
)


#: The stall detector's one registration (listed in `registry.DETECTORS`).
STALL_DETECTOR = DetectorSpec(
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
)
