"""Pure detector tests: no store, data built by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.incidents.detectors import (
    RunData,
    detect_crash,
    detect_spike,
    detect_stall,
    detect_throughput,
)
from bot.incidents.silences import matches, parse_duration
from bot.models import Event, Incident, IncidentDetails, IncidentMember, MetricPoint, RunSnapshot
from bot.settings import Thresholds

T0 = datetime(2026, 9, 1, tzinfo=UTC)
A = "e/p/a"


def points(n: int, *, start: int = 0, every: int = 1, loss: float = 2.0) -> list[MetricPoint]:
    return [
        MetricPoint(A, start + i * 100, T0 + timedelta(minutes=i * every), loss=loss)
        for i in range(n)
    ]


def data(pts: list[MetricPoint], state: str = "running", **kw: object) -> RunData:
    last = pts[-1].at if pts else T0
    snap = RunSnapshot(A, "a", state, T0, last, None, kw.pop("observed", last))  # type: ignore[arg-type]
    return RunData(
        slug="r",
        name="R",
        now=last,
        thresholds=Thresholds(**kw),  # type: ignore[arg-type]
        chain=[A],
        snapshots={A: snap},
        points=pts,
        wandb_events=[],
        reports=[],
        eval_start=T0,
    )


def test_crash_episode_ends_at_the_first_step_after_it() -> None:
    pts = points(30) + points(10, start=1_500, every=1)
    pts = pts[:30] + [
        MetricPoint(A, p.step, p.at + timedelta(minutes=60), loss=2.0) for p in pts[30:]
    ]
    d = data(pts)
    d.wandb_events = [
        Event("r", "wandb", "s1", "state", T0 + timedelta(minutes=35), state="crashed",
              extra={"wandb_run": A, "to_state": "crashed"}, id=1),
        Event("r", "wandb", "s2", "state", T0 + timedelta(minutes=50), state="running",
              extra={"wandb_run": A, "to_state": "running"}, id=2),
    ]  # fmt: skip
    d.series = d.series  # recomputed in __post_init__ already
    [finding] = detect_crash(d).findings
    assert finding.since == T0 + timedelta(minutes=35)
    assert finding.until == T0 + timedelta(minutes=60)
    assert finding.facts["relaunched_at"]
    assert finding.resolution is not None
    assert (
        "from step 1,500" in finding.resolution and "1,400 steps recomputed" in finding.resolution
    )


def test_stall_measured_against_the_observation_not_the_clock() -> None:
    pts = points(10)
    stale = data(pts, observed=pts[-1].at + timedelta(minutes=25))
    [found] = detect_stall(stale).findings
    assert found.fingerprint == "stall"
    fresh = data(pts, observed=pts[-1].at + timedelta(minutes=5))
    assert detect_stall(fresh).findings == []


def test_spike_needs_k_consecutive_points() -> None:
    pts = points(30)
    spiky = [MetricPoint(p.wandb_run, p.step, p.at, loss=3.0) if 20 <= i < 22 else p
             for i, p in enumerate(pts)]  # fmt: skip
    assert detect_spike(data(spiky)).findings == []
    spiky[22] = MetricPoint(A, spiky[22].step, spiky[22].at, loss=3.0)
    [finding] = detect_spike(data(spiky)).findings
    assert finding.until == pts[23].at


def test_throughput_drop() -> None:
    pts = points(120)  # 100 steps/min for two hours
    slow = pts + [
        MetricPoint(A, pts[-1].step + 50 * (i + 1), pts[-1].at + timedelta(minutes=i + 1))
        for i in range(40)
    ]
    [found] = detect_throughput(data(slow)).findings
    assert "Throughput down" in found.title
    assert found.facts["rate"] < 0.75 * found.facts["baseline"]
    assert detect_throughput(data(pts)).findings == []


def test_silence_matching_and_durations() -> None:
    crash = IncidentMember(kind="crash", title="t", since=T0)
    incident = Incident("r", "report:oom:github:o/r#1", "oom", "t", "firing", T0,
                        details=IncidentDetails(members={"wandb-state": crash}))  # fmt: skip
    assert matches("*", incident)
    assert matches("report:*", incident)
    assert matches("crash", incident)
    assert not matches("stall", incident)
    assert parse_duration("90") == timedelta(minutes=90)
    assert parse_duration("2h") == timedelta(hours=2)
    assert parse_duration("1.5 d") == timedelta(days=1.5)
