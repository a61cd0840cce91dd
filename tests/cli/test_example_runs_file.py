"""The example runs file is clearly an example: it validates, every value a person
must replace is a CHANGE-ME placeholder, and check-config names each one left, and the example's
made-up loss curve, before they can reach a card."""

from __future__ import annotations

import re
from pathlib import Path

from bot.config.runsfile import (
    EXAMPLE_LOSS_FORECAST,
    PLACEHOLDER,
    example_leftovers,
    load_runs_file,
)
from tests.cli.test_check_config import run_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "runscribe.example.toml"


def test_the_example_is_placeholders_not_another_labs_run() -> None:
    [run] = load_runs_file(EXAMPLE).runs
    leftovers = example_leftovers(run)
    assert {"name", "wandb_runs[0]", "github_repo", "links.W&B report"} <= set(leftovers)
    assert run.loss_forecast is None and not run.forecasts  # examples only in comments


def test_the_commented_curve_is_the_one_check_config_knows() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    [line] = [x for x in text.splitlines() if x.startswith("# loss_forecast = ")]
    points = [(int(a), float(b)) for a, b in re.findall(r"\[(\d+), ([\d.]+)\]", line)]
    assert points == list(EXAMPLE_LOSS_FORECAST)


def test_check_config_warns_about_what_is_left_and_not_about_what_was_edited(
    tmp_path: Path,
) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    copied = tmp_path / "runscribe.toml"
    copied.write_text(text.replace("# loss_forecast = ", "loss_forecast = "), encoding="utf-8")
    result = run_cli(tmp_path, "check-config", env={"RUNSCRIBE_CONFIG": str(copied)})
    assert result.returncode == 0, result.stderr
    [note] = [line for line in result.stdout.splitlines() if "example's values" in line]
    for key in ("name", "wandb_runs[0]", "github_repo", "links.W&B report", "loss_forecast"):
        assert key in note, note

    edited = (
        text.replace("CHANGE-ME-entity/CHANGE-ME-project/CHANGE-ME-run-id", "lab/pretrain/abc123")
        .replace("CHANGE-ME-owner/CHANGE-ME-repo", "lab/model")
        .replace("CHANGE-ME: your run's name", "Our 7B run")
        .replace("https://wandb.ai/CHANGE-ME", "https://wandb.ai/lab/pretrain/reports/r1")
        .replace("https://github.com/CHANGE-ME", "https://github.com/lab/model/issues/1")
    )
    assert PLACEHOLDER not in "\n".join(
        line for line in edited.splitlines() if not line.lstrip().startswith("#")
    )
    copied.write_text(edited, encoding="utf-8")
    result = run_cli(tmp_path, "check-config", env={"RUNSCRIBE_CONFIG": str(copied)})
    assert result.returncode == 0, result.stderr
    assert "example's values" not in result.stdout
