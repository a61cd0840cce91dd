"""Retrieval on a real store: exact tokens, recency, the per-thread cap, named references and
days, the bounded path for common words, and runs sharing one index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.ask.query import parse_question
from bot.ask.retrieval import retrieve
from bot.models import Event, RunInfo
from bot.store import Store

NOW = datetime(2026, 9, 20, 12, 0, tzinfo=UTC)


def ev(key: str, body: str, *, days: float = 1.0, thread: str | None = None, **kw: object) -> Event:
    fields: dict[str, object] = {
        "run_slug": "hero",
        "source": "discord",
        "external_id": key,
        "kind": "message",
        "at": NOW - timedelta(days=days),
        "author": "ada",
        "body": body,
        "thread": thread or f"discord:{key}",
    }
    fields.update(kw)
    return Event(**fields)  # type: ignore[arg-type]


@pytest.fixture
async def hero(store: Store) -> Store:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    return store


async def ask(store: Store, question: str, **kw: object) -> list[str]:
    hits = await retrieve(store, "hero", parse_question(question), NOW, **kw)  # type: ignore[arg-type]
    return [h.event.external_id for h in hits]


async def test_step_numbers_match_with_or_without_separators(hero: Store) -> None:
    await hero.events.upsert_many(
        [
            ev("grouped", "loss spiked at step 54,000 after the restore"),
            ev("plain", "checkpoint 41000 saved fine"),
            ev("other", "step 54 looked odd, 000 nodes"),  # not the number 54,000
        ]
    )
    assert (await ask(hero, "what happened at step 54000?"))[0] == "grouped"
    assert (await ask(hero, "what happened at 54k?"))[0] == "grouped"
    assert (await ask(hero, "checkpoint 41,000"))[0] == "plain"


async def test_run_ids_and_issue_refs_match_exactly(hero: Store) -> None:
    await hero.events.upsert_many(
        [
            ev("run", "W&B run hero-12d8b6f0 crashed with an ECC error"),
            ev("near", "hero run 12 restarted; d8b6f0 is a node name"),
            ev("issue", "Tracking the gate norm", kind="issue", ref="#8818", source="github"),
            ev("mention", "as discussed in #8818 the norm grows"),
        ]
    )
    assert await ask(hero, "why did hero-12d8b6f0 crash?") == ["run"]
    found = await ask(hero, "what is #8818 about?")
    assert found[:2] == ["issue", "mention"]


async def test_recent_events_win_a_tie(hero: Store) -> None:
    await hero.events.upsert_many(
        [
            ev("old", "the NVLink fault is back on node 17", days=60),
            ev("new", "the NVLink fault is back on node 17", days=2),
        ]
    )
    assert await ask(hero, "has the NVLink fault come back?") == ["new", "old"]


async def test_relevance_beats_mild_recency(hero: Store) -> None:
    await hero.events.upsert_many(
        [
            ev("strong", "gate weight decay lowered: gate weight decay now 0.01", days=90),
            ev("weak", "weight update done", days=0.1),
        ]
    )
    assert (await ask(hero, "why did we lower the gate weight decay?"))[0] == "strong"


async def test_a_thread_cannot_flood_the_answer(hero: Store) -> None:
    flood = [
        ev(f"t{i}", f"restore failed again, attempt {i}", thread="github:a/b#1") for i in range(12)
    ]
    await hero.events.upsert_many([*flood, ev("elsewhere", "the restore failed on node 3", days=5)])
    found = await ask(hero, "why did the restore fail?", limit=5)
    assert "elsewhere" in found
    assert sum(key.startswith("t") for key in found) == 2


async def test_named_day_is_preferred(hero: Store) -> None:
    await hero.events.upsert_many(
        [
            ev("sep9", "step time went from 4.1s to 6.8s, paging network", days=11.4),  # Sep 9
            ev("later", "steps slower and slower, step time 5s vs 4s, slower again", days=2),
        ]
    )
    assert (await ask(hero, "why were steps slower on the night of Sep 9?"))[0] == "sep9"
    assert (await ask(hero, "why were steps slower?"))[0] == "later"


async def test_common_words_take_the_bounded_path(hero: Store) -> None:
    """With a tiny budget every word is "common": the newest events with all the words fill
    the answer, and a rare word still ranks its event first."""
    common = [ev(f"c{i}", "loss curve looks fine today", days=10 - i * 0.1) for i in range(20)]
    rare = ev("rare", "zloss: the loss curve of the ablation with the smaller batch", days=30)
    await hero.events.upsert_many([rare, *common])
    found = await ask(hero, "loss curve", budget=5, limit=4)
    assert found == ["c19", "c18", "c17", "c16"]  # same text: the most recent first
    found = await ask(hero, "zloss loss curve", budget=5, limit=4)
    assert found[0] == "rare" and found[1:] == ["c19", "c18", "c17"]


async def test_other_runs_cannot_crowd_a_run_out(hero: Store) -> None:
    await hero.runs.upsert(RunInfo(slug="busy", name="Busy"))
    busy = [
        ev(f"b{i}", "restore failed restore failed restore", run_slug="busy") for i in range(210)
    ]
    await hero.events.upsert_many([*busy, ev("mine", "a long note that says the restore failed")])
    assert await ask(hero, "restore failed") == ["mine"]


async def test_deleted_events_are_not_found(hero: Store) -> None:
    await hero.events.upsert_many([ev("gone", "the router collapsed"), ev("kept", "router ok")])
    await hero.events.mark_deleted("hero", "discord", "gone")
    assert await ask(hero, "router collapsed") == ["kept"]


async def test_nothing_matching_is_an_empty_list(hero: Store) -> None:
    await hero.events.upsert_many([ev("a", "the loss is fine")])
    assert await ask(hero, "quokka") == []
