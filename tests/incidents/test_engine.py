"""Scenarios through the real store and engine: what the sources would write, one poll cycle
(one simulated minute) at a time, and what ends up in the outbox."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from bot.enrich.rules import enrich_event
from bot.incidents.engine import IncidentEngine
from bot.incidents.service import acknowledge, incident_stats, list_incidents
from bot.incidents.silences import add_silence
from bot.models import MetricPoint
from bot.posts.incidents import IncidentPosts
from bot.store import Store
from tests.incidents.scenario import RUN_A, RUN_B, Scenario, content


async def crash(sc: Scenario) -> None:
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")


async def test_crash_then_resume_from_an_earlier_checkpoint(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(60)
    await crash(sc)
    await sc.run_for(45)
    await sc.launch(RUN_B, 5_000)  # a new W&B run restored from the step-5,000 checkpoint
    await sc.run_for(15)

    alerts = await sc.alerts_posted()
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert.payload["thread_name"].startswith("Incident #")
    assert "crashed at step 5,900" in content(alert)
    resolved = await sc.resolutions()
    assert len(resolved) == 1
    text = content(resolved[0])
    assert re.search(
        r"\nDown 4\d min: last step before the crash → first step after the restore\. "
        r"Training resumed from step 5,000 in run hero-b; 900 steps recomputed\.",
        text,
    ), text
    in_thread = [i for i in await sc.outbox() if i.kind == "resolved" and i.reply_to]
    assert [i.reply_to for i in in_thread] == [alert.id]
    incidents = await store.incidents.find("hero")
    assert [i.fingerprint for i in incidents] == ["wandb-state"]  # stall/heartbeat inhibited
    assert incidents[0].status == "resolved"
    assert incidents[0].resolved_at is not None
    assert incidents[0].resolved_at - incidents[0].started_at < timedelta(minutes=50)


async def test_a_flapping_heartbeat_is_one_incident(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(20)
    for silent, beating in ((17, 2), (16, 3), (17, 2), (16, 60)):
        sc.beating = False
        await sc.run_for(silent)
        sc.beating = True
        await sc.run_for(beating)
    await sc.run_for(120)

    incidents = await store.incidents.find("hero")
    assert [i.fingerprint for i in incidents] == ["heartbeat"]
    assert incidents[0].details.flaps >= 2
    assert incidents[0].status == "resolved"
    assert len(await sc.alerts_posted()) == 1
    assert len(await sc.resolutions()) == 1


async def test_a_stall_alerts_once_and_resolves_when_steps_return(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    sc.training = False  # hung: W&B says running, heartbeats fine, no step
    await sc.run_for(19)
    assert await sc.alerts_posted() == []
    await sc.run_for(15)
    alerts = await sc.alerts_posted()
    assert len(alerts) == 1
    assert "No new step" in content(alerts[0])
    sc.training = True
    await sc.run_for(10)
    resolved = await sc.resolutions()
    assert len(resolved) == 1
    assert "logging steps again" in content(resolved[0])
    assert len(await sc.alerts_posted()) == 1


async def test_nan_loss(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    sc.loss_override = float("inf")
    await sc.run_for(3)
    # NaN itself is stored as NULL by SQLite: the W&B summary carries it
    sc.loss_override = None
    sc.members[RUN_A].summary = {"train/loss": float("nan")}
    sc.training = False
    await sc.run_for(3)
    alerts = await sc.alerts_posted()
    assert len(alerts) == 1
    assert "Loss is inf" in content(alerts[0])
    sc.members[RUN_A].summary = {"train/loss": 2.01}
    sc.training = True
    await sc.run_for(10)
    assert len(await sc.resolutions()) == 1
    assert [i.fingerprint for i in await store.incidents.find("hero")] == ["loss-nan"]


async def test_loss_spike(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(40)
    sc.loss_override = 2.9  # ~45 % above the trend, for 5 points (default K = 3, X = 25 %)
    await sc.run_for(5)
    sc.loss_override = None
    await sc.run_for(10)
    alerts = await sc.alerts_posted()
    assert len(alerts) == 1
    assert "Loss spike" in content(alerts[0])
    assert len(await sc.resolutions()) == 1
    sc.loss_override = 2.5  # 25 % up for two points only: below K
    await sc.run_for(2)
    sc.loss_override = None
    await sc.run_for(10)
    assert len(await sc.alerts_posted()) == 1


async def test_a_loss_spike_logged_within_one_minute_is_seen(store: Store, now: datetime) -> None:
    """A run logging a step a second spikes for K = 3 points inside one minute: the newest
    minutes are judged from every point (the per-minute rollup keeps only a minute's first and
    last, which would leave two)."""
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(40)
    member = sc.members[RUN_A]
    spike = [
        MetricPoint(
            member.path, member.step + i, sc.now + timedelta(seconds=20 + i),
            (member.step + i) * 1e6, member.loss * 2,
        )
        for i in range(3)
    ]  # fmt: skip
    member.step += 3
    await store.metrics.add_points("hero", spike)
    await sc.run_for(5)
    alerts = await sc.alerts_posted()
    assert len(alerts) == 1, [content(a) for a in alerts]
    assert "Loss spike" in content(alerts[0])


async def test_node_loss_reported_in_github_then_wandb_crash_is_one_incident(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(60)
    report = await sc.report(
        "We lost node gpu-r07n3: it dropped off the InfiniBand fabric and the job is going down.",
        number=1507,
    )
    assert report.incident
    await sc.tick()
    await crash(sc)
    await sc.run_for(40)
    await sc.launch(RUN_A, 4_000)  # relaunched in place from an earlier checkpoint
    await sc.run_for(10)

    incidents = await store.incidents.find("hero")
    assert len(incidents) == 1
    incident = incidents[0]
    assert incident.id is not None
    linked = await store.incidents.events(incident.id)
    assert {e.source for e in linked} >= {"github", "wandb"}
    urls = [s.url or "" for s in incident.details.signals]
    assert any("github.com/lab/hero/issues/1507" in u for u in urls)
    assert any("wandb.ai" in u for u in urls)
    assert len(await sc.alerts_posted()) == 1
    resolved = await sc.resolutions()
    assert len(resolved) == 1
    assert "resumed from step 4,000" in content(resolved[0])
    # the crash joining the reported incident is a thread update, not a second alert
    updates = [i for i in await sc.outbox() if i.kind == "update"]
    assert any("crashed" in content(u) for u in updates)
    alert_id = (await sc.alerts_posted())[0].id
    assert all(u.reply_to == alert_id for u in updates)


async def test_an_issue_only_the_issue_scorer_reads_as_a_report_pages_once(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    title = "Grad norm panel looks odd since the relaunch"
    body = (
        "Since Tuesday's relaunch the grad norm panel shows a sawtooth every 500 steps that "
        "wasn't there before. Loss looks normal so far. Is this expected?"
    )
    report = await sc.report(body, title=title, kind="issue", number=2210)
    assert report.incident and report.tag == "incident"
    assert not enrich_event(report, learned=False).live_report  # the rules alone: no report
    await sc.tick()
    alerts = await sc.alerts_posted()
    assert len(alerts) == 1
    assert "issues/2210" in content(alerts[0])
    await sc.run_for(10)
    assert len(await sc.alerts_posted()) == 1


async def test_new_comments_on_the_reported_thread_go_to_the_alert_thread(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    await crash(sc)
    await sc.tick()
    await sc.report("The job crashed: OOM killed on 6 nodes during the checkpoint save.", number=9)
    await sc.tick()
    await sc.report("Looking into which shards are missing from step-41000.", number=9)
    await sc.tick()
    updates = [i for i in await sc.outbox() if i.kind == "update"]
    assert any("shards are missing" in content(u) for u in updates)
    assert len(await sc.alerts_posted()) == 1


async def test_nothing_is_posted_during_a_silence_but_incidents_are_recorded(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(10)
    silence = await add_silence(
        store, "hero", "all", timedelta(hours=2), "alice", "planned maintenance", sc.now
    )
    await sc.run_for(10)
    await crash(sc)
    await sc.run_for(30)
    await sc.launch(RUN_A, 1_000)
    await sc.run_for(10)
    assert await sc.outbox() == []
    incidents = await store.incidents.find("hero")
    assert len(incidents) == 1
    assert incidents[0].status == "resolved"
    assert incidents[0].details.silenced_by == silence.id
    await sc.run_for(120)  # the silence expires: a resolved incident stays quiet
    assert await sc.outbox() == []


async def test_an_incident_still_firing_when_its_silence_ends_is_alerted_then(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(10)
    await add_silence(store, "hero", "wandb-state", timedelta(minutes=30), "bob", "", sc.now)
    await crash(sc)
    await sc.run_for(20)
    assert await sc.outbox() == []
    await sc.run_for(20)
    assert len(await sc.alerts_posted()) == 1


async def test_engine_restart_in_the_middle_of_an_open_incident(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    await crash(sc)
    await sc.run_for(10)
    assert len(await sc.alerts_posted()) == 1
    sc.engine = IncidentEngine(
        IncidentPosts()
    )  # the bot restarted: a new engine over the same database
    await sc.run_for(10)
    open_ = await store.incidents.find("hero", open_only=True)
    assert len(open_) == 1
    await sc.launch(RUN_A, 2_000)
    await sc.run_for(10)
    assert len(await sc.alerts_posted()) == 1
    assert len(await sc.resolutions()) == 1


async def test_wandb_unreachable_for_an_hour_is_not_a_crash(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    sc.wandb_up = False  # the run trains fine; Runscribe just cannot see it
    await sc.run_for(60)
    sc.wandb_up = True
    await sc.run_for(20)
    incidents = await store.incidents.find("hero")
    assert {i.fingerprint for i in incidents} <= {"monitor-stale"}
    for item in await sc.outbox():
        assert "Monitor blind" in content(item) or item.kind in {"edit", "resolved"}
    assert len(await sc.alerts_posted()) <= 1
    assert len(await sc.resolutions()) == len(await sc.alerts_posted())
    assert all(i.status == "resolved" for i in incidents)


async def test_a_crash_while_wandb_is_unreachable_is_reported_once_it_answers(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    sc.wandb_up = False
    await sc.run_for(20)
    await crash(sc)
    await sc.run_for(20)
    assert [a for a in await sc.alerts_posted() if "crashed at" in content(a)] == []
    sc.wandb_up = True
    await sc.run_for(2)
    assert any("crashed" in content(a) for a in await sc.alerts_posted())


async def test_a_superseded_run_that_crashes_after_the_fork_is_not_an_incident(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    await sc.launch(RUN_B, 2_500)  # fork
    await sc.run_for(5)
    await sc.set_member_state(RUN_A, "crashed")  # the old run dies after the fork
    await sc.run_for(30)
    assert await store.incidents.find("hero") == []
    assert await sc.outbox() == []


async def test_no_alerts_channel_records_but_posts_nothing(store: Store, now: datetime) -> None:
    sc = Scenario(store, now, channel=None)
    await sc.start()
    await sc.run_for(10)
    await crash(sc)
    await sc.run_for(5)
    assert await sc.outbox() == []
    assert len(await store.incidents.find("hero", open_only=True)) == 1


async def test_pending_period_swallows_a_short_blip(store: Store, now: datetime) -> None:
    sc = Scenario(store, now, alerts={"pending_minutes": 5})
    await sc.start()
    await sc.run_for(10)
    await crash(sc)
    await sc.run_for(2)
    await sc.launch(RUN_A, 900)
    await sc.run_for(10)
    assert await sc.outbox() == []
    assert await list_incidents(store, "hero") == []  # never alerted: not listed


async def test_reminders_only_when_configured_and_stop_on_ack(store: Store, now: datetime) -> None:
    sc = Scenario(store, now, alerts={"reminder_minutes": 30})
    await sc.start()
    await sc.run_for(10)
    await crash(sc)
    await sc.run_for(65)
    reminders = [i for i in await sc.outbox() if "reminder" in i.dedup_key]
    assert len(reminders) == 2
    incident = (await store.incidents.find("hero", open_only=True))[0]
    assert incident.id is not None
    acked = await acknowledge(store, incident.id, "carol", sc.now)
    assert acked.acked_by == "carol"
    await sc.run_for(65)
    assert len([i for i in await sc.outbox() if "reminder" in i.dedup_key]) == 2
    edits = [i for i in await sc.outbox() if i.kind == "edit"]
    assert any("acknowledged by carol" in content(e) for e in edits)
    alert_id = (await sc.alerts_posted())[0].id
    assert all(e.payload["edit_of"] == alert_id for e in edits)


async def test_default_has_no_reminders(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(10)
    await crash(sc)
    await sc.run_for(180)
    assert [i for i in await sc.outbox() if "reminder" in i.dedup_key] == []
    assert len(await sc.outbox()) == 1  # the alert, nothing else while nothing changes


async def test_listing_and_stats(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    await crash(sc)
    await sc.run_for(20)
    await sc.launch(RUN_A, 2_000)
    await sc.run_for(10)
    await sc.tick(minutes=60)  # past the reopen window: the next crash is a new incident
    await crash(sc)
    await sc.run_for(5)
    views = await list_incidents(store, "hero")
    assert [v.open for v in views] == [True, False]
    assert views[1].duration is not None and views[1].duration > timedelta(minutes=15)
    assert "crashed" in views[1].cause
    assert len(await list_incidents(store, "hero", open_only=True)) == 1
    count, healed, *_ = await incident_stats(store, "hero")
    assert (count, healed) == (2, 1)
    assert await store.incidents.active_silences("hero", sc.now) == []


async def test_an_unchanged_incident_is_not_written_again(store: Store, now: datetime) -> None:
    """A resolved incident stays in the engine's window for a day (late reports still attach to
    it); cycles that change nothing about it write nothing. Counted at SQLite's statement
    trace, whatever path a write takes."""
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(10)
    statements: list[str] = []
    await store.db.conn.set_trace_callback(statements.append)

    def incident_writes() -> int:
        writes = [s for s in statements if re.match(r"\s*(UPDATE|INSERT INTO) incidents\b", s)]
        statements.clear()
        return len(writes)

    await crash(sc)
    await sc.run_for(2)
    assert incident_writes() >= 2  # a new incident is written, then again as it fires
    await sc.run_for(8)
    await sc.launch(RUN_B, 500)
    await sc.run_for(10)
    [incident] = await store.incidents.find("hero")
    assert incident.status == "resolved"
    await sc.tick(minutes=40)  # past the time people's posts about acting on it are read
    incident_writes()
    await sc.run_for(5)
    assert incident_writes() == 0
    assert [i.id for i in await store.incidents.relevant("hero", sc.now - timedelta(hours=1))] == [
        incident.id
    ]  # still in the window the engine reads: it was looked at, and left alone
    await store.db.conn.set_trace_callback(None)
