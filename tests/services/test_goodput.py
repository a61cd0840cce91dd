"""Goodput on every surface, from a chain fed into a real store: a run that crashed after step
4,000, resumed three hours later in a new W&B run from the checkpoint at 3,500, and a stall
two days ago. The card, `status --json`, the page and the digest all read one computation,
which equals the hand computation within 0.1 point."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.models import (
    NEW_RUN,
    Event,
    Incident,
    IncidentDetails,
    IncidentMember,
    MetricPoint,
    Restart,
    RunInfo,
)
from bot.outputs.digests import compose_text
from bot.outputs.statuspage import gather_run_page
from bot.render.cards import status_card
from bot.render.json import status_json
from bot.render.page import render_run_page
from bot.render.terminal import local_formatter
from bot.services.digest import build_digest
from bot.services.narrative import current_narrative
from bot.services.status import build_status
from bot.store import Store

LAUNCH = datetime(2026, 8, 20, tzinfo=UTC)
NOW = LAUNCH + timedelta(days=10)
H = timedelta(hours=1)
STOP = LAUNCH + 40 * H
RESUME = STOP + 3 * H


async def feed(store: Store) -> None:
    await store.runs.upsert(
        RunInfo(
            slug="hero",
            name="Hero",
            total_steps=100_000,
            launched_at=LAUNCH,
            config={"wandb_runs": ["e/p/hero-1", "e/p/hero-2"]},
        )
    )
    first = [MetricPoint("e/p/hero-1", 100 * h, LAUNCH + h * H) for h in range(41)]
    hours = int((NOW - RESUME) / H)
    second = [MetricPoint("e/p/hero-2", 3_600 + 100 * h, RESUME + h * H) for h in range(hours)]
    await store.metrics.add_points("hero", first + second)
    restart = Restart(
        at=RESUME,
        kind=NEW_RUN,
        wandb_run="e/p/hero-2",
        previous_run="e/p/hero-1",
        from_step=4_000,
        to_step=3_600,
        stopped_at=STOP,
        resumed_at=RESUME,
        interval=100,
    )
    await store.events.upsert_many(
        [Event("hero", "wandb", "restart:hero-2", "restart", RESUME, extra=restart.to_json())]
    )
    since = NOW - 48 * H
    member = IncidentMember(kind="stall", title="stall", since=since, until=since + 2 * H)
    await store.incidents.save(
        Incident(
            run_slug="hero",
            fingerprint="stall",
            kind="stall",
            title="No new step",
            status="resolved",
            started_at=since,
            resolved_at=since + 2 * H,
            details=IncidentDetails(members={"stall": member}),
        )
    )


async def test_goodput_on_the_card_json_and_digest_equals_the_hand_computation(
    store: Store,
) -> None:
    await feed(store)
    wall = (NOW - LAUNCH).total_seconds()
    down = 3 * 3_600 + 2 * 3_600
    recompute = (4_000 - 3_500) * 36  # 100 steps an hour before the crash: 36 s a step
    expected = 100 * (wall - down - recompute) / wall
    report = await build_status(store, "hero", NOW)
    narrative = await current_narrative(store, report)
    data = status_json(report, narrative)["goodput"]
    assert data["percent"] == pytest.approx(expected, abs=0.1)
    assert data["wall_seconds"] == wall and data["down_seconds"] == down
    assert data["recompute_seconds"] == pytest.approx(recompute)
    assert data["steps_recomputed"] == 500 and data["incidents"] == 2
    week = data["last_7d"]
    assert week["down_seconds"] == 2 * 3_600 and week["steps_recomputed"] == 0
    card = status_card(report, narrative, local_formatter("UTC", NOW))
    shown = next(f.value for f in card.fields if f.name == "Goodput")
    assert f"since launch: {expected:.1f}% · 5 h down in 2 incidents" in shown
    assert "500 steps recomputed" in shown
    page = render_run_page(await gather_run_page(store, "hero", NOW, days=7))
    assert f"Goodput since launch: {expected:.1f}% · 5 h down in 2 incidents" in page
    digest = await build_digest(store, "hero", NOW)
    assert digest.goodput_moved is not None and "rose" in digest.goodput_moved
    assert digest.goodput_moved in digest.text


async def test_a_composed_digest_still_says_how_goodput_moved(store: Store) -> None:
    await feed(store)
    facts = await build_digest(store, "hero", NOW)
    assert facts.goodput_moved is not None

    async def model(_: object) -> str:
        return "Training ran all day."

    text = await compose_text(facts, model)
    assert text == f"Training ran all day.\n\n{facts.goodput_moved}"
