"""One truth per fact, through the real pipeline: the fake W&B server, the W&B source, the
incident engine and the status service on one SQLite store. The card and the incident engine
share one stall judgement; a forecast's state and colour follow its band; one value per metric
on a card."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.config.runsfile import ForecastConfig, MetricKeys, RunConfig
from bot.core.numbers import fmt_value
from bot.incidents.engine import IncidentEngine
from bot.models import RunInfo
from bot.posts.incidents import IncidentPosts
from bot.process.pipeline import run_cycle
from bot.render.cards import forecast_cards, forecasts_summary, status_card
from bot.render.terminal import local_formatter
from bot.services.forecasts import forecast_panels
from bot.services.narrative import Narrative
from bot.services.status import build_status
from bot.sources.wandb import WandbSource
from bot.sources.wandb_client import WandbClient
from bot.store import Store
from tests.fakes.wandb import FakeWandb
from tests.sources.test_wandb import client, fake, server, wandb_env

__all__ = ["client", "fake", "server", "wandb_env"]  # the W&B fixtures, shared

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
PATH = "ent/proj/hero-1"


async def track(store: Store, client: WandbClient) -> WandbSource:
    config = RunConfig(
        slug="hero",
        name="Hero 70B",
        wandb_runs=[PATH],
        total_steps=10_000,
        metrics=MetricKeys(step="_step", tokens=None, loss="train/loss"),
    )
    await store.runs.upsert(RunInfo.from_config(config))
    return WandbSource(store, config, client)


async def test_a_run_found_stalled_at_install_is_stalled_on_the_card_and_in_incidents(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """Installed on a run that W&B calls running, heartbeating, whose last step is 2 h 41 min
    old: the bot's own first look at it is not progress."""
    fake.add_run(PATH, display_name="hero-1", created_at=NOW - timedelta(hours=6))
    fake.log(PATH, 200, start=NOW - timedelta(hours=6), every=timedelta(minutes=1))
    fake.set_state(PATH, "running", heartbeat_at=NOW - timedelta(minutes=1))
    source = await track(store, client)

    await run_cycle(store, [source], NOW, detector=IncidentEngine(IncidentPosts()))

    report = await build_status(store, "hero", NOW)
    assert report.state == "stalled"
    incidents = await store.incidents.listing("hero", open_only=True, limit=10)
    assert [i.kind for i in incidents] == ["stall"]
    assert [i.kind for i in report.open_incidents] == ["stall"]  # the card lists the same one
    # the stall is dated from the last step (logged at 6 h - 199 min ago) plus the threshold
    last_step_at = NOW - timedelta(hours=6) + timedelta(minutes=199)
    stall_after = timedelta(minutes=report.run.config.alerts.value("stall_minutes"))
    assert incidents[0].started_at == last_step_at + stall_after


async def test_a_relaunch_is_progress_for_the_card_as_for_the_engine(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """A run W&B reports crashed, then running again 5 min ago, with no step since: neither the
    card nor the engine calls it stalled yet."""
    fake.add_run(PATH, display_name="hero-1", created_at=NOW - timedelta(hours=6))
    fake.log(PATH, 200, start=NOW - timedelta(hours=6), every=timedelta(minutes=1))
    fake.set_state(PATH, "crashed", heartbeat_at=NOW - timedelta(hours=3))
    source = await track(store, client)
    engine = IncidentEngine(IncidentPosts())
    await run_cycle(store, [source], NOW - timedelta(minutes=10), detector=engine)

    fake.set_state(PATH, "running", heartbeat_at=NOW - timedelta(minutes=1))
    await run_cycle(store, [source], NOW - timedelta(minutes=5), detector=engine)
    await run_cycle(store, [source], NOW, detector=engine)

    report = await build_status(store, "hero", NOW)
    assert report.state == "running"
    kinds = [i.kind for i in await store.incidents.listing("hero", open_only=True, limit=10)]
    assert "stall" not in kinds


# --- forecasts: the state follows the band, one value per metric ------------------------------

GRAD = ForecastConfig(metric="train/grad_norm", label="gradient norm", direction="up")


async def track_grad(store: Store, client: WandbClient) -> WandbSource:
    config = RunConfig(
        slug="hero",
        name="Hero 70B",
        wandb_runs=[PATH],
        total_steps=10_000,
        metrics=MetricKeys(step="_step", tokens=None, loss="train/loss"),
        forecasts=[GRAD],
    )
    await store.runs.upsert(RunInfo.from_config(config))
    return WandbSource(store, config, client)


def steady(step: int) -> dict[str, float]:
    """A gradient norm of 1.0 with a small deterministic wobble (±0.005)."""
    return {"train/grad_norm": 1.0 + 0.005 * ((step * 7) % 3 - 1)}


async def test_a_value_outside_its_band_is_never_ok_in_green(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """One point far above the band: not a drift yet (1 of 5 points), and not 'ok' either."""
    fake.add_run(PATH, display_name="hero-1", created_at=NOW - timedelta(hours=2))
    start = NOW - timedelta(minutes=40)
    fake.log(PATH, 300, start=start, every=timedelta(seconds=5), extra=steady)
    fake.log(
        PATH, 1, start=start + 300 * timedelta(seconds=5), extra=lambda s: {"train/grad_norm": 3.0}
    )
    fake.set_state(PATH, "running", heartbeat_at=NOW)
    source = await track_grad(store, client)
    await run_cycle(store, [source], NOW, detector=IncidentEngine(IncidentPosts()))

    report = await build_status(store, "hero", NOW)
    [view] = [f for f in report.forecasts if f.metric == GRAD.metric]
    assert view.value == 3.0 and view.high is not None and view.value > view.high
    assert view.state == "outside"
    assert "above its band" in view.describe()
    assert "1 of 5 points outside in a row" in (view.reason or "")
    assert [i.kind for i in report.open_incidents] == []  # no drift incident: none claimed

    _, panels = await forecast_panels(store, "hero", NOW)
    [card] = forecast_cards("Hero 70B", panels)  # what /forecast shows
    assert card.color == "warning"
    assert "ok" not in card.description.split(":")[0]
    summary = forecasts_summary([view])
    assert "within forecast" not in summary and "above its band" in summary


async def test_the_card_shows_one_value_per_metric(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """A drift confirmed at one value and still growing: the open incident's title keeps the
    value it was confirmed at, the card says the metric's value once (the current one)."""
    fake.add_run(PATH, display_name="hero-1", created_at=NOW - timedelta(hours=2))
    start = NOW - timedelta(minutes=40)
    every = timedelta(seconds=5)
    fake.log(PATH, 300, start=start, every=every, extra=steady)
    source = await track_grad(store, client)
    engine = IncidentEngine(IncidentPosts())
    fake.log(PATH, 6, start=start + 300 * every, every=every,
             extra=lambda s: {"train/grad_norm": 2.0 + 0.1 * (s - 300)})  # fmt: skip
    await run_cycle(store, [source], NOW - timedelta(minutes=5), detector=engine)
    fake.log(PATH, 6, start=start + 306 * every, every=every,
             extra=lambda s: {"train/grad_norm": 2.0 + 0.1 * (s - 300)})  # fmt: skip
    fake.set_state(PATH, "running", heartbeat_at=NOW)
    await run_cycle(store, [source], NOW, detector=engine)

    report = await build_status(store, "hero", NOW)
    [view] = [f for f in report.forecasts if f.metric == GRAD.metric]
    assert view.state == "drifting" and view.value == pytest.approx(3.1)
    [incident] = report.open_incidents
    confirmed = incident.title.split(": ", 1)[1].split(" vs ")[0]
    assert confirmed != fmt_value(view.value)  # the title's value is an older one
    card = status_card(report, Narrative("", NOW, "template"), local_formatter("UTC", NOW))
    text = "\n".join(f"{f.name}: {f.value}" for f in card.fields)
    assert text.count(fmt_value(view.value)) == 1
    assert confirmed not in text
    assert "gradient norm (train/grad_norm) drifting up since step" in text
