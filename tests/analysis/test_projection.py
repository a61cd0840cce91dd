"""The projected end's honest precision: the rate window's real length, the rate's measured
spread, the margin derived from both and from the run's age, and the words that margin allows.
Expected numbers are worked out in the comments."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from bot.analysis.progress import MIN_RATE_SPREAD, compute_progress, projection_margin
from bot.models import MetricPoint
from bot.narrative.format import fmt_projected, fmt_window

T0 = datetime(2026, 11, 1, tzinfo=UTC)
RUN = "acme/pretrain/hero-1"


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


SECOND = timedelta(seconds=1)


def series(hours: range, *, start_step: int = 0, rate: int = 100) -> list[MetricPoint]:
    return [MetricPoint(RUN, step=start_step + rate * (h - hours.start), at=at(h)) for h in hours]


def test_rate_window_is_the_real_history_on_a_young_run() -> None:
    young = compute_progress(series(range(4)), total_steps=10**6, target_tokens=None, now=at(3))
    assert young.rate_window == timedelta(hours=3)  # points at hours 0..3: three hours of data
    old = compute_progress(series(range(49)), total_steps=10**6, target_tokens=None, now=at(48))
    assert old.rate_window == timedelta(hours=24)  # the nominal window, fully covered
    one = compute_progress(series(range(1)), total_steps=10**6, target_tokens=None, now=at(0))
    assert one.rate_window is None and one.rate_spread is None


def test_a_steady_rate_has_no_spread_and_downtime_shows_in_it() -> None:
    steady = compute_progress(series(range(25)), total_steps=10**6, target_tokens=None, now=at(24))
    assert steady.rate_spread == pytest.approx(0.0)
    # 100 steps/h, down from hour 10 to 14, then 100 steps/h again up to hour 24: the window's
    # 24 one-hour slices are 20 × 100 and 4 × 0. Mean 83.33; sample variance
    # (20 × 16.67² + 4 × 83.33²) / 23 = 1449.3, deviation 38.07, relative 0.4568.
    points = series(range(11)) + series(range(14, 25), start_step=1000)
    down = compute_progress(points, total_steps=10**6, target_tokens=None, now=at(24))
    assert down.steps_per_hour == pytest.approx(2000 / 24)
    assert down.rate_spread == pytest.approx(38.07 / 83.333, rel=1e-3)


def test_the_margin_comes_from_the_rate_uncertainty_and_the_time_left() -> None:
    # Both runs make 100 steps/h with 72,000 steps (720 h) left; the spread is 0, so the floor
    # applies. Margin = 720 h × 2 × 0.1 × sqrt(1/W + 1/720), W = the window in hours.
    old_points = series(range(24 * 20 + 1))  # twenty days, from step 0 at launch
    old = compute_progress(old_points, total_steps=48_000 + 72_000, target_tokens=None, now=at(480))
    young_points = series(range(4))
    young = compute_progress(young_points, total_steps=300 + 72_000, target_tokens=None, now=at(3))
    assert old.projected_end == at(480 + 720) and young.projected_end == at(3 + 720)
    old_margin = projection_margin(old, at(480), launched_at=T0)
    young_margin = projection_margin(young, at(3), launched_at=T0)
    floor = 2 * MIN_RATE_SPREAD
    old_expected = timedelta(hours=720 * floor * math.sqrt(1 / 24 + 1 / 720))
    young_expected = timedelta(hours=720 * floor * math.sqrt(1 / 3 + 1 / 720))
    assert old_margin == pytest.approx(old_expected, abs=SECOND)
    assert young_margin == pytest.approx(young_expected, abs=SECOND)
    # 1.2 days for the old run, 3.5 days (rounded) for the three-hour-old one: a day, its range
    assert fmt_projected(old.projected_end, old_margin, "UTC", at(480)) == "Dec 21, 2026 ± 1 day"
    assert fmt_projected(young.projected_end, young_margin, "UTC", at(3)) == (
        "Dec 1, 2026 ± 3 days"
    )


def test_a_run_whose_lifetime_pace_disagrees_with_its_last_day_is_less_certain() -> None:
    # 40 days old (960 h) at step 50,400: a lifetime average of 52.5 steps/h against 100 in its
    # last day. The disagreement, |100 − 52.5| / 100 = 0.475, joins the statistical term.
    points = series(range(936, 961), start_step=48_000)
    p = compute_progress(points, total_steps=50_400 + 72_000, target_tokens=None, now=at(960))
    statistical = 2 * MIN_RATE_SPREAD * math.sqrt(1 / 24 + 1 / 720)
    margin = projection_margin(p, at(960), launched_at=T0)
    expected = 720 * math.hypot(statistical, 0.475)
    assert margin == pytest.approx(timedelta(hours=expected), abs=SECOND)
    without_age = timedelta(hours=720 * statistical)
    assert projection_margin(p, at(960)) == pytest.approx(without_age, abs=SECOND)


def test_nothing_to_project_has_no_margin() -> None:
    done = compute_progress(series(range(25)), total_steps=2000, target_tokens=None, now=at(24))
    assert done.finished and projection_margin(done, at(24), T0) is None


@pytest.mark.parametrize(
    ("end", "margin_days", "words"),
    [
        (datetime(2027, 4, 21, 12, tzinfo=UTC), 0.25, "around Apr 21, 2027"),
        (datetime(2027, 4, 21, 12, tzinfo=UTC), 1, "Apr 21, 2027 ± 1 day"),
        (datetime(2027, 4, 21, 12, tzinfo=UTC), 3, "Apr 21, 2027 ± 3 days"),
        (datetime(2027, 4, 5, 12, tzinfo=UTC), 7, "Apr 5, 2027 ± 7 days"),
        (datetime(2027, 4, 21, 12, tzinfo=UTC), 21, "Apr 21, 2027 ± 21 days"),
        (datetime(2027, 4, 21, 12, tzinfo=UTC), 22, "March–May 2027"),
        (datetime(2027, 4, 21, 12, tzinfo=UTC), 45, "March–June 2027"),
        (datetime(2026, 12, 28, 12, tzinfo=UTC), 25, "December 2026 – January 2027"),
        (datetime(2027, 4, 15, 12, tzinfo=UTC), 1000, "December 2026 – January 2030"),
    ],
)
def test_projected_end_words_follow_the_margin(
    end: datetime, margin_days: float, words: str
) -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    assert fmt_projected(end, timedelta(days=margin_days), "UTC", now) == words


def test_projected_end_range_never_starts_in_the_past_and_never_counts_down() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    # margin unknown: the months from now to twice the time left
    text = fmt_projected(datetime(2027, 1, 10, tzinfo=UTC), None, "UTC", now)
    assert text == "December 2026 – February 2027"
    # a huge margin is clipped at now
    assert fmt_projected(now + timedelta(days=20), timedelta(days=90), "UTC", now) == (
        "December 2026 – March 2027"
    )
    assert " d " not in text and not text.startswith("in ")


def test_projected_end_is_worded_in_the_runs_zone() -> None:
    end = datetime(2027, 5, 1, 2, tzinfo=UTC)  # still April 30 in New York
    assert fmt_projected(end, timedelta(hours=12), "America/New_York", end) == (
        "around Apr 30, 2027"
    )


@pytest.mark.parametrize(
    ("window", "words"),
    [
        (timedelta(hours=24), "24 h"),
        (timedelta(hours=23, minutes=50), "24 h"),
        (timedelta(hours=3), "3 h"),
        (timedelta(minutes=90), "1 h 30 min"),
        (timedelta(minutes=40), "40 min"),
        (timedelta(seconds=5), "1 min"),
    ],
)
def test_rate_window_words(window: timedelta, words: str) -> None:
    assert fmt_window(window) == words
