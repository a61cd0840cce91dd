"""Detectors of the logged metrics: throughput against its trailing baseline, a non-finite
loss, a loss spike above its trend.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from statistics import median
from typing import Any

from bot.config.runsfile import BUILT_IN_THRESHOLDS
from bot.core.numbers import fmt_int, fmt_percent, fmt_rate, fmt_value
from bot.core.timeutil import humanize_delta
from bot.incidents.detectors.base import (
    NAN,
    SPIKE,
    THROUGHPUT,
    Detection,
    DetectorSpec,
    Finding,
    RunData,
    run_label,
    threshold,
)
from bot.models import MetricPoint

TREND_POINTS = 20  # trailing points whose median is the loss trend
MIN_TREND_POINTS = 5
MAX_EXCURSION_POINTS = 60  # a "spike" longer than this is a new level, not a spike
BASELINE = timedelta(hours=6)  # trailing throughput baseline
MIN_BASELINE = timedelta(hours=1)


def _segments(series: Sequence[MetricPoint]) -> Iterable[tuple[MetricPoint, MetricPoint]]:
    """Consecutive pairs inside one training segment (no restart between them)."""
    for a, b in pairwise(series):
        if a.wandb_run == b.wandb_run and b.step > a.step:
            yield a, b


def _rate(pairs: Sequence[tuple[MetricPoint, MetricPoint]], tokens: bool) -> tuple[float, float]:
    """(value per hour, hours covered)."""
    done = 0.0
    hours = 0.0
    for a, b in pairs:
        if tokens:
            assert a.tokens is not None and b.tokens is not None
            done += b.tokens - a.tokens
        else:
            done += b.step - a.step
        hours += (b.at - a.at).total_seconds() / 3600
    return (done / hours if hours > 0 else 0.0), hours


def detect_throughput(data: RunData) -> Detection:
    """The rate over the last N minutes (inside the current segment) against the 6 h before it;
    tokens when every point has them, else steps."""
    current = data.current
    if current is None or current.state != "running" or len(data.series) < 4:
        return Detection()
    series = data.series
    ref = series[-1].at
    window = timedelta(minutes=threshold(data, "throughput_minutes"))
    drop = threshold(data, "throughput_drop_percent")
    start = ref - window
    recent_pts = [p for p in series if p.at >= start]
    recent = list(_segments(recent_pts))
    if len(recent) < 2 or len(recent) != len(recent_pts) - 1:
        return Detection()  # too few points, or a restart inside the window
    span = recent[-1][1].at - recent[0][0].at
    if span < window / 2:
        return Detection()
    base_pts = [p for p in series if start - BASELINE <= p.at <= recent_pts[0].at]
    base = list(_segments(base_pts))
    use_tokens = all(p.tokens is not None for p in (*recent_pts, *base_pts))
    base_rate, base_hours = _rate(base, use_tokens)
    if base_hours < MIN_BASELINE.total_seconds() / 3600 or base_rate <= 0:
        return Detection()
    rate, _ = _rate(recent, use_tokens)
    floor = base_rate * (1 - drop / 100)
    if rate >= floor:
        return Detection(clear_at=ref)
    unit = "tokens/h" if use_tokens else "steps/h"
    drop = (1 - rate / base_rate) * 100
    name = run_label(current.wandb_run, data.snapshots)
    return Detection(
        [
            Finding(
                fingerprint=THROUGHPUT,
                kind="throughput",
                severity="warning",
                title=f"Throughput down {fmt_percent(drop, 0)} in {name}",
                cause=(
                    f"{fmt_rate(rate, unit)} over the last {humanize_delta(window)} against a "
                    f"trailing baseline of {fmt_rate(base_rate, unit)} (alert below "
                    f"{fmt_percent(100 - drop, None)})."
                ),
                since=start,
                facts={"rate": rate, "baseline": base_rate, "unit": unit},
            )
        ]
    )


# --- loss -----------------------------------------------------------------------------------


def _non_finite(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return not math.isfinite(value)
    if isinstance(value, str):
        return value.strip().lower() in {"nan", "inf", "-inf", "infinity", "-infinity"}
    return False


def detect_nan(data: RunData) -> Detection:
    """Non-finite loss in the logged points, or in the current W&B run's summary (SQLite stores
    NaN as NULL, so the summary is where a NaN loss survives)."""
    episodes: list[list[Any]] = []  # [since, until, first point]
    for point in data.series:
        if point.loss is None:
            continue
        bad = not math.isfinite(point.loss)
        if bad and (not episodes or episodes[-1][1] is not None):
            episodes.append([point.at, None, point])
        elif not bad and episodes and episodes[-1][1] is None:
            episodes[-1][1] = point.at
    current = data.current
    summary_bad = (
        current is not None
        and data.loss_key is not None
        and _non_finite(current.summary.get(data.loss_key))
    )
    if summary_bad and current is not None and (not episodes or episodes[-1][1] is not None):
        last = data.series[-1] if data.series else None
        # a finite point logged after the last observation means the summary is just behind
        if last is None or last.loss is None or last.at <= current.observed_at:
            since = last.at if last is not None else current.observed_at
            episodes.append([since, None, last])
    findings = []
    for since, until, point in episodes:
        if until is not None and until < data.eval_start:
            continue
        step = point.step if point is not None else None
        value = point.loss if point is not None and point.loss is not None else float("nan")
        findings.append(
            Finding(
                fingerprint=NAN,
                kind="loss-nan",
                severity="critical",
                title=f"Loss is {fmt_value(value)} at step {fmt_int(step)}",
                cause=f"The training loss became {value} (not a finite number).",
                since=since,
                until=until,
                resolution="The loss is finite again." if until is not None else None,
                facts={"step": step},
            )
        )
    return Detection(findings)


def detect_spike(data: RunData) -> Detection:
    """Loss more than X % above the median of the trailing points for K consecutive points. The
    trend is frozen during an excursion; one that lasts too long is taken as a new level."""
    percent = threshold(data, "loss_spike_percent")
    points = threshold(data, "loss_spike_points")
    factor = 1 + percent / 100
    baseline: deque[float] = deque(maxlen=TREND_POINTS)
    run: list[MetricPoint] = []
    trend = 0.0
    spiking = False
    findings: list[Finding] = []

    def close(until: datetime, resolution: str) -> None:
        findings.append(_spike_finding(run, trend, percent, until, resolution))

    for point in data.fine_series:
        loss = point.loss
        if loss is None or not math.isfinite(loss):
            continue
        if len(baseline) < MIN_TREND_POINTS and not run:
            baseline.append(loss)
            continue
        if not run:
            trend = median(baseline)
        if trend > 0 and loss > trend * factor:
            run.append(point)
            if len(run) >= points:
                spiking = True
            if spiking and len(run) > MAX_EXCURSION_POINTS:
                close(point.at, "The loss settled at a new level.")
                baseline.clear()
                baseline.extend(p.loss for p in run[-TREND_POINTS:] if p.loss is not None)
                run, spiking = [], False
            continue
        if spiking:
            within = fmt_percent(percent, None)
            close(point.at, f"The loss is back within {within} of its trend "
                  f"({fmt_value(loss)} at step {fmt_int(point.step)}).")  # fmt: skip
        run, spiking = [], False
        baseline.append(loss)
    if spiking:
        close(data.now, "")
    return Detection([f for f in findings if f.until is None or f.until >= data.eval_start])


def _spike_finding(
    run: list[MetricPoint], trend: float, percent: float, until: datetime, resolution: str
) -> Finding:
    """An excursion of `run` above `trend`: over at `until` when `resolution` says why."""
    peak = max(run, key=lambda p: p.loss or 0.0)
    assert peak.loss is not None
    pct = (peak.loss / trend - 1) * 100
    return Finding(
        fingerprint=SPIKE,
        kind="loss-spike",
        severity="warning",
        title=(
            f"Loss spike at step {fmt_int(peak.step)}: {fmt_value(peak.loss)}, "
            f"{fmt_percent(pct, 0)} above trend"
        ),
        cause=(
            f"The loss stayed more than {fmt_percent(percent, None)} above "
            f"its trend ({fmt_value(trend)}) for {len(run)} consecutive points from step "
            f"{fmt_int(run[0].step)}."
        ),
        since=run[0].at,
        until=until if resolution else None,
        resolution=resolution or None,
        facts={"peak": peak.loss, "peak_step": peak.step, "trend": trend},
    )


#: The throughput detector's one registration (listed in `registry.DETECTORS`).
THROUGHPUT_DETECTOR = DetectorSpec(
    THROUGHPUT,
    detect_throughput,
    "wandb",
    inhibited_by_crash=True,
    hold=lambda th, base: max(timedelta(minutes=th.value("throughput_minutes")), base),
    default_resolution="Throughput is back to its baseline.",
    words="throughput",
    kind="throughput",
    kind_words="throughput drop",
    rank=5,
    description="throughput drop",
    thresholds=BUILT_IN_THRESHOLDS[THROUGHPUT],
)


#: The nan detector's one registration (listed in `registry.DETECTORS`).
NAN_DETECTOR = DetectorSpec(
    NAN,
    detect_nan,
    "wandb",
    words="NaN loss",
    kind="nan",
    kind_words="loss became NaN",
    rank=3,
    description="loss NaN or infinite",
)


#: The spike detector's one registration (listed in `registry.DETECTORS`).
SPIKE_DETECTOR = DetectorSpec(
    SPIKE,
    detect_spike,
    "wandb",
    words="loss spike",
    kind="spike",
    kind_words="loss spike",
    rank=4,
    description="loss spike",
    thresholds=BUILT_IN_THRESHOLDS[SPIKE],
)
