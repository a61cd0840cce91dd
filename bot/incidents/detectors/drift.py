"""Forecast drift: a watched metric outside its forecast band (`drift:<metric>`)."""

from __future__ import annotations

from bot.analysis.forecast import Episode, Tracker, drift_title
from bot.core.numbers import fmt_int, fmt_value
from bot.incidents.detectors.base import DRIFT_PREFIX, Detection, DetectorSpec, Finding, RunData


def drift_fingerprint(metric: str) -> str:
    return f"{DRIFT_PREFIX}{metric}"


def detect_drift(data: RunData) -> Detection:
    """One finding per drift episode of each watched metric: the open one, and those that
    closed since the last cycle looked (their end resolves the incident). An episode a restore
    undid (training went back before it began) is no finding: an incident already open for it
    clears for want of one."""
    findings = []
    for tracker in data.forecasts:
        episodes = [*tracker.closed]
        if tracker.episode is not None:
            episodes.append(tracker.episode)
        for episode in episodes:
            if episode.undone or (episode.end is not None and episode.end.at < data.eval_start):
                continue
            findings.append(_drift_finding(tracker, episode))
    return Detection(findings)


def _drift_finding(tracker: Tracker, episode: Episode) -> Finding:
    cfg = tracker.config
    name = f"{cfg.label} ({cfg.metric})" if cfg.label else cfg.metric
    c = episode.confirmed
    side = "above" if episode.direction == "up" else "below"
    cause = (
        f"{name} left its forecast band at step {fmt_int(episode.start.step)} and stayed {side} it "
        f"for {cfg.points} consecutive points: {fmt_value(c.value)} at step {fmt_int(c.step)} "
        "against a "
        f"forecast of {fmt_value(c.forecast)} (band {fmt_value(c.low)}–{fmt_value(c.high)}), "
        f"fitted from its own trailing {cfg.window} points."
    )
    end = episode.end
    return Finding(
        fingerprint=drift_fingerprint(cfg.metric),
        kind="drift",
        severity="warning",
        title=drift_title(cfg, episode),
        cause=cause,
        since=episode.start.at,
        until=end.at if end is not None else None,
        resolution=f"{name} is {episode.resolution}." if end is not None else None,
        facts={
            "metric": cfg.metric,
            "direction": episode.direction,
            "since_step": episode.start.step,
            "value": c.value,
            "forecast": c.forecast,
            "low": c.low,
            "high": c.high,
            "peak": episode.peak.value,
            "peak_step": episode.peak.step,
        },
    )


#: The drift detector's one registration (listed in `registry.DETECTORS`).
DRIFT_DETECTOR = DetectorSpec(
    DRIFT_PREFIX,
    detect_drift,
    "wandb",
    inhibited_by_crash=True,
    default_resolution="The metric is back within its forecast band.",
    family=True,
    words="forecast drift",
    detail=lambda metric: metric,
    kind="drift",
    kind_words="metric off its forecast",
    rank=6,
    description="a watched metric drifting off its forecast (one metric: `drift:<metric>`)",
    stops_training=False,
)
