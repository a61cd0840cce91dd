"""Who acted, through the real store, rules and engine: a person's action on
an open incident is recorded with who, when and what they said, and the resolution says it;
the incident survives a reload from the store with it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.hooks.alertmanager import alert_event, parse_message
from bot.incidents.engine import IncidentEngine
from bot.incidents.service import list_incidents
from bot.posts.incidents import IncidentPosts
from bot.store import Store
from tests.fakes.alertmanager import Alert, message
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


async def test_an_action_is_credited_once_never_to_a_later_unrelated_incident(
    store: Store, now: datetime
) -> None:
    """Dave's requeue fixed the crash; an Xid alert on another host fires minutes later. The
    requeue is the crash's alone: the alert's resolution names nobody."""
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(60)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(3)
    await sc.report("node lost, ECC errors on host 12", source="discord", author="bob")
    await sc.run_for(1)
    acted = await sc.report(
        "requeued on a spare, dropping host 12", source="discord", author="dave"
    )
    await sc.run_for(1)
    await sc.launch(RUN_B, 5_000)
    await sc.run_for(8)
    [crash] = await store.incidents.find("hero")
    assert crash.status == "resolved" and crash.details.action is not None
    assert crash.details.action.event_id == acted.id

    alert = Alert(
        labels={"alertname": "GPUXidError", "run": "hero", "instance": "node-17:9400"},
        annotations={"summary": "Xid 79 on GPU 3", "description": "GPU 3 on node-17 fell off"},
        starts_at=sc.now,
    )
    [parsed] = parse_message(json.dumps(message([alert])).encode())
    await store.events.upsert_many([alert_event("hero", parsed)])
    await sc.run_for(3)
    alert.ends_at = sc.now
    [parsed] = parse_message(json.dumps(message([alert])).encode())
    await store.events.upsert_many([alert_event("hero", parsed)])
    await sc.run_for(15)

    later = [i for i in await store.incidents.find("hero") if i.id != crash.id]
    assert [i.kind for i in later] == ["GPUXidError"] and later[0].status == "resolved"
    assert later[0].details.action is None and "dave" not in (later[0].resolution or "")
    resolutions = [content(r) for r in await sc.resolutions()]
    assert sum("dave" in r for r in resolutions) == 1, resolutions  # credited once


async def test_a_post_just_before_an_incident_counts_only_when_it_names_its_host(
    store: Store, now: datetime
) -> None:
    """'draining r12n4' written just before r12n4's crash report is the action on it; an
    action on something else written before an incident is not."""
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    await sc.report("restarted the eval exporter", source="discord", author="fay")
    await sc.run_for(1)
    drained = await sc.report("draining r12n4, it keeps flapping", source="discord", author="eve")
    await sc.run_for(2)
    await sc.report("node r12n4 lost, the job is down", source="discord", author="gus")
    await sc.run_for(5)
    [incident] = await store.incidents.find("hero")
    assert incident.details.action is not None
    assert incident.details.action.event_id == drained.id


async def test_the_crash_alert_says_the_crash_step_once(store: Store, now: datetime) -> None:
    """The alert message (its text and its card) names the crash and its last step once; the
    report's cause is quoted once."""
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(60)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(3)
    await sc.report("node lost, ECC errors on host 12", source="discord", author="bob")
    await sc.run_for(2)
    [incident] = await store.incidents.find("hero")
    step = incident.title.rsplit(" ", 1)[1]  # "… crashed at step 5,900"
    heads = [i for i in await sc.outbox() if i.kind in ("alert", "edit")]
    assert heads
    for head in heads:
        card = head.payload["card"]
        said = " ".join(
            [head.payload["content"], card["title"], card["description"]]
            + [f["value"] for f in card["fields"]]
        )
        assert said.count(step) == 1, said
        assert said.count("crashed") <= 2, said  # the headline, and the W&B state as evidence
        assert said.count("ECC errors on host 12") <= 1, said


def test_the_resolution_says_when_in_the_runs_zone() -> None:
    """'dave … at 05:01 EDT', never a bare UTC time in a New York run (issue 36)."""
    from bot.incidents.people import action_line
    from bot.models import IncidentAction

    at = datetime(2026, 9, 1, 9, 1, tzinfo=UTC)
    action = IncidentAction("dave", at, "I drained host 12 and requeued", "Discord #hero-run")
    said = action_line(action, "America/New_York")
    assert said == "dave drained host 12 and requeued at 05:01 EDT"
    assert action_line(action) == "dave drained host 12 and requeued at 09:01 UTC"
