"""Chat told true, end to end, run twice (no model key, and a key against the fake Anthropic):
a W&B run that crashes live, two watched channels, several members, a report "node lost, ECC
errors on host 12" then a requeue in the other channel, and an unrelated Alertmanager alert
minutes after the crash is over. Through the real pieces (a Runtime polling the fake W&B, a
RunscribeBot on the fake Discord storing the channels' messages, real SQLite, the incident
engine, the timeline service).

What it must say: the report opens the incident in the cycle after it is written (before W&B
shows the crash), quoting it and linked to it; each report and action is its own timeline entry,
at its own time, linked to its own message, with its author, never glued to the other channel's
unrelated note; the requeue is credited to the crash and only to it. And a report only the model
reads as live ("two GPUs at 91C, fans maxed; the whole job feels sluggish") opens an incident with
a key."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.config.settings import Settings
from bot.hooks.alertmanager import alert_event, parse_message
from bot.models import Event
from bot.services.timeline import build_timeline
from tests.e2e.deployment import (
    FIRST,
    MIN,
    RESUMED,
    WATCHED,
    Deployment,
    SimClock,
    deployed,
    full_text,
    make_runs,
    make_settings,
    now_utc,
    rows,
    visible,
)
from tests.fakes.alertmanager import Alert, message
from tests.fakes.anthropic import FakeAnthropic, Recorded, Reply, tool_use
from tests.fakes.discord import FakeDiscord
from tests.fakes.wandb import FakeWandb
from tests.waiting import until

INFRA = 1_300_000_000_000_000_003
SEC = timedelta(seconds=1)
FAULT = "node lost, ECC errors on host 12"
REQUEUE = "drained host 12 and requeued from the last checkpoint"
ROTATE = "we'll rotate the spare pool this afternoon"
#: A live report the deterministic path (the rules and their scorers) does not read as one: the
#: no-key half of the test below asserts it, so a refit that learns it asks for another message.
HOT = "gb-r14-n3 has two GPUs at 91C, fans maxed; the whole job feels sluggish"
ASIDE = "bob, can you check the node dashboard after lunch?"  # context, no report
_FENCE = re.compile(r'<untrusted_data [^>]*\bid="(\d+)"[^>]*>\n(.*?)\n</untrusted_data>', re.S)


def capable_model(request: Recorded) -> Reply:
    """Answers the enrichment as a capable model would: a message reporting a fault happening
    now is a live report (the lines marked as context are not the message); the rest is talk
    about the run. Other requests (narratives) get a plain sentence."""
    choice = request.body.get("tool_choice") or {}
    if choice.get("type") != "tool":
        return Reply(content=[{"type": "text", "text": "Training is running."}])
    items = []
    for local, text in _FENCE.findall(request.user_text):
        own = text.split("(this message)\n", 1)[-1]
        live = any(word in own for word in ("ECC errors", "91C"))
        items.append(
            {
                "id": int(local),
                "summary": "A fault on a host is reported." if live else "Talk about the run.",
                "tag": "incident" if live else "infra",
                "incident": live,
                "live_report": live,
                "severity": "warning" if live else "info",
                "newsworthy": True,
            }
        )
    return tool_use(choice["name"], {"items": items})


@pytest.fixture(params=["no key", "model key"])
async def model(request: pytest.FixtureRequest) -> AsyncIterator[FakeAnthropic | None]:
    if request.param == "no key":
        yield None
        return
    fake = FakeAnthropic()
    fake.handler = capable_model
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()


def settings_for(
    tmp_path: Path, discord: FakeDiscord, wb: FakeWandb, model: FakeAnthropic | None
) -> Settings:
    settings = make_settings(tmp_path, discord, wb)
    if model is None:
        return settings
    return settings.model_copy(
        update={"anthropic_api_key": SecretStr("sk-test"), "anthropic_base_url": model.base_url}
    )


async def say(d: Deployment, channel: int, text: str, author: str, at: datetime, uid: int) -> Event:
    sent = await d.discord.say(channel, text, author_name=author, author_id=uid, at=at)
    found: list[Event] = []

    async def stored() -> bool:
        event = await d.store.events.get_by_external("hero", "discord", f"msg:{sent['id']}")
        found[:] = [event] if event is not None else []
        return bool(found)

    await until(stored, "the watched channel's message stored")
    return found[0]


async def push_alert(d: Deployment, alert: Alert) -> None:
    [parsed] = parse_message(json.dumps(message([alert])).encode())
    await d.store.events.upsert_many([alert_event("hero", parsed)])


def start(wb: FakeWandb, now: datetime) -> int:
    """hero-1 has trained for two hours; returns its next step."""
    wb.add_run(FIRST, created_at=now - 121 * MIN)
    wb.append_rows(FIRST, rows(0, 120, now - 120 * MIN))
    wb.set_state(FIRST, "running")
    return 120


async def test_a_live_report_its_own_entries_and_credit_where_due(
    tmp_path: Path, wb: FakeWandb, watched_discord: FakeDiscord, model: FakeAnthropic | None
) -> None:
    fake = watched_discord
    fake.add_channel(INFRA, "hero-infra")
    t0 = now_utc() - timedelta(hours=3)
    step = start(wb, t0)
    settings = settings_for(tmp_path, fake, wb, model)
    runs = make_runs(watch_channels=[WATCHED, INFRA], total_steps=100_000)
    async with deployed(settings, runs, SimClock(t0), fake) as d:
        crash = t0 + 10 * MIN
        wb.append_rows(FIRST, rows(step, 10, t0))
        await say(d, WATCHED, "Morning all!", "alice", crash - 4 * MIN, 11)
        rotate = await say(d, INFRA, ROTATE, "erin", crash - 3 * MIN, 15)
        await say(d, WATCHED, "morning 🎉", "bob", crash - 2 * MIN, 12)
        await d.cycle(crash)
        assert d.channel() == []

        # Carol reports the fault; W&B does not show the crash yet. Her report opens it.
        report = await say(d, WATCHED, f"hmm, {FAULT}", "carol", crash + 83 * SEC, 13)
        await d.cycle(crash + 90 * SEC)
        [head] = d.channel()
        text = full_text(head)
        assert f"{FAULT}" in text and report.url is not None and report.url in text, text
        [incident] = await d.store.incidents.find("hero")
        assert await d.store.incidents.linked_ids(incident.id or 0) == {report.id}
        cause = incident.details.reported_cause
        assert cause is not None and (cause.author, cause.url) == ("carol", report.url)
        assert cause.text == FAULT

        # Dave requeues (in the other channel); W&B shows the crash, then the relaunch.
        requeue = await say(d, INFRA, f"I {REQUEUE}", "dave", crash + 113 * SEC, 14)
        await say(d, INFRA, "thanks dave!", "erin", crash + 130 * SEC, 15)
        wb.set_state(FIRST, "crashed", heartbeat_at=crash)
        await d.cycle(crash + 3 * MIN)
        wb.add_run(RESUMED, created_at=crash + 4 * MIN)
        wb.append_rows(RESUMED, rows(step + 10, 40, crash + 5 * MIN))
        wb.set_state(RESUMED, "running")
        for minutes in (8, 10, 12):
            await d.cycle(crash + minutes * MIN)
        [incident] = await d.store.incidents.find("hero")
        assert incident.status == "resolved", incident
        assert incident.details.action is not None
        assert incident.details.action.event_id == requeue.id

        # An unrelated GPU alert on another host, minutes after the crash is over.
        xid = Alert(
            labels={"alertname": "GPUXidError", "run": "hero", "instance": "node-17:9400"},
            annotations={"summary": "Xid 79 on GPU 3", "description": "GPU 3 on node-17 fell"},
            starts_at=crash + 15 * MIN,
        )
        await push_alert(d, xid)
        await d.cycle(crash + 16 * MIN)
        xid.ends_at = crash + 18 * MIN
        await push_alert(d, xid)
        for minutes in (19, 22, 26):
            await d.cycle(crash + minutes * MIN)
        alerts = [i for i in await d.store.incidents.find("hero") if i.id != incident.id]
        assert [(i.kind, i.status) for i in alerts] == [("GPUXidError", "resolved")]
        assert alerts[0].details.action is None
        assert "dave" not in (alerts[0].resolution or "")
        said = [visible(m) for m in d.channel()]
        assert sum("dave" in s for s in said) == 1, said  # credited once, to the crash

        # Each report and action is its own entry, at its own time, linked to its message.
        entries = await build_timeline(d.store, "hero", crash + 30 * MIN, days=1)
        chat = {e.url: e for e in entries if e.source == "discord"}
        for event, author in ((report, "carol"), (requeue, "dave"), (rotate, "erin")):
            entry = chat.pop(event.url)
            assert (entry.at, entry.author) == (event.at, author), entry
        assert chat == {}, chat  # greetings and thanks folded away
        by_author = {e.author: e.summary for e in entries if e.source == "discord"}
        if model is None:  # the rules quote each message; nothing of another is glued on
            assert FAULT.lower() in by_author["carol"].lower()
            assert REQUEUE in by_author["dave"].lower() and "spare" not in by_author["dave"]
        assert "host 12" not in by_author["erin"]


async def test_a_report_only_the_model_reads_as_live_opens_an_incident(
    tmp_path: Path, wb: FakeWandb, watched_discord: FakeDiscord, model: FakeAnthropic | None
) -> None:
    """The model's verdict on a chat message is the one the engine reads: the overheating report
    (which the rules and their scorers read as talk) opens an incident in the cycle it arrives,
    quoting the message and linked to it. Without a key the rules' verdict stands and nothing
    opens."""
    fake = watched_discord
    t0 = now_utc() - timedelta(hours=3)
    step = start(wb, t0)
    settings = settings_for(tmp_path, fake, wb, model)
    runs = make_runs(watch_channels=[WATCHED], total_steps=100_000)
    async with deployed(settings, runs, SimClock(t0), fake) as d:
        wb.append_rows(FIRST, rows(step, 20, t0))
        await say(d, WATCHED, ASIDE, "alice", t0 + 5 * MIN, 11)
        hot = await say(d, WATCHED, HOT, "bob", t0 + 6 * MIN, 12)
        await d.cycle(t0 + 7 * MIN)
        stored = await d.store.events.get_by_external("hero", "discord", hot.external_id)
        assert stored is not None
        incidents = await d.store.incidents.find("hero")
        if model is None:
            assert not stored.live_report and stored.enriched_by == "rules"
            assert incidents == [] and d.channel() == []
            return
        assert stored.live_report and stored.enriched_by.startswith("llm:")  # who judged it
        [incident] = incidents
        assert await d.store.incidents.linked_ids(incident.id or 0) == {hot.id}
        cause = incident.details.reported_cause
        assert cause is not None and (cause.author, cause.url) == ("bob", hot.url)
        assert "91C" in cause.text
        [head] = d.channel()
        assert "91C" in full_text(head)
        # The model read bob's message with alice's line before it as context.
        enrichments = [
            r.user_text
            for r in model.message_requests
            if (r.body.get("tool_choice") or {}).get("type") == "tool" and HOT in r.user_text
        ]
        assert enrichments and all(f"alice: {ASIDE}" in text for text in enrichments)
