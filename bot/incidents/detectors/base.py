"""The detectors' shared vocabulary: the fingerprints, what a detector reads (`RunData`) and
says (`Detection`, `Finding`), a detector's one registration (`DetectorSpec`) and the registry
type, and the helpers every family uses. No detector lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from bot.analysis.forecast import Tracker
from bot.analysis.progress import effective_series
from bot.config.runsfile import THRESHOLDS, Threshold, ThresholdRegistry, Thresholds
from bot.models import (
    MONITOR_STALE_AFTER,
    SOURCE_SPECS,
    Event,
    MetricPoint,
    Restart,
    RunSnapshot,
    SourceHealth,
    WandbState,
)

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


def to_state(event: Event) -> str | None:
    """The state a W&B state change went to (its data, else the event's own state)."""
    return WandbState.of(event).to_state or event.state


def event_path(event: Event) -> str | None:
    """The W&B run a state change is of (its data, else its thread `wandb:<path>`)."""
    path = WandbState.of(event).wandb_run
    if path:
        return path
    if event.thread and event.thread.startswith("wandb:"):
        return event.thread.removeprefix("wandb:")
    return None


def where(event: Event) -> str:
    """'GitHub #8818', 'Discord #hero-run', 'W&B <run>'."""
    return f"{SOURCE_SPECS.label(event.source) or event.source} {event.ref or ''}".strip()


def readable(identifier: str) -> str:
    """An identifier nobody worded, as words: `node-loss` → "node loss"."""
    return identifier.replace("_", " ").replace("-", " ").strip() or "unknown"


def threshold(data: RunData, name: str) -> float:
    """A detector's threshold for this run: the runs file's `[runs.alerts]` value, else the
    default its registration declares."""
    return data.thresholds.value(name)


def monitor_blind(health: SourceHealth | None, now: datetime) -> bool:
    """W&B data is too old to judge the run by (the monitor, not the run, is the problem)."""
    if health is None:
        return False
    fresh = health.last_success_at
    return fresh is None or now - fresh > MONITOR_STALE_AFTER


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
