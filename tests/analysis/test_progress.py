"""Progress and ETA over hand-built metric series. Every expected number is worked out
in the comments next to it; nothing is derived by re-running the code under test."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from bot.analysis.progress import (
    Progress,
    compute_progress,
    effective_series,
)
from bot.models import MetricPoint

T0 = datetime(2026, 8, 20, tzinfo=UTC)
A = "marin/moe/hero-a"
B = "marin/moe/hero-b"
C = "marin/moe/hero-c"
D = "marin/moe/hero-d"


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def pt(
    run: str, step: int, hours: float, tokens: float | None = None, loss: float | None = None
) -> MetricPoint:
    return MetricPoint(wandb_run=run, step=step, at=at(hours), tokens=tokens, loss=loss)


def hourly(run: str, hours: range, steps_per_hour: int = 100, offset: int = 0) -> list[MetricPoint]:
    """One point per hour; step = offset + steps_per_hour * hour, 1M tokens per step."""
    points = []
    for h in hours:
        step = offset + steps_per_hour * h
        points.append(pt(run, step, h, tokens=step * 1e6))
    return points


def progress(points: list[MetricPoint], now: datetime, **kwargs: object) -> Progress:
    kwargs.setdefault("total_steps", None)
    kwargs.setdefault("target_tokens", None)
    return compute_progress(points, now=now, **kwargs)  # type: ignore[arg-type]


def steps_of(series: list[MetricPoint]) -> list[tuple[str, int, datetime]]:
    return [(p.wandb_run, p.step, p.at) for p in series]


# --- no data, one point, one timestamp -------------------------------------------------------


def test_no_data_gives_an_empty_progress() -> None:
    assert effective_series([]) == []
    result = compute_progress([], total_steps=390251, target_tokens=18e12, now=at(0))
    assert result == Progress(
        step=None,
        total_steps=390251,
        tokens=None,
        target_tokens=18e12,
        percent=None,
        steps_per_hour=None,
        tokens_per_hour=None,
        projected_end=None,
        finished=False,
        last_point_at=None,
        loss=None,
    )


def test_one_point_has_progress_but_no_rate() -> None:
    result = progress([pt(A, 1000, 0, tokens=4e9, loss=2.5)], at(1), total_steps=4000)
    assert result.step == 1000
    assert result.tokens == 4e9
    assert result.percent == 25.0  # 1000 / 4000
    assert result.steps_per_hour is None
    assert result.tokens_per_hour is None
    assert result.projected_end is None
    assert result.finished is False
    assert result.last_point_at == at(0)
    assert result.loss == 2.5


def test_points_all_at_one_timestamp_sort_by_step_and_have_no_rate() -> None:
    points = [pt(A, 20, 0), pt(A, 10, 0), pt(A, 30, 0)]
    assert [p.step for p in effective_series(points)] == [10, 20, 30]
    result = progress(points, at(5), total_steps=100)
    assert result.step == 30
    assert result.steps_per_hour is None
    assert result.projected_end is None


def test_exact_duplicate_points_are_kept_once() -> None:
    points = [pt(A, 0, 0), pt(A, 100, 1), pt(A, 100, 1)]
    assert steps_of(effective_series(points)) == [(A, 0, at(0)), (A, 100, at(1))]


def test_rejects_naive_now_and_empty_window() -> None:
    with pytest.raises(ValueError):
        progress([pt(A, 0, 0)], datetime(2026, 8, 20))
    with pytest.raises(ValueError):
        progress([pt(A, 0, 0)], at(1), window=timedelta(0))


# --- rates and projected end ----------------------------------------------------------------


def test_steady_run_rate_and_projected_end_with_history_shorter_than_window() -> None:
    # steps 0..900 over hours 0..9; now = hour 9; window 24 h > history, so the span is 9 h.
    points = hourly(A, range(10))
    result = progress(points, at(9), total_steps=1900)
    assert result.steps_per_hour == pytest.approx(100.0)  # 900 / 9
    assert result.tokens_per_hour == pytest.approx(1e8)  # 9e8 tokens / 9 h
    assert result.percent == 47.37  # 900 / 1900 = 47.368...%
    assert result.projected_end == at(19)  # 1000 steps left at 100/h
    assert result.finished is False


def test_rate_window_ends_at_now_and_counts_downtime() -> None:
    # 100 steps/h for hours 0..20 (step 2000), down hours 20..24, then 100/h again up to
    # hour 30 (step 2600).
    points = hourly(A, range(21)) + hourly(A, range(24, 31), offset=2000 - 2400)
    assert points[-1].step == 2600
    # now = 30: window starts at hour 6 (step 600); 2000 steps in 24 h.
    assert progress(points, at(30)).steps_per_hour == pytest.approx(2000 / 24)
    # now = 32, two hours after the last point: window starts at hour 8 (step 800); 1800 in 24 h.
    late = progress(points, at(32), total_steps=5000)
    assert late.steps_per_hour == pytest.approx(75.0)
    # the end runs at the pace of the day up to the last point (2000 steps in 24 h): the two
    # hours since are not training time; 2400 steps left at 83.3/h is 28.8 h from now
    assert late.projected_end == at(32 + 28.8)
    # A 6 h window sees only the healthy stretch: step 2000 at hour 24 to 2600 at hour 30.
    assert progress(points, at(30), window=timedelta(hours=6)).steps_per_hour == pytest.approx(
        100.0
    )


def test_stalled_for_the_whole_window_has_zero_rate_and_no_projected_end() -> None:
    points = hourly(A, range(11))  # last point: step 1000 at hour 10
    result = progress(points, at(40), total_steps=4000)  # window: hours 16..40, no new step
    assert result.steps_per_hour == 0.0
    assert result.tokens_per_hour == 0.0
    assert result.projected_end is None
    assert result.percent == 25.0
    assert result.finished is False


def test_projected_end_beyond_the_datetime_range_is_none() -> None:
    points = [pt(A, 0, 0), pt(A, 1, 24)]  # 1 step per 24 h
    result = progress(points, at(24), total_steps=10**15)
    assert result.steps_per_hour == pytest.approx(1 / 24)
    assert result.projected_end is None


# --- restores within one W&B run ------------------------------------------------------------


def test_restore_within_a_run_lowers_the_net_rate() -> None:
    points = [
        pt(A, 0, 0),
        pt(A, 100, 1),
        pt(A, 200, 2),
        pt(A, 300, 3),
        pt(A, 200, 5),  # crashed after 300, restored from the checkpoint at 200
        pt(A, 300, 6),
        pt(A, 400, 7),
        pt(A, 250, 8),  # again: the new segment reached 400, restored to 250
        pt(A, 360, 9),
    ]

    result = progress(points, at(9), total_steps=1000)
    assert result.step == 360
    assert result.steps_per_hour == pytest.approx(40.0)  # net 360 steps in 9 h, not 100/h
    assert result.projected_end == at(9 + 16)  # 640 left at 40/h


def test_restore_that_loses_more_than_the_window_gained_gives_a_negative_rate() -> None:
    points = [pt(A, 1000, 0), pt(A, 1100, 1), pt(A, 1200, 2), pt(A, 500, 3)]
    result = progress(points, at(3), total_steps=2000)
    assert result.steps_per_hour == pytest.approx(-500 / 3)
    assert result.projected_end is None


def test_repeating_the_same_step_keeps_both_points_in_time_order() -> None:
    points = [pt(A, 100, 0), pt(A, 200, 1), pt(A, 200, 3), pt(A, 300, 4)]
    assert [p.step for p in effective_series(points)] == [100, 200, 200, 300]


# --- chains: resumes, forks, stale runs -----------------------------------------------------


def test_fork_from_an_earlier_step_counts_recomputed_steps_and_drops_the_parent_tail() -> None:
    parent = hourly(A, range(8))  # the parent reaches 500 at hour 5 and keeps going to 700
    fork = [pt(B, 300, 5.5), pt(B, 400, 6.5), pt(B, 500, 7.5)]  # forked from step 300
    series = effective_series(parent + fork, chain=[A, B])
    assert steps_of(series) == [(A, 100 * h, at(h)) for h in range(6)] + [
        (B, 300, at(5.5)),
        (B, 400, at(6.5)),
        (B, 500, at(7.5)),
    ]

    result = progress(parent + fork, at(7.5), chain=[A, B], total_steps=1000)
    assert result.step == 500  # the fork's step, not the parent's stale 700
    assert result.steps_per_hour == pytest.approx(500 / 7.5)


@pytest.mark.parametrize("chain", [[A, B], []], ids=["chain", "by-first-point"])
def test_crashed_run_with_a_late_last_point_is_superseded_by_the_resume(chain: list[str]) -> None:
    crashed = [pt(A, 0, 0), pt(A, 100, 1), pt(A, 200, 2), pt(A, 210, 4)]  # 210: flushed late
    resumed = [pt(B, 200, 3), pt(B, 300, 4), pt(B, 400, 5)]
    series = effective_series(crashed + resumed, chain=chain)
    assert steps_of(series) == [
        (A, 0, at(0)),
        (A, 100, at(1)),
        (A, 200, at(2)),
        (B, 200, at(3)),
        (B, 300, at(4)),
        (B, 400, at(5)),
    ]
    result = progress(crashed + resumed, at(5), chain=chain)
    assert result.step == 400


def test_identical_timestamps_keep_the_later_chain_member() -> None:
    points = [pt(A, 0, 0), pt(A, 100, 1), pt(A, 200, 2), pt(B, 150, 2), pt(B, 250, 3)]
    assert steps_of(effective_series(points, chain=[A, B])) == [
        (A, 0, at(0)),
        (A, 100, at(1)),
        (B, 150, at(2)),
        (B, 250, at(3)),
    ]


def test_chain_order_wins_over_time_and_unlisted_runs_follow_by_first_point() -> None:
    # Listed in the chain, B continues A even though B logged first; A is then entirely stale
    # except what precedes B's first point (nothing).
    points = [pt(A, 0, 1), pt(A, 100, 2), pt(B, 50, 0), pt(B, 150, 3)]
    assert steps_of(effective_series(points, chain=[A, B])) == [(B, 50, at(0)), (B, 150, at(3))]

    # Unlisted D (first point at hour 2) and C (hour 4) follow the chain [A] in that order.
    points = [
        *[pt(A, 0, 0), pt(A, 100, 1), pt(A, 200, 2), pt(A, 300, 3)],
        *[pt(D, 150, 2), pt(D, 250, 3), pt(D, 350, 4), pt(D, 450, 5)],
        *[pt(C, 340, 4), pt(C, 440, 5)],
    ]
    assert steps_of(effective_series(points, chain=[A])) == [
        (A, 0, at(0)),
        (A, 100, at(1)),
        (D, 150, at(2)),
        (D, 250, at(3)),
        (C, 340, at(4)),
        (C, 440, at(5)),
    ]


def test_unsorted_input_gives_the_same_answers() -> None:
    points = [*hourly(A, range(8)), pt(B, 300, 5.5), pt(B, 400, 6.5), pt(B, 500, 7.5)]
    shuffled = points[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != points
    assert effective_series(shuffled, chain=[A, B]) == effective_series(points, chain=[A, B])
    result = progress(shuffled, at(7.5), chain=[A, B], total_steps=1000)
    assert result.step == 500
    assert result.last_point_at == at(7.5)


# --- finishing --------------------------------------------------------------------------------


def test_finished_run_ends_at_the_point_that_crossed_the_total() -> None:
    points = hourly(A, range(11))  # steps 0..1000; 700 at hour 7, 800 at hour 8
    result = progress(points, at(12), total_steps=750)
    assert result.finished is True
    assert result.percent == 100.0
    assert result.projected_end == at(8)
    assert result.steps_per_hour == pytest.approx(1000 / 12)


def test_finished_exactly_on_the_last_point() -> None:
    points = hourly(A, range(11))
    result = progress(points, at(12), total_steps=1000)
    assert result.finished is True
    assert result.projected_end == result.last_point_at == at(10)


def test_finish_counts_from_the_last_crossing_after_a_restore() -> None:
    points = [pt(A, 0, 0), pt(A, 600, 1), pt(A, 1000, 2), pt(A, 800, 3), pt(A, 950, 4)]
    result = progress(points, at(4), total_steps=900)
    assert result.finished is True
    assert result.projected_end == at(4)  # 1000 at hour 2 was undone by the restore


def test_finished_by_tokens_when_total_steps_is_unknown() -> None:
    points = hourly(A, range(11))  # tokens = step * 1e6: 7e8 at hour 7, 8e8 at hour 8
    result = progress(points, at(12), target_tokens=7.5e8)
    assert result.finished is True
    assert result.percent == 100.0
    assert result.projected_end == at(8)


def test_percent_is_rounded_clamped_and_prefers_steps() -> None:
    # 130084 / 390251 = 33.3332...%; tokens would say 50% but steps win when total_steps is known.
    one = [pt(A, 130084, 0, tokens=9e12)]
    assert progress(one, at(1), total_steps=390251, target_tokens=18e12).percent == 33.33
    over = [pt(A, 400000, 0)]
    assert progress(over, at(1), total_steps=390251).percent == 100.0
    assert progress(one, at(1), target_tokens=18e12).percent == 50.0
    assert progress(one, at(1), total_steps=0, target_tokens=18e12).percent == 50.0
    none = progress(one, at(1))
    assert (none.percent, none.finished, none.projected_end) == (None, False, None)


# --- tokens and loss ------------------------------------------------------------------------


def test_tokens_missing_on_some_points_use_the_latest_known_value() -> None:
    points = [
        pt(A, 0, 0, tokens=0.0),
        pt(A, 100, 1),
        pt(A, 200, 2, tokens=2e9),
        pt(A, 300, 3, tokens=math.nan),
        pt(A, 400, 4),
    ]
    result = progress(points, at(4), target_tokens=1e10)
    assert result.step == 400
    assert result.tokens == 2e9
    assert result.percent == 20.0
    assert result.tokens_per_hour == pytest.approx(5e8)  # 2e9 tokens from hour 0 to now (4 h)
    assert result.projected_end == at(4 + 16)  # 8e9 tokens left at 5e8/h
    assert result.steps_per_hour == pytest.approx(100.0)


def test_loss_is_the_latest_finite_value() -> None:
    points = [
        pt(A, 0, 0, loss=2.5),
        pt(A, 100, 1, loss=2.4),
        pt(A, 200, 2, loss=math.nan),
        pt(A, 300, 3, loss=math.inf),
        pt(A, 400, 4),
    ]
    assert progress(points, at(4)).loss == 2.4
    bad = [pt(A, 0, 0, loss=math.nan), pt(A, 100, 1, loss=-math.inf)]
    assert progress(bad, at(4)).loss is None


# --- scale ------------------------------------------------------------------------------------


def test_400k_points_of_a_forked_chain() -> None:
    # A: step i at minute i for i < 200,000. B forks from step 190,000 after a 31-minute gap:
    # step 190,000 + j at minute 200,030 + j for j < 200,000. 45e6 tokens per step.
    minute = timedelta(minutes=1)
    n = 200_000
    points = [MetricPoint(A, i, T0 + i * minute, tokens=i * 45e6) for i in range(n)]
    points += [
        MetricPoint(B, 190_000 + j, T0 + (200_030 + j) * minute, tokens=(190_000 + j) * 45e6)
        for j in range(n)
    ]
    points.reverse()
    now = T0 + 400_029 * minute  # B's last point: step 389,999

    assert len(effective_series(points, chain=[A, B])) == 400_000

    result = compute_progress(
        points, total_steps=390_251, target_tokens=18e12, now=now, chain=[A, B]
    )
    assert result.step == 389_999
    assert result.tokens == 389_999 * 45e6
    assert result.percent == 99.94  # 252 steps short: 99.9354%
    # The last 24 h are all B at one step a minute: 1440 steps, 1440 * 45e6 tokens.
    assert result.steps_per_hour == pytest.approx(60.0)
    assert result.tokens_per_hour == pytest.approx(60 * 45e6)
    assert result.projected_end == now + timedelta(hours=4.2)  # 252 steps at 60/h


def test_a_point_stamped_after_now_still_counts_toward_the_rate() -> None:
    # The last point is 6 minutes "in the future" (clock skew): the window ends at that point.
    points = [pt(A, 0, 0), pt(A, 1000, 10)]
    result = progress(points, at(9.9), total_steps=2000)
    assert result.step == 1000
    assert result.steps_per_hour == pytest.approx(100.0)  # 1000 steps from hour 0 to hour 10
    assert result.projected_end == at(9.9 + 10)  # projected from `now`: 1000 left at 100/h
