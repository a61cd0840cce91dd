"""The incident lifecycle as pure functions: no store, no clock; time is whatever the
Judgement says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.config.settings import Thresholds
from bot.incidents.detectors import CRASH, HEARTBEAT, NAN, STALL, Finding, RunData
from bot.incidents.lifecycle import (
    Judgement,
    Policy,
    absorb,
    advance,
    hold,
    reminder_due,
    resolve,
)
from bot.incidents.silences import silencing
from bot.models import (
    Incident,
    IncidentDetails,
    IncidentMember,
    MetricPoint,
    RunSnapshot,
    Silence,
    SourceHealth,
)

T0 = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
A = "e/p/a"
MIN = timedelta(minutes=1)
REPORT = "report:reported:github:o/r#1"


def judge(
    now: datetime,
    *,
    points: list[MetricPoint] | None = None,
    frozen: set[str] | None = None,
    clears: dict[str, datetime] | None = None,
    health: SourceHealth | None = None,
    **thresholds: float,
) -> Judgement:
    snapshots = {A: RunSnapshot(A, "a", "running", T0 - 60 * MIN, now, None, now)}
    data = RunData(
        slug="r",
        name="R",
        now=now,
        thresholds=Thresholds(**thresholds),  # type: ignore[arg-type]
        chain=[A],
        snapshots=snapshots if points is not None else {},
        points=points or [],
        wandb_events=[],
        reports=[],
        eval_start=T0 - 60 * MIN,
        wandb_health=health,
    )
    return Judgement(data, Policy(), frozen or set(), clears or {})


def member(
    kind: str, since: datetime, until: datetime | None = None, **kw: object
) -> IncidentMember:
    return IncidentMember(kind=kind, title=kind, since=since, until=until, **kw)  # type: ignore[arg-type]


def incident(fp: str = STALL, status: str = "pending", **members: IncidentMember) -> Incident:
    table = members or {fp: member(fp, T0, seen_at=T0)}
    return Incident("r", fp, fp, "t", status, T0, details=IncidentDetails(members=table))


def finding(fp: str = STALL, since: datetime = T0, until: datetime | None = None) -> Finding:
    return Finding(fp, fp, "critical", f"{fp} title", "cause", since, until=until)


# --- pending → firing ----------------------------------------------------------------------------


def test_pending_fires_once_the_condition_lasted_the_pending_period() -> None:
    inc = incident()
    inc.details.members[STALL].seen_at = T0 + 5 * MIN
    assert not advance(judge(T0 + 5 * MIN, pending_minutes=10), inc)
    assert inc.status == "pending" and not inc.details.fired

    inc.details.members[STALL].seen_at = T0 + 10 * MIN
    assert not advance(judge(T0 + 10 * MIN, pending_minutes=10), inc)
    assert inc.status == "firing" and inc.details.fired
    assert inc.fired_at == T0 + 10 * MIN


def test_without_a_pending_period_it_fires_at_once() -> None:
    inc = incident()
    advance(judge(T0), inc)
    assert inc.status == "firing"


def test_cleared_inside_the_pending_period_resolves_silently() -> None:
    inc = incident()
    inc.details.members[STALL].until = T0 + 3 * MIN
    assert advance(judge(T0 + 4 * MIN, pending_minutes=10), inc)
    assert inc.status == "resolved" and inc.details.silent and not inc.details.fired
    assert inc.resolved_at == T0 + 3 * MIN


# --- firing → resolved ---------------------------------------------------------------------------


def test_a_clear_must_hold_before_the_incident_resolves() -> None:
    inc = incident(status="firing")
    inc.details.members[STALL].until = T0 + 30 * MIN
    assert not advance(judge(T0 + 31 * MIN), inc)
    assert inc.status == "firing" and inc.details.clear_since == T0 + 30 * MIN

    assert advance(judge(T0 + 32 * MIN), inc)
    assert inc.status == "resolved" and inc.resolved_at == T0 + 30 * MIN
    assert inc.resolution == "Training is logging steps again."  # the detector's default
    assert inc.details.clear_since is None


def test_a_condition_no_detector_reported_this_cycle_is_over() -> None:
    inc = incident(status="firing")  # last seen at T0
    advance(judge(T0 + 10 * MIN, clears={STALL: T0 + 6 * MIN}), inc)
    assert inc.details.members[STALL].until == T0 + 6 * MIN  # when the data showed it clear
    other = incident(status="firing")
    advance(judge(T0 + 10 * MIN), other)
    assert other.details.members[STALL].until == T0 + 10 * MIN  # no better knowledge: now


def test_a_frozen_condition_is_neither_raised_nor_cleared() -> None:
    inc = incident(status="firing")
    assert not advance(judge(T0 + 60 * MIN, frozen={STALL}), inc)
    assert inc.details.members[STALL].until is None and inc.status == "firing"


def test_every_member_must_clear() -> None:
    inc = incident(
        status="firing",
        **{
            STALL: member("stall", T0, until=T0 + MIN),
            HEARTBEAT: member("heartbeat", T0, seen_at=T0 + 60 * MIN),
        },
    )
    assert not advance(judge(T0 + 60 * MIN), inc)
    assert inc.details.clear_since is None and inc.status == "firing"


def test_the_hold_follows_the_detector_and_doubles_per_flap() -> None:
    j = judge(T0, heartbeat_minutes=15)
    stall = incident()
    assert hold(j, stall) == Policy().clear_hold
    beat = incident(HEARTBEAT)
    assert hold(j, beat) == 15 * MIN + Policy().clear_hold
    reported = incident(REPORT, **{REPORT: member("reported", T0)})
    assert hold(j, reported) == Policy().report_quiet

    member_ = stall.details.members[STALL]
    member_.until = T0 + MIN
    assert not absorb(j, stall, finding(STALL, T0 + 2 * MIN))  # the same condition, back again
    assert stall.details.flaps == 1
    assert hold(j, stall) == 2 * Policy().clear_hold
    stall.details.flaps = 10
    assert hold(j, stall) == Policy().max_flap_factor * Policy().clear_hold


def test_resolution_prefers_the_crash_then_the_latest_clear() -> None:
    inc = incident(
        CRASH,
        status="firing",
        **{
            CRASH: member("crash", T0, until=T0 + 5 * MIN, resolution="Training resumed."),
            STALL: member("stall", T0, until=T0 + 9 * MIN, resolution="Steps again."),
        },
    )
    resolve(inc, T0 + 9 * MIN)
    assert inc.resolution == "Training resumed."
    plain = incident(NAN, **{NAN: member("loss-nan", T0, until=T0 + MIN)})
    resolve(plain, T0 + MIN)
    assert plain.resolution == "The condition cleared."
    assert plain.resolved_at is not None


# --- absorbing findings --------------------------------------------------------------------------


def test_absorb_records_a_new_member_and_widens_the_incident() -> None:
    inc = incident(status="firing")
    inc.severity = "warning"
    j = judge(T0 + 5 * MIN)
    earlier = Finding(HEARTBEAT, "heartbeat", "critical", "hb", "c", T0 - 3 * MIN)
    assert absorb(j, inc, earlier)
    new = inc.details.members[HEARTBEAT]
    assert new.since == T0 - 3 * MIN and new.until is None and new.seen_at == T0 + 5 * MIN
    assert inc.started_at == T0 - 3 * MIN
    assert inc.severity == "critical"
    assert inc.last_seen_at == T0 + 5 * MIN


def test_a_report_clears_once_training_progresses_after_it() -> None:
    pts = [MetricPoint(A, 100 + i, T0 + i * MIN) for i in range(3)]
    inc = incident(REPORT, **{REPORT: member("reported", T0)})
    report = finding(REPORT, T0)
    report.last_report_at = T0 + MIN
    report.thread = "github:o/r#1"
    absorb(judge(T0 + 5 * MIN, points=pts), inc, report)
    cleared = inc.details.members[REPORT]
    assert cleared.until == T0 + 2 * MIN  # the first step logged after the last report
    assert cleared.resolution is not None and "step 102" in cleared.resolution
    assert inc.details.threads == ["github:o/r#1"]


def test_a_report_stays_open_while_the_monitor_is_blind() -> None:
    pts = [MetricPoint(A, 100 + i, T0 + i * MIN) for i in range(3)]
    stale = SourceHealth("wandb", "r", last_success_at=T0 - 60 * MIN, consecutive_failures=3)
    inc = incident(REPORT, status="firing", **{REPORT: member("reported", T0)})
    assert not advance(judge(T0 + 5 * MIN, points=pts, health=stale), inc)
    assert inc.details.members[REPORT].until is None


# --- reminders, acknowledgement and silences --------------------------------------------------


def test_reminders_stop_once_acknowledged_or_resolved() -> None:
    th = Thresholds(reminder_minutes=30)
    inc = incident(status="firing")
    inc.fired_at = T0
    assert not reminder_due(inc, T0 + 29 * MIN, th)
    assert reminder_due(inc, T0 + 30 * MIN, th)
    inc.details.last_reminder_at = T0 + 30 * MIN
    assert not reminder_due(inc, T0 + 59 * MIN, th)
    assert reminder_due(inc, T0 + 60 * MIN, th)
    assert not reminder_due(inc, T0 + 60 * MIN, Thresholds())  # reminders not configured
    inc.acked_by, inc.acked_at = "ada", T0 + 45 * MIN
    assert not reminder_due(inc, T0 + 90 * MIN, th)
    inc.acked_by = None
    inc.status = "resolved"
    assert not reminder_due(inc, T0 + 90 * MIN, th)


def test_a_silence_holds_posts_only_while_active_and_matching() -> None:
    inc = incident(status="firing")
    stall = Silence("r", "stall", T0, T0 + 60 * MIN, "ada", id=1)
    other = Silence("r", "heartbeat", T0, T0 + 60 * MIN, "ada", id=2)
    glob = Silence("r", "st*", T0, T0 + 60 * MIN, "ada", id=3)
    assert silencing([other, stall], inc, T0 + MIN) is stall
    assert silencing([other, glob], inc, T0 + MIN) is glob
    assert silencing([other], inc, T0 + MIN) is None
    assert silencing([stall], inc, T0 + 60 * MIN) is None  # expired
    stall.cancelled_at = T0 + 2 * MIN
    assert silencing([stall], inc, T0 + 3 * MIN) is None  # ended early
