"""Drift incidents through the real store and engine: one alert and one resolution per episode,
silences as usual, and a crash inhibits them."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from bot.incidents.silences import add_silence
from bot.process.pipeline import enrich_pending
from bot.render.json import digest_json
from bot.services.digest import build_digest
from bot.services.timeline import build_timeline
from bot.store import Store
from tests.incidents.scenario import RUN_A, Scenario, content

GRAD = {
    "metric": "train/grad_norm",
    "label": "gradient norm",
    "direction": "up",
    "points": 3,
    "window": 40,
    "holdout": 10,
    "min_points": 30,
}


def noise(seed: int = 1):
    rng = random.Random(seed)
    return lambda step: 2.0 + rng.gauss(0, 0.02)


async def drifting_run(store: Store, now: datetime) -> tuple[Scenario, int]:
    """60 quiet minutes, then the gradient norm climbs. Returns the scenario and the step where
    the climb began."""
    sc = Scenario(store, now)
    sc.forecasts = [GRAD]
    sc.watched["train/grad_norm"] = noise()
    await sc.start()
    await sc.run_for(60)
    start = sc.members[RUN_A].step
    quiet = noise(2)
    sc.watched["train/grad_norm"] = lambda step: quiet(step) + 0.05 * (step - start) / sc.rate
    return sc, start


async def test_a_drift_alerts_once_names_the_metric_and_resolves_once(
    store: Store, now: datetime
) -> None:
    sc, start = await drifting_run(store, now)
    await sc.run_for(20)
    alerts = await sc.alerts_posted()
    assert len(alerts) == 1
    text = content(alerts[0])
    assert "gradient norm (train/grad_norm) drifting up" in text
    incidents = await store.incidents.find("hero", open_only=True)
    assert [(i.kind, i.severity) for i in incidents] == [("drift", "warning")]
    since = int(incidents[0].title.rsplit("since step ", 1)[1].replace(",", ""))
    assert start < since <= start + 6 * sc.rate  # it left the band within a few points

    sc.watched["train/grad_norm"] = noise(3)  # back to normal
    await sc.run_for(10)
    assert len(await sc.alerts_posted()) == 1
    resolved = await sc.resolutions()
    assert len(resolved) == 1
    assert "back inside the band for 3 points" in content(resolved[0])
    assert await store.incidents.find("hero", open_only=True) == []

    # Found in data, not in an event: the drift still has its /timeline entry, at its start.
    await enrich_pending(store)
    [incident] = await store.incidents.find("hero")
    entries = await build_timeline(store, "hero", sc.now, days=1)
    [entry] = [e for e in entries if e.source == "system"]
    assert (entry.at, entry.summary, entry.tag) == (incident.started_at, incident.title, "incident")


async def test_a_silenced_drift_posts_nothing_but_is_recorded(store: Store, now: datetime) -> None:
    sc, _ = await drifting_run(store, now)
    await add_silence(store, "hero", "drift", timedelta(hours=2), "amara", "known", sc.now)
    await sc.run_for(20)
    assert await sc.alerts_posted() == []
    assert [i.kind for i in await store.incidents.find("hero", open_only=True)] == ["drift"]


async def test_a_crash_inhibits_drift_alerts(store: Store, now: datetime) -> None:
    """The norm blows up in the last minutes before a crash, seen in the same cycle as the
    crash; the run then resumes from a checkpoint before the blow-up with a normal norm."""
    sc = Scenario(store, now)
    sc.forecasts = [GRAD]
    sc.watched["train/grad_norm"] = noise()
    await sc.start()
    await sc.run_for(60)
    checkpoint = sc.members[RUN_A].step
    sc.watched["train/grad_norm"] = lambda step: 40.0
    sc.engine.runs = {"nobody"}  # the poll that sees the blow-up also sees the crash
    await sc.run_for(6)
    sc.training = sc.beating = False
    await sc.set_state("crashed")
    sc.engine.runs = None
    await sc.run_for(30)
    sc.watched["train/grad_norm"] = noise(5)
    await sc.launch(RUN_A, checkpoint)  # relaunched from the checkpoint before the blow-up
    await sc.run_for(20)

    kinds = {i.kind for i in await store.incidents.find("hero")}
    assert kinds == {"crash"}
    alerts = await sc.alerts_posted()
    assert len(alerts) == 1 and "drifting" not in content(alerts[0])


async def test_the_digest_mentions_drifts_opened_and_resolved(store: Store, now: datetime) -> None:
    sc, _ = await drifting_run(store, now)
    await sc.run_for(20)
    sc.watched["train/grad_norm"] = noise(3)
    await sc.run_for(10)
    facts = await build_digest(store, "hero", sc.now)
    out = digest_json(facts)
    [opened] = out["drifts_opened"]
    assert opened.startswith("gradient norm (train/grad_norm) drifting up")
    assert out["drifts_resolved"] == [opened]
    assert opened.rstrip(".") in facts.text and "resolved after" in facts.text
