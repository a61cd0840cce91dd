"""`/forecast` through discord.py's real CommandTree against the fake Discord: each watched
metric as an embed with its chart, and a private hint for a run that watches nothing."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta
from typing import Any

import pytest

from bot.analysis.forecast import SeriesPoint
from bot.config.settings import RunsFile
from bot.models import RunInfo
from bot.render.drawer import ChartError
from bot.store import Store
from tests.bot.conftest import Seed, StartBot, with_config
from tests.fakes.discord import FakeDiscord
from tests.waiting import PATIENCE

WATCHED = [
    {"metric": "train/grad_norm", "label": "gradient norm", "direction": "up"},
    {"metric": "train/param_norm", "label": "parameter norm"},
]


async def watching(store: Store, runs: RunsFile, seed: Seed) -> RunsFile:
    """The sample run with two watched metrics: the gradient norm climbs at the end."""
    runs = with_config(runs, forecasts=WATCHED)
    config = runs.runs[0]
    await store.runs.upsert(RunInfo.from_config(config))
    path = config.wandb_runs[0]
    rng = random.Random(5)
    start = seed.now - timedelta(hours=5)
    grad, param = [], []
    for i in range(300):
        at = start + timedelta(minutes=i)
        climb = 1.0 + (0.02 * (i - 250) if i >= 250 else 0.0)
        grad.append(SeriesPoint(path, 1000 + i, at, climb * (1 + rng.gauss(0, 0.01))))
        param.append(SeriesPoint(path, 1000 + i, at, 80 + rng.gauss(0, 0.1)))
    await store.series.add(config.slug, "train/grad_norm", grad)
    await store.series.add(config.slug, "train/param_norm", param)
    return runs


async def test_forecast_shows_each_metric_with_its_chart(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, runs: RunsFile, seed: Seed
) -> None:
    await start_bot(runs_file=await watching(seeded_store, runs, seed))
    record = await fake.slash("forecast")
    body = await asyncio.wait_for(record.callback, PATIENCE)
    assert body["type"] == 5  # deferred: charts are drawn
    await fake.wait_for(lambda: record.followups, within=PATIENCE)
    message: dict[str, Any] = record.followups[0]
    titles = [e["title"] for e in message["embeds"]]
    assert [t.split(" · ")[1] for t in titles] == [
        "gradient norm (train/grad_norm)",
        "parameter norm (train/param_norm)",
    ]
    grad, param = message["embeds"]
    assert "drifting up since step" in grad["description"]
    assert "ok:" in param["description"]
    assert grad["image"]["url"] == "attachment://forecast-0.png"
    assert [name for name, _ in record.files] == ["forecast-0.png", "forecast-1.png"]
    assert all(data.startswith(b"\x89PNG") for _, data in record.files)

    one = await fake.slash("forecast", [{"name": "metric", "type": 3, "value": "parameter norm"}])
    await asyncio.wait_for(one.callback, PATIENCE)
    await fake.wait_for(lambda: one.followups, within=PATIENCE)
    assert len(one.followups[0]["embeds"]) == 1


async def test_a_chart_that_cannot_be_drawn_costs_only_its_image(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    runs: RunsFile,
    seed: Seed,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bot = await start_bot(runs_file=await watching(seeded_store, runs, seed))
    real = bot.charting.drawer.forecast_chart

    async def first_fails(panel: Any) -> bytes:
        if panel.view.metric == "train/grad_norm":
            raise ChartError("the chart process ended while drawing")
        return await real(panel)

    monkeypatch.setattr(bot.charting.drawer, "forecast_chart", first_fails)
    record = await fake.slash("forecast")
    await fake.wait_for(lambda: record.followups, within=PATIENCE)
    grad, param = record.followups[0]["embeds"]
    assert "drifting up since step" in grad["description"] and "image" not in grad
    assert param["image"]["url"] == "attachment://forecast-1.png"
    assert [name for name, _ in record.files] == ["forecast-1.png"]


async def test_forecast_without_watched_metrics_gets_a_private_hint(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    record = await fake.slash("forecast")
    body = await asyncio.wait_for(record.callback, PATIENCE)
    assert body["type"] == 4 and body["data"]["flags"] & 64
    assert "watches no metrics" in body["data"]["content"]
    record = await fake.slash("forecast", [{"name": "metric", "type": 3, "value": "x"}])
    body = await asyncio.wait_for(record.callback, PATIENCE)
    assert body["data"]["flags"] & 64
