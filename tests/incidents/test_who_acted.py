"""Who acted, through the real store, rules and engine: a person's action on
an open incident is recorded with who, when and what they said, and the resolution says it;
the incident survives a reload from the store with it."""

from __future__ import annotations

from datetime import datetime

from bot.incidents.engine import IncidentEngine
from bot.incidents.service import list_incidents
from bot.posts.incidents import IncidentPosts
from bot.store import Store
from tests.incidents.scenario import RUN_B, Scenario, content


async def test_the_resolution_names_who_fixed_it(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(60)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(3)
    await sc.report("node lost, ECC errors on host 12", source="discord", author="bob")
    await sc.run_for(2)
    acted = await sc.report(
        "I drained host 12 and requeued, should resume from the last checkpoint",
        source="discord",
        author="dave",
    )
    sc.engine = IncidentEngine(
        IncidentPosts()
    )  # a new process: everything comes back from the store
    await sc.run_for(2)
    await sc.launch(RUN_B, 5_000)
    await sc.run_for(10)

    [incident] = await store.incidents.find("hero")
    assert incident.status == "resolved"
    action = incident.details.action
    assert action is not None
    assert (action.who, action.at, action.url, action.event_id) == (
        "dave",
        acted.at,
        acted.url,
        acted.id,
    )
    assert action.text == "I drained host 12 and requeued, should resume from the last checkpoint"
    expected = f"dave drained host 12 and requeued at {acted.at:%H:%M} UTC. Training resumed"
    assert incident.resolution is not None and incident.resolution.startswith(expected)
    assert incident.details.reported_cause is not None
    assert incident.details.reported_cause.author == "bob"  # the reporter, not the fixer
    [resolved] = await sc.resolutions()
    assert expected in content(resolved)
    assert content(resolved).count("dave drained host 12") == 1
    [listed] = await list_incidents(store, "hero")
    assert listed.resolution is not None and listed.resolution.startswith(expected)


async def test_a_recovery_on_its_own_credits_nobody(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(60)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(3)
    await sc.report("node r3 lost, it came back on its own", source="discord", author="bob")
    await sc.launch(RUN_B, 5_000)
    await sc.run_for(10)
    [incident] = await store.incidents.find("hero")
    assert incident.status == "resolved"
    assert incident.details.action is None and incident.details.acted_by is None
    assert incident.resolution is not None and incident.resolution.startswith("Training resumed")
