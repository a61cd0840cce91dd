"""The run's goodput (effective training time): the share of wall time spent making progress.

Wall time since a start (the launch, or seven days ago) up to now, less the time training was
down and the time spent training steps a second time after a restore:

- down: every restart's gap (last step before the interruption → first step after,
  `Restart.down_for`) and every incident condition that stops training (a crash, a stall, a
  lost heartbeat) from its first symptom until it cleared (still open: until now), each outage
  of an incident that reopened on its own (the healthy stretch between is not down). Intervals
  that overlap are merged, so no second counts twice;
- recomputing: each restart's recomputed steps (`Restart.recomputed_steps`) times the run's
  seconds per step at the time (measured by the caller), from the first step after the resume;
  the part of it that falls in a down interval is not counted again.

Pure: the restarts, incidents and paces come in, one `Goodput` goes out. Every surface (the
card, the live message, the page, `status --json`, the digest) reads it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.core.numbers import fmt_int, fmt_percent, fmt_points
from bot.core.timeutil import humanize_duration
from bot.models import Incident, IncidentMember, MetricPoint, Restart

#: Incident conditions during which the run trains no step (`bot.incidents.detectors`).
DOWN_FINGERPRINTS = frozenset({"wandb-state", "heartbeat", "stall"})

Interval = tuple[datetime, datetime]


@dataclass(frozen=True, slots=True)
class Goodput:
    """Effective training time over one window: `percent` of `wall_seconds`."""

    window: str  # "launch" (since the run launched) | "7d"
    start: datetime
    end: datetime
    wall_seconds: float
    down_seconds: float
    recompute_seconds: float
    steps_recomputed: int
    incidents: int  # stoppages: down intervals after merging overlaps
    #: restarts whose recomputed steps had no measured pace (not counted in recompute_seconds)
    unpriced_restarts: int = 0

    @property
    def effective_seconds(self) -> float:
        return max(0.0, self.wall_seconds - self.down_seconds - self.recompute_seconds)

    @property
    def percent(self) -> float | None:
        if self.wall_seconds <= 0:
            return None
        return 100.0 * self.effective_seconds / self.wall_seconds

    def to_json(self) -> dict[str, Any]:
        percent = self.percent
        return {
            "percent": round(percent, 2) if percent is not None else None,
            "window": self.window,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "wall_seconds": round(self.wall_seconds, 1),
            "down_seconds": round(self.down_seconds, 1),
            "recompute_seconds": round(self.recompute_seconds, 1),
            "steps_recomputed": self.steps_recomputed,
            "incidents": self.incidents,
            "unpriced_restarts": self.unpriced_restarts,
        }


@dataclass(frozen=True, slots=True)
class RunGoodput:
    """The two windows every surface shows."""

    since_launch: Goodput | None  # None: the launch time is not known
    last_week: Goodput

    def to_json(self) -> dict[str, Any]:
        launch = self.since_launch
        return {**(launch.to_json() if launch else {}), "last_7d": self.last_week.to_json()}


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, with overlapping (and touching) intervals joined."""
    out: list[Interval] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _clip(interval: Interval, start: datetime, end: datetime) -> Interval | None:
    lo, hi = max(interval[0], start), min(interval[1], end)
    return (lo, hi) if hi > lo else None


def _seconds(intervals: Iterable[Interval]) -> float:
    return sum((hi - lo).total_seconds() for lo, hi in intervals)


def _overlap(interval: Interval, merged: Sequence[Interval]) -> float:
    return _seconds(c for m in merged if (c := _clip(m, *interval)) is not None)


def down_intervals(
    restarts: Iterable[Restart], incidents: Iterable[Incident], now: datetime
) -> list[Interval]:
    """When training was down, merged: restart gaps and the stopping conditions of incidents."""
    found: list[Interval] = []
    for restart in restarts:
        if restart.stopped_at is not None and restart.resumed_at is not None:
            found.append((restart.stopped_at, restart.resumed_at))
    for incident in incidents:
        # a reopened incident's earlier outages, each with its own members, then its latest
        outages: list[tuple[dict[str, IncidentMember], datetime | None]] = [
            (o.members, o.until) for o in incident.details.outages
        ]
        outages.append((incident.details.members, incident.resolved_at))
        for members, resolved in outages:
            for fingerprint, member in members.items():
                if fingerprint not in DOWN_FINGERPRINTS or member.since > now:
                    continue
                end = member.until or resolved or now
                found.append((member.since, min(end, now)))
    return merge(found)


def compute_goodput(
    restarts: Sequence[Restart],
    incidents: Iterable[Incident],
    paces: Sequence[float | None],
    *,
    start: datetime,
    now: datetime,
    window: str,
) -> Goodput:
    """Goodput over [start, now]. `paces[i]`: seconds per step when `restarts[i]` happened
    (None: unknown, its recomputed steps are counted but not priced)."""
    if len(paces) != len(restarts):
        raise ValueError("one pace per restart")
    end = max(start, now)
    down = [c for i in down_intervals(restarts, incidents, end) if (c := _clip(i, start, end))]
    down_merged = merge(down)
    recompute = 0.0
    steps = 0
    unpriced = 0
    for restart, pace in zip(restarts, paces, strict=True):
        again = restart.recomputed_steps
        begin = restart.resumed_at or restart.at
        if not again or not start <= begin < end:
            continue
        steps += again
        if pace is None or pace <= 0:
            unpriced += 1
            continue
        span = _clip((begin, begin + timedelta(seconds=again * pace)), start, end)
        if span is not None:
            recompute += _seconds([span]) - _overlap(span, down_merged)
    return Goodput(
        window=window,
        start=start,
        end=end,
        wall_seconds=(end - start).total_seconds(),
        down_seconds=_seconds(down_merged),
        recompute_seconds=recompute,
        steps_recomputed=steps,
        incidents=len(down_merged),
        unpriced_restarts=unpriced,
    )


WEEK = timedelta(days=7)


def run_goodput(
    restarts: Sequence[Restart],
    incidents: Sequence[Incident],
    paces: Sequence[float | None],
    *,
    launched_at: datetime | None,
    now: datetime,
) -> RunGoodput:
    """Since launch (when known) and over the last seven days (or since launch, if later)."""
    launch = None
    if launched_at is not None:
        launch = compute_goodput(
            restarts, incidents, paces, start=launched_at, now=now, window="launch"
        )
    week_start = max(now - WEEK, launched_at) if launched_at is not None else now - WEEK
    week = compute_goodput(restarts, incidents, paces, start=week_start, now=now, window="7d")
    return RunGoodput(since_launch=launch, last_week=week)


@dataclass(frozen=True, slots=True)
class Pace:
    """How fast the run trained around a moment: seconds and tokens per step (None: unknown)."""

    seconds_per_step: float | None = None
    tokens_per_step: float | None = None


def pace_of(points: Sequence[MetricPoint]) -> Pace:
    """The pace over points of one W&B run (the newest run among them), oldest first: time and
    tokens between its first and last point over the steps between them."""
    if not points:
        return Pace()
    run = points[-1].wandb_run
    same = [p for p in points if p.wandb_run == run]
    first, last = same[0], same[-1]
    steps = last.step - first.step
    if steps <= 0:
        return Pace()
    seconds = (last.at - first.at).total_seconds() / steps
    tokens = None
    if first.tokens is not None and last.tokens is not None and last.tokens > first.tokens:
        tokens = (last.tokens - first.tokens) / steps
    return Pace(seconds if seconds > 0 else None, tokens)


def describe(goodput: Goodput) -> str:
    """'96.1% · 2 d 3 h down in 6 incidents · 4,120 steps recomputed'."""
    percent = goodput.percent
    parts = [fmt_percent(percent)]
    if goodput.incidents:
        down = humanize_duration(timedelta(seconds=goodput.down_seconds))
        stops = "incident" if goodput.incidents == 1 else "incidents"
        parts.append(f"{down} down in {goodput.incidents} {stops}")
    else:
        parts.append("no downtime")
    if goodput.steps_recomputed:
        parts.append(f"{fmt_int(goodput.steps_recomputed)} steps recomputed")
    return " · ".join(parts)


def moved(before: Goodput | None, after: Goodput | None) -> str | None:
    """A sentence when goodput since launch changed by at least 0.1 point, else None."""
    if before is None or after is None or before.percent is None or after.percent is None:
        return None
    change = after.percent - before.percent
    if abs(change) < 0.1:
        return None
    way = "rose" if change > 0 else "fell"
    return f"Goodput since launch {way} {fmt_points(change)}, to {describe(after)}."


def describe_run(goodput: RunGoodput) -> list[str]:
    """One line per window: 'since launch: 96.1% · …', 'last 7 days: 99.0% · …'."""
    lines = []
    if goodput.since_launch is not None:
        lines.append(f"since launch: {describe(goodput.since_launch)}")
    lines.append(f"last 7 days: {describe(goodput.last_week)}")
    return lines
