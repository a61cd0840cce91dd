"""Incident detectors: pure functions from what the store holds about one run (a `RunData`) to a
`Detection`: `Finding`s, i.e. conditions with a fingerprint, a start and, when the data already
shows it, an end; or, with no finding, since when the data shows the condition clear. No I/O and
no clock: the engine reads a time window and passes `now`.

Every detector has the same signature, `(RunData) -> Detection`, and one registration, a
`DetectorSpec` beside it in its family's module, with everything the rest of the code asks about
it (which data it judges, whether a crash makes it meaningless, how long a clear must hold, what
to say when it clears, its words, its incident kind, its thresholds with their defaults and
bounds, the events of other sources it reads). `registry.DETECTORS` lists the registrations in
the order the engine runs them. Adding a detector is therefore a function plus its `DetectorSpec`
in a family module, and its name in that list; the engine, the lifecycle, the silences and every
surface iterate the registry and name no detector. A detector's thresholds are declared in
`bot.config.runsfile.BUILT_IN_THRESHOLDS`, so a runs file is judged the same whatever was imported
first.

The modules, one per family: `base` (the fingerprints, `RunData`, `Finding`, `Detection`,
`DetectorSpec` and the shared helpers), `crash` (W&B run state and the restart that ended it),
`liveness` (heartbeat, stall), `metrics` (throughput, NaN loss, loss spike), `drift` (forecast
drift), `monitor` (W&B unreachable), `alerts` (Alertmanager), `reports` (people's reports), and
`registry` (the list and the lookups over it). This package re-exports what other parts use.

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

from bot.incidents.detectors.alerts import (
    alert_fingerprint,
    alert_words,
    detect_alerts,
)
from bot.incidents.detectors.base import (
    ALERT_PREFIX,
    CRASH,
    DRIFT_PREFIX,
    HEARTBEAT,
    MONITOR,
    NAN,
    OUTAGE,
    REPORT_PREFIX,
    SPIKE,
    STALL,
    THROUGHPUT,
    Detect,
    Detection,
    DetectorRegistry,
    DetectorSpec,
    Finding,
    Hold,
    RunData,
    monitor_blind,
    readable,
    run_label,
    threshold,
    where,
)
from bot.incidents.detectors.crash import (
    CLOCK_SKEW,
    EXPLAINED_WITHIN,
    detect_crash,
    restart_explanation,
    restart_window_start,
    resume_text,
)
from bot.incidents.detectors.drift import (
    detect_drift,
    drift_fingerprint,
)
from bot.incidents.detectors.liveness import (
    detect_heartbeat,
    detect_stall,
    last_progress_at,
)
from bot.incidents.detectors.metrics import (
    detect_nan,
    detect_spike,
    detect_throughput,
)
from bot.incidents.detectors.monitor import (
    detect_monitor,
)
from bot.incidents.detectors.registry import (
    DETECTORS,
    condition_words,
    incident_kind_words,
    incident_of_restart,
    is_alert,
    is_report,
    spec_for,
    telling_kind,
)
from bot.incidents.detectors.reports import (
    KIND_LABELS,
    detect_reports,
    report_kind,
)

__all__ = [
    "ALERT_PREFIX",
    "CLOCK_SKEW",
    "CRASH",
    "DETECTORS",
    "DRIFT_PREFIX",
    "EXPLAINED_WITHIN",
    "HEARTBEAT",
    "KIND_LABELS",
    "MONITOR",
    "NAN",
    "OUTAGE",
    "REPORT_PREFIX",
    "SPIKE",
    "STALL",
    "THROUGHPUT",
    "Detect",
    "Detection",
    "DetectorRegistry",
    "DetectorSpec",
    "Finding",
    "Hold",
    "RunData",
    "alert_fingerprint",
    "alert_words",
    "condition_words",
    "detect_alerts",
    "detect_crash",
    "detect_drift",
    "detect_heartbeat",
    "detect_monitor",
    "detect_nan",
    "detect_reports",
    "detect_spike",
    "detect_stall",
    "detect_throughput",
    "drift_fingerprint",
    "incident_kind_words",
    "incident_of_restart",
    "is_alert",
    "is_report",
    "last_progress_at",
    "monitor_blind",
    "readable",
    "report_kind",
    "restart_explanation",
    "restart_window_start",
    "resume_text",
    "run_label",
    "spec_for",
    "telling_kind",
    "threshold",
    "where",
]
