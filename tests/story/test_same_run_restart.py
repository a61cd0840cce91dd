"""The reference moment through the real pipeline: a W&B run loses a node, logs its last step,
then resumes under the same run id from the last checkpoint. The fake W&B server, the W&B
source, the incident engine and every surface (card, chart, timeline, digest, resolution) on one
SQLite store; the restart's cause from the ops log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.config.runsfile import MetricKeys, RunConfig
from bot.incidents.engine import IncidentEngine
from bot.models import RESTORE, Event, RunInfo
from bot.posts.incidents import IncidentPosts
from bot.process.pipeline import run_cycle
from bot.render.cards import status_card
from bot.render.json import status_json
from bot.render.terminal import local_formatter
from bot.services.digest import build_digest
from bot.services.narrative import Narrative, build_narrative_facts
from bot.services.status import build_status, chart_series
from bot.services.timeline import build_timeline
from bot.sources.wandb import WandbSource
from bot.sources.wandb_client import WandbClient
from bot.store import Store
from tests.fakes.wandb import FakeWandb
from tests.sources.test_wandb import client, fake, server, wandb_env

__all__ = ["client", "fake", "server", "wandb_env"]

PATH = "marin/hero/hero-12d8b6f0"
EVERY = timedelta(seconds=20)
LAST_STEP_AT = datetime(2026, 9, 1, 23, 39, tzinfo=UTC)  # 7:39 p.m. in New York
RESUMED_AT = LAST_STEP_AT + timedelta(minutes=47)
OPS_LOG = (
    "An InfiniBand port fault on host s55sxs64 made the node's link flap, and the training job "
    "lost it. Iris is restarting the job from the last checkpoint."
)


async def track(store: Store, client: WandbClient, step: str) -> WandbSource:
    config = RunConfig(
        slug="hero",
        name="Hero MoE",
        wandb_runs=[PATH],
        total_steps=390_251,
        timezone="America/New_York",
        metrics=MetricKeys(step=step, tokens=None, loss="train/loss"),
    )
    await store.runs.upsert(RunInfo.from_config(config))
    return WandbSource(store, config, client)


def ops_comment(at: datetime) -> Event:
    return Event(
        run_slug="hero",
        source="github",
        external_id="comment:8506:1",
        kind="comment",
        at=at,
        author="loom-oa-dev",
        ref="#8506",
        url="https://github.com/o/r/issues/8506#issuecomment-1",
        title="Hero run ops log",
        body=OPS_LOG,
        thread="github:o/r#8506",
    )


async def lose_a_node(
    fake: FakeWandb, store: Store, source: WandbSource, engine: IncidentEngine, last: int
) -> None:
    """Rows up to step `last`, logged at 23:39 UTC; then the node is lost (W&B: crashed) and
    the ops log says why, while the run is down."""
    start = LAST_STEP_AT - 305 * EVERY
    if source.step_key == "_step":
        fake.log(PATH, last + 1, start=LAST_STEP_AT - last * EVERY, every=EVERY)
    else:
        fake.log(
            PATH, 306, start=start, every=EVERY, step_key=source.step_key, first_value=last - 305
        )
    fake.set_state(PATH, "running", heartbeat_at=LAST_STEP_AT)
    await run_cycle(store, [source], LAST_STEP_AT + timedelta(minutes=1), detector=engine)
    fake.set_state(PATH, "crashed")
    await run_cycle(store, [source], LAST_STEP_AT + timedelta(minutes=20), detector=engine)
    await store.events.upsert_many([ops_comment(LAST_STEP_AT + timedelta(minutes=25))])
    await run_cycle(store, [source], LAST_STEP_AT + timedelta(minutes=30), detector=engine)


async def test_a_resume_under_the_same_run_id_is_a_restart_on_every_surface(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """`wandb.init(id=..., resume="allow")` after the node loss: `_step` goes on, the trainer's
    own step (the run's step key) starts again from the checkpoint at 50,195: 110 steps done
    twice (50,196 .. 50,305)."""
    fake.add_run(PATH, display_name="hero-12d8b6f0", created_at=LAST_STEP_AT - timedelta(hours=3))
    source = await track(store, client, "train/step")
    engine = IncidentEngine(IncidentPosts())
    await lose_a_node(fake, store, source, engine, last=50_305)

    fake.resume(PATH, LAST_STEP_AT + timedelta(minutes=40))
    fake.log(PATH, 200, start=RESUMED_AT, every=EVERY, step_key="train/step", first_value=50_196)
    now = RESUMED_AT + 200 * EVERY
    await run_cycle(store, [source], now, detector=engine)
    now += timedelta(minutes=5)
    await run_cycle(store, [source], now, detector=engine)

    report = await build_status(store, "hero", now)
    restart = report.last_restart
    assert restart is not None and restart.kind == RESTORE and restart.wandb_run == PATH
    assert (restart.stopped_at, restart.resumed_at) == (LAST_STEP_AT, RESUMED_AT)
    assert (restart.checkpoint_step, restart.recomputed_steps) == (50_195, 110)
    assert restart.down_for == timedelta(minutes=47)

    # the card: when (the run's zone), what, and why in the ops log's words, linked
    fmt = local_formatter("America/New_York", now)
    card = status_card(report, Narrative("", now, "template"), fmt)
    [field] = [f.value for f in card.fields if f.name == "Last restart"]
    assert "20:26 EDT" in field and "UTC" not in field
    assert "resumed from step 50,196 after 47 min down; 110 steps recomputed" in field
    assert "InfiniBand port fault on host s55sxs64" in field
    assert "[GitHub #8506](https://github.com/o/r/issues/8506#issuecomment-1)" in field

    # status --json carries it, with its cause and who wrote it
    data = status_json(report, Narrative("", now, "template"))
    assert data["last_restart"]["recomputed_steps"] == 110
    assert data["last_restart"]["checkpoint_step"] == 50_195
    assert "InfiniBand" in data["last_restart"]["reported_cause"]
    assert data["last_restart"]["reported_by"]["url"] == ops_comment(now).url

    # the chart marks it
    assert (await chart_series(store, "hero")).restarts == [RESUMED_AT]

    # the incident's resolution reads the same record
    [incident] = await store.incidents.find("hero")
    assert incident.resolution is not None
    assert "Training resumed from step 50,196" in incident.resolution
    assert "110 steps recomputed" in incident.resolution
    assert incident.details.reported_cause is not None
    assert incident.details.reported_cause.url == ops_comment(now).url

    # the digest's restarts in the window, and the timeline's entry
    digest = await build_digest(store, "hero", now)
    assert digest.restarts_in_window == [restart]
    assert "from step 50,196 after 47 min down, 110 steps recomputed" in digest.text
    entries = await build_timeline(store, "hero", now, days=2)
    [entry] = [e for e in entries if e.kind == "restart"]
    assert entry.at == RESUMED_AT
    assert "110 steps recomputed" in entry.summary and "47 min" in entry.summary

    # the narrative is given the restart and the incident it recovered from, with its cause
    facts = await build_narrative_facts(store, "hero", now)
    assert facts.last_restart == restart
    assert facts.restart_incident is not None
    assert facts.restart_incident.reported_cause is not None
    assert "InfiniBand" in facts.restart_incident.reported_cause


@pytest.mark.parametrize("live", [True, False], ids=["watched live", "read afterwards"])
async def test_a_run_that_logs_on_after_a_stop_is_a_restart(
    fake: FakeWandb, client: WandbClient, store: Store, live: bool
) -> None:
    """W&B keeps one run's `_step` increasing and drops rows logged again below it, so a job
    restarted in place logs on at the next step after a silence: a restart all the same (W&B
    saw it crashed, or, read afterwards, its runtime did not count the silence). Which
    checkpoint it resumed from is not in W&B: no surface claims "no steps lost"."""
    fake.add_run(PATH, display_name="hero-12d8b6f0", created_at=LAST_STEP_AT - timedelta(hours=3))
    source = await track(store, client, "_step")
    engine = IncidentEngine(IncidentPosts())
    if live:
        await lose_a_node(fake, store, source, engine, last=50_195)
    else:
        fake.log(PATH, 50_196, start=LAST_STEP_AT - 50_195 * EVERY, every=EVERY)
    fake.resume(PATH, LAST_STEP_AT + timedelta(minutes=10))
    fake.log(PATH, 100, start=RESUMED_AT, every=EVERY)  # 50,196 ..
    now = RESUMED_AT + 100 * EVERY + timedelta(minutes=5)
    await run_cycle(store, [source], now, detector=engine)

    report = await build_status(store, "hero", now)
    restart = report.last_restart
    assert restart is not None and restart.kind == RESTORE
    assert (restart.from_step, restart.to_step) == (50_195, 50_196)
    assert restart.down_for == timedelta(minutes=47)
    assert restart.went_on and restart.recomputed_steps is None
    card = status_card(report, Narrative("", now, "template"), local_formatter("UTC", now))
    [field] = [f.value for f in card.fields if f.name == "Last restart"]
    assert "resumed from step 50,196 after 47 min down" in field
    assert "recomputed" not in field
    if live:
        [incident] = await store.incidents.find("hero")
        assert incident.resolution is not None
        assert "Training resumed from step 50,196" in incident.resolution
        assert "no steps lost" not in incident.resolution
        assert "InfiniBand" in field


async def test_a_pause_the_process_ran_through_is_not_a_restart(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """Twelve minutes without a row (a long evaluation) while W&B's runtime ran on."""
    fake.add_run(PATH, display_name="hero-12d8b6f0", created_at=LAST_STEP_AT - timedelta(hours=3))
    source = await track(store, client, "_step")
    fake.log(PATH, 200, start=LAST_STEP_AT - 199 * EVERY, every=EVERY)
    await source.poll(LAST_STEP_AT + timedelta(minutes=1))
    fake.log(PATH, 50, start=LAST_STEP_AT + timedelta(minutes=12), every=EVERY)
    await source.poll(LAST_STEP_AT + timedelta(minutes=40))
    assert await store.events.restarts("hero") == []


async def test_an_account_written_after_the_restart_is_its_cause(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """The ops log explains the restart only once the run is back (the crash incident has
    resolved with no reported cause): the restart still carries that account, linked."""
    fake.add_run(PATH, display_name="hero-12d8b6f0", created_at=LAST_STEP_AT - timedelta(hours=3))
    source = await track(store, client, "train/step")
    engine = IncidentEngine(IncidentPosts())
    fake.log(PATH, 306, start=LAST_STEP_AT - 305 * EVERY, every=EVERY, step_key="train/step",
             first_value=50_000)  # fmt: skip
    fake.set_state(PATH, "running", heartbeat_at=LAST_STEP_AT)
    await run_cycle(store, [source], LAST_STEP_AT + timedelta(minutes=1), detector=engine)
    fake.set_state(PATH, "crashed")
    await run_cycle(store, [source], LAST_STEP_AT + timedelta(minutes=20), detector=engine)
    fake.resume(PATH, LAST_STEP_AT + timedelta(minutes=40))
    fake.log(PATH, 90, start=RESUMED_AT, every=EVERY, step_key="train/step", first_value=50_196)
    now = RESUMED_AT + 90 * EVERY
    await run_cycle(store, [source], now, detector=engine)
    [crash] = await store.incidents.find("hero")
    assert crash.status == "resolved" and crash.details.reported_cause is None

    await store.events.upsert_many([ops_comment(now)])
    now += timedelta(minutes=1)
    report = await build_status(store, "hero", now)
    assert report.restart_cause is not None
    assert report.restart_cause.text.startswith("An InfiniBand port fault on host s55sxs64")
    assert report.restart_cause.url == ops_comment(now).url
    card = status_card(report, Narrative("", now, "template"), local_formatter("UTC", now))
    [field] = [f.value for f in card.fields if f.name == "Last restart"]
    assert "Cause (loom-oa-dev, [GitHub #8506](" in field
    facts = await build_narrative_facts(store, "hero", now)
    assert facts.restart_incident is not None
    assert "InfiniBand" in (facts.restart_incident.reported_cause or "")
