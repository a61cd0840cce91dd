"""Alert acceptance, replayed the way the external check runs it: the whole bot (a real
Runtime polling the fake W&B and GitHub, a RunscribeBot on the fake Discord, the real command
tree, the real CLI as a process) and assertions only on what Discord received and what the CLI
printed.

1. A W&B crash, a person's report in the watched channel, a resume: one alert that pages only
   `alert_role`; the report on the head or in the thread, in `/incidents` and in
   `status --json`; once resumed, the head's final text, embed and components are resolved, the
   thread has a closing line and is archived, the channel has one resolution post with one
   downtime figure, and nothing says "on its own" (a person requeued it).
2. A runs file naming a W&B run and a repository that do not exist: `status --json` has
   `sources.*.ok` false with the error, `status` and `/status` say "failing", and the card's
   colour is not the healthy one.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app import COLORS
from tests.bot.test_cogs import option
from tests.e2e.deployment import (
    ALERTS,
    FIRST,
    MIN,
    ONCALL,
    REPO,
    WATCHED,
    Deployment,
    SimClock,
    assert_head_resolved,
    assert_thread_closed,
    cli,
    crash,
    deployed,
    full_text,
    healthy_deployment,
    make_runs,
    make_settings,
    now_utc,
    resume,
    rows,
    visible,
)
from tests.fakes.discord import FakeDiscord, Recorded
from tests.fakes.github import FakeGitHub
from tests.fakes.wandb import FakeWandb
from tests.waiting import PATIENCE, until

# Our own wording of what an operator writes at 3 a.m.
REPORT = "Heads up: node r12n4 lost, ECC errors on GPU 3. Requeueing onto a spare now."
CAUSE = REPORT.removeprefix("Heads up: ")  # the report's own sentences, its lead-in left out


# --- reading everything Discord received ---------------------------------------------------------


def message_body(request: Recorded) -> dict[str, Any] | None:
    """The message a request creates or edits (None: a bare defer or a component update
    without data)."""
    body = request.json or {}
    if "/callback" in request.path:
        return body.get("data") if body.get("type") in (4, 7) else None
    return body


def body_text(body: dict[str, Any]) -> str:
    parts = [str(body.get("content") or "").split("\u2063")[0]]
    for embed in body.get("embeds") or []:
        parts += [embed.get("title") or "", embed.get("description") or ""]
        for item in embed.get("fields") or []:
            parts += [item.get("name") or "", item.get("value") or ""]
        parts.append((embed.get("footer") or {}).get("text") or "")
    return "\n".join(parts)


def pinging(body: dict[str, Any]) -> bool:
    mentions = body.get("allowed_mentions")
    assert mentions is not None, f"a message without allowed_mentions: {body_text(body)[:200]}"
    return bool(mentions.get("parse") or mentions.get("roles") or mentions.get("users"))


async def answer(
    fake: FakeDiscord, name: str, *options: dict[str, Any], **kw: Any
) -> dict[str, Any]:
    """The final message of a slash command (the direct reply, or the followup after a defer)."""
    record = await fake.slash(name, list(options), **kw)
    # Generous waits for a positive signal: the whole suite shares two loaded cores.
    body = await asyncio.wait_for(record.callback, PATIENCE)
    if body["type"] == 5:  # deferred: the answer is a followup (or the edited original)
        await fake.wait_for(lambda: record.followups or record.original, within=PATIENCE)
        return record.followups[0] if record.followups else record.original or {}
    assert record.original is not None
    return record.original


async def stored(d: Deployment, message: dict[str, Any]) -> None:
    external = f"msg:{message['id']}"
    await until(
        lambda: d.store.events.get_by_external("hero", "discord", external),
        "the watched channel's message stored",
    )


DURATION = re.compile(r"\b\d+ (?:d|h|min|s)\b(?: \d+ (?:h|min|s)\b)*|under a minute")


# --- 1. crash, a person's report, resume --------------------------------------------------------


@pytest.mark.parametrize("order", ["crash first", "report first", "report, then crash"])
async def test_crash_with_a_persons_report_then_resume_pages_once_and_resolves_once(
    order: str, tmp_path: Path, wb: FakeWandb, watched_discord: FakeDiscord
) -> None:
    """The person writes once the alert is out, or before the bot has seen the crash (the
    message arrives at once over the gateway, W&B only at the next poll), or before W&B has
    marked the run crashed at all (it takes minutes to give up on a heartbeat)."""
    fake = watched_discord
    # Simulated time catches up with the wall clock when the person writes (their message
    # carries the wall-clock time), so the report falls inside the crash.
    runs = make_runs(watch_channels=[WATCHED], alert_role=ONCALL)
    async with healthy_deployment(tmp_path, wb, fake, behind=40 * MIN, runs=runs) as d:
        t0, settings = d.t0, d.settings
        if order == "crash first":
            alert = await crash(d, wb)
        else:
            wb.append_rows(FIRST, rows(100, 38, t0))  # trained until 2 min ago
            await d.cycle(t0 + 38 * MIN)
            assert d.channel() == []
            if order == "report first":
                wb.set_state(FIRST, "crashed", heartbeat_at=t0 + 38 * MIN)

        said = await fake.say(WATCHED, REPORT, author_name="dana")
        await stored(d, said)
        t1 = max(now_utc() + timedelta(seconds=1), d.clock.now)
        await d.cycle(t1)
        if order != "crash first":
            [alert] = d.channel()
        if order == "report, then crash":
            wb.set_state(FIRST, "crashed", heartbeat_at=t0 + 38 * MIN)
            t1 += 2 * MIN
            await d.cycle(t1)
            assert [m["id"] for m in d.channel()] == [alert["id"]]  # the crash joined it

        # While open: the report is on the head or in its thread ...
        [head] = d.channel()
        shown = "\n".join([full_text(head), *(full_text(m) for m in d.thread(head))])
        assert CAUSE in shown and REPORT not in shown, shown
        assert "Reported cause" in shown
        # ... in `status --json` (the real CLI) ...
        code, out, err = await cli(settings, tmp_path, "status", "--json")
        assert code == 0, err
        [incident] = json.loads(out)["open_incidents"]
        assert incident["reported_cause"] == CAUSE
        assert incident["kind"] == "crash"  # W&B confirmed it, whoever spoke first
        # ... and in /incidents, through the command tree.
        listing = await answer(
            fake, "incidents", option("run", "hero"), subcommand="list", channel_id=WATCHED
        )
        assert "ECC errors on GPU 3" in body_text(listing), body_text(listing)

        # Training resumes from an earlier checkpoint in a new chain run.
        resume(wb, t1 + MIN, first_step=90, count=10)
        await d.cycle(t1 + 20 * MIN)
        await d.cycle(t1 + 25 * MIN)

        # Exactly one alert and one resolution post in the channel.
        head, resolved = d.channel()
        assert head["id"] == alert["id"]
        # The head's final state: text, embed and components resolved; no 🔴, no button.
        assert_head_resolved(head)
        assert "🔴" not in full_text(head)
        assert not any(c for row in head["components"] for c in row.get("components", [])), head[
            "components"
        ]
        # The thread: a short closing line, then archived.
        assert_thread_closed(d, head)
        # The resolution post states the downtime once.
        text = visible(resolved)
        assert text.startswith("✅ **Resolved**"), text
        assert len(DURATION.findall(text)) == 1, text
        assert text.count("Down ") == 1, text
        # A person requeued it: nothing anywhere says it recovered "on its own".
        status = await answer(fake, "status", option("run", "hero"), channel_id=WATCHED)
        everything = [m for m in (message_body(r) for r in fake.message_requests()) if m]
        everything.append(status)
        for body in everything:
            assert "on its own" not in body_text(body), body_text(body)
        code, out, err = await cli(settings, tmp_path, "status")
        assert code == 0, err
        assert "on its own" not in out

        # Only the incident's first post pinged, and only alert_role; every other message
        # (edits, thread posts, the resolution, command answers) pings nothing.
        bodies = [(r, message_body(r)) for r in fake.message_requests()]
        pings = [(r, b) for r, b in bodies if b is not None and pinging(b)]
        assert len(pings) == 1, [body_text(b)[:80] for _, b in pings]
        [(request, body)] = pings
        assert body["allowed_mentions"] == {"parse": [], "roles": [ONCALL]}
        assert request.method == "POST" and request.path == f"/channels/{ALERTS}/messages"
        assert f"<@&{ONCALL}>" in body["content"]
        first_post = next(r for r in fake.message_requests() if r.method == "POST")
        assert request is first_post


# --- 2. a runs file naming a missing W&B run and a missing repository ----------------------------


async def test_missing_wandb_run_and_repository_show_failing_everywhere(
    tmp_path: Path, wb: FakeWandb, watched_discord: FakeDiscord
) -> None:
    fake = watched_discord
    t0 = now_utc() - timedelta(minutes=10)
    clock = SimClock(t0)
    async with FakeGitHub() as github:  # no repository: GitHub answers 404
        settings = make_settings(tmp_path, fake, wb, github)
        runs = make_runs(github_repo=REPO, github_labels=["hero-run"])  # W&B: no such run
        async with deployed(settings, runs, clock, fake) as d:
            summary = await d.services.cycle(t0 + MIN)
            assert summary.poll.failures or summary.poll.skipped, summary.poll

            code, out, err = await cli(settings, tmp_path, "status", "--json")
            assert code == 0, err
            sources = json.loads(out)["sources"]
            assert sources["discord"] is None  # the run watches no channel
            for name, needle in (("wandb", FIRST), ("github", REPO)):
                assert sources[name]["ok"] is False, sources
                assert needle in sources[name]["error"], sources[name]
                assert "not found" in sources[name]["error"].lower(), sources[name]

            code, out, err = await cli(settings, tmp_path, "status")
            assert code == 0, err
            assert "W&B failing" in out and "GitHub failing" in out, out

            card = await answer(fake, "status", option("run", "hero"))
            [embed] = card["embeds"]
            text = body_text(card)
            assert "W&B failing" in text and "GitHub failing" in text, text
            assert "not found" in text
            assert "Discord" not in text.replace("discord.com", "")  # a source it does not use
            assert embed["color"] != COLORS["ok"], hex(embed["color"])
            assert embed["color"] in (COLORS["warning"], COLORS["stale"], COLORS["bad"])
