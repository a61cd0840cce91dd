"""Recomputed steps and downtime are one computation every surface reads, whatever the skew
between the trainer's clock (history rows) and W&B's (a run's `createdAt`, heartbeats): the
card, the crash incident's resolution and `/incidents` say the same figures with W&B's clock
2 s ahead of the trainer's or 2 s behind (and the 0.1 s of issue 36)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.config.runsfile import MetricKeys, RunConfig
from bot.incidents.engine import IncidentEngine
from bot.models import NEW_RUN, RunInfo
from bot.posts.incidents import IncidentPosts
from bot.process.pipeline import run_cycle
from bot.render.cards import status_card
from bot.render.terminal import local_formatter
from bot.services.narrative import Narrative
from bot.services.status import build_status
from bot.sources.wandb import WandbSource
from bot.store import Store
from tests.fakes.wandb import FakeWandb
from tests.sources.test_wandb import client, fake, server, wandb_env

__all__ = ["client", "fake", "server", "wandb_env"]

FIRST, SECOND = "ent/hero/hero-a", "ent/hero/hero-b"
EVERY = timedelta(seconds=30)
LAST = datetime(2026, 11, 20, 0, 41, tzinfo=UTC)  # hero-a's last row, step 62,016
BACK = LAST + timedelta(minutes=20)  # hero-b's first row, step 62,001


@pytest.mark.parametrize(
    "skew", [timedelta(seconds=2), timedelta(seconds=-2), timedelta(seconds=0.1)]
)
async def test_recomputed_steps_agree_on_every_surface_under_clock_skew(
    fake: FakeWandb, client, store: Store, skew: timedelta
) -> None:
    config = RunConfig(
        slug="hero",
        name="Hero",
        wandb_runs=[FIRST],
        wandb_run_pattern="^hero-",
        total_steps=100_000,
        timezone="America/New_York",
        metrics=MetricKeys(step="train/step", tokens=None, loss="train/loss"),
    )
    await store.runs.upsert(RunInfo.from_config(config))
    source = WandbSource(store, config, client)
    engine = IncidentEngine(IncidentPosts())
    fake.add_run(FIRST, display_name="hero-a", created_at=LAST - timedelta(hours=2))
    fake.log(FIRST, 117, start=LAST - 116 * EVERY, step_key="train/step", first_value=61_900)
    fake.set_state(FIRST, "running", heartbeat_at=LAST + skew)
    await run_cycle(store, [source], LAST + timedelta(minutes=1), detector=engine)
    fake.set_state(FIRST, "crashed", heartbeat_at=LAST + skew)
    await run_cycle(store, [source], LAST + timedelta(minutes=10), detector=engine)

    # W&B dates the new run by its own clock: `skew` from the trainer's first row
    fake.add_run(SECOND, display_name="hero-b", created_at=BACK + skew)
    fake.log(SECOND, 60, start=BACK, step_key="train/step", first_value=62_001)
    fake.set_state(SECOND, "running", heartbeat_at=BACK + 59 * EVERY + skew)
    now = BACK + timedelta(minutes=40)
    await run_cycle(store, [source], now, detector=engine)
    await run_cycle(store, [source], now + timedelta(minutes=5), detector=engine)
    now += timedelta(minutes=5)

    report = await build_status(store, "hero", now)
    restart = report.last_restart
    assert restart is not None and restart.kind == NEW_RUN
    assert (restart.from_step, restart.checkpoint_step, restart.recomputed_steps) == (
        62_016,
        62_000,
        16,
    )
    assert restart.down_for == timedelta(minutes=20)
    card = status_card(
        report, Narrative("", now, "template"), local_formatter(config.timezone, now)
    )
    [field] = [f.value for f in card.fields if f.name == "Last restart"]
    assert "16 steps recomputed" in field and "after 20 min down" in field

    [incident] = [i for i in await store.incidents.find("hero") if i.kind == "crash"]
    assert incident.resolution is not None and "16 steps recomputed" in incident.resolution
    [member] = [m for m in incident.details.members.values() if m.restart is not None]
    assert member.restart == restart  # what /incidents and the posts read
    assert "UTC" not in (incident.cause or "")
