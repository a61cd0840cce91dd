"""The enrichment step of the pipeline on a real store: rules enrichment and Discord bursts."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from bot.models import Event, RunInfo
from bot.process.pipeline import Budget, RulesEnricher, enrich_pending
from bot.services.timeline import build_timeline
from bot.store import Store


def message(i: int, at: datetime, text: str, author: str = "ana") -> Event:
    return Event(
        run_slug="hero",
        source="discord",
        external_id=f"msg:{i}",
        kind="message",
        at=at,
        author=author,
        ref="#hero-run",
        url=f"https://discord.com/channels/1/2/{i}",
        body=text,
        thread="discord:2",
    )


async def test_a_bursts_messages_with_substance_are_their_own_entries(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    minute = timedelta(minutes=1)
    burst = [
        message(1, now, "Node s12 dropped out of the gang again, job restarted from 40k"),
        message(2, now + 3 * minute, "Iris brought a spare in within ten minutes", "bo"),
        message(3, now + 5 * minute, "thanks!", "cy"),
        message(4, now + 6 * minute, "Loss is back on the curve", "ana"),
    ]
    lone = message(5, now + 3 * 60 * minute, "Evals for the 40k checkpoint are posted in #12")
    await store.events.upsert_many([*burst, lone])
    await enrich_pending(store)

    entries = await build_timeline(store, "hero", now + timedelta(days=1), days=2)
    assert [(e.kind, e.at, e.author) for e in reversed(entries)] == [
        ("message", m.at, m.author) for m in (*burst[:2], burst[3], lone)
    ]  # the "thanks!" is folded away
    assert entries[-1].incident  # a lost node reported in chat is flagged
    assert await store.events.pending_enrichment() == []

    # A later message in the same burst extends the conversation, and adds its own entry.
    await store.events.upsert_many([message(6, now + 9 * minute, "Throughput is normal too")])
    await enrich_pending(store)
    after = await build_timeline(store, "hero", now + timedelta(days=1), days=2)
    added = [e for e in after if e.at == now + 9 * minute]
    assert [e.summary for e in added] == ["Throughput is normal too"]
    assert [e.summary for e in after if e not in added] == [e.summary for e in entries]
    stored = await store.events.get_by_external("hero", "discord", "conv:1")
    assert stored is not None and stored.extra["count"] == 5 and not stored.newsworthy


async def test_rules_enrichment_fills_every_event(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    issue = Event(
        "hero",
        "github",
        "issue:7",
        "issue",
        now,
        author="kai",
        ref="#7",
        title="Weight decay on the router",
        body="## Summary\nProposes weight decay 0.02 on the MoE router, annealed to zero.\n\n"
        "| rung | loss |\n|---|---|\n| d768 | 3.1 |\n",
    )
    await store.events.upsert_many([issue])
    assert await enrich_pending(store) == 1
    stored = await store.events.get_by_external("hero", "github", "issue:7")
    assert stored is not None and stored.summary and stored.tag == "optimizer"
    assert "|" not in stored.summary and len(stored.summary) <= 200
    assert await enrich_pending(store) == 0  # each event is enriched once


async def test_wandb_facts_are_enriched_from_their_fields(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))

    def state(n: int, new: str, title: str) -> Event:
        return Event(
            "hero",
            "wandb",
            f"state:{n}",
            "state",
            now + timedelta(minutes=n),
            ref="hero-1",
            state=new,
            title=title,
            body=title,
        )

    crashed = state(1, "crashed", "W&B run hero-1 went from running to crashed at step 400")
    resumed = state(2, "running", "W&B run hero-1 went from crashed to running at step 400")
    await store.events.upsert_many([crashed, resumed])
    await enrich_pending(store)
    down = await store.events.get_by_external("hero", "wandb", "state:1")
    up = await store.events.get_by_external("hero", "wandb", "state:2")
    assert down is not None and down.incident and down.tag == "incident"
    # The recovery mentions "crashed" but is not an incident: the state says so, not the words.
    assert up is not None and not up.incident and up.tag == "infra"
    assert up.enriched_by == "facts"


async def test_conversation_summary_is_what_was_said(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    minute = timedelta(minutes=1)
    await store.events.upsert_many(
        [
            message(1, now, "Loss spiked to 4.1 at step 9,100 but came back within 50 steps"),
            message(2, now + minute, "Probably the bad shard again", "bo"),
        ]
    )
    await enrich_pending(store)
    conversation = await store.events.get_by_external("hero", "discord", "conv:1")
    assert conversation is not None and conversation.summary is not None
    # what was said, each author credited for their part
    assert conversation.summary == (
        "ana: Loss spiked to 4.1 at step 9,100 but came back within 50 steps; "
        "bo: Probably the bad shard again"
    )


async def test_detection_does_not_wait_for_enrichment(store: Store, now: datetime) -> None:
    """A slow or failing LLM must never delay a crash alert: detection runs before enrichment
    (on W&B facts) and again after it (on newly flagged reports)."""
    from bot.process.pipeline import run_cycle

    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many([message(1, now, "node s3 lost")])
    order: list[str] = []

    class SlowEnricher:
        name = "slow"

        async def enrich(self, events):  # type: ignore[no-untyped-def]
            order.append("enrich")
            return {}

    class Detector:
        async def detect(self, store: Store, now: datetime) -> int:
            order.append("detect")
            return 1

    summary = await run_cycle(store, [], now, enricher=SlowEnricher(), detector=Detector())
    assert order == ["detect", "enrich", "detect"]
    assert summary.alerts_queued == 2 and summary.errors == []


class ClockedEnricher:
    """Rules, but each call costs `cost` seconds on a fake clock; `hang` never returns."""

    name = "clocked"
    retry_label = "rules:llm-retry"

    def __init__(self, clock: list[float], cost: float = 0.0, *, hang: bool = False):
        self.clock, self.cost, self.hang = clock, cost, hang
        self.calls = 0

    async def enrich(self, events):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.hang:
            await asyncio.Event().wait()
        self.clock[0] += self.cost
        return await RulesEnricher().enrich(events)


def comment(i: int, at: datetime) -> Event:
    return Event(
        run_slug="hero",
        source="github",
        external_id=f"comment:{i}",
        kind="comment",
        at=at,
        author="ana",
        ref="#7",
        body=f"Comment {i}: the learning rate warmup looks fine to me.",
        thread="issue:7",
    )


async def test_enrichment_stops_at_its_budget_and_resumes_next_round(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many([comment(i, now) for i in range(50)])
    clock = [0.0]
    enricher = ClockedEnricher(clock, cost=15.0)

    budget = Budget(20.0, clock=lambda: clock[0])
    first = await enrich_pending(store, enricher, batch=10, budget=budget)
    assert enricher.calls == 2 and first == 20  # the second batch started at 15 s < 20 s
    assert len(await store.events.pending_enrichment()) == 30

    budget = Budget(20.0, clock=lambda: clock[0])
    assert await enrich_pending(store, enricher, batch=10, budget=budget) == 20
    assert await enrich_pending(store, enricher, batch=10) == 10  # unbounded: the rest
    assert await store.events.pending_enrichment() == []


async def test_a_hanging_enricher_is_cut_off_and_rules_stand_in_for_a_retry(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many([comment(i, now) for i in range(3)])
    enricher = ClockedEnricher([0.0], hang=True)

    assert await enrich_pending(store, enricher, budget=Budget(0.05)) == 3
    assert await store.events.pending_enrichment() == []
    retry = await store.events.enriched_by_label("rules:llm-retry")
    assert len(retry) == 3  # offered to the LLM again by `retry_llm_fallbacks` later


async def test_closing_an_incident_thread_is_not_a_new_report(store: Store, now: datetime) -> None:
    """A GitHub close is a `state` event whose text is the thread's title: the thread's report
    is flagged once, its close never again (the demo replay on live events found this)."""
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    title = "Restore hangs at barrier when requeued onto a spare with an older driver"
    report = Event(
        "hero", "github", "issue:1533", "issue", now, author="amara", ref="#1533",
        title=title, body="The restore hung for 85 minutes at the barrier.",
    )  # fmt: skip
    closed = Event(
        "hero", "github", "state:1533:closed:x", "state", now + timedelta(days=2),
        ref="#1533", state="closed", title="closed #1533", body=title,
    )  # fmt: skip
    await store.events.upsert_many([report, closed])
    await enrich_pending(store)
    stored_report = await store.events.get_by_external("hero", "github", "issue:1533")
    stored_close = await store.events.get_by_external("hero", "github", "state:1533:closed:x")
    assert stored_report is not None and stored_report.incident
    assert stored_close is not None and not stored_close.incident


class ChattyEnricher:
    """The rules, while a busy channel keeps adding a comment during every request."""

    def __init__(self, store: Store, now: datetime):
        self.store, self.now, self.calls = store, now, 0

    async def enrich(self, events: list[Event]) -> dict[int, tuple[Any, str]]:
        self.calls += 1
        if self.calls <= 10:  # (a round that never ended would otherwise go on for ever)
            await self.store.events.upsert_many([comment(1000 + self.calls, self.now)])
        return await RulesEnricher().enrich(events)


async def test_a_round_ends_once_the_queue_was_drained_however_busy_the_channel(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many([comment(i, now) for i in range(25)])
    enricher = ChattyEnricher(store, now)
    # 25 queued, one more arriving during each request: batches of 10, 10 and 7 (the 5 left
    # and the 2 that came meanwhile). The third was not full, so the queue was drained when it
    # was read: the comment that arrived during it is the next round's.
    assert await enrich_pending(store, enricher, batch=10) == 27
    assert enricher.calls == 3
    assert len(await store.events.pending_enrichment()) == 1
