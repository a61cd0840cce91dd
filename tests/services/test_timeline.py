"""The timeline service on a real store: windows, filters, paging, and how an event becomes a
line when enrichment has not run or found nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.models import Event, RunInfo, WandbState
from bot.narrative.entries import entry_from_event
from bot.process.pipeline import enrich_pending
from bot.render.json import timeline_json
from bot.services.runs import UnknownRun
from bot.services.timeline import MAX_DAYS, BadFilter, build_timeline, validate_filters
from bot.store import Store

NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


def event(n: int, hours_ago: float, source: str = "github", **changes: object) -> Event:
    values: dict[str, object] = {
        "run_slug": "hero",
        "source": source,
        "external_id": f"item:{n}",
        "kind": "comment",
        "at": NOW - timedelta(hours=hours_ago),
        "author": "ana",
        "summary": f"summary {n}",
        "tag": "evals",
    }
    values.update(changes)
    return Event(**values)  # type: ignore[arg-type]


async def seed(store: Store, events: list[Event]) -> None:
    """Store the events, then their enrichment (as the pipeline does, in two steps)."""
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many(events)
    for e in events:
        await store.events.set_enrichment(
            e,
            summary=e.summary or "",
            tag=e.tag or "other",
            incident=e.incident,
            severity=None,
            newsworthy=e.newsworthy,
            enriched_by=e.enriched_by or "test",
        )


async def test_newest_first_within_the_window(store: Store) -> None:
    await seed(store, [event(1, 1), event(2, 30), event(3, 24 * 8)])
    entries = await build_timeline(store, "hero", NOW, days=7)
    assert [e.summary for e in entries] == ["summary 1", "summary 2"]
    everything = await build_timeline(store, "hero", NOW, days=None)
    assert [e.summary for e in everything] == ["summary 1", "summary 2", "summary 3"]


async def test_filters_by_tag_and_source_and_pages(store: Store) -> None:
    await seed(
        store,
        [
            event(1, 1, tag="infra"),
            event(2, 2, source="discord"),
            event(3, 3),
            event(4, 4),
            event(5, 5, deleted=True),
            event(6, 6, newsworthy=False),
        ],
    )
    infra = await build_timeline(store, "hero", NOW, tag="infra")
    assert [e.summary for e in infra] == ["summary 1"]
    discord = await build_timeline(store, "hero", NOW, source="discord")
    assert [e.summary for e in discord] == ["summary 2"]
    first = await build_timeline(store, "hero", NOW, limit=2)
    second = await build_timeline(store, "hero", NOW, limit=2, offset=2)
    assert [e.summary for e in first + second] == [
        "summary 1",
        "summary 2",
        "summary 3",
        "summary 4",
    ]  # deleted and non-newsworthy events never show


async def test_an_entry_the_judge_was_not_sure_of_shows_no_tag(store: Store) -> None:
    await seed(
        store,
        [
            event(1, 1, tag="other", enriched_by="rules"),
            event(2, 2, tag="optimizer", enriched_by="llm:enrich@abc123"),
        ],
    )
    entries = await build_timeline(store, "hero", NOW)
    rows = timeline_json(entries)
    assert [(r["tag"], r["tag_by"]) for r in rows] == [(None, "rules"), ("optimizer", "model")]


async def test_unknown_run_and_bad_filters(store: Store) -> None:
    with pytest.raises(UnknownRun):
        await build_timeline(store, "nope", NOW)
    for days, tag, source in ((0, None, None), (MAX_DAYS + 1, None, None)):
        with pytest.raises(BadFilter, match="days must be between"):
            validate_filters(days, tag, source)
    with pytest.raises(BadFilter, match="unknown tag 'gossip'"):
        validate_filters(7, "gossip", None)
    with pytest.raises(BadFilter, match="unknown source 'slack'"):
        validate_filters(7, None, "slack")
    validate_filters(None, "evals", "wandb")  # all fine


def test_an_event_becomes_a_line_without_enrichment() -> None:
    enriched = entry_from_event(event(1, 0, title="Title", body="Body"))
    assert (enriched.summary, enriched.tag) == ("summary 1", "evals")
    titled = entry_from_event(event(2, 0, summary=None, tag=None, title="Loss spike"))
    assert (titled.summary, titled.tag) == ("Loss spike", None)  # nothing judged: no tag
    body = entry_from_event(event(3, 0, summary=None, body="x" * 300, incident=True, tag=None))
    assert body.summary == "x" * 200 and body.tag == "incident" and body.incident
    empty = entry_from_event(event(4, 0, summary=None, body=None))
    assert empty.summary == "(no text)"


def wandb_state(n: int, hours_ago: float, old: str | None, new: str) -> Event:
    """A W&B state event as the source writes it (`bot.sources.wandb`)."""
    title = (
        f"W&B run hero-fork is {new} at step 62,004"
        if old is None
        else f"W&B run hero-fork went from {old} to {new} at step 62,004"
    )
    return Event(
        run_slug="hero",
        source="wandb",
        external_id=f"state:e/p/hero-fork:{new}:{n}",
        kind="state",
        at=NOW - timedelta(hours=hours_ago),
        ref="hero-fork",
        title=title,
        body=title + ".",
        state=new,
        extra=WandbState(wandb_run="e/p/hero-fork", from_state=old, to_state=new).to_json(),
    )


async def test_a_runs_routine_is_running_is_not_a_timeline_entry(store: Store) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many(
        [
            wandb_state(1, 5, None, "running"),  # the monitor's first look: routine
            wandb_state(2, 4, "running", "crashed"),
            wandb_state(3, 3, "crashed", "running"),  # resumed
            wandb_state(4, 2, "running", "finished"),
            wandb_state(5, 1, None, "crashed"),  # first seen already crashed: news
        ]
    )
    assert await enrich_pending(store) == 5
    shown = [e.summary for e in await build_timeline(store, "hero", NOW)]
    assert shown == [
        "W&B run hero-fork is crashed at step 62,004",
        "W&B run hero-fork went from running to finished at step 62,004",
        "W&B run hero-fork went from crashed to running at step 62,004",
        "W&B run hero-fork went from running to crashed at step 62,004",
    ]


async def test_a_listing_reads_no_whole_body_and_shows_the_same_lines(store: Store) -> None:
    """The timeline reads a body only as far as a line can show it, and no source data; its
    lines are those of the whole events (summary, title, the body's start, tag, 🚨, who)."""
    long_body = "word " * 20_000  # a 100 kB issue description
    events = [
        event(1, 1, title="A titled issue", body=long_body, kind="issue", summary=None),
        event(2, 2, body=long_body, summary=None, tag=None),
        event(3, 3, body=long_body, incident=True, tag="incident", enriched_by="llm:x@1"),
        event(4, 4, source="discord", kind="message", ref="#hero-run", body="node 12 down?"),
    ]
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many(events)
    await store.events.set_enrichment(
        events[2], summary="", tag="incident", incident=True, severity=None, newsworthy=True,
        enriched_by="llm:x@1",
    )  # fmt: skip
    listed = await store.events.listing("hero", since=NOW - timedelta(days=1))
    whole = await store.events.timeline("hero", since=NOW - timedelta(days=1))
    assert [e.external_id for e in listed] == [e.external_id for e in whole]
    assert max(len(e.body) for e in listed) == 200
    assert [entry_from_event(e) for e in listed] == [entry_from_event(e) for e in whole]
    entries = await build_timeline(store, "hero", NOW, days=1)
    assert entries[1].summary == long_body[:200] and entries[2].tag_by == "model"
