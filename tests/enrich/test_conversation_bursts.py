"""Conversations on a real store across many poll cycles: one conversation event per burst,
extended in place, never two sharing a message, never sent to the model (context only); each
message with substance is judged by itself in the round it arrives."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.enrich.conversations import GAP, MAX_MESSAGES
from bot.enrich.rules import Enrichment
from bot.models import Event, RunInfo
from bot.process.pipeline import Gather, enrich_step, rules_enrichment
from bot.store import Store

MINUTE = timedelta(minutes=1)
CHANNEL = "discord:2"


def message(i: int, at: datetime, text: str = "", author: str = "ana") -> Event:
    return Event(
        run_slug="hero",
        source="discord",
        external_id=f"msg:{i}",
        kind="message",
        at=at,
        author=author,
        ref="#hero-run",
        url=f"https://discord.com/channels/1/2/{i}",
        body=text or f"the eval sweep number {i} looks fine to me",
        thread=CHANNEL,
    )


class Counting:
    """An LLM-like enricher that records what it was asked to enrich (the rules answer)."""

    name = "llm"

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []  # (external id, member count) per enrichment

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        self.seen += [(e.external_id, int(e.extra.get("count", 1))) for e in events]
        return {e.id: (rules_enrichment(e), "llm") for e in events if e.id is not None}


async def all_conversations(store: Store, now: datetime) -> list[Event]:
    return await store.events.conversations_between(
        "hero", CHANNEL, now - timedelta(days=30), now + timedelta(days=30)
    )


def assert_disjoint(found: list[Event]) -> None:
    members = [m for c in found for m in c.extra["messages"]]
    assert len(members) == len(set(members)), "two conversations share a message"


async def test_a_burst_over_many_cycles_is_one_conversation_extended_in_place(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    enricher = Counting()
    gather = Gather(window=timedelta(seconds=60), batch=30)
    ids: set[int] = set()
    sizes: list[int] = []
    # 25 messages two minutes apart, one poll a minute: the burst is seen growing 50 times.
    for minute in range(50):
        at = now + minute * MINUTE
        if minute % 2 == 0:
            await store.events.upsert_many([message(minute // 2 + 1, at)])
        await enrich_step(store, at, enricher=enricher, gather=gather)
        found = await all_conversations(store, now)
        assert len(found) <= 1
        if found:
            ids.add(found[0].id or 0)
            sizes.append(found[0].extra["count"])
    assert len(ids) == 1  # the same row all along
    assert sizes == sorted(sizes) and sizes[0] == 2 and sizes[-1] == 25  # its range grew
    # Each message was judged in the round it arrived, once; the conversation never was.
    assert enricher.seen == [(f"msg:{i}", 1) for i in range(1, 26)]
    [conversation] = await all_conversations(store, now)
    assert conversation.summary and conversation.enriched_by == "rules"
    assert not conversation.newsworthy
    assert await store.events.pending_enrichment() == []
    settle = now + 48 * MINUTE + GAP + MINUTE

    # A message after a pause longer than GAP starts a new conversation with the next one.
    later = settle + timedelta(minutes=5)
    await store.events.upsert_many([message(100, later), message(101, later + MINUTE)])
    await enrich_step(store, later + MINUTE, enricher=enricher, gather=gather)
    found = await all_conversations(store, now)
    assert [c.external_id for c in found] == ["conv:1", "conv:100"]
    assert found[0].extra["count"] == 25 and found[1].extra["count"] == 2
    assert_disjoint(found)


async def test_a_chat_that_never_pauses_gets_consecutive_conversations(
    store: Store, now: datetime
) -> None:
    """A message a minute for three hours without a pause, polled every minute:
    bounded conversations, each message in exactly one, none re-created under a new id."""
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    created: set[str] = set()
    for minute in range(180):
        at = now + minute * MINUTE
        await store.events.upsert_many([message(minute + 1, at)])
        await enrich_step(store, at, enricher=Counting(), gather=Gather())
        created |= {c.external_id for c in await all_conversations(store, now)}
    found = await all_conversations(store, now)
    assert {c.external_id for c in found} == created  # no conversation replaced by another
    assert_disjoint(found)
    members = {m for c in found for m in c.extra["messages"]}
    assert members == {f"msg:{i}" for i in range(1, 181)}
    assert all(c.extra["count"] <= MAX_MESSAGES for c in found)
    assert len(found) == 180 // MAX_MESSAGES + 1  # 40, 40, 40, 40, 20


async def test_an_incident_report_in_a_burst_is_flagged_at_once(
    store: Store, now: datetime
) -> None:
    """The message reporting a lost node is judged in the round it arrives (here by an
    LLM-like enricher), as its own entry, so the incident engine sees it immediately."""
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many([message(1, now, "morning all")])
    await enrich_step(store, now, enricher=Counting(), gather=Gather())
    report = message(2, now + MINUTE, "node s12 lost, the job is down since 09:40")
    await store.events.upsert_many([report])
    await enrich_step(store, now + MINUTE, enricher=Counting(), gather=Gather())
    stored = await store.events.get_by_external("hero", "discord", "msg:2")
    assert stored is not None and stored.live_report and stored.newsworthy
    assert stored.enriched_by == "llm"
    [conversation] = await all_conversations(store, now)
    assert conversation.extra["count"] == 2


async def test_deleting_a_conversations_first_message_leaves_no_overlap(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    burst = [message(i, now + i * MINUTE) for i in (1, 2, 3)]
    await store.events.upsert_many(burst)
    await enrich_step(store, now + 3 * MINUTE, enricher=Counting())
    assert [c.external_id for c in await all_conversations(store, now)] == ["conv:1"]
    await store.events.mark_deleted("hero", "discord", "msg:1")
    await enrich_step(store, now + 4 * MINUTE, enricher=Counting())
    found = await all_conversations(store, now)
    assert [(c.external_id, c.extra["messages"]) for c in found] == [("conv:2", ["msg:2", "msg:3"])]
    old = await store.events.get_by_external("hero", "discord", "conv:1")
    assert old is not None and old.deleted

    # Deleting one more leaves a lone message: it is enriched on its own again, and shown.
    await store.events.mark_deleted("hero", "discord", "msg:2")
    await enrich_step(store, now + 5 * MINUTE, enricher=Counting())
    assert await all_conversations(store, now) == []
    alone = await store.events.get_by_external("hero", "discord", "msg:3")
    assert alone is not None and alone.newsworthy and alone.enriched_by == "llm"
