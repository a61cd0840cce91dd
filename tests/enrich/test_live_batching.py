"""Live batching on a real store and a simulated clock: queued events share a request until the
window or the batch is full; an incident report and W&B facts never wait."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.enrich.rules import Enrichment
from bot.models import Event, RunInfo
from bot.process.pipeline import Gather, enrich_step, rules_enrichment
from bot.store import Store
from bot.store.events import RETRY_LABEL

MINUTE = timedelta(minutes=1)
WINDOW = Gather(window=10 * MINUTE, batch=30)


def comment(i: int, at: datetime, body: str = "") -> Event:
    return Event(
        run_slug="hero",
        source="github",
        external_id=f"comment:{i}",
        kind="comment",
        at=at,
        author="kai",
        ref="#12",
        url=f"https://github.com/o/r/issues/12#c{i}",
        body=body or f"Sweep {i}: the warmup ablation is still running, results tomorrow.",
        thread="github:o/r#12",
    )


class Requests:
    """An LLM-like enricher recording each call (one call is one request here)."""

    name = "llm"

    def __init__(self) -> None:
        self.calls: list[tuple[datetime, list[str]]] = []
        self.now: datetime | None = None

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        assert self.now is not None
        self.calls.append((self.now, [e.external_id for e in events]))
        return {e.id: (rules_enrichment(e), "llm") for e in events if e.id is not None}


async def tick(store: Store, llm: Requests, at: datetime, gather: Gather = WINDOW) -> None:
    llm.now = at
    await enrich_step(store, at, enricher=llm, gather=gather)


async def test_events_share_a_request_until_the_oldest_has_waited_the_window(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    llm = Requests()
    # A comment every two minutes for 30 minutes; the enrichment loop looks every 10 seconds.
    for second in range(0, 30 * 60, 10):
        at = now + timedelta(seconds=second)
        if second % 120 == 0:
            await store.events.upsert_many([comment(second // 120, at)])
        await tick(store, llm, at)
    # Comments at 0, 2, …, 28 min: the first request when the one from 0 min has waited
    # 10 min (it takes 0-10), the next when the one from 12 min has (12-22); 24-28 still wait.
    assert [(sent - now, len(ids)) for sent, ids in llm.calls] == [
        (10 * MINUTE, 6),
        (22 * MINUTE, 6),
    ]
    assert llm.calls[1][1][0] == "comment:6"
    assert len(await store.events.pending_enrichment()) == 3


async def test_a_full_batch_goes_at_once(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    llm = Requests()
    await store.events.upsert_many([comment(i, now) for i in range(29)])
    await tick(store, llm, now)
    assert llm.calls == []
    await store.events.upsert_many([comment(29, now + MINUTE)])
    await tick(store, llm, now + MINUTE)
    assert [len(ids) for _, ids in llm.calls] == [30]


async def test_without_a_retry_queue_an_incident_report_is_sent_at_once(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    llm = Requests()
    await store.events.upsert_many([comment(1, now)])
    await tick(store, llm, now)
    assert llm.calls == []
    report = comment(2, now + MINUTE, "The hero run is down: node r12n4 lost, NCCL timeout.")
    assert rules_enrichment(report).incident
    await store.events.upsert_many([report])
    await tick(store, llm, now + MINUTE)
    assert llm.calls == [(now + MINUTE, ["comment:1", "comment:2"])]
    stored = await store.events.get_by_external("hero", "github", "comment:2")
    assert stored is not None and stored.incident


async def test_wandb_facts_never_wait_for_a_batch(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    llm = Requests()
    crashed = Event(
        "hero",
        "wandb",
        "state:1",
        "state",
        now,
        ref="hero-1",
        state="crashed",
        title="W&B run hero-1 went from running to crashed at step 400",
    )
    await store.events.upsert_many([crashed, comment(1, now)])
    await tick(store, llm, now)
    stored = await store.events.get_by_external("hero", "wandb", "state:1")
    assert stored is not None and stored.incident and stored.enriched_by == "facts"
    assert llm.calls == []  # the comment still waits for company
    assert [e.external_id for e in await store.events.pending_enrichment()] == ["comment:1"]


class LLMLike(Requests):
    """With a retry label, as the LLM enricher has: reports can be queued for the batch."""

    retry_label = RETRY_LABEL


async def test_an_incident_report_is_flagged_at_once_and_joins_the_next_batch(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    llm = LLMLike()
    await store.events.upsert_many([comment(1, now)])
    await tick(store, llm, now)
    report = comment(2, now + MINUTE, "The hero run is down: node r12n4 lost, NCCL timeout.")
    await store.events.upsert_many([report])
    await tick(store, llm, now + MINUTE)
    # The incident engine can read it this round: flagged by the rules, no request made.
    stored = await store.events.get_by_external("hero", "github", "comment:2")
    assert stored is not None and stored.incident and stored.enriched_by == RETRY_LABEL
    assert llm.calls == []
    # It goes with the batch, in the same request as the comment that was waiting.
    for second in range(70, 10 * 60 + 10, 10):
        await tick(store, llm, now + timedelta(seconds=second))
    assert llm.calls == [(now + WINDOW.window, ["comment:1", "comment:2"])]
    stored = await store.events.get_by_external("hero", "github", "comment:2")
    assert stored is not None and stored.enriched_by == "llm" and stored.incident
