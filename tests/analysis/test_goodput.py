"""Goodput, computed by hand from a fed-in chain: wall time less downtime (merged, never counted
twice) and the time spent recomputing steps at the run's pace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.analysis.goodput import (
    compute_goodput,
    describe,
    down_intervals,
    moved,
    pace_of,
    run_goodput,
)
from bot.models import NEW_RUN, Incident, IncidentDetails, IncidentMember, MetricPoint, Restart

LAUNCH = datetime(2026, 8, 20, tzinfo=UTC)
NOW = LAUNCH + timedelta(days=10)
H = timedelta(hours=1)


def restart(stopped: datetime, down: timedelta, from_step: int, to_step: int) -> Restart:
    return Restart(
        at=stopped + down,
        kind=NEW_RUN,
        wandb_run="e/p/hero-2",
        previous_run="e/p/hero-1",
        from_step=from_step,
        to_step=to_step,
        stopped_at=stopped,
        resumed_at=stopped + down,
        interval=100,
    )


def incident(fingerprint: str, kind: str, since: datetime, until: datetime | None) -> Incident:
    member = IncidentMember(kind=kind, title=kind, since=since, until=until)
    return Incident(
        run_slug="hero",
        fingerprint=fingerprint,
        kind=kind,
        title=kind,
        status="resolved" if until else "firing",
        started_at=since,
        resolved_at=until,
        details=IncidentDetails(members={fingerprint: member}),
    )


def test_goodput_matches_a_hand_computation() -> None:
    stop = LAUNCH + 40 * H
    r = restart(stop, 3 * H, from_step=4_000, to_step=3_600)  # checkpoint 3,500: 500 again
    crash = incident("wandb-state", "crash", stop + timedelta(minutes=10), stop + 3 * H)
    stall = incident("stall", "stall", NOW - 48 * H, NOW - 46 * H)
    spike = incident("loss-spike", "spike", NOW - 30 * H, NOW - 29 * H)  # training went on
    g = compute_goodput([r], [crash, stall, spike], [36.0], start=LAUNCH, now=NOW, window="x")
    wall = 10 * 86_400
    down = 3 * 3_600 + 2 * 3_600  # the crash lies inside the restart's gap: counted once
    recompute = 500 * 36
    assert g.wall_seconds == wall
    assert g.down_seconds == down
    assert g.recompute_seconds == recompute
    assert g.steps_recomputed == 500 and g.incidents == 2
    assert g.percent == pytest.approx(100 * (wall - down - recompute) / wall, abs=0.1)
    assert describe(g) == "95.8% · 5 h down in 2 incidents · 500 steps recomputed"


def test_the_last_seven_days_leave_older_stoppages_out() -> None:
    stop = LAUNCH + 40 * H
    r = restart(stop, 3 * H, from_step=4_000, to_step=3_600)
    stall = incident("stall", "stall", NOW - 48 * H, NOW - 46 * H)
    both = run_goodput([r], [stall], [36.0], launched_at=LAUNCH, now=NOW)
    week = both.last_week
    assert week.start == NOW - timedelta(days=7)
    assert week.down_seconds == 2 * 3_600 and week.steps_recomputed == 0
    assert week.percent == pytest.approx(100 * (7 * 86_400 - 7_200) / (7 * 86_400), abs=0.1)
    assert both.since_launch is not None and both.since_launch.incidents == 2
    assert both.to_json()["last_7d"]["window"] == "7d"


def test_an_open_crash_is_down_until_now_and_overlaps_merge() -> None:
    open_crash = incident("wandb-state", "crash", NOW - 2 * H, None)
    heartbeat = incident("heartbeat", "heartbeat", NOW - 3 * H, NOW - H)
    assert down_intervals([], [open_crash, heartbeat], NOW) == [(NOW - 3 * H, NOW)]
    g = compute_goodput([], [open_crash, heartbeat], [], start=NOW - 10 * H, now=NOW, window="x")
    assert g.down_seconds == 3 * 3_600 and g.incidents == 1
    assert g.percent == pytest.approx(70.0)


def test_recomputing_during_a_later_stoppage_is_not_counted_twice() -> None:
    stop = LAUNCH + 10 * H
    r = restart(stop, H, from_step=1_000, to_step=600)  # 500 steps at 36 s: 5 h from resume
    later = incident("stall", "stall", stop + 2 * H, stop + 4 * H)  # inside the recompute
    g = compute_goodput([r], [later], [36.0], start=LAUNCH, now=NOW, window="x")
    assert g.down_seconds == 3 * 3_600
    assert g.recompute_seconds == 5 * 3_600 - 2 * 3_600
    unpriced = compute_goodput([r], [], [None], start=LAUNCH, now=NOW, window="x")
    assert unpriced.recompute_seconds == 0 and unpriced.unpriced_restarts == 1
    assert unpriced.steps_recomputed == 500


def test_pace_and_how_it_moved() -> None:
    points = [MetricPoint("e/p/hero-1", 100 * i, LAUNCH + i * H, tokens=i * 4e8) for i in range(4)]
    pace = pace_of(points)
    assert pace.seconds_per_step == 36.0 and pace.tokens_per_step == 4e6
    assert pace_of(points[:1]).seconds_per_step is None
    stall = incident("stall", "stall", NOW - 5 * H, NOW - 2 * H)
    before = compute_goodput([], [], [], start=LAUNCH, now=NOW - 24 * H, window="launch")
    after = compute_goodput([], [stall], [], start=LAUNCH, now=NOW, window="launch")
    sentence = moved(before, after)
    assert sentence is not None and sentence.startswith("Goodput since launch fell 1.2 pt")
    assert moved(before, before) is None
