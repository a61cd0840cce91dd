"""Forecasts end to end: `runscribe poll --once` as a real process against the fake W&B server,
then `status --json` / `status`. A gradient norm drifts upward while a parameter norm stays
stable and the loss runs slightly under its predicted curve; later the gradient norm returns."""

from __future__ import annotations

import json
import math
import os
import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_poll_e2e import cli
from tests.fakes.wandb import FakeWandb

CURVE = [(100, 4.0), (1000, 3.0), (10000, 2.5)]
UNDER = 0.012  # the loss runs this far below its predicted curve

RUNS = f"""
[[runs]]
slug = "hero"
name = "Hero 70B"
wandb_runs = ["ent/proj/hero-1"]
total_steps = 10000
loss_forecast = {json.dumps([list(p) for p in CURVE])}

[runs.metrics]
loss = "train/loss"

[[runs.forecasts]]
metric = "train/grad_norm"
label = "gradient norm"
direction = "up"

[[runs.forecasts]]
metric = "train/param_norm"
label = "parameter norm"
direction = "both"
"""


def predicted(step: int) -> float:
    """The curve, computed here independently: a straight line in log-log between the points."""
    (s0, v0), (s1, v1) = (CURVE[0], CURVE[1]) if step <= CURVE[1][0] else (CURVE[1], CURVE[2])
    t = (math.log(step) - math.log(s0)) / (math.log(s1) - math.log(s0))
    return math.exp(math.log(v0) + t * (math.log(v1) - math.log(v0)))


@pytest.fixture(scope="module")
def wandb_server() -> Iterator[FakeWandb]:
    fake = FakeWandb().start()
    yield fake
    fake.stop()


def environment(tmp_path: Path, wandb: FakeWandb) -> dict[str, str]:
    (tmp_path / "runscribe.toml").write_text(RUNS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "WANDB_"))}
    env.update(
        RUNSCRIBE_CONFIG=str(tmp_path / "runscribe.toml"),
        RUNSCRIBE_DB=str(tmp_path / "hero.db"),
        WANDB_BASE_URL=wandb.base_url,
        WANDB_API_KEY=wandb.api_key,
        WANDB__GRAPHQL_RETRY_MAX="1",
        WANDB_DIR=str(tmp_path / "wandb"),
        WANDB_CACHE_DIR=str(tmp_path / "wandb" / "cache"),
        WANDB_CONFIG_DIR=str(tmp_path / "wandb" / "config"),
        WANDB_ERROR_REPORTING="false",
    )
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("GITHUB_TOKEN", None)
    return env


def by_metric(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["metric"]: f for f in status["forecasts"]}


async def test_drift_stable_and_loss_under_its_curve(
    tmp_path: Path, wandb_server: FakeWandb
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    wandb_server.reset()
    run = wandb_server.add_run("ent/proj/hero-1", created_at=now - timedelta(hours=1))
    rng = random.Random(14)
    drift_from = 300

    def grad(step: int) -> float:
        base = 1.0 + rng.gauss(0, 0.01)
        return base * math.exp(0.01 * (step - drift_from)) if step >= drift_from else base

    def norms(step: int) -> dict[str, float]:
        return {"train/grad_norm": grad(step), "train/param_norm": 50 + rng.gauss(0, 0.05)}

    wandb_server.log(
        run.path,
        400,
        start=now - timedelta(minutes=40),
        every=timedelta(seconds=5),
        loss_at=lambda step: predicted(max(step, 100)) - UNDER,
        extra=norms,
    )
    wandb_server.set_state(run.path, "running", heartbeat_at=now)
    env = environment(tmp_path, wandb_server)

    code, out, err = await cli(tmp_path, env, "poll", "--once")
    assert code == 0, out + err
    # the cycle says how long it took (how an operator reads an idle cycle's cost)
    assert re.search(r"cycle done in \d+ ms: \d+ enriched", out + err), out + err
    code, out, err = await cli(tmp_path, env, "status", "--json")
    assert code == 0, err
    status = json.loads(out)
    forecasts = by_metric(status)
    assert set(forecasts) == {"train/loss", "train/grad_norm", "train/param_norm"}
    loss = forecasts["train/loss"]
    assert loss["state"] == "ok"
    assert loss["forecast"] == pytest.approx(predicted(399), rel=1e-9)
    assert loss["forecast"] - loss["value"] == pytest.approx(UNDER, abs=2e-6)
    assert loss["low"] is None and loss["high"] is None
    grad_view = forecasts["train/grad_norm"]
    assert grad_view["state"] == "drifting"
    assert grad_view["value"] > grad_view["high"]
    assert drift_from <= grad_view["drift_since_step"] <= drift_from + 10
    assert forecasts["train/param_norm"]["state"] == "ok"
    assert forecasts["train/param_norm"]["low"] < 50 < forecasts["train/param_norm"]["high"]
    drifts = [i for i in status["open_incidents"] if i["kind"] == "drift"]
    assert len(drifts) == 1 and len(status["open_incidents"]) == 1
    assert drifts[0]["title"].startswith("gradient norm (train/grad_norm) drifting up: ")
    assert drifts[0]["severity"] == "warning"

    code, text, err = await cli(tmp_path, env, "status")
    assert code == 0, err
    assert f"{UNDER} below the predicted curve" in text
    assert "gradient norm (train/grad_norm) drifting up since step" in text, text

    # The norm comes back to where it was; the parameter norm never moved.
    wandb_server.log(
        run.path,
        30,
        start=now - timedelta(minutes=6),
        every=timedelta(seconds=5),
        loss_at=lambda step: predicted(step) - UNDER,
        extra=lambda step: {
            "train/grad_norm": 1.0 + rng.gauss(0, 0.01),
            "train/param_norm": 50 + rng.gauss(0, 0.05),
        },
    )
    code, out, err = await cli(tmp_path, env, "poll", "--once")
    assert code == 0, out + err
    code, out, err = await cli(tmp_path, env, "status", "--json")
    status = json.loads(out)
    assert status["open_incidents"] == []
    forecasts = by_metric(status)
    assert forecasts["train/grad_norm"]["state"] == "ok"
    assert forecasts["train/param_norm"]["state"] == "ok"
