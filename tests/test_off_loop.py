"""CPU-bound steps run in worker threads, never on the event loop: the rules'
enrichment (and the `ready` check that reads a message with them), folding a channel's bursts,
a forecast tracker's update, and turning many stored rows into events. Each test records, with
the real function wrapped, which thread ran it; none of them measures a time. How long
callbacks hold the loop at 1M events is a figure: `bench/bench_loop_steps.py`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

import bot.analysis.forecast as forecast_module
import bot.process.pipeline as pipeline
import bot.store.events as events_module
from bot.config.runsfile import RunConfig
from bot.incidents.forecasts import advance_forecasts
from bot.models import RunInfo
from bot.services.timeline import build_timeline
from bot.store import Store
from tests.test_pipeline import comment, message


def record_threads(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str
) -> tuple[list[int], Callable[..., Any]]:
    """Wrap `owner.name` so each call notes its thread (the real function still runs)."""
    seen: list[int] = []
    real = getattr(owner, name)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return seen, real


async def test_the_rules_and_the_burst_folding_run_in_a_worker_thread(
    store: Store, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    minute = timedelta(minutes=1)
    burst = [
        message(1, now, "Node s12 dropped out of the gang again, job restarted from 40k"),
        message(2, now + 3 * minute, "Iris brought a spare in within ten minutes", "bo"),
    ]
    await store.events.upsert_many([*burst, *(comment(i, now) for i in range(5))])
    rules, _ = record_threads(monkeypatch, pipeline, "enrich_event")
    folds, _ = record_threads(monkeypatch, pipeline, "conversation_of")
    loop = threading.get_ident()

    # the burst is folded and everything enriched
    assert await pipeline.enrich_pending(store) > 0

    assert await store.events.pending_enrichment() == []
    assert folds and loop not in folds
    assert len(rules) >= 5 and loop not in rules  # the comments, the messages, the conversation


async def test_whether_chat_is_due_is_read_in_a_worker_thread(
    store: Store, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a queued chat message has substance (`said_in_chat`: the model judges it this
    round) is read by the rules: that reading happens off the loop too."""
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many([message(1, now, "is anyone else seeing NaN loss since 40k?")])
    rules, _ = record_threads(monkeypatch, pipeline, "is_substantive")
    loop = threading.get_ident()

    assert await pipeline.enrichment_due(store, now, pipeline.Gather())

    assert rules and loop not in rules


async def test_a_forecast_tracker_is_updated_in_a_worker_thread(
    store: Store, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.analysis.forecast import SeriesPoint

    config = RunConfig(
        slug="hero",
        name="Hero",
        wandb_runs=["e/p/r"],
        forecasts=[{"metric": "train/grad_norm", "label": "gradient norm"}],
    )
    run = RunInfo.from_config(config)
    await store.runs.upsert(run)
    points = [
        SeriesPoint("e/p/r", step, now + timedelta(seconds=step), 0.3 + 0.001 * (step % 7))
        for step in range(1, 400)
    ]
    await store.series.add("hero", "train/grad_norm", points)
    updates, _ = record_threads(monkeypatch, forecast_module.Tracker, "update")
    loop = threading.get_ident()

    [tracker] = await advance_forecasts(store, run, ["e/p/r"], now + timedelta(hours=1))

    assert tracker.seen == 399  # the real update ran, on every point
    assert updates and loop not in updates


async def test_a_long_timeline_is_turned_into_events_in_a_worker_thread(
    store: Store, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    count = events_module.ROWS_ON_LOOP + 50
    await store.events.upsert_many([comment(i, now - timedelta(minutes=i)) for i in range(count)])
    await pipeline.enrich_pending(store)
    converted, _ = record_threads(monkeypatch, events_module, "event_from_row")
    loop = threading.get_ident()

    entries = await build_timeline(store, "hero", now + timedelta(minutes=1), days=7, limit=500)

    assert len(entries) == count
    assert converted and loop not in converted
    converted.clear()
    assert len(await store.events.timeline("hero", limit=500)) == count
    assert converted and loop not in converted
    # a short read stays on the loop (a thread hop would cost more than it saves)
    converted.clear()
    assert len(await store.events.timeline("hero", limit=3)) == 3
    assert converted and set(converted) == {loop}


async def test_a_narrative_prompt_is_built_in_a_worker_thread(
    store: Store, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bot.llm.narrative as narrative_module
    from bot.services.narrative import build_narrative_facts

    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many([comment(i, now - timedelta(minutes=i)) for i in range(5)])
    await pipeline.enrich_pending(store)
    facts = await build_narrative_facts(store, "hero", now)
    rendered, _ = record_threads(monkeypatch, narrative_module, "render_prompt")
    loop = threading.get_ident()

    output = await narrative_module.write_narrative(store, None, facts, now)

    assert output.fallback and output.content  # no LLM: the template, stored
    assert rendered and loop not in rendered


async def test_llm_enrichment_renders_and_checks_its_batch_in_a_worker_thread(
    store: Store, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a key: the events rendered for the request (bodies cleaned by the rules) and the
    answer's items checked against them, off the loop; the request itself is the loop's."""
    import bot.llm.enrich as llm_enrich
    from bot.llm.client import LLMClient
    from tests.fakes.anthropic import FakeAnthropic

    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.events.upsert_many([comment(i, now - timedelta(minutes=i)) for i in range(4)])
    events = await store.events.pending_enrichment("hero")
    rendered, _ = record_threads(monkeypatch, llm_enrich, "render_event")
    checked, _ = record_threads(monkeypatch, llm_enrich, "check_item")
    loop = threading.get_ident()
    async with FakeAnthropic() as fake:
        llm = LLMClient(
            store, api_key="sk-test-not-a-secret", base_url=fake.base_url, model="claude-haiku-4-5"
        )
        try:
            out = await llm_enrich.LLMEnricher(llm).enrich(events)
        finally:
            await llm.aclose()

    assert len(out) == 4 and fake.message_requests  # the fake answered the batch
    assert rendered and loop not in rendered
    assert checked and loop not in checked
