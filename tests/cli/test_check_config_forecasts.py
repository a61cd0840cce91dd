"""`runscribe check-config` on `loss_forecast` and `[[runs.forecasts]]`: every problem on one
line with its path, exit 2; a good file passes."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_check_config import GOOD, check

FORECASTS = """
loss_forecast = [[1000, 3.10], [10000, 2.62], [100000, 2.25], [390251, 2.08]]

[[runs.forecasts]]
metric = "train/grad_norm"
label = "gradient norm"
direction = "up"

[[runs.forecasts]]
metric = "attn/gate_norm"
points = 8
window = 300
holdout = 30
band = 6
"""


def with_forecasts(text: str) -> str:
    # keys of [[runs]] must come before its sub-tables
    head, _, tail = GOOD.partition("[runs.metrics]")
    extra, _, tables = text.partition("\n\n")
    return head + extra + "\n\n[runs.metrics]" + tail + "\n" + tables


def test_forecast_keys_pass(tmp_path: Path) -> None:
    result = check(tmp_path, with_forecasts(FORECASTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_bad_forecast_keys_are_named_with_their_path(tmp_path: Path) -> None:
    bad = (
        FORECASTS.replace("[390251, 2.08]", "[50000, 2.08]")
        .replace('direction = "up"', 'direction = "sideways"')
        .replace("holdout = 30", "holdout = 3")
    )
    result = check(tmp_path, with_forecasts(bad))
    assert result.returncode == 2
    lines = [
        line.removeprefix("runscribe: ") for line in (result.stdout + result.stderr).splitlines()
    ]
    assert any(
        line.startswith("runs[0].loss_forecast: point 3: steps must increase") for line in lines
    ), lines
    assert any(line.startswith("runs[0].forecasts[0].direction: ") for line in lines), lines
    assert any(
        line.startswith("runs[0].forecasts[1]: holdout (3) must be at least points (8)")
        for line in lines
    ), lines
    assert "Traceback" not in result.stderr


def test_a_one_point_curve_is_refused(tmp_path: Path) -> None:
    text = 'loss_forecast = [[1000, 3.1]]\n\n[[runs.forecasts]]\nmetric = "g"'
    result = check(tmp_path, with_forecasts(text))
    assert result.returncode == 2
    assert "runs[0].loss_forecast: needs at least 2 [step, loss] points" in result.stdout + (
        result.stderr
    )
