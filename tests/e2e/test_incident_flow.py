"""Incidents end to end, through the real protocols (the deployment of `tests.e2e.deployment`:
the fakes polled by a real Runtime, delivered by a real RunscribeBot to the fake Discord). Every
assertion is on what the fake Discord received in the alerts channel and in the alert's thread.

Time is simulated: each poll cycle runs at an explicit `now` that matches the timestamps the
fakes serve (W&B history and heartbeats, the fake GitHub's clock). The bot gets the same clock,
and its own poll loop goes through the same lock as the cycles the test drives, so detection
happens one cycle at a time, as in a process running `runscribe poll --once` beside the bot.
Simulated time stays behind the wall clock until `runscribe status --json` has run (it uses the
wall clock), so the real CLI sees the same picture as the simulated cycles.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta
from pathlib import Path

from pydantic import SecretStr

from bot.incidents.detectors import CRASH, HEARTBEAT, MONITOR, STALL
from bot.process.pipeline import THREADS, WANDB
from bot.process.wiring import open_runtime
from bot.services.status import build_status
from tests.e2e.deployment import (
    FIRST,
    MIN,
    ONCALL,
    REPO,
    RESUMED,
    WATCHED,
    SimClock,
    assert_head_resolved,
    assert_resolved_once,
    assert_thread_closed,
    crash,
    deployed,
    full_text,
    github_deployment,
    healthy_deployment,
    healthy_run,
    make_runs,
    make_settings,
    now_utc,
    resume,
    rows,
    run_cli,
    visible,
)
from tests.fakes.anthropic import FakeAnthropic, Recorded, Reply, auto_reply
from tests.fakes.discord import FakeDiscord
from tests.fakes.github import FakeGitHub
from tests.fakes.wandb import FakeWandb
from tests.waiting import PATIENCE, until

REPORT = "Hero is down: node r12n4 lost, double-bit ECC on GPU 3. Requeueing onto a spare."


# --- 1. crash, then resume from an earlier checkpoint in a new chain run ------------------------


async def test_crash_then_resume_in_a_new_run_alerts_once_and_resolves_once(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    async with healthy_deployment(tmp_path, wb, fake_discord) as d:
        t0 = d.t0
        assert d.channel() == []  # healthy: nothing to say

        alert = await crash(d, wb)
        assert "Incident #" in visible(alert) and "hero-1 crashed at step 99" in visible(alert)
        assert d.thread(alert) == []  # the thread is open, empty so far

        await d.cycle(t0 + 10 * MIN)  # still down: no reminder, no repeat
        assert len(d.channel()) == 1 and d.thread(alert) == []

        # hero-2 appears at +12 min and restores the step-80 checkpoint (hero-1 had reached 99).
        resume(wb, t0 + 12 * MIN, first_step=80, count=10)  # steps 80..89 from +15 min
        await d.cycle(t0 + 25 * MIN)
        head, resolved = d.channel()
        assert head["id"] == alert["id"]
        text = visible(resolved)
        assert text.startswith("✅ **Resolved** incident #")
        assert "resumed from step 80 in run hero-2" in text
        assert "Down 16 min: last step before the crash → first step after the restore" in text
        assert "20 steps recomputed" in text and text.count("16 min") == 1  # 80..99 twice
        writeup, _closing = d.thread(head)  # the write-up, then the closing line
        assert visible(writeup).startswith("📝 Write-up of incident #")
        assert "16 min down (last step before the interruption" in full_text(writeup)
        assert "; 20 steps " in full_text(writeup)  # 80..99 twice
        await assert_resolved_once(d, head)

        # Training goes on in hero-2: later cycles post nothing, in the channel or the thread.
        posts = len(fake_discord.message_requests())
        for minutes in (30, 35, 40):  # steps 90..104, one a minute from +25 min
            wb.append_rows(RESUMED, rows(65 + minutes, 5, t0 + (minutes - 5) * MIN))
            await d.cycle(t0 + minutes * MIN)
        assert len(d.channel()) == 2 and len(d.thread(head)) == 2
        assert len(fake_discord.message_requests()) == posts
        [incident] = await d.store.incidents.find("hero")
        assert incident.status == "resolved" and incident.fingerprint == CRASH


# --- 2. a lost node reported in GitHub, then the W&B crash: one incident ------------------------


async def test_github_node_loss_then_wandb_crash_is_one_incident_with_both_links(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    async with github_deployment(tmp_path, wb, fake_discord) as (d, github, repo):
        t0 = d.t0
        assert d.channel() == []

        # +2 min: an operator reports the lost node; the trainer has logged nothing since.
        github.advance(minutes=2)
        number = repo.add_issue(
            "Hero run: lost node s12",
            "Node s12 lost connectivity and the gang failed.",
            user="dana",
            labels=["hero-run"],
        )
        issue_url = f"https://github.com/{REPO}/issues/{number}"
        await d.cycle(t0 + 4 * MIN)
        [alert] = d.channel()
        assert "Node loss reported in GitHub" in visible(alert)
        assert issue_url in full_text(alert)

        # +8 min: W&B marks the run crashed (40 minutes inside the grouping window).
        wb.set_state(FIRST, "crashed", heartbeat_at=t0 + 3 * MIN)
        github.advance(minutes=8)
        await d.cycle(t0 + 10 * MIN)
        [head] = d.channel()  # still one alert: the crash joined the reported incident
        thread = d.thread(head)
        assert thread, "the crash was not reported in the alert's thread"
        together = "\n".join([full_text(head), *map(full_text, thread)])
        assert issue_url in together
        assert "W&B run hero-1 crashed at step 99" in together
        assert "runs/hero-1" in together  # the W&B run's own link
        assert re.search(r"^<t:\d+:t> ", visible(thread[0]), re.M), visible(thread[0])
        [incident] = await d.store.incidents.find("hero")
        assert incident.status == "firing"
        assert {CRASH, f"report:node-loss:github:{REPO}#{number}"} <= set(
            incident.details.members
        ), incident.details.members

        # Training resumes in a new run: the one incident resolves once.
        resume(wb, t0 + 12 * MIN, first_step=90, count=10)
        github.advance(minutes=15)
        await d.cycle(t0 + 25 * MIN)
        await d.cycle(t0 + 30 * MIN)
        head, resolved = d.channel()
        assert "resumed from step 90 in run hero-2" in visible(resolved)
        await assert_resolved_once(d, head)


async def test_a_run_monitors_bot_comment_pages_once_and_ci_chatter_stays_out(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    """Bots' comments are left out (CI results, stale notices), except one that reports a
    fault of the run now: a monitor posting a failed save into the run's log issue pages."""
    async with github_deployment(tmp_path, wb, fake_discord) as (d, github, repo):
        t0 = d.t0
        assert d.channel() == []
        github.advance(minutes=2)
        log = repo.add_issue(
            "Hero run log", "Notes on the hero run.", user="dana", labels=["hero-run"]
        )
        ci = repo.add_comment(
            log, "✅ **CI passed**: lint, unit (212 passed)", user="github-actions[bot]"
        )
        failed = repo.add_comment(
            log,
            "❌ **checkpoint save failed** at step 96\n\n```\nOSError: [Errno 5] "
            "Input/output error: '/lus/hero/ckpt/step_000096/shard_0417.safetensors'\n```"
            "\n\ntraining continues · last good save step_000080",
            user="hero-runbot[bot]",
        )
        await d.cycle(t0 + 4 * MIN)
        [alert] = d.channel()
        assert f"issuecomment-{failed}" in full_text(alert), full_text(alert)
        stored = d.store.events
        assert await stored.get_by_external("hero", "github", f"comment:{failed}")
        assert await stored.get_by_external("hero", "github", f"comment:{ci}") is None

        github.advance(minutes=6)
        await d.cycle(t0 + 10 * MIN)
        assert len(d.channel()) == 1  # paged once


# --- 3. W&B unreachable for an hour while the run is healthy ------------------------------------


async def test_wandb_unreachable_for_an_hour_is_a_blind_monitor_not_a_crash(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    async with healthy_deployment(tmp_path, wb, fake_discord, behind=75 * MIN) as d:
        t0 = d.t0
        wb.append_rows(FIRST, rows(100, 5, t0))  # steps 100..104, the last at +4 min
        await d.cycle(t0 + 5 * MIN)

        # W&B answers 503 to everything for an hour; the trainer keeps logging all along.
        wb.set_down(503)
        step, logged = 105, 5
        for minutes in (20, 45, 70):  # stale from +20 min (15 min after the last good poll)
            wb.append_rows(FIRST, rows(step, minutes - logged, t0 + logged * MIN))
            step, logged = step + minutes - logged, minutes
            summary = await d.cycle(t0 + minutes * MIN, wandb_up=False)
            assert "wandb:hero" in summary.poll.failures, summary.poll
        assert any(r.status == 503 for r in wb.requests)

        report = await build_status(d.store, "hero", t0 + 70 * MIN)
        assert report.monitor_stale and report.state == "running"
        # The real CLI, on the wall clock (the simulated 70 min are just behind it).
        status = await run_cli(d.settings, tmp_path, "status", "--json")
        assert status["monitor_stale"] is True
        assert status["state"] == "running", status["state"]

        texts = [full_text(m) for m in d.channel()]
        texts += [full_text(t) for m in d.channel() for t in d.thread(m)]
        for text in texts:  # no alert title of a crash, a stall or a missing heartbeat
            for claim in ("crashed", "No heartbeat", "No new step", "stalled"):
                assert claim not in text, text
        # What it does say: the monitor is blind (one notice, once).
        [notice] = d.channel()
        assert "Monitor blind: W&B unreachable" in visible(notice)
        assert "nothing about the run" in full_text(notice)
        # the footer names the condition in words, never its identifier
        assert "· W&B unreachable ·" in full_text(notice) and MONITOR not in full_text(notice)

        # W&B answers again: the run was fine all along; the notice resolves, nothing else.
        wb.set_down(None)
        minutes = 75
        while True:  # the source backs off after six failures; poll until it is tried again
            summary = await d.cycle(t0 + minutes * MIN, wandb_up=False)
            if "wandb:hero" in summary.poll.results:
                break
            assert minutes < 120, summary.poll
            minutes += 5
        await d.cycle(t0 + (minutes + 5) * MIN)
        notice, resolved = d.channel()
        assert "monitoring resumed" in visible(resolved)
        incidents = await d.store.incidents.find("hero")
        assert [i.fingerprint for i in incidents] == [MONITOR]
        assert not {i.fingerprint for i in incidents} & {CRASH, HEARTBEAT, STALL}
        report = await build_status(d.store, "hero", t0 + (minutes + 5) * MIN)
        assert not report.monitor_stale and report.state == "running"
        assert report.progress.step == step - 1


# --- 4. a restart in the middle of an open incident ---------------------------------------------


async def test_restart_during_an_open_incident_neither_realerts_nor_double_resolves(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    t0 = now_utc() - timedelta(hours=2)
    healthy_run(wb, t0)
    clock = SimClock(t0)
    settings = make_settings(tmp_path, fake_discord, wb)
    runs = make_runs()
    async with deployed(settings, runs, clock, fake_discord) as d:
        alert = await crash(d, wb)
        assert "hero-1 crashed at step 99" in visible(alert)
    # Bot, runtime, wandb-core and database connection are all gone; a new process starts.
    clock.now = t0 + 8 * MIN
    async with deployed(settings, runs, clock, fake_discord) as d:  # its own poll at +8 min
        await d.cycle(t0 + 12 * MIN)
        assert [m["id"] for m in d.channel()] == [alert["id"]]  # no second alert
        assert d.thread(alert) == []

        resume(wb, t0 + 14 * MIN, first_step=70, count=10)  # steps 70..79 from +17 min
        await d.cycle(t0 + 27 * MIN)
        await d.cycle(t0 + 32 * MIN)
        head, resolved = d.channel()
        assert head["id"] == alert["id"]
        assert "resumed from step 70 in run hero-2" in visible(resolved)
        assert "30 steps recomputed" in visible(resolved)  # steps 70..99 twice
        assert len(d.thread(head)) == 2  # the new bot found the old thread: write-up, closing
        await assert_resolved_once(d, head)


# --- 5. a slow GitHub backfill and a hanging LLM do not hold up the crash alert ------------------


async def test_slow_github_and_hanging_llm_do_not_delay_the_wandb_crash_alert(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    t0 = now_utc() - timedelta(hours=2)
    healthy_run(wb, t0)
    llm_released = asyncio.Event()
    llm_called = asyncio.Event()

    async def hang(request: Recorded) -> Reply:
        llm_called.set()
        await llm_released.wait()
        return auto_reply(request)

    async with FakeGitHub() as github, FakeAnthropic() as anthropic_fake:
        anthropic_fake.handler = hang
        github.advance(seconds=(t0 - github.now).total_seconds())
        repo = github.repo(REPO)
        for n in range(3):
            repo.add_issue(f"Hero run: note {n}", "We may lower the LR.", labels=["hero-run"])
        settings = make_settings(tmp_path, fake_discord, wb, github).model_copy(
            update={
                "anthropic_api_key": SecretStr("sk-ant-fake"),
                "anthropic_base_url": anthropic_fake.base_url,
                "runscribe_enrich_window": 0.0,  # enrich at once: the LLM call is made now
                "runscribe_enrich_budget": 600.0,  # and may hang for the whole test
            }
        )
        async with open_runtime(
            settings, make_runs(github_repo=REPO, github_labels=["hero-run"])
        ) as runtime:
            await runtime.poll(WANDB, t0)  # healthy: nothing queued
            await runtime.poll(THREADS, t0)  # three issues now wait for enrichment
            assert await runtime.store.outbox.pending_count() == 0

            # The LLM hangs on the queued issues; GitHub answers the next poll very slowly.
            enriching = asyncio.create_task(runtime.enrich(t0 + MIN))
            github.slow_next(600, count=20)
            repo.add_issue("Hero run: another note", "Still tuning.", labels=["hero-run"])
            polling = asyncio.create_task(runtime.poll(THREADS, t0 + 2 * MIN))
            try:
                await asyncio.wait_for(llm_called.wait(), PATIENCE)
                await until(  # the slow request is in flight
                    lambda: len(github.faults) < 20, "the GitHub poll reaching the server"
                )

                wb.set_state(FIRST, "crashed", heartbeat_at=t0 + MIN)
                summary = await runtime.poll(WANDB, t0 + 5 * MIN)
                assert summary.alerts_queued >= 1, summary
                [row] = await runtime.store.outbox.queued()
                assert "hero-1 crashed at step 99" in json.dumps(row.payload)
                # ... while the GitHub poll and the enrichment are both still waiting.
                assert not polling.done() and not enriching.done()
            finally:
                llm_released.set()
                polling.cancel()
                await asyncio.gather(enriching, polling, return_exceptions=True)


# --- 6. a crash, a person's report in the watched channel, a resume; paging alert_role ----------


async def test_a_reported_cause_reaches_the_alert_which_pages_once_and_resolves_once(
    tmp_path: Path, wb: FakeWandb, watched_discord: FakeDiscord
) -> None:
    fake = watched_discord
    # Simulated time starts 40 min behind the wall clock and catches up with it when the person
    # writes (their message carries the wall-clock time), so the report falls inside the crash.
    runs = make_runs(watch_channels=[WATCHED], alert_role=ONCALL)
    async with healthy_deployment(tmp_path, wb, fake, behind=40 * MIN, runs=runs) as d:
        alert = await crash(d, wb)
        assert visible(alert).startswith(f"<@&{ONCALL}> 🔴 **Incident #")

        # A person reports what happened, in the watched channel; the bot stores it.
        said = await fake.say(WATCHED, REPORT, author_name="dana")
        external = f"msg:{said['id']}"

        async def stored() -> bool:
            return await d.store.events.get_by_external("hero", "discord", external) is not None

        await until(stored, "the watched channel's message stored")
        t1 = max(now_utc() + timedelta(seconds=1), d.clock.now)
        await d.cycle(t1)

        # The cause reaches the head (edited) and the thread, once each.
        [head] = d.channel()
        cause = (
            r"\*\*Reported cause\*\* \(dana, \[Discord #hero-run\]\(https://discord\.com/\S+\) "
            r"at <t:\d+:t>\): "
        )
        assert re.search(cause + re.escape(REPORT), full_text(head)), full_text(head)
        assert full_text(head).count("double-bit ECC on GPU 3") == 1  # not again under Signals
        assert len(d.thread(head)) == 1, [visible(m) for m in d.thread(head)]
        [cause_post] = d.thread(head)
        assert re.fullmatch(cause + re.escape(REPORT), visible(cause_post)), visible(cause_post)

        # …and `status --json` (the real CLI) has it on the open incident, with its kind.
        status = await run_cli(d.settings, tmp_path, "status", "--json")
        [open_incident] = status["open_incidents"]
        assert open_incident["kind"] == "crash"
        assert open_incident["reported_cause"] == REPORT
        assert open_incident["reported_by"]["author"] == "dana"
        assert open_incident["reported_by"]["source"] == "Discord #hero-run"

        # Training resumes in hero-2 from step 90: resolved, said once.
        resume(wb, t1 + MIN, first_step=90, count=10)  # steps 90..99 from t1 + 4 min
        await d.cycle(t1 + 20 * MIN)
        await d.cycle(t1 + 25 * MIN)
        head, resolved = d.channel()  # one alert and one resolution post in the channel
        assert head["id"] == alert["id"]
        assert_head_resolved(head)
        assert "**Reported cause**" in full_text(head)  # still there once resolved
        assert_thread_closed(d, head)
        thread = [visible(m).split(" ")[0] for m in d.thread(head)]
        assert thread == ["**Reported", "📝", "✅"]  # the cause, the write-up, then closed
        text = visible(resolved)
        assert text.startswith("✅ **Resolved** incident #") and text.count("Down ") == 1
        assert "resumed from step 90 in run hero-2" in text

        # Only the alert's first post paged, and only the oncall role.
        posts = [r for r in fake.message_requests() if r.method == "POST"]
        mentions = [(r.json or {}).get("allowed_mentions") for r in fake.message_requests()]
        assert all(m is not None for m in mentions), "a post without allowed_mentions"
        pinging = [r for r in fake.message_requests() if r.json["allowed_mentions"]["parse"]
                   or r.json["allowed_mentions"].get("roles")
                   or r.json["allowed_mentions"].get("users")]  # fmt: skip
        assert [r.json["allowed_mentions"] for r in pinging] == [{"parse": [], "roles": [ONCALL]}]
        assert pinging[0] is posts[0] and f"<@&{ONCALL}>" in pinging[0].json["content"]
        assert all("<@&" not in (r.json or {}).get("content", "") for r in posts[1:])

        # A person requeued it: the recovery is not "on its own".
        [incident] = await d.store.incidents.find("hero")
        assert incident.details.acted_by == "dana"
        report = await build_status(d.store, "hero", t1 + 25 * MIN)
        assert report.incidents_total == 1 and report.incidents_self_healed == 0
