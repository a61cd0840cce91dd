"""The truth scenario end to end, with no LLM key, through the real bot process pieces (a
Runtime polling the fake W&B with wandb-core, a RunscribeBot on the fake Discord, real SQLite,
the real CLI): a W&B chain whose first run crashed three days before Runscribe was installed, a
live crash of the current run, and a chat burst in the watched channel while it happened
(greetings, lunch, "+1", then "node lost, ECC errors on host 12", then a person saying they
drained host 12 and requeued).

What it must say: the old crash dated when it happened and outside the digest's day; the
reported cause is the report (no chit-chat), linked to the reporter's message; the incident
starts at the crash; the resolution names who fixed it; the no-key timeline and narrative carry
the fault report and quote no chat. Simulated time runs two hours behind the wall clock, so the
real CLI (which reads the wall clock) sees the whole story as history of the last hours."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.e2e.deployment import (
    MIN,
    WATCHED,
    SimClock,
    deployed,
    full_text,
    make_runs,
    make_settings,
    now_utc,
    rows,
    run_cli,
    visible,
)
from tests.e2e.test_acceptance_alerts import stored
from tests.fakes.discord import FakeDiscord
from tests.fakes.wandb import FakeWandb

OLD = "ent/proj/hero-1"
CURRENT = "ent/proj/hero-2"
RELAUNCH = "ent/proj/hero-3"
CHITCHAT = ("Morning all", "nice", "lunch", "+1")
FAULT = "node lost, ECC errors on host 12"


def history(wb: FakeWandb, install: datetime) -> datetime:
    """hero-1 trained a day and crashed three days before install; hero-2 restored step 1,400
    forty minutes later and has trained since. Returns when hero-1 crashed."""
    crashed = install - timedelta(days=3)
    wb.add_run(OLD, created_at=crashed - timedelta(days=1, minutes=1))
    wb.append_rows(OLD, rows(0, 1440, crashed - 1440 * MIN))  # steps 0..1439
    wb.set_state(OLD, "crashed", heartbeat_at=crashed)
    wb.add_run(CURRENT, created_at=crashed + 40 * MIN)
    start = crashed + 43 * MIN
    count = int((install - start) / MIN)
    wb.append_rows(CURRENT, rows(1400, count, start))
    wb.set_state(CURRENT, "running")
    return crashed


def entry(entries: list[dict[str, Any]], pattern: str) -> list[dict[str, Any]]:
    return [e for e in entries if re.search(pattern, e["summary"] or "")]


async def test_old_crash_live_crash_and_chat_burst_tell_the_truth(
    tmp_path: Path, wb: FakeWandb, watched_discord: FakeDiscord
) -> None:
    fake = watched_discord
    install = now_utc() - timedelta(hours=2)
    old_crash = history(wb, install)
    clock = SimClock(install)
    settings = make_settings(tmp_path, fake, wb)
    runs = make_runs(watch_channels=[WATCHED], total_steps=100_000)
    async with deployed(settings, runs, clock, fake) as d:
        # Installed: the crash of three days ago is history, not news.
        assert d.channel() == [], "the old crash was alerted"
        timeline = await run_cli(settings, tmp_path, "timeline", "--json", "--days", "7")
        [old] = entry(timeline, r"hero-1 is crashed")
        at = datetime.fromisoformat(old["at"].replace("Z", "+00:00"))
        assert abs(at - old_crash) < timedelta(hours=2), (at, old_crash)
        digest = await run_cli(settings, tmp_path, "digest", "--json")
        assert "hero-1 is crashed" not in str(digest)
        status = await run_cli(settings, tmp_path, "status", "--json")
        narrative = status["narrative"]
        assert "No incident in the past week" not in narrative
        latest = narrative.split("Latest:", 1)[1] if "Latest:" in narrative else ""
        assert "hero-1" not in latest, narrative  # history, not "Latest"
        assert await d.store.incidents.find("hero") == []  # and never an alert

        # The live crash, with a chat burst around it in the watched channel.
        step = 1400 + int((install - (old_crash + 43 * MIN)) / MIN)
        wb.append_rows(CURRENT, rows(step, 6, install))  # trains until install + 5 min
        crash = install + 6 * MIN
        burst = [
            (install + 5 * MIN, "alice", "Morning all!"),
            (install + 5 * MIN + timedelta(seconds=30), "carol", "nice 🎉"),
            (crash + MIN, "erin", "anyone grabbing lunch?"),
            (crash + MIN + timedelta(seconds=20), "alice", "+1"),
            (crash + 2 * MIN, "bob", f"Hmm, {FAULT}. Looks like GPU 3."),
        ]
        said = {}
        for at_, author, text in burst:
            said[text] = await fake.say(WATCHED, text, author_name=author, at=at_)
        wb.set_state(CURRENT, "crashed", heartbeat_at=crash)
        for message in said.values():
            await stored(d, message)
        await d.cycle(crash + 3 * MIN)
        [alert] = d.channel()
        head = full_text(alert)
        report = said[f"Hmm, {FAULT}. Looks like GPU 3."]
        cause = re.search(
            r"\*\*Reported cause\*\* \(bob, \[Discord #hero-run\]\((\S+)\) at [^)]+\): (.*)", head
        )
        assert cause is not None, head
        assert cause.group(1).endswith(f"/{WATCHED}/{report['id']}")  # the reporter's message
        assert cause.group(2) == f"{FAULT}. Looks like GPU 3."  # the report, in its words
        assert not any(chat in cause.group(2) for chat in CHITCHAT), cause.group(2)
        [incident] = await d.store.incidents.find("hero")
        assert abs(incident.started_at - crash) <= MIN  # the crash, not "Morning all"

        # Dave drained the host and requeued; training resumes in a new run.
        fixed = await fake.say(
            WATCHED,
            "I drained host 12 and requeued, resuming from the last checkpoint",
            author_name="dave",
            at=crash + 5 * MIN,
        )
        await stored(d, fixed)
        wb.add_run(RELAUNCH, created_at=crash + 8 * MIN)
        wb.append_rows(RELAUNCH, rows(step, 30, crash + 10 * MIN))  # trains on to the end
        wb.set_state(RELAUNCH, "running")
        await d.cycle(crash + 22 * MIN)
        await d.cycle(crash + 40 * MIN)  # the burst has settled and was summarised
        posts = d.channel()
        assert len(posts) == 2, [visible(m) for m in posts]
        head, resolved = posts
        text = visible(resolved)
        fixed_at = crash + 5 * MIN
        assert f"dave drained host 12 and requeued at {fixed_at:%H:%M} UTC. " in text, text
        assert f"Training resumed from step {step:,} in run hero-3" in text, text

    # No key: the timeline and the narrative carry the fault report, and no chit-chat.
    timeline = await run_cli(settings, tmp_path, "timeline", "--json", "--days", "1")
    chat = [e for e in timeline if e["source"] == "discord"]
    assert any(FAULT.lower() in (e["summary"] or "").lower() for e in chat), chat
    assert any("drained host 12" in (e["summary"] or "") for e in chat), chat
    for e in chat:
        assert not any(word in (e["summary"] or "") for word in CHITCHAT), e
    status = await run_cli(settings, tmp_path, "status", "--json")
    narrative = status["narrative"]
    assert FAULT in narrative, narrative
    assert not any(word in narrative for word in CHITCHAT), narrative
    assert status["open_incidents"] == []
