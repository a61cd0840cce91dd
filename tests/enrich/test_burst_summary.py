"""A chat burst stored and enriched by the real pipeline (real SQLite, no key): each message
that reports a fault, an action or a decision is its own timeline entry, at its own time, linked to
its own message, with its author; chit-chat is folded into the conversation, which is context and
no news; and the no-key summary of a conversation keeps its substance."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.enrich.conversations import summarize_burst
from bot.models import RunInfo
from bot.process.pipeline import enrich_pending
from bot.services.timeline import build_timeline
from bot.store import Store
from tests.enrich.test_conversation_bursts import message

SECOND = timedelta(seconds=1)
BURST = [
    ("alice", "Morning all!"),
    ("carol", "nice 🎉"),
    ("erin", "anyone grabbing lunch?"),
    ("alice", "+1"),
    ("bob", "Hmm, node lost, ECC errors on host 12. Looks like GPU 3."),
    ("dave", "I drained host 12 and requeued, resuming from the last checkpoint"),
    ("erin", "thanks dave!"),
]


async def test_a_report_and_an_action_are_each_their_own_entry(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    start = now - timedelta(hours=1)
    said = [
        message(i, start + i * 30 * SECOND, text, author) for i, (author, text) in enumerate(BURST)
    ]
    await store.events.upsert_many(said)
    await enrich_pending(store)
    [conversation] = await store.events.conversations_between(
        "hero", "discord:2", start - timedelta(hours=1), now
    )
    assert not conversation.newsworthy and not conversation.live_report  # context, no verdict
    entries = await build_timeline(store, "hero", now, days=1)
    report, action = said[4], said[5]
    assert [(e.at, e.author, e.url, e.kind) for e in entries] == [
        (action.at, "dave", action.url, "message"),  # newest first
        (report.at, "bob", report.url, "message"),
    ]
    assert entries[1].incident and "ECC errors on host 12" in entries[1].summary
    assert "requeued" in entries[0].summary and "ECC" not in entries[0].summary  # never glued
    summaries = " ".join(e.summary for e in entries)
    for chat in ("Morning", "nice", "lunch", "+1", "thanks"):
        assert chat not in summaries, summaries
    # The report's verdict is its own, read by the incident engine: a live report by rules.
    stored = await store.events.get_by_external("hero", "discord", report.external_id)
    assert stored is not None and stored.live_report and stored.enriched_by == "rules"


async def test_a_burst_of_chit_chat_is_not_news(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    start = now - timedelta(hours=1)
    chat = [("alice", "Morning all!"), ("carol", "morning 🎉"), ("erin", "anyone for lunch?")]
    await store.events.upsert_many(
        [message(i, start + i * 30 * SECOND, text, author) for i, (author, text) in enumerate(chat)]
    )
    await enrich_pending(store)
    [conversation] = await store.events.conversations_between(
        "hero", "discord:2", start - timedelta(hours=1), now
    )
    assert not conversation.newsworthy
    assert await build_timeline(store, "hero", now, days=1) == []


def test_when_it_does_not_fit_the_report_and_the_action_are_kept() -> None:
    lines = [f"ana: the eval sweep number {i} looks fine to me at step {i}000" for i in range(8)]
    lines.insert(3, "bob: Hero is down: node r12n4 lost, ECC errors on GPU 3.")
    lines.append("dave: requeued on a spare")
    said = summarize_burst("\n".join(lines))
    assert said is not None and len(said) <= 200
    assert "bob: Hero is down: node r12n4 lost, ECC errors on GPU 3" in said
    assert said.endswith("dave: requeued on a spare")
    assert said.index("bob:") < said.index("dave:")  # told in order
