"""Forecasts, pure: the loss against a predicted curve, and watched metrics against a trend fitted
from their own history. No I/O and no clock; `bot.services.forecasts` feeds points from the store
and keeps the tracker state between polls.

**Loss curve.** `loss_forecast` points (step, loss), e.g. from a scaling ladder, are joined by
straight lines in log(step)–log(loss), i.e. a power law between each pair. Outside the points the
first and last segments are extended (the power law continues; a ladder's last point is rarely the
run's last step). Steps ≤ 0 have no forecast.

**Watched metrics.** A `Tracker` per metric sees each new point once (O(1) amortised per point):

- the trend is a robust line over the trailing `window` points *before* the newest `holdout`
  points: slope = median of the slopes of the point pairs half a window apart (a Theil–Sen
  estimator on n/2 disjoint pairs, O(n)), intercept = median residual; it is refitted every
  `REFIT_EVERY` points, never while the metric is outside its band;
- the band is forecast ± `band` × σ, σ = 1.4826 × MAD of the fit's residuals (floored at 0.1 %
  of the metric's level, so a noise-free metric does not alert on rounding);
- `learning` until `min_points` points of the current segment exist; then `ok`, or `drifting`
  once `points` (K) consecutive points are outside the band in the watched direction. The
  episode starts at the first of them; K consecutive points back inside close it. After each
  `window` points outside, a metric that stopped moving away from the old trend (a fresh fit
  has the old slope) has found a new level: the episode closes and the trend restarts there;
- the step axis follows the W&B chain: a point at or below the last step (a restore from a
  checkpoint, a resume) truncates the window to the steps before it and clears the counters, so
  replayed steps never count twice and a restart never fires; a drift that began after the
  restore point is closed (those steps were undone). Points from a chain member older than the
  newest one seen (a superseded run still logging) are ignored.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from statistics import median
from typing import Any, Literal

from bot.config.runsfile import ForecastConfig
from bot.core import jsoncodec
from bot.core.numbers import fmt_int, fmt_value

REFIT_EVERY = 8  # points between refits of a metric's trend
MAD_SIGMA = 1.4826  # MAD → standard deviation for normal noise
LEVEL_FLOOR = 1e-3  # σ is at least this fraction of the metric's level
CLOSED_KEPT = 5  # closed episodes remembered (the engine reads the recent ones)

State = Literal["learning", "ok", "drifting"]
Direction = Literal["up", "down"]


# --------------------------------------------------------------------------- the loss curve


@dataclass(frozen=True, slots=True)
class LossCurve:
    """Piecewise power law through `points` (log-log linear interpolation, ends extended)."""

    points: tuple[tuple[float, float], ...]

    @classmethod
    def from_config(cls, value: Sequence[Sequence[float]] | None) -> LossCurve | None:
        if not value or len(value) < 2:
            return None
        pts = tuple((float(s), float(v)) for s, v in value)
        if any(s <= 0 or v <= 0 for s, v in pts):
            return None
        return cls(pts)

    def at(self, step: float) -> float | None:
        if step <= 0:
            return None
        pts = self.points
        x = math.log(step)
        index = 1
        while index < len(pts) - 1 and step > pts[index][0]:
            index += 1
        (s0, v0), (s1, v1) = pts[index - 1], pts[index]
        x0, x1 = math.log(s0), math.log(s1)
        y0, y1 = math.log(v0), math.log(v1)
        return math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))


def offset_text(value: float, forecast: float) -> str:
    """'0.012 below the predicted curve' (`bot.core.numbers.fmt_value` of the difference)."""
    diff = value - forecast
    if diff == 0:
        return "exactly on the predicted curve"
    side = "above" if diff > 0 else "below"
    return f"{fmt_value(abs(diff))} {side} the predicted curve"


# --------------------------------------------------------------------------- watched metrics


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """One logged value of a watched metric."""

    wandb_run: str
    step: int
    at: datetime
    value: float


@dataclass(frozen=True, slots=True)
class Fit:
    """value ≈ intercept + slope × (step − anchor); band = ± width. Fitted on the steps from
    `start` to `anchor`."""

    anchor: float
    slope: float
    intercept: float
    width: float
    start: float | None = None

    def at(self, step: float) -> float:
        return self.intercept + self.slope * (step - self.anchor)


@dataclass(slots=True)
class Observation:
    step: int
    at: datetime
    value: float
    forecast: float | None = None
    low: float | None = None
    high: float | None = None

    def as_json(self) -> dict[str, Any]:
        return jsoncodec.dump(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        return jsoncodec.load(cls, data, lenient=True)


@dataclass(slots=True)
class Episode:
    """One drift: `start` is the first point outside, `confirmed` the K-th (its value, forecast
    and band name the alert); `end` the K-th point back inside (None while it lasts)."""

    direction: Direction
    start: Observation
    confirmed: Observation
    peak: Observation
    end: Observation | None = None
    resolution: str | None = None
    undone: bool = False  # a restore went back before it began: those steps never happened

    def as_json(self) -> dict[str, Any]:
        return jsoncodec.dump(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Episode:
        return jsoncodec.load(cls, data, lenient=True)


@dataclass(slots=True)
class Transition:
    """What one update changed: an episode opened or closed."""

    kind: Literal["opened", "closed"]
    episode: Episode


def fit_trend(xs: Sequence[float], ys: Sequence[float], band: float) -> Fit | None:
    """Median-of-pair-slopes line through (xs, ys) (xs increasing) and its MAD band."""
    n = len(xs)
    if n < 4:
        return None
    half = n // 2
    slopes = []
    for i in range(n - half):
        dx = xs[i + half] - xs[i]
        if dx > 0:
            slopes.append((ys[i + half] - ys[i]) / dx)
    slope = median(slopes) if slopes else 0.0
    anchor = xs[-1]
    level = [y - slope * (x - anchor) for x, y in zip(xs, ys, strict=True)]
    intercept = median(level)
    spread = median(abs(v - intercept) for v in level)
    sigma = max(MAD_SIGMA * spread, LEVEL_FLOOR * abs(intercept), 1e-12)
    return Fit(anchor=anchor, slope=slope, intercept=intercept, width=band * sigma, start=xs[0])


@dataclass(slots=True)
class Tracker:
    """The forecast state of one watched metric. `update` takes the new points of a poll."""

    config: ForecastConfig
    window: deque[tuple[int, float]] = field(
        default_factory=deque,
        metadata=jsoncodec.json_field(
            dump=lambda window: [[s, v] for s, v in window],
            load=lambda raw: deque((int(s), float(v)) for s, v in raw),
        ),
    )
    run: str | None = None  # chain member of the newest point
    seen: int = 0  # points accepted, ever
    restarts: int = 0
    fit: Fit | None = field(  # stored as a list
        default=None,
        metadata=jsoncodec.json_field(
            dump=lambda f: [f.anchor, f.slope, f.intercept, f.width, f.start] if f else None,
            load=lambda raw: Fit(*raw) if raw else None,
        ),
    )
    since_fit: int = 0
    last: Observation | None = None
    outside: int = 0  # consecutive points outside in `outside_dir`
    outside_dir: Direction | None = None
    outside_first: Observation | None = None
    inside: int = 0  # consecutive points back inside during an episode
    held: int = 0  # points since the episode was confirmed
    episode: Episode | None = None
    closed: list[Episode] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.window = deque(self.window, maxlen=self.capacity)

    @property
    def capacity(self) -> int:
        return self.config.window + self.config.holdout + REFIT_EVERY

    @property
    def state(self) -> State:
        if self.episode is not None:
            return "drifting"
        if self.fit is None or len(self.window) < self.config.min_points:
            return "learning"
        return "ok"

    # ------------------------------------------------------------------ update

    def update(self, points: Iterable[SeriesPoint], chain: Sequence[str] = ()) -> list[Transition]:
        """Feed new points (oldest first, as stored). Returns the episodes opened or closed."""
        out: list[Transition] = []
        rank = {path: index for index, path in enumerate(chain)}
        for point in points:
            if not math.isfinite(point.value):
                continue
            if (
                self.run is not None
                and point.wandb_run != self.run
                and rank.get(point.wandb_run, len(rank)) < rank.get(self.run, len(rank))
            ):
                continue  # an older chain member still logging: superseded
            self.run = point.wandb_run
            self._accept(point, out)
        return out

    def _accept(self, point: SeriesPoint, out: list[Transition]) -> None:
        cfg = self.config
        if self.window and point.step <= self.window[-1][0]:
            self._restart(point, out)
        self.window.append((point.step, point.value))
        self.seen += 1
        obs = Observation(point.step, point.at, point.value)
        self.last = obs
        if len(self.window) < cfg.min_points:
            return
        frozen = self.outside > 0 or self.episode is not None
        self.since_fit += 1
        if self.fit is None or (self.since_fit >= REFIT_EVERY and not frozen):
            self._refit()
        if self.fit is None:
            return
        forecast = self.fit.at(point.step)
        obs.forecast = forecast
        obs.low, obs.high = forecast - self.fit.width, forecast + self.fit.width
        side: Direction | None = None
        if point.value > obs.high:
            side = "up"
        elif point.value < obs.low:
            side = "down"
        watched = side if side is not None and cfg.direction in (side, "both") else None
        if self.episode is None:
            self._watch(obs, watched, out)
        else:
            self._hold(obs, watched, out)

    def _refit(self) -> None:
        cfg = self.config
        points = list(self.window)[: -cfg.holdout][-cfg.window :]
        self.fit = fit_trend([float(s) for s, _ in points], [v for _, v in points], cfg.band)
        self.since_fit = 0

    def _watch(self, obs: Observation, watched: Direction | None, out: list[Transition]) -> None:
        if watched is None:
            self.outside, self.outside_dir, self.outside_first = 0, None, None
            return
        if self.outside == 0 or self.outside_dir != watched:
            self.outside, self.outside_dir, self.outside_first = 0, watched, obs
        self.outside += 1
        if self.outside >= self.config.points:
            assert self.outside_first is not None
            self.episode = Episode(watched, self.outside_first, obs, obs)
            self.inside = self.held = 0
            out.append(Transition("opened", self.episode))

    def _hold(self, obs: Observation, watched: Direction | None, out: list[Transition]) -> None:
        episode = self.episode
        assert episode is not None
        self.held += 1
        if watched == episode.direction:
            self.inside = 0
            if abs(obs.value - (obs.forecast or 0.0)) > abs(
                episode.peak.value - (episode.peak.forecast or 0.0)
            ):
                episode.peak = obs
            if self.held % self.config.window == 0:
                self._settled(obs, out)
            return
        self.inside += 1
        if self.inside >= self.config.points:
            self._close(
                obs,
                f"back inside the band for {self.config.points} points "
                f"({fmt_value(obs.value)} at step {fmt_int(obs.step)})",
                out,
            )

    def _settled(self, obs: Observation, out: list[Transition]) -> None:
        """A whole window outside: if the metric no longer moves away from the old trend (a
        fresh fit of the window has the old slope, within its own band over the window's span),
        it found a new level: close the episode and forecast from there. A metric still
        running away (an exponential growth) stays drifting."""
        old = self.fit
        points = list(self.window)[-self.config.window :]
        fresh = fit_trend([float(s) for s, _ in points], [v for _, v in points], self.config.band)
        if old is None or fresh is None:
            return
        span = points[-1][0] - points[0][0]
        if abs(fresh.slope - old.slope) * span <= fresh.width:
            self._close(obs, "it settled at a new level; the forecast now starts from there", out)
            self.fit, self.since_fit = fresh, 0

    def _close(self, obs: Observation, resolution: str, out: list[Transition]) -> None:
        episode = self.episode
        assert episode is not None
        episode.end, episode.resolution = obs, resolution
        self.closed = [*self.closed, episode][-CLOSED_KEPT:]
        self.episode = None
        self.outside, self.outside_dir, self.outside_first = 0, None, None
        self.inside = self.held = 0
        out.append(Transition("closed", episode))

    def _restart(self, point: SeriesPoint, out: list[Transition]) -> None:
        """The step went back (a restore or a resume from a checkpoint): drop the undone steps."""
        self.restarts += 1
        while self.window and self.window[-1][0] >= point.step:
            self.window.pop()
        self.outside, self.outside_dir, self.outside_first = 0, None, None
        self.inside = 0
        if self.episode is not None and self.episode.start.step >= point.step:
            self.episode.undone = True
            self._close(
                Observation(point.step, point.at, point.value),
                f"training went back to step {fmt_int(point.step)}, before the drift began",
                out,
            )
        if len(self.window) < self.config.min_points:
            self.fit = None

    # ------------------------------------------------------------------ persistence

    def as_json(self) -> dict[str, Any]:
        return {"v": 1, **jsoncodec.dump(self, omit=("config",))}

    @classmethod
    def from_json(cls, config: ForecastConfig, data: dict[str, Any] | None) -> Tracker:
        """A tracker from its stored state; a state of another version (or none) starts over."""
        if not data or data.get("v") != 1:
            return cls(config)
        return jsoncodec.load(cls, data, lenient=True, omit=("config",), given={"config": config})

    # ------------------------------------------------------------------ reading

    def reason(self, run_step: int | None = None) -> str | None:
        """Why the forecast says little: nothing logged, too few points, or not logged lately."""
        cfg = self.config
        if not self.window:
            if self.seen:
                return "the window restarted with the run; waiting for new points"
            return f"no values of {cfg.metric} logged yet"
        if len(self.window) < cfg.min_points:
            return f"learning: {len(self.window)} of {cfg.min_points} points"
        last_step = self.window[-1][0]
        if run_step is not None and len(self.window) > 1:
            spacing = max((last_step - self.window[0][0]) / (len(self.window) - 1), 1.0)
            if run_step - last_step > 10 * spacing:
                return (
                    f"not logged since step {fmt_int(last_step)} "
                    f"(the run is at step {fmt_int(run_step)})"
                )
        return None


def drift_title(config: ForecastConfig, episode: Episode) -> str:
    """'gradient norm (train/grad_norm) drifting up: 3.9 vs forecast 2.1 (band 1.8–2.4) since
    step 41,200'."""
    c = episode.confirmed
    name = f"{config.label} ({config.metric})" if config.label else config.metric
    return (
        f"{name} drifting {episode.direction}: {fmt_value(c.value)} vs forecast "
        f"{fmt_value(c.forecast)} (band {fmt_value(c.low)}–{fmt_value(c.high)}) "
        f"since step {fmt_int(episode.start.step)}"
    )
