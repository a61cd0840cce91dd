"""An incident that reopens, through the whole bot (the deployment of `tests.e2e.deployment`: a
real Runtime polling the fake W&B and GitHub, a real RunscribeBot posting to the fake Discord),
with the run's ops-log issue configured and a new process for every step: hero-1 crashes and
resumes in hero-2, which crashes 5 minutes after the incident resolved and resumes in hero-3.
One incident: its reopening alerted once in the channel, its head back to firing, resolved again
once, one write-up in its thread and one comment on the ops-log issue, each edited to cover both
outages with summed numbers."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pydantic import SecretStr

from tests.e2e.deployment import (
    MIN,
    ONCALL,
    REPO,
    RESUMED,
    SimClock,
    crash,
    deployed,
    full_text,
    healthy_run,
    make_runs,
    make_settings,
    now_utc,
    resume,
    rows,
    visible,
)
from tests.e2e.test_acceptance_alerts import body_text, message_body, pinging
from tests.fakes.discord import FakeDiscord
from tests.fakes.github import FakeGitHub
from tests.fakes.wandb import FakeWandb

THIRD = "ent/proj/hero-3"


async def test_a_reopened_incident_alerts_once_and_edits_its_one_writeup_and_comment(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    t0 = now_utc() - timedelta(hours=3)
    healthy_run(wb, t0)  # hero-1: steps 0..99, the last at t0 - 1 min
    clock = SimClock(t0)
    async with FakeGitHub() as github:
        github.advance(seconds=(t0 - github.now).total_seconds())  # one clock for every fake
        repo = github.repo(REPO)
        ops = repo.add_issue("Hero ops log", "One comment per incident.")
        settings = make_settings(tmp_path, fake_discord, wb, github).model_copy(
            update={"github_token": SecretStr("ghp_fake")}
        )
        runs = make_runs(
            github_repo=REPO, github_issues=[ops], github_ops_issue=ops, alert_role=ONCALL
        )
        fake_discord.add_role(ONCALL, "oncall")

        def comments() -> list[str]:
            return [c.body for c in repo.comments.values() if c.number == ops]

        async with deployed(settings, runs, clock, fake_discord) as d:
            head = await crash(d, wb)  # hero-1 crashed at +1 min
            resume(wb, t0 + 12 * MIN, first_step=80, count=10)  # steps 80..89, +15..+24 min
            await d.cycle(t0 + 25 * MIN)
            [incident] = await d.store.incidents.find("hero")
            assert incident.status == "resolved" and incident.resolved_at == t0 + 15 * MIN
            assert len(d.channel()) == 2  # the head, the resolution
            [first_comment] = comments()
            assert "; 20 steps" in first_comment  # 80..99 twice
        # a new process: hero-2 crashes (its heartbeat last at +25 min), 10 minutes after the
        # incident resolved, well inside the default reopen window
        clock.now = t0 + 26 * MIN
        github.advance(minutes=26)
        wb.set_state(RESUMED, "crashed", heartbeat_at=t0 + 25 * MIN)
        async with deployed(settings, runs, clock, fake_discord) as d:
            await d.cycle(t0 + 30 * MIN)
            [incident] = await d.store.incidents.find("hero")  # still the one incident
            assert incident.status == "firing" and incident.details.reopens == 1
            channel = d.channel()
            assert len(channel) == 3, [visible(m) for m in channel]
            said = visible(channel[2])
            assert said.startswith(f"<@&{ONCALL}> 🔁 **Incident #{incident.id} reopened** — ")
            resolved_at = f"{t0 + 15 * MIN:%H:%M} UTC"
            assert f"again, 10 min after it resolved at {resolved_at}." in said, said
            assert f"Thread: <#{head['id']}>" in said
            head = d.channel()[0]  # as edited
            assert visible(head).startswith(f"🔁 **Incident #{incident.id} reopened**")
            assert "Firing again since" in full_text(head)
            assert head["components"], "the Acknowledge button is back"
            assert not fake_discord.archived(int(head["id"]))  # the reopening post unarchived it
            assert "🔁 Reopened" in visible(d.thread(head)[-1])
            assert comments() == [first_comment]  # the ops log waits for it to resolve again
        # a new process: training comes back in hero-3 from step 85 (hero-2 had reached 89)
        clock.now = t0 + 31 * MIN
        github.advance(minutes=5)
        wb.add_run(THIRD, created_at=t0 + 32 * MIN)
        wb.append_rows(THIRD, rows(85, 10, t0 + 35 * MIN))  # steps 85..94, +35..+44 min
        wb.set_state(THIRD, "running")
        async with deployed(settings, runs, clock, fake_discord) as d:
            await d.cycle(t0 + 45 * MIN)
            [incident] = await d.store.incidents.find("hero")
            assert incident.status == "resolved" and incident.details.reopens == 1
            channel = d.channel()
            assert len(channel) == 4, [visible(m) for m in channel]
            assert visible(channel[3]).startswith(f"✅ **Resolved again** incident #{incident.id}")
            head = d.channel()[0]  # as edited
            assert visible(head).startswith("✅ **Resolved again** · Incident #")
            assert head["components"] == []
            assert fake_discord.archived(int(head["id"]))
            thread = d.thread(head)
            writeups = [m for m in thread if visible(m).startswith("📝 Write-up of incident #")]
            assert len(writeups) == 1  # edited, never posted again
            text = full_text(writeups[0])
            # down: 16 min (step 99 at -1 → step 80 at +15) + 11 min (89 at +24 → 85 at +35)
            assert "27 min down (2 outages, each last step before the interruption" in text
            # 80..99 (20) and 85..89 (5) trained twice, 4M tokens a step, a step a minute
            assert "; 25 steps (100M tokens) recomputed, 25 min at 60 s a step" in text, text
            assert "reopened 10 min later" in text
            [comment] = comments()  # one comment, edited
            assert "; 25 steps (100M tokens) recomputed" in comment
            assert "reopened 10 min later" in comment
            posted = len(fake_discord.message_requests())
        # and one more process: nothing is said again
        clock.now = t0 + 46 * MIN
        github.advance(minutes=15)
        wb.append_rows(THIRD, rows(95, 5, t0 + 45 * MIN))
        async with deployed(settings, runs, clock, fake_discord) as d:
            await d.cycle(t0 + 50 * MIN)
            assert len(fake_discord.message_requests()) == posted
            assert len(d.channel()) == 4 and len(comments()) == 1
    # the alert role was pinged twice: by the incident's first post and by its reopening
    bodies = [b for r in fake_discord.message_requests() if (b := message_body(r)) is not None]
    pings = [b for b in bodies if pinging(b)]
    assert [b["allowed_mentions"] for b in pings] == [{"parse": [], "roles": [ONCALL]}] * 2
    assert "reopened" not in body_text(pings[0]) and "reopened**" in body_text(pings[1])
