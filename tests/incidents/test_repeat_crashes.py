"""One run that crashes again and again: every crash after the previous one resolved is a new
incident with its own alert (issue 35), through the real engine on a real SQLite file."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from bot.incidents.silences import add_silence
from bot.models import IncidentDetails, Recurrence
from bot.posts.incidents import ordinal
from bot.render.stamps import stamp
from bot.store import Store
from bot.store.incidents import details_from_json, details_to_json
from tests.incidents.scenario import RUN_A, RUN_B, Scenario, content

REOPEN_MINUTES = 60  # the runs file's default `reopen_minutes`


async def crash_and_resume(sc: Scenario, *, report: bool = False, apart: bool = True) -> None:
    """The current W&B run crashes; after 10 minutes a new run (the first time) or the same
    run resumes from a checkpoint 500 steps back, and trains for 10 minutes. `apart`: an hour
    of training first, so the crash comes past the reopen window of an incident the previous
    crash resolved (a new incident; within the window it reopens: `test_reopen`)."""
    if apart:
        await sc.tick(minutes=REOPEN_MINUTES)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    if report:
        await sc.report("The hero job is down again: node gpu-r07n3 lost its NVLink.", number=77)
    await sc.run_for(10)
    assert sc.current is not None
    step = sc.members[sc.current].step - 500
    await sc.launch(RUN_B, step)  # the first time a new run of the chain, then in place
    await sc.run_for(10)


async def test_five_crash_resume_cycles_alert_five_times(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start(RUN_A)
    await sc.run_for(30)
    for n in range(1, 6):
        await crash_and_resume(sc)
        alerts = await sc.alerts_posted()
        assert len(alerts) == n, [content(a) for a in alerts]
        assert len(await sc.resolutions()) == n
    incidents = await store.incidents.find("hero")
    assert [i.status for i in incidents] == ["resolved"] * 5
    assert len({i.id for i in incidents}) == 5
    assert all(i.details.members["wandb-state"].since > now for i in incidents)
    health = await store.health.get("detection", "hero")
    assert health is None or health.consecutive_failures == 0
    # each alert after the first says which crash of the run it is, and when the last resolved
    alerts = await sc.alerts_posted()
    assert "Seen before on this run" not in content(alerts[0])
    oldest_first = sorted(incidents, key=lambda i: i.started_at)
    for n, (alert, previous) in enumerate(zip(alerts[1:], oldest_first[:-1], strict=True), start=2):
        said = content(alert)
        nth = ["", "", "2nd", "3rd", "4th", "5th"][n]
        assert f"Seen before on this run: the {nth} time (crash)" in said, said
        assert f"incident #{previous.id}" in said, said
        assert previous.resolved_at is not None
        assert stamp(previous.resolved_at) in said, said


async def test_five_cycles_reported_in_chat_alert_five_times(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start(RUN_A)
    await sc.run_for(30)
    for n in range(1, 6):
        await crash_and_resume(sc, report=True)
        assert len(await sc.alerts_posted()) == n
        assert len(await sc.resolutions()) == n
    incidents = await store.incidents.find("hero")
    assert len(incidents) == 5
    assert all(i.status == "resolved" for i in incidents)
    # each report is the cause of its own crash, not a follow-up of the one before
    for incident in incidents:
        assert incident.id is not None
        linked = await store.incidents.events(incident.id)
        assert [e.source for e in linked].count("github") == 1, incident.id
        assert incident.details.reported_cause is not None


async def test_a_silenced_crash_between_others(store: Store, now: datetime) -> None:
    """Crash 3 happens under a silence: recorded, not posted; crashes 4 and 5 alert again."""
    sc = Scenario(store, now)
    await sc.start(RUN_A)
    await sc.run_for(30)
    for n in range(1, 6):
        if n == 3:
            await sc.tick(minutes=REOPEN_MINUTES)
            await add_silence(store, "hero", "crash", timedelta(minutes=15), "ops", "drill", sc.now)
        await crash_and_resume(sc, apart=n != 3)
        if n == 3:
            await sc.run_for(15)  # the silence ends after the incident resolved: nothing said
    assert len(await sc.alerts_posted()) == 4
    assert len(await sc.resolutions()) == 4
    incidents = await store.incidents.find("hero")
    assert len(incidents) == 5
    assert all(i.status == "resolved" for i in incidents)


async def test_a_resume_and_the_next_crash_seen_in_one_round(
    store: Store, now: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    """Detection was held up (a slow cycle) while the run resumed and crashed again: one round
    sees both. The first incident resolves at the resume, and the second crash opens the next
    one in that same round (the store allows one unresolved incident per condition)."""
    sc = Scenario(store, now)
    await sc.start(RUN_A)
    await sc.run_for(30)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(10)
    assert len(await sc.alerts_posted()) == 1
    sc.engine.runs = {"elsewhere"}  # the next rounds do not reach this run
    await sc.launch(RUN_B, 2_000)
    await sc.run_for(8 + REOPEN_MINUTES)  # the next crash is past the reopen window
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    sc.engine.runs = None
    await sc.run_for(3)
    incidents = sorted(await store.incidents.find("hero"), key=lambda i: i.started_at)
    assert [i.status for i in incidents] == ["resolved", "firing"]
    assert len(await sc.alerts_posted()) == 2
    assert await store.health.get("detection", "hero") is None  # no round ever failed
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_ordinals_and_the_recurrence_stored() -> None:
    got = [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111, 112)]
    assert got == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th",
        "112th",
    ]  # fmt: skip
    at = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
    details = IncidentDetails(group="outage", recurrence=Recurrence(3, 12, at))
    assert details_from_json(details_to_json(details)).recurrence == Recurrence(3, 12, at)
    assert details_from_json('{"group": "outage"}').recurrence is None  # rows from before


async def test_crashes_hours_apart_and_after_a_monitor_blackout(
    store: Store, now: datetime
) -> None:
    """Long quiet stretches between crashes (the previous incident out of every window), and a
    stretch where W&B could not be reached: each crash still alerts once."""
    sc = Scenario(store, now)
    await sc.start(RUN_A)
    await sc.run_for(30)
    await crash_and_resume(sc)
    await sc.run_for(90)
    sc.wandb_up = False  # W&B unreachable for 20 minutes, then back
    await sc.run_for(20)
    sc.wandb_up = True
    await sc.run_for(90)
    await crash_and_resume(sc)
    await sc.run_for(90)
    await crash_and_resume(sc)
    crashes = [a for a in await sc.alerts_posted() if "crashed" in content(a)]
    assert len(crashes) == 3, [content(a) for a in await sc.alerts_posted()]
    assert "the 3rd time (crash)" in content(crashes[-1])
    incidents = await store.incidents.find("hero")
    assert all(i.status == "resolved" for i in incidents)
