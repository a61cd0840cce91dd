"""What a poll's history rows become (step 5 of `bot.sources.wandb`): metric points, the
watched metrics' series, and the restarts they tell: the training step going back (a restore),
going on after the run stopped (a restart in place), or a new run joining the chain. Pure: no
store, no W&B (the source runs it in a worker thread)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from bot.analysis.forecast import SeriesPoint
from bot.config.settings import RunConfig
from bot.core.numbers import fmt_int
from bot.core.timeutil import humanize_duration
from bot.models import NEW_RUN, RESTORE, UNHEALTHY_STATES, Event, MetricPoint, Restart
from bot.sources.wandb_cursors import STEADY_ROWS, HistoryCursor
from bot.sources.wandb_history import (
    RESUME_GAP,
    ChainFetch,
    MemberFetch,
    as_float,
    as_int,
    from_ts,
)
from bot.sources.wandb_state import base_event, iso, label

# A training step logged again after this much time counts as a restore, not a duplicate row.
SAME_STEP_RESTORE_GAP = timedelta(minutes=5)
# A resumed run's `_runtime` misses at least this much of the silence (the requeue; the new
# process's start-up and the steps it trains again before logging do count): a process that
# ran through a pause misses none of it.
RUNTIME_LOST = timedelta(minutes=1)
# A silence this long in a training run's history is a restart when its rows carry no `_runtime`
# to tell a pause (the process ran on) from a stop.
LONG_SILENCE = timedelta(minutes=30)

#: One member's round: the member, its new points, the cursor to store once they are committed.
Plan = tuple[MemberFetch, list[MetricPoint], HistoryCursor]


class RoundPlanner:
    """Turns one poll's rows of a chain into points, series and restart events."""

    def __init__(self, run: RunConfig):
        self.run = run
        self.slug = run.slug
        entity, project, _ = run.wandb_runs[0].split("/")
        self.entity, self.project = entity, project
        self.step_key = run.metrics.step or "_step"
        self.loss_key = run.metrics.loss
        self.tokens_key = run.metrics.tokens

    def plan(
        self,
        fetched: ChainFetch,
        cursors: dict[str, HistoryCursor],
        now: datetime,
        stopped: set[str] | frozenset[str] = frozenset(),
    ) -> tuple[list[Plan], list[Event], dict[str, dict[str, list[SeriesPoint]]]]:
        """What a round's rows become: each member's points and new cursor, the events
        (restores, a new run of the chain), each watched metric's series."""
        events: list[Event] = []
        plans: list[Plan] = []
        for index, member in enumerate(fetched.members):
            before = cursors.get(member.path) or HistoryCursor()
            points, restores, after = self.points(member, before, now, member.path in stopped)
            plans.append((member, points, after))
            events.extend(restores)
            if index > 0:
                previous = fetched.members[index - 1]
                event = self._new_run_event(
                    member, points, before, after, previous, plans[index - 1], cursors
                )
                if event is not None:
                    events.append(event)
        watched = {
            member.path: {
                metric: self._series(member, metric, rows, now)
                for metric, rows in member.watched.items()
            }
            for member in fetched.members
        }
        return plans, events, watched

    def points(
        self, member: MemberFetch, before: HistoryCursor, now: datetime, stopped: bool = False
    ) -> tuple[list[MetricPoint], list[Event], HistoryCursor]:
        """Metric points of the new rows, restore events (the training step going back, or on
        after the run stopped: `stopped`, W&B last saw it crashed), and the cursor to store once
        they are committed."""
        after = HistoryCursor(
            step=member.step,
            check_step=member.check_step,
            check_ts=member.check_ts,
            value=before.value,
            value_ts=before.value_ts,
            first=before.first,
            gap=before.gap,
            steady=before.steady or 0,
        )
        points: list[MetricPoint] = []
        events: list[Event] = []
        prev_value, prev_at = before.value, from_ts(before.value_ts)
        prev_row = before.check_step  # `_step` of the previous training row
        values = [
            v for v in (as_int(row.get(self.step_key)) for row in member.rows) if v is not None
        ]
        for row in member.rows:
            value = as_int(row.get(self.step_key))
            if value is None:
                continue
            ts = row.get("_timestamp")
            at = from_ts(ts) or now
            if prev_value is not None:
                previous = (prev_value, prev_at, prev_row)
                event = self._step_event(
                    member, after, previous, row, at, stopped, values, len(points)
                )
                if event is not None:
                    events.append(event)
                    if value > prev_value:
                        stopped = False  # one restart per stop
            if after.first is None:
                after.first = value
            points.append(self._point(member, row, value, at))
            prev_value, prev_at, prev_row = value, at, as_int(row.get("_step"))
            after.value = value
            after.value_ts = ts if isinstance(ts, int | float) else None
        return points, events, after

    def _point(
        self, member: MemberFetch, row: dict[str, Any], value: int, at: datetime
    ) -> MetricPoint:
        return MetricPoint(
            wandb_run=member.path,
            step=value,
            at=at,
            tokens=as_float(row.get(self.tokens_key)) if self.tokens_key else None,
            loss=as_float(row.get(self.loss_key)) if self.loss_key else None,
        )

    def _step_event(
        self,
        member: MemberFetch,
        after: HistoryCursor,
        previous: tuple[int, datetime | None, int | None],
        row: dict[str, Any],
        at: datetime,
        stopped: bool,
        values: Sequence[int],
        index: int,
    ) -> Event | None:
        """The restore a training row tells after the previous one (`previous`: its step, time
        and `_step`), if any; a plain step forward is recorded on `after` (the logging interval).
        `values[index:]` are the training steps from this row on."""
        prev_value, prev_at, prev_row = previous
        value = as_int(row.get(self.step_key))
        assert value is not None
        if value < prev_value or (
            value == prev_value and prev_at is not None and at - prev_at > SAME_STEP_RESTORE_GAP
        ):
            interval = after.interval or _fixed_interval(values[index:])
            return self._restore_event(member, prev_value, prev_at, value, at, interval)
        if value > prev_value:
            runtime = _runtime_gap(member.runtimes, prev_row, row.get("_step"))
            if prev_at is not None and _resumed_in_place(at - prev_at, runtime, stopped):
                return self._restore_event(member, prev_value, prev_at, value, at, after.interval)
            after.moved(value - prev_value)
        return None

    def _series(
        self, member: MemberFetch, metric: str, rows: list[dict[str, Any]], now: datetime
    ) -> list[SeriesPoint]:
        """The finite values of one watched key, on the configured step axis."""
        out = []
        for row in rows:
            step, value = as_int(row.get(self.step_key)), as_float(row.get(metric))
            if step is not None and value is not None:
                at = from_ts(row.get("_timestamp")) or now
                out.append(SeriesPoint(member.path, step, at, value))
        return out

    def _restore_event(
        self,
        member: MemberFetch,
        from_step: int,
        stopped_at: datetime | None,
        to_step: int,
        at: datetime,
        interval: int | None,
    ) -> Event:
        restart = Restart(
            at=at,
            kind=RESTORE,
            wandb_run=member.path,
            from_step=from_step,
            to_step=to_step,
            stopped_at=stopped_at if stopped_at is not None and stopped_at <= at else None,
            resumed_at=at,
            interval=interval,
        )
        event = base_event(
            self.slug, member, f"restart:restore:{member.path}:{to_step}:{iso(at)}", "restart", at
        )
        name = member.name or member.run_id
        down = humanize_duration(restart.down_for) if restart.down_for else None
        lost = restart.recomputed_steps or 0
        event.title = (
            f"W&B run {name} resumed from step {fmt_int(to_step)}"
            + (f" after {down}" if down else "")
            + f" (last step before: {fmt_int(from_step)}"
            + (f"; {fmt_int(lost)} steps recomputed)" if lost else ")")
        )
        if restart.went_on:
            down = down or "a while"
            event.body = (
                f"W&B run {label(member)} stopped logging at step {fmt_int(from_step)} and "
                f"logged again at step {fmt_int(to_step)} {down} later, at {iso(at)}: "
                "restarted in place (W&B does not keep steps logged again before its last one)."
            )
            event.extra = restart.to_json()
            return event
        event.body = (
            f"Training in W&B run {label(member)} went back from step {fmt_int(from_step)} "
            f"to step {fmt_int(to_step)} at {iso(at)}, a restore from an earlier checkpoint"
            + (f" that repeats {fmt_int(lost)} steps." if lost > 0 else ".")
        )
        event.extra = restart.to_json()
        return event

    def _new_run_event(
        self,
        member: MemberFetch,
        plan_points: list[MetricPoint],
        before: HistoryCursor,
        after: HistoryCursor,
        previous: MemberFetch,
        previous_plan: Plan,
        cursors: dict[str, HistoryCursor],
    ) -> Event | None:
        """`restart:new-run:<path>`: recorded when the member is first seen, and refined once
        (with the step it started from) when its first history rows arrive."""
        first_seen = member.path not in cursors  # no history cursor stored yet
        first_rows = before.first is None and after.first is not None
        if not (first_seen or first_rows):
            return None
        created = member.created_at
        first = plan_points[0] if plan_points else None
        resumed_at = first.at if first is not None and after.first == first.step else None
        # before the new run's first row: the trainer's clock, as the previous run's rows
        from_step, stopped_at = _last_before(
            previous_plan[1], cursors.get(previous.path), resumed_at or created
        )
        at = created or resumed_at
        if at is None:
            return None
        if stopped_at is not None and resumed_at is not None and resumed_at < stopped_at:
            stopped_at = None  # the previous run logged past the fork: no downtime to tell
        restart = Restart(
            at=at,
            kind=NEW_RUN,
            wandb_run=member.path,
            previous_run=previous.path,
            from_step=from_step,
            to_step=after.first,
            stopped_at=stopped_at,
            resumed_at=resumed_at,
            cause=_interruption(previous),
            interval=previous_plan[2].interval or after.interval,
        )
        event = base_event(self.slug, member, f"restart:new-run:{member.path}", "restart", at)
        self._tell_new_run(event, member, previous, at, after.first, from_step)
        event.extra = restart.to_json()
        return event

    def _tell_new_run(
        self,
        event: Event,
        member: MemberFetch,
        previous: MemberFetch,
        at: datetime,
        first: int | None,
        from_step: int | None,
    ) -> None:
        """The title and body of a `restart:new-run` event (`first`: the new run's first
        training step, `from_step`: the previous run's last)."""
        name = member.name or member.run_id
        prev_name = previous.name or previous.run_id
        parts = [f"W&B run {name} continues the chain after {prev_name}"]
        if first is not None:
            parts.append(f"starting at step {fmt_int(first)}")
        if from_step is not None:
            parts.append(f"(last step before: {fmt_int(from_step)})")
        event.title = " ".join(parts)
        event.body = (
            f"A new W&B run {label(member)} was created at {iso(at)} in "
            f"{self.entity}/{self.project} and joined the chain of {self.run.name}."
            + (f" It starts at step {fmt_int(first)}." if first is not None else "")
            + (
                f" The previous run, {prev_name}, had reached step {fmt_int(from_step)}."
                if from_step is not None
                else ""
            )
        )


def _last_before(
    points: list[MetricPoint], cursor: HistoryCursor | None, created: datetime | None
) -> tuple[int | None, datetime | None]:
    """The previous run's last training step before `created`, and when it was logged: from
    this poll's points, else from what was stored before."""
    candidates = [p for p in points if created is None or p.at <= created]
    if candidates:
        return candidates[-1].step, candidates[-1].at
    if cursor is not None and cursor.value is not None:
        at = from_ts(cursor.value_ts)
        if created is None or at is None or at <= created:
            return cursor.value, at
    return None, None


def _resumed_in_place(silence: timedelta, runtime: timedelta | None, stopped: bool) -> bool:
    """Whether a run that logged again at a later step after `silence` had stopped: W&B saw it
    stopped, or its runtime did not run on through the silence (a process that ran on paused:
    an evaluation, a slow checkpoint save), or, with no runtime in its rows, the silence is too
    long for a pause."""
    if silence < RESUME_GAP:
        return False
    if stopped:
        return True
    if runtime is not None:  # W&B's own word: did the process run through the silence?
        return silence - runtime >= RUNTIME_LOST
    return silence >= LONG_SILENCE


def _runtime_gap(runtimes: dict[int, float], before: int | None, step: Any) -> timedelta | None:
    """How far W&B's `_runtime` moved from the training row at `_step` `before` to the one at
    `step` (None: not read, or not logged)."""
    if before is None or not isinstance(step, int) or step not in runtimes:
        return None
    if before not in runtimes:
        return None
    return timedelta(seconds=runtimes[step] - runtimes[before])


def _fixed_interval(values: Sequence[int]) -> int | None:
    """The fixed number of steps between consecutive rows, when more than STEADY_ROWS rows are
    all that far apart (None: too few, or irregular)."""
    gaps = {b - a for a, b in pairwise(values)}
    if len(values) <= STEADY_ROWS or len(gaps) != 1:
        return None
    gap = gaps.pop()
    return gap if gap > 0 else None


def _interruption(previous: MemberFetch) -> str | None:
    """What W&B says ended the previous run, when it says something ended it."""
    if previous.state not in UNHEALTHY_STATES:
        return None
    return f"W&B run {previous.name or previous.run_id} {previous.state}"
