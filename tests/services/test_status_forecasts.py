"""Forecasts on the status surfaces, from a real store: a watched metric never logged and one
logged too rarely say so (learning, with a reason) instead of firing; the loss stands against
its curve; a drifting metric is listed in the card."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.analysis.forecast import SeriesPoint
from bot.core.numbers import fmt_value
from bot.models import MetricPoint, RunInfo
from bot.render.cards import status_card
from bot.render.json import status_json
from bot.render.terminal import local_formatter, render_card
from bot.services.narrative import Narrative
from bot.services.status import build_status
from bot.store import Store

NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
RUN = "e/p/hero-1"


async def seed(store: Store) -> None:
    await store.runs.upsert(
        RunInfo(
            slug="hero",
            name="Hero",
            config={
                "wandb_runs": [RUN],
                "loss_forecast": [[100, 4.0], [10_000, 2.0]],
                "forecasts": [
                    {"metric": "train/grad_norm", "label": "gradient norm", "direction": "up"},
                    {"metric": "eval/never"},
                    {"metric": "eval/rare"},
                ],
            },
        )
    )
    start = NOW - timedelta(hours=2)
    await store.metrics.add_points(
        "hero",
        [
            MetricPoint(RUN, 1000 + i, start + timedelta(minutes=i), loss=2.9 + 0.0001 * (i % 3))
            for i in range(100)
        ],
    )
    grad = [1.0] * 90 + [3.0] * 10  # jumps at the end
    await store.series.add(
        "hero",
        "train/grad_norm",
        [SeriesPoint(RUN, 1000 + i, start + timedelta(minutes=i), v) for i, v in enumerate(grad)],
    )
    await store.series.add(
        "hero", "eval/rare", [SeriesPoint(RUN, 1000, start, 0.5), SeriesPoint(RUN, 1050, start, 9)]
    )


async def test_forecasts_in_status_json_and_text(store: Store) -> None:
    await seed(store)
    report = await build_status(store, "hero", NOW)
    out = status_json(report, Narrative("", None, "template"))
    by = {f["metric"]: f for f in out["forecasts"]}
    assert list(by) == ["train/loss", "train/grad_norm", "eval/never", "eval/rare"]
    loss = by["train/loss"]
    assert loss["step"] == 1099 and loss["value"] == 2.9
    # 4.0 at 100, 2.0 at 10,000: log-log linear, so at step 1,099 the curve is 4 * (1099/100)^-k
    expected = 4.0 * (1099 / 100) ** (-(0.6931471805599453 / 4.605170185988092))
    assert abs(loss["forecast"] - expected) < 1e-12
    assert by["train/grad_norm"]["state"] == "drifting"
    assert by["eval/never"]["state"] == "learning"
    assert by["eval/never"]["reason"] == "no values of eval/never logged yet"
    assert (by["eval/never"]["value"], by["eval/never"]["forecast"]) == (None, None)
    assert by["eval/rare"]["state"] == "learning"
    assert by["eval/rare"]["reason"] == "learning: 2 of 60 points"
    assert by["eval/rare"]["low"] is None and by["eval/rare"]["high"] is None

    card = status_card(report, Narrative("", None, "template"), local_formatter("UTC", NOW))
    text = render_card(card)
    assert expected < 2.9
    assert f"{fmt_value(2.9 - expected)} above the predicted curve" in text
    assert "gradient norm (train/grad_norm) drifting up since step 1,090" in text
    # Each learning forecast says what it waits for: the key never logged, or its points.
    flat = " ".join(text.split()).replace("`", "")  # the terminal wraps the field
    assert (
        "2 learning (eval/never: waiting for eval/never, nothing logged yet; "
        "eval/rare: 2 of 60 points)"
    ) in flat, flat
