"""Pure detector tests: no store, data built by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.config.settings import Thresholds
from bot.incidents.detectors import (
    DETECTORS,
    HEARTBEAT,
    MONITOR,
    REPORT_PREFIX,
    RunData,
    detect_crash,
    detect_heartbeat,
    detect_monitor,
    detect_nan,
    detect_reports,
    detect_spike,
    detect_stall,
    detect_throughput,
    spec_for,
)
from bot.incidents.silences import matches, parse_duration
from bot.models import (
    Event,
    Incident,
    IncidentDetails,
    IncidentMember,
    MetricPoint,
    RunSnapshot,
    SourceHealth,
)

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


# --- one test per detector, against the shared signature ------------------------------------


def test_heartbeat_fires_past_its_threshold_and_reports_when_it_was_clear() -> None:
    pts = points(10)
    beat = pts[-1].at  # the snapshot's heartbeat is the last point's time
    fresh = detect_heartbeat(data(pts, observed=beat + timedelta(minutes=10)))
    assert fresh.findings == [] and fresh.clear_at == beat
    [found] = detect_heartbeat(
        data(pts, observed=beat + timedelta(minutes=20), heartbeat_minutes=15)
    ).findings
    assert found.fingerprint == HEARTBEAT
    assert found.since == beat + timedelta(minutes=15)
    assert detect_heartbeat(data(pts, "crashed", observed=beat + timedelta(hours=2))).findings == []


def test_crash_of_a_superseded_chain_member_is_ignored() -> None:
    b = "e/p/b"
    d = data(points(10))
    d.chain = [A, b]
    d.snapshots[b] = RunSnapshot(b, "b", "running", T0 + timedelta(minutes=5), None, None, T0)
    d.wandb_events = [
        Event("r", "wandb", "s1", "state", T0 + timedelta(minutes=9.5), state="crashed",
              extra={"wandb_run": A, "to_state": "crashed"}, id=1),
    ]  # fmt: skip
    assert detect_crash(d).findings == []
    d.snapshots.pop(b)
    d.chain = [A]
    [still_down] = detect_crash(d).findings  # no step logged after it: still down
    assert still_down.active and still_down.severity == "critical"


def test_nan_loss_episode_from_points() -> None:
    nan = float("nan")
    pts = [
        MetricPoint(p.wandb_run, p.step, p.at, loss=nan if 10 <= i < 13 else 2.0)
        for i, p in enumerate(points(20))
    ]
    [found] = detect_nan(data(pts)).findings
    assert found.since == pts[10].at and found.until == pts[13].at
    assert found.resolution == "The loss is finite again."
    assert detect_nan(data(points(20))).findings == []


def test_nan_loss_seen_only_in_the_run_summary() -> None:
    pts = points(10)
    d = data(pts)
    d.snapshots[A].summary = {"train/loss": "NaN"}
    [found] = detect_nan(d).findings
    assert found.active and found.since == pts[-1].at
    d.loss_key = None
    assert detect_nan(d).findings == []


def test_monitor_speaks_only_when_polls_fail_and_says_nothing_about_the_run() -> None:
    now = T0 + timedelta(hours=1)

    def at(health: SourceHealth | None) -> RunData:
        d = data(points(5))
        d.now = now
        d.wandb_health = health
        return d

    assert detect_monitor(at(None)).findings == []
    fresh = SourceHealth("wandb", "r", last_success_at=now - timedelta(minutes=5))
    assert detect_monitor(at(fresh)).clear_at == now - timedelta(minutes=5)
    failing = SourceHealth(
        "wandb",
        "r",
        last_success_at=now - timedelta(minutes=40),
        consecutive_failures=3,
        failing_since=now - timedelta(minutes=39),
    )
    [found] = detect_monitor(at(failing)).findings
    assert found.fingerprint == MONITOR and found.severity == "info"
    assert found.since == now - timedelta(minutes=39)  # from the first failed poll
    assert "3 failed polls" in found.cause and "40 min" in found.cause
    # One failed poll a minute after a success is already a (pending) finding: the lifecycle
    # holds it for `monitor_notice_after` before anyone hears of it.
    blip = SourceHealth(
        "wandb",
        "r",
        last_success_at=now - timedelta(minutes=1),
        consecutive_failures=1,
        failing_since=now,
    )
    [pending] = detect_monitor(at(blip)).findings
    assert pending.since == now
    idle = SourceHealth("wandb", "r", last_success_at=now - timedelta(minutes=40))
    quiet = detect_monitor(at(idle))
    assert quiet.frozen and quiet.findings == []  # stale, but nobody polled: judge nothing


def test_reports_group_by_kind_and_thread() -> None:
    def report(n: int, thread: str, severity: str = "warning") -> Event:
        return Event("r", "github", f"comment:{n}", "comment", T0 + timedelta(minutes=n),
                     author="ada", ref="#1", body="Something looks off", thread=thread,
                     severity=severity, incident=True, id=n)  # fmt: skip

    d = data(points(5))
    d.reports = [report(1, "github:o/r#1"), report(2, "github:o/r#2"),
                 report(3, "github:o/r#1", "critical")]  # fmt: skip
    first, second = detect_reports(d).findings
    assert first.fingerprint == f"{REPORT_PREFIX}reported:github:o/r#1"
    assert first.event_ids == [1, 3] and first.severity == "critical"
    assert first.since == T0 + timedelta(minutes=1)
    assert first.last_report_at == T0 + timedelta(minutes=3)
    assert first.thread == "github:o/r#1" and first.title == "Incident reported in GitHub #1 by ada"
    assert second.event_ids == [2] and second.severity == "warning"


def test_every_detector_is_registered_once_with_the_shared_signature() -> None:
    fingerprints = [spec.fingerprint for spec in DETECTORS]
    assert len(set(fingerprints)) == len(fingerprints)
    d = data(points(30))
    for spec in DETECTORS:
        assert spec_for(spec.fingerprint) is spec
        result = spec.detect(d)  # every detector takes RunData and returns a Detection
        assert isinstance(result.findings, list)
        assert all(spec.owns(f.fingerprint) for f in result.findings)
    assert spec_for(f"{REPORT_PREFIX}oom:github:o/r#9") is spec_for(REPORT_PREFIX)
    assert spec_for("no-such-condition") is None
