"""The monitor itself: Runscribe cannot reach W&B (`monitor-stale`), which says nothing about
the run.
"""

from __future__ import annotations

from bot.core.timeutil import humanize_delta
from bot.incidents.detectors.base import MONITOR, Detection, DetectorSpec, Finding, RunData


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


#: The monitor detector's one registration (listed in `registry.DETECTORS`).
MONITOR_DETECTOR = DetectorSpec(
    MONITOR,
    detect_monitor,
    "monitor",
    words="W&B unreachable",
    kind="monitor",
    kind_words="W&B unreachable",
    rank=8,
    description="Runscribe cannot reach W&B",
    stops_training=False,
)
