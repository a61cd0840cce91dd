"""An incident that reopens: the same condition back within the run's `reopen_minutes` of its
resolution is the same incident again, not a new one (issue 42, issue 35 item 0). Through the
real engine on a real SQLite file (and the fake GitHub for the ops log): the reopening alerts
once (a channel post pinging the alert role, a thread post, the head back to firing with its
Acknowledge button), resolves again once, and its one write-up and one ops-log comment are
edited to cover both outages, also with a new engine (a restart) between every step."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from bot.analysis.goodput import down_intervals
from bot.config.runsfile import Thresholds
from bot.incidents.engine import IncidentEngine
from bot.incidents.service import acknowledge, list_incidents
from bot.incidents.silences import add_silence
from bot.incidents.writeup import outages_of, report_for
from bot.models import Incident, IncidentDetails, IncidentMember, OutboxItem, PastOutage
from bot.outputs.opslog import OpsLogDetector, OpsLogWriter
from bot.posts.incidents import IncidentPosts, ack_button, listing_card
from bot.posts.writeup import writeup_markdown
from bot.render.json import iso, status_json
from bot.render.stamps import stamp
from bot.services.narrative import Narrative
from bot.services.status import build_status
from bot.services.timeline import build_timeline
from bot.store import Store
from bot.store.incidents import details_from_json, details_to_json
from tests.cli.test_check_config import GOOD, check
from tests.fakes.github import FakeGitHub
from tests.incidents.scenario import RUN_B, Scenario, content
from tests.incidents.test_ops_log import comments, log_issue
from tests.incidents.test_repeat_crashes import REOPEN_MINUTES, crash_and_resume
from tests.incidents.test_writeup import crash_and_requeue, writeups


def fresh(sc: Scenario) -> None:
    """A new engine over the same store: what a restarted process has."""
    sc.engine = IncidentEngine(IncidentPosts())


async def crash_again(sc: Scenario, *, down: int = 5, back_to: int = 5_500) -> None:
    """The run training now (hero-b) crashes; `down` minutes later it resumes in place from
    `back_to`, and trains for 10 minutes."""
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(down)
    await sc.launch(RUN_B, back_to)


async def only_incident(store: Store) -> Incident:
    [incident] = await store.incidents.find("hero")
    return incident


def keyed(items: list[OutboxItem], key: str) -> list[OutboxItem]:
    return [i for i in items if i.dedup_key == key]


async def test_a_crash_within_the_window_reopens_and_is_edited_into_one_writeup(
    store: Store, now: datetime
) -> None:
    sc, incident_id = await crash_and_requeue(store, now)  # down minute 60 → 69, 900 steps
    first = await only_incident(store)
    assert first.resolved_at is not None
    [head] = [i for i in await sc.outbox() if i.kind == "alert"]
    [writeup] = writeups(await sc.outbox(), incident_id)
    fresh(sc)
    await crash_again(sc)  # last row 5,900 at minute 78; crashed at 79
    incident = await only_incident(store)  # the same incident, not a second one
    assert incident.id == incident_id and incident.status == "firing"
    assert incident.details.reopens == 1
    items = await sc.outbox()
    [reopened] = keyed(items, f"incident:{incident_id}:reopen:1")
    said = content(reopened)
    gap = incident.details.outages[0].reopened_at - first.resolved_at
    assert f"🔁 **Incident #{incident_id} reopened** — Hero 70B: W&B run hero-b crashed" in said
    assert f"again, {gap.seconds // 60} min after it resolved at {first.resolved_at:%H:%M} UTC" in (
        said
    )
    assert reopened.kind == "alert" and reopened.reply_to is None  # in the channel
    [thread_post] = keyed(items, f"incident:{incident_id}:reopen:1:thread")
    assert thread_post.reply_to == head.id and "🔁 Reopened" in content(thread_post)
    # the head is back to firing, its Acknowledge button back
    edit = [i for i in items if i.kind == "edit" and i.payload.get("edit_of") == head.id][-1]
    assert "🔁 **Incident" in content(edit) and "Firing again since" in content(edit)
    assert edit.payload["buttons"] == [ack_button(incident_id)]
    fresh(sc)
    await sc.run_for(10)  # resumed at minute 84, first row (step 5,500) at minute 85
    incident = await only_incident(store)
    assert incident.status == "resolved" and incident.details.reopens == 1
    items = await sc.outbox()
    channel = [i for i in items if i.kind == "resolved" and i.reply_to is None]
    assert len(channel) == 2 and "✅ **Resolved again** incident" in content(channel[1])
    assert "down 16 min over 2 outages" in content(channel[1]).lower()
    closings = [i for i in items if i.kind == "resolved" and i.reply_to == head.id]
    assert len(closings) == 2 and all(c.payload["archive_thread"] for c in closings)
    # one write-up, edited to cover both outages
    assert writeups(items, incident_id) == [writeup]
    edits = [i for i in items if i.dedup_key.startswith(f"incident:{incident_id}:writeup:edit:")]
    assert edits and all(e.payload["edit_of"] == writeup.id for e in edits)
    text = content(edits[-1])
    assert "First symptom Sep 2 at 1:01 p.m. UTC: W&B run hero-a crashed" in text
    assert "reopened 10 min later, Sep 2 at 1:19 p.m. UTC: W&B run hero-b crashed" in text
    # 9 min (minute 60 → 69) + 7 min (minute 78 → 85)
    assert "16 min down (2 outages, each last step before the interruption" in text
    # 900 steps (5,900 → 5,000) + 400 (5,900 → 5,500), at 0.6 s and 1M tokens a step
    assert "1,300 steps (1.3B tokens) recomputed, 13 min at 0.6 s a step" in text
    # 64 GPUs × (16 min down + 13 min recomputing)
    assert "31 GPU-hours (64 GPUs × 29 min without new progress)" in text
    assert "Outage 1: W&B run hero-b logged again" in text and "Outage 2:" in text
    # dave's requeue belongs to the first outage; nobody acted on the second
    [past] = incident.details.outages
    assert past.action is not None and past.action.who == "dave"
    assert incident.details.action is None
    assert text.count("I drained r7 and requeued the job") == 1
    assert "dave drained r7 and requeued the job" not in (incident.resolution or "")
    # goodput: each outage once, the healthy stretch between them not down
    spans = down_intervals([], [incident], sc.now)
    assert [(b - a) for a, b in spans] == [
        (o.until or sc.now) - o.since for o in outages_of(incident)
    ]
    assert len(spans) == 2 and spans[0][1] < spans[1][0]
    # a new engine over the same store re-posts nothing
    fresh(sc)
    await sc.run_for(5)
    assert len(await sc.outbox()) == len(items)


async def test_the_ops_log_comment_is_edited_when_it_resolves_again(
    store: Store, now: datetime, github: FakeGitHub
) -> None:
    sc, _ = await crash_and_requeue(store, now)
    repo, number = await log_issue(store, github)
    async with httpx.AsyncClient() as client:
        writer = OpsLogWriter(client, github.url, SecretStr("t"))
        sc.engine = OpsLogDetector(IncidentEngine(IncidentPosts()), writer)
        await sc.tick()
        [before] = comments(repo, number)
        assert "900 steps (900M tokens)" in before.body
        sc.engine = OpsLogDetector(IncidentEngine(IncidentPosts()), writer)  # restart
        await crash_again(sc)
        assert [c.body for c in comments(repo, number)] == [before.body]  # while it is open
        sc.engine = OpsLogDetector(IncidentEngine(IncidentPosts()), writer)  # restart
        await sc.run_for(10)
    [after] = comments(repo, number)
    assert after.id == before.id
    # one more minute trained before this crash: 900 + 500 (6,000 → 5,500) steps
    assert "1,400 steps (1.4B tokens) recomputed" in after.body
    assert "reopened 11 min later" in after.body  # resolved minute 69, crashed at 80


@pytest.fixture
async def github() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub() as server:
        yield server


async def test_a_crash_past_the_window_is_a_new_incident(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    await crash_and_resume(sc, apart=False)
    await crash_and_resume(sc, apart=True)  # an hour of training first
    incidents = await store.incidents.find("hero")
    assert len(incidents) == 2 and all(i.details.reopens == 0 for i in incidents)
    alerts = await sc.alerts_posted()
    assert len(alerts) == 2 and "Seen before on this run: the 2nd time (crash)" in content(
        alerts[1]
    )


async def test_reopen_minutes_zero_never_reopens(store: Store, now: datetime) -> None:
    sc = Scenario(store, now, alerts={"reopen_minutes": 0})
    await sc.start()
    await sc.run_for(30)
    await crash_and_resume(sc, apart=False)
    await crash_and_resume(sc, apart=False)
    incidents = await store.incidents.find("hero")
    assert len(incidents) == 2 and all(i.details.reopens == 0 for i in incidents)
    assert not [i for i in await sc.outbox() if ":reopen:" in i.dedup_key]


async def test_five_cycles_inside_and_outside_the_window_alert_once_each(
    store: Store, now: datetime
) -> None:
    """Crash/resume five times, some within the window of the incident before, some past it,
    with a new engine before each: one alert and one resolution in the channel per crash."""
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    pattern = [False, False, False, True, False]  # apart: crash 4; crashes 2, 3 and 5 reopen
    for n, apart in enumerate(pattern, start=1):
        fresh(sc)
        await crash_and_resume(sc, apart=apart)
        assert len(await sc.alerts_posted()) == n
        assert len(await sc.resolutions()) == n
    incidents = sorted(await store.incidents.find("hero"), key=lambda i: i.started_at)
    assert [i.details.reopens for i in incidents] == [2, 1]
    assert all(i.status == "resolved" for i in incidents)
    alerts = await sc.alerts_posted()
    said = [content(a) for a in alerts]
    assert [("reopened" in s) for s in said] == [False, True, True, False, True]
    # the 4th crash is the run's 4th outage of the condition: reopenings count
    assert "Seen before on this run: the 4th time (crash)" in said[3]
    for incident in incidents:
        [writeup] = writeups(await sc.outbox(), incident.id or 0)
        assert writeup.reply_to is not None
    listing = await list_incidents(store, "hero")
    assert [v.id for v in listing] == [i.id for i in reversed(incidents)]


async def test_a_silenced_reopening_is_announced_when_the_silence_ends(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    await crash_and_resume(sc, apart=False)
    await add_silence(store, "hero", "crash", timedelta(minutes=5), "ops", "drill", sc.now)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(3)  # silenced: reopened, nothing said
    assert (await only_incident(store)).details.reopens == 1
    assert not [i for i in await sc.outbox() if ":reopen:" in i.dedup_key]
    await sc.run_for(5)  # the silence is over, the run still down: said once now
    assert len([i for i in await sc.outbox() if i.dedup_key.endswith(":reopen:1")]) == 1
    assert len(await sc.alerts_posted()) == 2


async def test_an_acknowledgement_belongs_to_its_outage(store: Store, now: datetime) -> None:
    """Acknowledged in its first outage; reopened, it is not acknowledged (reminders come back)
    until someone acknowledges it again, and the write-up names both."""
    sc = Scenario(store, now, alerts={"reminder_minutes": 5})
    await sc.start()
    await sc.run_for(30)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(2)
    incident = await only_incident(store)
    assert incident.id is not None
    await acknowledge(store, incident.id, "dave", sc.now)
    await sc.run_for(8)
    await sc.launch(RUN_B, 2_000)
    await sc.run_for(10)
    assert not [i for i in await sc.outbox() if ":reminder:" in i.dedup_key]
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(7)  # reopened, not acknowledged: reminded after 5 minutes
    incident = await only_incident(store)
    assert incident.status == "firing" and incident.acked_by is None
    assert incident.details.outages[0].acked_by == "dave"
    assert len([i for i in await sc.outbox() if ":reminder:" in i.dedup_key]) == 1
    await acknowledge(store, incident.id, "erin", sc.now)
    await sc.launch(RUN_B, 2_500)
    await sc.run_for(10)
    [edit] = [
        i
        for i in await sc.outbox()
        if i.dedup_key.startswith(f"incident:{incident.id}:writeup:edit:")
    ]
    assert "Acknowledged by dave" in content(edit) and "Acknowledged by erin" in content(edit)


def test_check_config_knows_the_window(tmp_path: Path) -> None:
    assert Thresholds().reopen_minutes == REOPEN_MINUTES
    assert Thresholds(reopen_minutes=0).reopen_minutes == 0  # never reopens
    bad = check(tmp_path, GOOD + "[runs.alerts]\nreopen_minutes = -5\n")
    assert bad.returncode == 2
    assert "runs[0].alerts.reopen_minutes: Input should be greater than or equal to 0" in (
        bad.stderr
    )
    good = check(tmp_path, GOOD + "[runs.alerts]\nreopen_minutes = 0\n")
    assert good.returncode == 0, good.stderr
    assert "hero: a resolved incident never reopens (reopen_minutes = 0)" in good.stdout
    default = check(tmp_path, GOOD)
    assert "hero: an incident whose condition returns within 60 min of its resolution " in (
        default.stdout
    )


async def test_the_reopening_is_said_where_an_incident_is_listed(
    store: Store, now: datetime
) -> None:
    """`status --json` (while it is open again), `/incidents`, `/timeline` and the write-up of
    `/incidents report ID` and `runscribe incident ID` say that it reopened, and when."""
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    await crash_and_resume(sc, apart=False)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(2)
    incident = await only_incident(store)
    assert incident.id is not None
    [outage] = incident.details.outages
    data = status_json(await build_status(store, "hero", sc.now), Narrative("", None, "template"))
    [open_one] = data["open_incidents"]
    assert open_one["reopens"] == 1
    assert open_one["reopened"] == [
        {"resolved_at": iso(outage.until), "reopened_at": iso(outage.reopened_at)}
    ]
    timeline = await build_timeline(store, "hero", sc.now)
    notes = [e for e in timeline if e.source == "system" and "reopened" in e.summary]
    assert len(notes) == 1 and notes[0].at == outage.reopened_at
    await sc.launch(RUN_B, 2_000)
    await sc.run_for(10)
    card = listing_card(await list_incidents(store, "hero"), "Hero", open_only=False, now=sc.now)
    [field] = card.fields
    assert f"🔁 reopened 1×: resolved {stamp(outage.until)} → back" in field.value
    assert stamp(outage.reopened_at, "time") in field.value
    note = writeup_markdown(*await report_for(store, incident.id))
    assert "; reopened " in note and "Resolved again" in note


def test_a_reopened_incidents_outages_are_stored_and_read_back() -> None:
    at = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
    member = IncidentMember("crash", "W&B run hero-a crashed", at, until=at + timedelta(minutes=9))
    outage = PastOutage(
        since=at,
        until=at + timedelta(minutes=9),
        reopened_at=at + timedelta(minutes=20),
        title="W&B run hero-a crashed",
        acked_by="dave",
        acked_at=at + timedelta(minutes=2),
        members={"wandb-state": member},
    )
    details = IncidentDetails(group="outage", outages=[outage], reopen_posted=1)
    assert details_from_json(details_to_json(details)) == details
    assert "outages" not in details_to_json(IncidentDetails())  # rows that never reopened
