"""The pure forecast module on synthetic histories: the loss curve, and watched metrics that are
stable with noise and outliers, drift slowly, restart, or are logged sparsely."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from bot.analysis.forecast import (
    LossCurve,
    SeriesPoint,
    Tracker,
    drift_title,
    fit_trend,
    offset_text,
)
from bot.config.settings import ForecastConfig

T0 = datetime(2026, 9, 1, tzinfo=UTC)
RUN = "ent/proj/hero-1"


def series(values: list[float], *, start: int = 0, every: int = 10, run: str = RUN):
    return [
        SeriesPoint(run, start + i * every, T0 + timedelta(minutes=start + i * every), v)
        for i, v in enumerate(values)
    ]


def noisy(n: int, level: float = 2.0, noise: float = 0.05, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [level + rng.gauss(0, noise) for _ in range(n)]


# --------------------------------------------------------------------------- loss curve


def test_loss_curve_is_linear_in_log_log_and_extends_its_ends() -> None:
    curve = LossCurve.from_config([[1000, 3.1], [10000, 2.62], [100000, 2.25]])
    assert curve is not None
    assert curve.at(1000) == pytest.approx(3.1)
    assert curve.at(10000) == pytest.approx(2.62)
    # halfway in log(step) is the geometric mean of the losses
    assert curve.at(math.sqrt(1000 * 10000)) == pytest.approx(math.sqrt(3.1 * 2.62))
    # past the last point the last power law continues (no clamping)
    beyond = curve.at(1_000_000)
    assert beyond is not None and beyond < 2.25
    assert beyond == pytest.approx(2.25 * (2.25 / 2.62))
    assert curve.at(0) is None


def test_offset_text_says_which_side_and_by_how_much() -> None:
    assert offset_text(2.238, 2.25) == "0.012 below the predicted curve"
    assert offset_text(2.5, 2.25) == "0.25 above the predicted curve"


def test_fit_trend_ignores_outliers() -> None:
    xs = [float(i) for i in range(100)]
    ys = [1.0 + 0.01 * x for x in xs]
    for i in (5, 30, 31, 77):
        ys[i] = 50.0
    fit = fit_trend(xs, ys, band=5.0)
    assert fit is not None
    assert fit.slope == pytest.approx(0.01)
    assert fit.at(150) == pytest.approx(2.5)


# --------------------------------------------------------------------------- watched metrics


def test_stable_noisy_metric_with_outliers_never_fires() -> None:
    cfg = ForecastConfig(metric="train/grad_norm", direction="both")
    values = noisy(5000, seed=7)
    rng = random.Random(3)
    for i in rng.sample(range(100, 5000), 60):  # isolated spikes, both ways
        values[i] *= rng.choice([3.0, 0.2])
    for i in (2000, 2001, 3500, 3501, 3502):  # short bursts shorter than K
        values[i] = 9.0
    tracker = Tracker(cfg)
    transitions = []
    for chunk in range(0, 5000, 97):  # polls of arbitrary size
        transitions += tracker.update(series(values)[chunk : chunk + 97])
    assert transitions == []
    assert tracker.state == "ok"
    assert tracker.last is not None and tracker.last.forecast == pytest.approx(2.0, abs=0.02)


def test_slow_exponential_growth_fires_within_k_points_of_leaving_the_band() -> None:
    cfg = ForecastConfig(metric="attn/gate_norm", direction="up", points=5)
    values = noisy(600, level=1.0, noise=0.01, seed=11)
    values += [v * math.exp(0.004 * i) for i, v in enumerate(noisy(600, 1.0, 0.01, seed=12))]
    tracker = Tracker(cfg)
    opened = []
    first_outside = None
    for point in series(values):
        opened += [t for t in tracker.update([point]) if t.kind == "opened"]
        last = tracker.last
        if (
            first_outside is None
            and last is not None
            and last.high is not None
            and point.step >= 6000
            and last.value > last.high
        ):
            first_outside = point.step
        if opened:
            break
    assert opened, "never fired"
    episode = opened[0].episode
    assert first_outside is not None
    # confirmed at the K-th point outside: K points after it first left (no outlier in between)
    assert episode.confirmed.step - first_outside <= (cfg.points - 1) * 10 + 10
    assert episode.start.step >= 6000
    assert episode.direction == "up"
    assert tracker.state == "drifting"
    title = drift_title(cfg, episode)
    assert title.startswith("attn/gate_norm drifting up: ")
    assert f"since step {episode.start.step:,}" in title


def test_direction_down_ignores_growth() -> None:
    cfg = ForecastConfig(metric="m", direction="down")
    values = noisy(300, 1.0, 0.01) + [1.0 + 0.01 * i for i in range(200)]
    tracker = Tracker(cfg)
    assert tracker.update(series(values)) == []


def test_drift_resolves_after_k_points_back_in_band() -> None:
    cfg = ForecastConfig(metric="m", label="a norm", direction="up", points=4)
    values = noisy(300, 1.0, 0.01) + [1.5] * 10 + noisy(20, 1.0, 0.01, seed=5)
    tracker = Tracker(cfg)
    transitions = tracker.update(series(values))
    assert [t.kind for t in transitions] == ["opened", "closed"]
    closed = transitions[1].episode
    assert closed.end is not None and closed.end.step == (300 + 10 + 3) * 10
    assert "back inside the band for 4 points" in (closed.resolution or "")
    assert tracker.state == "ok"
    assert drift_title(cfg, closed).startswith("a norm (m) drifting up: 1.5 vs forecast 1")


def test_restart_step_going_back_does_not_fire() -> None:
    """A crash at step 5,000 and a restore from 4,000: the replayed steps repeat the same
    history, and a short transient right after the restore, as resumes often show."""
    cfg = ForecastConfig(metric="m", direction="both")
    values = noisy(500, 2.0, 0.02, seed=2)
    before = series(values)  # steps 0..4990
    replay = series(noisy(300, 2.0, 0.02, seed=9), start=4000)
    replay = [
        SeriesPoint(p.wandb_run, p.step, p.at + timedelta(hours=3), p.value * (1.5 if i < 3 else 1))
        for i, p in enumerate(replay)
    ]
    tracker = Tracker(cfg)
    assert tracker.update(before) == []
    assert tracker.update(replay) == []
    assert tracker.restarts == 1
    assert tracker.state == "ok"
    assert tracker.window[-1][0] == 4000 + 299 * 10
    steps = [s for s, _ in tracker.window]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)


def test_restart_into_a_new_chain_member_and_a_superseded_member_still_logging() -> None:
    cfg = ForecastConfig(metric="m")
    tracker = Tracker(cfg)
    chain = [RUN, "ent/proj/hero-2"]
    tracker.update(series(noisy(200, 3.0, 0.03)), chain)
    resumed = series(noisy(100, 3.0, 0.03, seed=4), start=1500, run="ent/proj/hero-2")
    stale = series([99.0] * 50, start=2000, run=RUN)  # the crashed run logs garbage later
    assert tracker.update(resumed + stale, chain) == []
    assert tracker.run == "ent/proj/hero-2"
    assert tracker.state == "ok"
    assert max(v for _, v in tracker.window) < 10


def test_drift_undone_by_a_restore_closes() -> None:
    cfg = ForecastConfig(metric="m", direction="up", points=3)
    tracker = Tracker(cfg)
    tracker.update(series(noisy(300, 1.0, 0.01) + [3.0] * 5))
    assert tracker.state == "drifting"
    restored = series(noisy(10, 1.0, 0.01), start=2500)
    transitions = tracker.update(restored)
    assert [t.kind for t in transitions] == ["closed"]
    assert "before the drift began" in (transitions[0].episode.resolution or "")


def test_missing_and_sparse_metrics_say_so_instead_of_firing() -> None:
    cfg = ForecastConfig(metric="train/rare")
    tracker = Tracker(cfg)
    assert tracker.state == "learning"
    assert tracker.reason() == "no values of train/rare logged yet"
    # logged every 1,000 steps: 12 points so far, one of them wild
    values = [1.0] * 11 + [50.0]
    assert tracker.update(series(values, every=1000)) == []
    assert tracker.state == "learning"
    assert tracker.reason() == "learning: 12 of 60 points"
    # enough points, but nothing logged for a long stretch while the run went on
    tracker.update(series(noisy(100, 1.0, 0.01), start=20_000, every=10))
    assert tracker.state == "ok"
    assert tracker.reason(run_step=20_990) is None
    assert tracker.reason(run_step=90_000) == (
        "not logged since step 20,990 (the run is at step 90,000)"
    )


def test_state_round_trips_through_json() -> None:
    cfg = ForecastConfig(metric="m", direction="up", points=3)
    values = noisy(300, 1.0, 0.01) + [3.0] * 4
    whole = Tracker(cfg)
    whole.update(series(values))
    split = Tracker(cfg)
    pts = series(values)
    for i in range(0, len(pts), 50):
        split = Tracker.from_json(cfg, split.as_json())
        split.update(pts[i : i + 50])
    assert split.as_json() == whole.as_json()
    assert split.state == "drifting"
