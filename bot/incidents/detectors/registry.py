"""The registry of every detector (`DETECTORS`) and what the rest of the code asks it: which
detector owns a fingerprint, its words, its kind, the incident a restart recovered from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.incidents.detectors.alerts import ALERTS_DETECTOR
from bot.incidents.detectors.base import DetectorRegistry, DetectorSpec, readable
from bot.incidents.detectors.crash import CLOCK_SKEW, CRASH_DETECTOR, restart_window_start
from bot.incidents.detectors.drift import DRIFT_DETECTOR
from bot.incidents.detectors.liveness import HEARTBEAT_DETECTOR, STALL_DETECTOR
from bot.incidents.detectors.metrics import NAN_DETECTOR, SPIKE_DETECTOR, THROUGHPUT_DETECTOR
from bot.incidents.detectors.monitor import MONITOR_DETECTOR
from bot.incidents.detectors.reports import REPORTS_DETECTOR
from bot.models import Incident, Restart

#: Every detector, in the order the engine runs them: each one's registration, from its module.
DETECTORS = DetectorRegistry(
    (
        CRASH_DETECTOR,
        HEARTBEAT_DETECTOR,
        STALL_DETECTOR,
        THROUGHPUT_DETECTOR,
        NAN_DETECTOR,
        SPIKE_DETECTOR,
        DRIFT_DETECTOR,
        MONITOR_DETECTOR,
        ALERTS_DETECTOR,
        REPORTS_DETECTOR,
    )
)


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


def spec_for(fingerprint: str) -> DetectorSpec | None:
    return next((spec for spec in DETECTORS if spec.owns(fingerprint)), None)


def is_report(fingerprint: str) -> bool:
    spec = spec_for(fingerprint)
    return spec is not None and spec.judges == "people"


def is_alert(fingerprint: str) -> bool:
    spec = spec_for(fingerprint)
    return spec is not None and spec.judges == "alerts"


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
