"""What the forecasts say, for `/status`, `status --json`, the narrative facts and `/forecast`:
the loss against its predicted curve, and each watched metric's tracker (advanced in memory by
`bot.incidents.forecasts.advance_forecasts` without saving, so a read between polls is current
and writes nothing)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.analysis.forecast import Fit, LossCurve, SeriesPoint, Tracker, offset_text
from bot.analysis.progress import effective_series
from bot.core.errors import UserFacingError
from bot.core.numbers import fmt_int, fmt_value
from bot.incidents.detectors import drift_fingerprint
from bot.incidents.forecasts import advance_forecasts, forecast_configs
from bot.models import MetricPoint, RunInfo
from bot.store import Store

log = logging.getLogger(__name__)


def loss_curve(run: RunInfo) -> LossCurve | None:
    return LossCurve.from_config(run.config.loss_forecast)


def loss_key(run: RunInfo) -> str:
    return run.config.metrics.loss or "train/loss"


@dataclass(slots=True)
class ForecastView:
    """One line of the `forecasts` list of `status --json` (its first seven fields are fixed)."""

    metric: str
    label: str
    value: float | None
    forecast: float | None
    low: float | None
    high: float | None
    # ok (inside its band) | outside (outside its band, not drifting: too few points yet, or
    # the unwatched direction) | drifting (a drift episode is open) | learning
    state: str
    step: int | None = None
    direction: str | None = None  # the watched direction (None for the loss)
    reason: str | None = None  # why a forecast says little, or where the loss stands
    drift_since_step: int | None = None
    kind: str = "metric"  # metric | loss

    @property
    def name(self) -> str:
        return f"{self.label} ({self.metric})" if self.label != self.metric else self.metric

    @property
    def fingerprint(self) -> str:
        """The fingerprint of this metric's drift incident."""
        return drift_fingerprint(self.metric)

    def describe(self, name: str | None = None) -> str:
        """'gradient norm (train/grad_norm) drifting up since step 41,200: 3.9 vs forecast 2.1
        (band 1.8–2.4)'; '… ok: 2.1, forecast 2.05 (band 1.8–2.4)'; '… learning: 12 of 60
        points'. `name` replaces the metric's name (a renderer's escaped one)."""
        name = name or self.name
        value = fmt_value(self.value)
        band = f"(band {fmt_value(self.low)}–{fmt_value(self.high)})"
        if self.state == "drifting":
            since = f" since step {fmt_int(self.drift_since_step)}" if self.drift_since_step else ""
            way = f" {self.direction}" if self.direction in ("up", "down") else ""
            return (
                f"{name} drifting{way}{since}: {value} vs forecast "
                f"{fmt_value(self.forecast)} {band}"
            )
        if self.state == "ok":
            note = f"; {self.reason}" if self.reason else ""
            return f"{name} ok: {value}, forecast {fmt_value(self.forecast)} {band}{note}"
        if self.state == "outside":
            side = "above" if (self.value or 0) > (self.high or 0) else "below"
            note = f"; {self.reason}" if self.reason else ""
            return (
                f"{name} {side} its band: {value} vs forecast {fmt_value(self.forecast)} "
                f"{band}{note}"
            )
        return f"{name} learning: {self.reason or 'too few points'}"

    def as_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "label": self.label,
            "value": self.value,
            "forecast": self.forecast,
            "low": self.low,
            "high": self.high,
            "state": self.state,
            "step": self.step,
            "direction": self.direction,
            "reason": self.reason,
            "drift_since_step": self.drift_since_step,
        }


def loss_view(run: RunInfo, points: Sequence[MetricPoint], chain: Sequence[str]) -> ForecastView:
    """The latest loss against the predicted curve at its step (no band: low/high are null)."""
    key = loss_key(run)
    curve = loss_curve(run)
    latest = next(
        (
            p
            for p in reversed(effective_series(points, chain))
            if p.loss is not None and math.isfinite(p.loss)
        ),
        None,
    )
    if curve is None or latest is None or latest.loss is None:
        empty = ForecastView(key, "loss", None, None, None, None, "learning", kind="loss")
        empty.reason = "no loss logged yet"
        return empty
    predicted = curve.at(latest.step)
    if predicted is None:
        return ForecastView(
            key,
            "loss",
            latest.loss,
            None,
            None,
            None,
            "learning",
            step=latest.step,
            reason=f"the curve has no value at step {fmt_int(latest.step)}",
            kind="loss",
        )
    return ForecastView(
        key,
        "loss",
        latest.loss,
        predicted,
        None,
        None,
        "ok",
        step=latest.step,
        reason=offset_text(latest.loss, predicted),
        kind="loss",
    )


def metric_view(tracker: Tracker, run_step: int | None) -> ForecastView:
    """The tracker's state, told by its band: 'ok' only while the latest value is inside it."""
    cfg = tracker.config
    last = tracker.last
    state: str = tracker.state
    episode = tracker.episode
    reason = tracker.reason(run_step)
    if (
        state == "ok"
        and last is not None
        and last.low is not None
        and last.high is not None
        and not last.low <= last.value <= last.high
    ):
        state = "outside"
        side = "up" if last.value > last.high else "down"
        if cfg.direction in (side, "both"):
            count = f"{tracker.outside} of {cfg.points} points"
            why = f"{count} outside in a row before it counts as drifting"
        else:
            why = f"only a departure {cfg.direction} is watched"
        reason = f"{why}; {reason}" if reason else why
    return ForecastView(
        metric=cfg.metric,
        label=cfg.label or cfg.metric,
        value=last.value if last else None,
        forecast=last.forecast if last and state != "learning" else None,
        low=last.low if last and state != "learning" else None,
        high=last.high if last and state != "learning" else None,
        state=state,
        step=last.step if last else None,
        direction=cfg.direction,
        reason=reason,
        drift_since_step=episode.start.step if episode else None,
    )


async def forecast_views(
    store: Store,
    run: RunInfo,
    chain: Sequence[str],
    now: datetime,
    points: Sequence[MetricPoint],
    run_step: int | None,
) -> list[ForecastView]:
    """The loss (when `loss_forecast` is set) then each watched metric, without writing."""
    views = []
    if loss_curve(run) is not None:
        views.append(loss_view(run, points, chain))
    for tracker in await advance_forecasts(store, run, chain, now, save=False):
        views.append(metric_view(tracker, run_step))
    return views


# --------------------------------------------------------------------------- /forecast

PANEL_POINTS = 1000  # newest values drawn per metric
MAX_PANELS = 10  # Discord: at most 10 embeds (and 10 files) per message


@dataclass(slots=True)
class ForecastPanel:
    """One watched metric for `/forecast`: its line, its newest values and its trend."""

    view: ForecastView
    points: list[SeriesPoint]
    fit: Fit | None
    fit_from: int | None  # first step of the window the trend was fitted on

    def band(self) -> list[tuple[int, float, float, float]]:
        """(step, low, forecast, high) from the fit window's start to the newest point."""
        if self.fit is None or not self.points or self.fit_from is None:
            return []
        width = self.fit.width
        steps = sorted({self.fit_from, self.points[-1].step})
        return [(s, self.fit.at(s) - width, self.fit.at(s), self.fit.at(s) + width) for s in steps]


async def forecast_panels(
    store: Store, slug: str, now: datetime, metric: str | None = None
) -> tuple[RunInfo, list[ForecastPanel]]:
    """The run's watched metrics (or the one named), each with what its chart needs. Raises a
    UserFacingError for an unknown run, a run without forecasts, or a metric it does not watch."""
    run = await store.runs.get(slug)
    if run is None:
        raise UserFacingError(f"unknown run {slug!r}")
    configs = forecast_configs(run)
    if not configs:
        raise UserFacingError(
            f"Run {slug!r} watches no metrics: add [[runs.forecasts]] entries to the runs file."
        )
    if metric:
        wanted = metric.strip()
        configs = [c for c in configs if wanted in (c.metric, c.label)]
        if not configs:
            names = ", ".join(c.metric for c in forecast_configs(run))
            raise UserFacingError(f"Run {slug!r} does not watch {wanted!r}; it watches {names}.")
    snapshots = await store.snapshots.chain(slug)
    chain = run.wandb_chain(snapshots)
    latest = await store.metrics.latest(slug)
    run_step = latest.step if latest else None
    panels = []
    trackers = await advance_forecasts(store, run, chain, now, save=False)
    for tracker in trackers:
        if tracker.config not in configs:
            continue
        points = await store.series.latest(slug, tracker.config.metric, PANEL_POINTS)
        fit = tracker.fit if tracker.state != "learning" else None
        panels.append(
            ForecastPanel(
                view=metric_view(tracker, run_step),
                points=points,
                fit=fit,
                fit_from=int(fit.start) if fit is not None and fit.start is not None else None,
            )
        )
    return run, panels[:MAX_PANELS]
