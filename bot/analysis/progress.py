"""Progress, throughput and ETA over a run's W&B metric points.

Pure functions: no I/O and no clock (callers pass `now`). Every datetime is timezone-aware UTC.

A tracked training run is a *chain* of W&B runs (resumes, forks). The functions here first reduce
the raw points of every run in the chain to one *effective series* (what training actually did,
in wall-clock order), then derive rates and the projected end from it (restarts are the W&B
source's records, `bot.models.Restart`). Everything is O(n log n) in the number of points: a
sort per W&B run, then linear scans and bisection.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from operator import attrgetter

from bot.models import MetricPoint

_HOUR = timedelta(hours=1)
#: The long window the training pace is also measured over: its days-long trend, against which
#: the last day's pace is one noisy sample (the projection leans on both, so it moves little from
#: hour to hour).
LONG_WINDOW = timedelta(days=7)
SPREAD_SLICES = 24  # slices of the rate window measured for the rate's variability
_AT = attrgetter("at")
_STEP = attrgetter("step")


@dataclass(frozen=True, slots=True)
class Progress:
    step: int | None
    total_steps: int | None
    tokens: float | None
    target_tokens: float | None
    percent: float | None
    steps_per_hour: float | None
    tokens_per_hour: float | None
    projected_end: datetime | None
    finished: bool
    last_point_at: datetime | None
    loss: float | None
    # The rate's real window: the trailing `window`, or less on a run with less history
    # ("over the last 3 h" on a three-hour-old run, never "24 h").
    rate_window: timedelta | None = None
    # How much the rate behind the projection varies from hour to hour (relative standard
    # deviation of the net rate in equal slices of the window, scaled to one hour); None with
    # fewer than two slices. The projection's precision is derived from it.
    rate_spread: float | None = None
    # The training pace (steps, else tokens, per hour) with the downtime of the run's restarts
    # taken out: over the rate window up to the last point, and over `LONG_WINDOW` when the
    # caller gave the point before it. The projected end runs at their mean from `now`.
    recent_pace: float | None = None
    long_pace: float | None = None

    @property
    def pace(self) -> float | None:
        """The pace the projected end assumes: the recent and the long pace's mean."""
        return mean_pace(self.recent_pace, self.long_pace)


def mean_pace(recent: float | None, long: float | None) -> float | None:
    """The mean of the paces measured (a pace that is not positive is no measure)."""
    paces = [p for p in (recent, long) if p is not None and p > 0]
    return sum(paces) / len(paces) if paces else None


def effective_series(points: Sequence[MetricPoint], chain: Sequence[str] = ()) -> list[MetricPoint]:
    """The points training actually produced, sorted by time.

    Runs are ordered as `chain` lists them, then runs missing from it by their first point's time.
    Once a later run has logged its first point at time T, every point of an earlier run at or
    after T is dropped (a stale crashed run, or a parent that kept logging after a fork), so at
    identical timestamps the later run wins. Within a run, points at one timestamp are ordered by
    step; exact duplicates (same run, step and time) are kept once, the last given. Each run's
    surviving points therefore form one contiguous block, the blocks in run order.
    """
    by_run: dict[str, list[MetricPoint]] = {}
    for point in points:
        group = by_run.get(point.wandb_run)
        if group is None:
            by_run[point.wandb_run] = [point]
        else:
            group.append(point)
    for group in by_run.values():
        # Two stable C-keyed sorts: (at, step) order, input order among exact duplicates. Much
        # faster than one sort on a tuple key, and nearly free on already sorted input.
        group.sort(key=_STEP)
        group.sort(key=_AT)

    listed = [run for run in dict.fromkeys(chain) if run in by_run]
    unlisted = sorted(
        (run for run in by_run if run not in listed),
        key=lambda run: (by_run[run][0].at, run),
    )
    blocks: list[list[MetricPoint]] = []
    cutoff: datetime | None = None  # earliest first point of any later run
    for run in reversed(listed + unlisted):
        group = by_run[run]
        first_at = group[0].at
        if cutoff is not None:
            group = group[: bisect_left(group, cutoff, key=_AT)]
        if group:
            blocks.append(group)
        if cutoff is None or first_at < cutoff:
            cutoff = first_at

    series: list[MetricPoint] = []
    for group in reversed(blocks):
        prev = None
        for point in group:
            if prev is not None and prev.at == point.at and prev.step == point.step:
                series[-1] = point
            else:
                series.append(point)
            prev = point
    return series


def _net_rate(
    times: Sequence[datetime], values: Sequence[float], end: datetime, window: timedelta
) -> float | None:
    """Net change per hour over the window ending at `end` (downtime included). The value at a
    time is that of the last point at or before it. None without two distinct timestamps."""
    if not times or times[0] == times[-1]:
        return None
    start = _window_start(times, end, window)
    at_end = values[bisect_right(times, end) - 1]
    at_start = values[bisect_right(times, start) - 1]
    return (at_end - at_start) / ((end - start) / _HOUR)


def _window_start(times: Sequence[datetime], end: datetime, window: timedelta) -> datetime:
    return max(end - window, times[0])


#: A stretch the run was down: a restart's (stopped_at, resumed_at).
Downtime = tuple[datetime, datetime]


def _down_within(downtime: Sequence[Downtime], start: datetime, end: datetime) -> timedelta:
    """How much of [start, end] the run was down (overlapping stretches counted once)."""
    total = timedelta(0)
    reach = start
    for stop, resume in sorted(downtime):
        a, b = max(stop, reach), min(resume, end)
        if b > a:
            total += b - a
            reach = b
    return total


def _pace(
    times: Sequence[datetime],
    values: Sequence[float],
    start: datetime,
    end: datetime,
    downtime: Sequence[Downtime],
) -> float | None:
    """Net change per hour of training over [start, end] (the value at a time is that of the
    last point at or before it): the time the run was down is not training time."""
    if end <= start or not times or times[0] > start:
        return None
    up = (end - start) - _down_within(downtime, start, end)
    if up <= timedelta(0):
        return None
    done = values[bisect_right(times, end) - 1] - values[bisect_right(times, start) - 1]
    return done / (up / _HOUR)


def _rate_spread(
    times: Sequence[datetime],
    values: Sequence[float],
    end: datetime,
    window: timedelta,
    downtime: Sequence[Downtime] = (),
) -> float | None:
    """The hour-to-hour variability of the net rate over the window ending at `end`: the window
    is cut into equal slices (hours, at most `SPREAD_SLICES`; at least two), each slice's net
    rate is taken like the whole window's, and the slices' standard deviation relative to their
    mean is scaled to one hour (a slice of `b` hours averages `b` hourly rates, so its spread
    is the hourly one over sqrt(b)). A slice's rate is per hour of training: the run's known
    downtime (`downtime`) is taken out, and a slice down for more than half of it is left out (a
    restart is downtime, not uneven pace). None when that is not measurable (a flat or
    shrinking window, or fewer than two distinct timestamps or slices)."""
    if not times or times[0] == times[-1]:
        return None
    start = _window_start(times, end, window)
    span = end - start
    if span <= timedelta(0):
        return None
    slices = max(2, min(SPREAD_SLICES, int(span / _HOUR)))
    width = span / slices
    rates = []
    for index in range(slices):
        a, b = start + width * index, start + width * (index + 1)
        up = width - _down_within(downtime, a, b)
        if up < width / 2:
            continue
        at_a = values[max(0, bisect_right(times, a) - 1)]
        at_b = values[bisect_right(times, b) - 1]
        rates.append((at_b - at_a) / (up / _HOUR))
    if len(rates) < 2:
        return None
    mean = sum(rates) / len(rates)
    if mean <= 0:
        return None
    variance = sum((rate - mean) ** 2 for rate in rates) / (len(rates) - 1)
    return math.sqrt(variance) / mean * math.sqrt(width / _HOUR)


def _crossing_time(times: Sequence[datetime], values: Sequence[float], target: float) -> datetime:
    """Time of the point from which every value stays at or above `target` (values[-1] must)."""
    i = len(values)
    while i > 0 and values[i - 1] >= target:
        i -= 1
    return times[i]


def _project(now: datetime, remaining: float, rate: float | None) -> datetime | None:
    if rate is None or not math.isfinite(rate) or rate <= 0:
        return None
    try:
        return now + remaining / rate * _HOUR
    except OverflowError:  # beyond datetime's range: as good as never
        return None


def compute_progress(
    points: Sequence[MetricPoint],
    *,
    total_steps: int | None,
    target_tokens: float | None,
    now: datetime,
    chain: Sequence[str] = (),
    window: timedelta = timedelta(hours=24),
    downtime: Sequence[Downtime] = (),
    baseline: Sequence[MetricPoint] = (),
) -> Progress:
    """Where the run stands at `now`: step, tokens, percent, net rates over the trailing `window`,
    projected end and latest loss. See the module doc for the effective series.

    The projected end runs from `now` at the training pace (`Progress.pace`): the rate over the
    window up to the last point with `downtime` (the restarts' stretches down) taken out, and
    the same over `LONG_WINDOW` from `baseline` (each W&B run's last point before its start),
    so a restart or a slow hour moves the date little.
    """
    _check_now_and_window(now, window)
    series = effective_series(points, chain)
    if not series:
        return _no_progress(total_steps, target_tokens)

    last = series[-1]
    end = max(now, last.at)  # a point stamped slightly after `now` (clock skew) still counts
    times = [p.at for p in series]
    steps = [p.step for p in series]
    token_times, token_values = _token_series(series)
    tokens = token_values[-1] if token_values else None
    loss = next(
        (p.loss for p in reversed(series) if p.loss is not None and math.isfinite(p.loss)), None
    )
    steps_per_hour = _net_rate(times, steps, end, window)
    tokens_per_hour = _net_rate(token_times, token_values, end, window)

    base = effective_series(baseline, chain)
    basis = _choose_basis(times, steps, token_times, token_values, total_steps, target_tokens, base)
    start = (base[-1].at, basis.base) if base else None
    recent, long = _paces(basis.times, basis.values, last.at, window, downtime, start)
    net = steps_per_hour if basis.values is steps else tokens_per_hour
    percent, finished, projected_end = _standing(basis, now, net, recent, long)

    return Progress(
        step=last.step,
        total_steps=total_steps,
        tokens=tokens,
        target_tokens=target_tokens,
        percent=None if percent is None else round(min(100.0, max(0.0, percent)), 2),
        steps_per_hour=steps_per_hour,
        tokens_per_hour=tokens_per_hour,
        projected_end=projected_end,
        finished=bool(finished),
        last_point_at=last.at,
        loss=loss,
        rate_window=end - _window_start(times, end, window) if times[0] != times[-1] else None,
        rate_spread=_rate_spread(basis.times, basis.values, end, window, downtime),
        recent_pace=recent,
        long_pace=long,
    )


def _check_now_and_window(now: datetime, window: timedelta) -> None:
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (UTC)")
    if window <= timedelta(0):
        raise ValueError("window must be positive")


def _token_series(series: Sequence[MetricPoint]) -> tuple[list[datetime], list[float]]:
    """The times and token counts of the points that have a finite count."""
    counted = [p for p in series if p.tokens is not None and math.isfinite(p.tokens)]
    return [p.at for p in counted], [float(p.tokens) for p in counted if p.tokens is not None]


def _choose_basis(
    times: list[datetime],
    steps: list[int],
    token_times: list[datetime],
    token_values: list[float],
    total_steps: int | None,
    target_tokens: float | None,
    base: Sequence[MetricPoint],
) -> _Basis:
    """The series the projection extrapolates: steps when the run has a step target, else
    tokens."""
    if total_steps is not None and total_steps > 0:  # a non-positive total counts as unknown
        return _Basis(times, steps, total_steps, base[-1].step if base else None)
    if target_tokens is not None and target_tokens > 0 and token_values:
        return _Basis(token_times, token_values, target_tokens, base[-1].tokens if base else None)
    return _Basis(times, steps, None, None)


def _standing(
    basis: _Basis,
    now: datetime,
    net: float | None,
    recent: float | None,
    long: float | None,
) -> tuple[float | None, bool, datetime | None]:
    """Percent done, whether finished, and the end: when the target was crossed, else
    projected from `now` at the training pace."""
    if basis.target is None:
        return None, False, None
    done = basis.values[-1]
    percent, finished = done / basis.target * 100, done >= basis.target
    if finished:
        return percent, True, _crossing_time(basis.times, basis.values, basis.target)
    if net is not None and net > 0:
        # (no progress at all over the window up to `now`: nothing to project from)
        return percent, False, _project(now, basis.target - done, mean_pace(recent, long))
    return percent, False, None


def _no_progress(total_steps: int | None, target_tokens: float | None) -> Progress:
    """A run with no point yet."""
    return Progress(
        step=None,
        total_steps=total_steps,
        tokens=None,
        target_tokens=target_tokens,
        percent=None,
        steps_per_hour=None,
        tokens_per_hour=None,
        projected_end=None,
        finished=False,
        last_point_at=None,
        loss=None,
    )


@dataclass(frozen=True, slots=True)
class _Basis:
    """What the projection extrapolates: the series, its target, its value at `LONG_WINDOW`'s
    start (None: no target, or unknown)."""

    times: Sequence[datetime]
    values: Sequence[float]
    target: float | None
    base: float | None


def _paces(
    times: Sequence[datetime],
    values: Sequence[float],
    end: datetime,
    window: timedelta,
    downtime: Sequence[Downtime],
    base: tuple[datetime, float | None] | None,
) -> tuple[float | None, float | None]:
    """The training pace over the rate window ending at `end` (the last point: a stretch down
    since is not training time), and over the long window from `base` (the value at its
    start), both with the downtime taken out."""
    if not times or times[0] == times[-1] or times[0] >= end:
        return None, None
    start = _window_start(times, end, window)
    recent = _pace(times, values, start, end, downtime)
    long = None
    if base is not None and base[1] is not None and base[0] < start:
        up = (end - base[0]) - _down_within(downtime, base[0], end)
        if up > timedelta(0):
            long = (values[bisect_right(times, end) - 1] - base[1]) / (up / _HOUR)
    return recent, long


#: The least hour-to-hour variability assumed for a run's rate (relative standard deviation):
#: evaluations, checkpoint saves and restarts make real throughput at least this uneven, so a
#: few steady hours never claim day precision for an end months away.
MIN_RATE_SPREAD = 0.1


def projection_margin(
    progress: Progress, now: datetime, launched_at: datetime | None = None
) -> timedelta | None:
    """How far either side of `progress.projected_end` the end plausibly lies (about two
    standard errors), from the rate's own uncertainty and the run's age:

    - the rate is the mean of `W` hourly rates (W = the rate window's real length), so it is
      uncertain by spread / sqrt(W); the next `R` hours (the time left) average out their own
      variability as spread / sqrt(R). `spread` is the measured hour-to-hour variability, at
      least `MIN_RATE_SPREAD`.
    - the trend: the last day's pace and the pace over `LONG_WINDOW` (the projection runs at
      their mean) disagree by half their difference either way; without a long pace, when the
      run is older than its window, its lifetime average rate (progress since launch) is the
      second estimate and its distance from the window's pace the term (a good day is not the
      whole run).

    None when there is nothing to project (finished, or no projected end)."""
    end = progress.projected_end
    if progress.finished or end is None or end <= now:
        return None
    remaining = (end - now) / _HOUR
    window = progress.rate_window / _HOUR if progress.rate_window else 0.0
    if window <= 0:
        return end - now  # no measured window: as uncertain as the time left
    spread = max(progress.rate_spread or 0.0, MIN_RATE_SPREAD)
    statistical = 2 * spread * math.sqrt(1 / window + 1 / remaining)
    systematic = 0.0
    by_steps = bool(progress.total_steps and progress.total_steps > 0)
    rate = progress.pace or (progress.steps_per_hour if by_steps else progress.tokens_per_hour)
    done = progress.step if by_steps else progress.tokens
    recent, long = progress.recent_pace, progress.long_pace
    if recent and long and recent > 0 and long > 0:
        systematic = abs(recent - long) / (recent + long)
    elif launched_at is not None and rate and done is not None:
        age = (now - launched_at) / _HOUR
        if age > 2 * window:
            systematic = abs(rate - done / age) / rate
    relative = math.hypot(statistical, systematic)
    return timedelta(hours=remaining * relative)
