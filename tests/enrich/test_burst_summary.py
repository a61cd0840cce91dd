"""No-key summaries keep the substance: a chat burst stored and enriched by
the real pipeline (grouped into one conversation, rules enrichment, real SQLite) is summarised
from its substantive messages, each credited to its author; chit-chat contributes nothing, and
a burst of nothing but chit-chat is no timeline news."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.enrich.conversations import summarize_burst
from bot.models import RunInfo
from bot.pipeline import enrich_pending
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


async def test_a_burst_is_summarised_by_what_was_said_not_by_its_greeting(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    start = now - timedelta(hours=1)
    await store.events.upsert_many(
        [
            message(i, start + i * 30 * SECOND, text, author)
            for i, (author, text) in enumerate(BURST)
        ]
    )
    await enrich_pending(store, now=now)
    [conversation] = await store.events.conversations_between(
        "hero", "discord:2", start - timedelta(hours=1), now
    )
    assert conversation.summary == (
        "bob: node lost, ECC errors on host 12. Looks like GPU 3; "
        "dave: I drained host 12 and requeued, resuming from the last checkpoint"
    )
    assert conversation.newsworthy and conversation.incident
    entries = await build_timeline(store, "hero", now, days=1)
    summaries = [e.summary for e in entries]
    assert conversation.summary in summaries
    for chat in ("Morning", "nice", "lunch", "+1", "thanks"):
        assert not any(chat in s for s in summaries), summaries


async def test_a_burst_of_chit_chat_is_not_news(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    start = now - timedelta(hours=1)
    chat = [("alice", "Morning all!"), ("carol", "morning 🎉"), ("erin", "anyone for lunch?")]
    await store.events.upsert_many(
        [message(i, start + i * 30 * SECOND, text, author) for i, (author, text) in enumerate(chat)]
    )
    await enrich_pending(store, now=now)
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
