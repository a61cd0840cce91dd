"""What the store keeps up to date at write time so requests need not read the history: the
metric series' version and span, the chart buckets, the incidents' version; and the read-only
connections commands read through."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.incidents.service import incident_stats
from bot.models import Incident, MetricPoint, RunInfo
from bot.store import Database, Store, StoreError
from bot.store.db import load_migrations

T0 = datetime(2026, 8, 20, tzinfo=UTC)


@pytest.fixture
async def hero(store: Store) -> Store:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero", total_steps=1000))
    return store


def series(n: int, every: timedelta, run: str = "e/p/a", start: datetime = T0) -> list[MetricPoint]:
    return [
        MetricPoint(run, step=i, at=start + every * i, tokens=i * 1e6, loss=10.0 - i / n)
        for i in range(n)
    ]


async def test_version_follows_inserts_not_duplicates(hero: Store) -> None:
    empty = await hero.metrics.version("hero")
    await hero.metrics.add_points("hero", series(10, timedelta(minutes=1)))
    first = await hero.metrics.version("hero")
    assert first != empty
    assert await hero.metrics.add_points("hero", series(10, timedelta(minutes=1))) == 0
    assert await hero.metrics.version("hero") == first  # nothing new, same version
    await hero.metrics.add_points("hero", series(11, timedelta(minutes=1))[-1:])
    assert await hero.metrics.version("hero") not in (first, empty)


@pytest.mark.parametrize(
    "every",
    [timedelta(seconds=30), timedelta(minutes=2), timedelta(minutes=20), timedelta(hours=4)],
    ids=["raw", "5-min buckets", "1-h buckets", "12-h buckets"],
)
async def test_downsampled_is_bounded_and_made_of_real_points(
    hero: Store, every: timedelta
) -> None:
    points = series(3000, every) + series(500, every, run="e/p/b", start=T0 + every * 3000)
    await hero.metrics.add_points("hero", points)
    sampled = await hero.metrics.downsampled("hero", buckets=100)
    assert 20 <= len(sampled) <= 2 * 101  # at most one per display bucket and W&B run
    stored = {(p.wandb_run, p.step): p for p in points}
    for point in sampled:
        original = stored[(point.wandb_run, point.step)]
        assert (point.at, point.tokens, point.loss) == (original.at, original.tokens, original.loss)
    assert sampled[-1].step == 499 and sampled[-1].wandb_run == "e/p/b"  # the newest point
    assert [p.at for p in sampled] == sorted(p.at for p in sampled)
    # spread over the whole span, not bunched at one end
    span = points[-1].at - points[0].at
    assert sampled[0].at - points[0].at < span / 50


async def test_a_late_point_does_not_replace_a_newer_one_in_its_bucket(hero: Store) -> None:
    await hero.metrics.add_points("hero", series(3000, timedelta(minutes=2)))
    before = await hero.metrics.downsampled("hero", buckets=100)
    await hero.metrics.add_points("hero", [MetricPoint("e/p/a", step=10**6, at=T0, loss=99.0)])
    after = await hero.metrics.downsampled("hero", buckets=100)
    assert after[-1] == before[-1]
    assert all(p.loss != 99.0 for p in after[1:])


async def test_migration_fills_series_and_buckets_from_stored_points(db_path: Path) -> None:
    """A database from before the counters existed gets them from its points."""
    conn = sqlite3.connect(db_path)
    counters = next(m.version for m in load_migrations() if m.name.endswith("_perf_counters.sql"))
    for migration in load_migrations():
        if migration.version >= counters:
            break
        conn.executescript(migration.sql)
        conn.execute(f"PRAGMA user_version = {migration.version}")
    conn.execute(
        "INSERT INTO runs (slug, name, config, updated_at) VALUES ('hero', 'Hero', '{}', 'x')"
    )
    points = series(3000, timedelta(minutes=2))
    conn.executemany(
        "INSERT INTO metric_points (run_slug, wandb_run, step, at, tokens, loss) "
        "VALUES ('hero', ?, ?, ?, ?, ?)",
        [
            (p.wandb_run, p.step, p.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), p.tokens, p.loss)
            for p in points
        ],
    )
    conn.commit()
    conn.close()
    async with Database.open(db_path) as db:
        migrated = Store(db)
        sampled = await migrated.metrics.downsampled("hero", buckets=100)
        assert 50 <= len(sampled) <= 101 and sampled[-1].step == 2999
        assert (await migrated.metrics.version("hero")).startswith("3000:")
        await migrated.metrics.add_points("hero", series(3001, timedelta(minutes=2))[-1:])
        assert (await migrated.metrics.version("hero")).startswith("3001:")


async def test_incident_stats_are_recomputed_only_when_incidents_change(hero: Store) -> None:
    v0 = await hero.incidents.version("hero")
    incident = Incident("hero", "stall", "stall", "Stalled", "firing", T0, fired_at=T0)
    incident.details.fired = True
    await hero.incidents.save(incident)
    v1 = await hero.incidents.version("hero")
    assert v1 != v0
    assert (await incident_stats(hero, "hero")).count == 1
    assert hero.memo[("incident_stats", "hero")][0] == v1
    incident.status, incident.resolved_at = "resolved", T0 + timedelta(hours=1)
    await hero.incidents.update(incident)
    assert await hero.incidents.version("hero") != v1
    stats = await incident_stats(hero, "hero")
    assert stats.open == 0 and stats.downtime == timedelta(0)  # a stall adds no crash downtime
    second = Incident("hero", "stall", "stall", "Again", "firing", T0 + timedelta(days=1))
    second.details.fired = True
    await hero.incidents.save(second)
    assert (await incident_stats(hero, "hero")).count == 2


async def test_reader_sees_commits_and_never_waits_for_the_writer(db_path: Path) -> None:
    async with Database.open(db_path, readers=2) as db:
        store = Store(db)
        reader = store.reader
        assert reader is not store and reader.db is not db
        await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
        assert [r.slug for r in await reader.runs.all()] == ["hero"]
        writing = asyncio.Event()
        release = asyncio.Event()

        async def long_write() -> None:
            async with store.transaction() as conn:
                await conn.execute(
                    "INSERT INTO runs (slug, name, config, updated_at) "
                    "VALUES ('side', 'Side', '{}', 'x')"
                )
                writing.set()
                await release.wait()

        task = asyncio.create_task(long_write())
        await writing.wait()
        assert db.saturated  # a read on the writer's connection would queue now
        # ...but the reader answers while the write transaction is open, without its row
        assert [r.slug for r in await reader.runs.all()] == ["hero"]
        release.set()
        await task
        assert [r.slug for r in await reader.runs.all()] == ["hero", "side"]
        with pytest.raises(StoreError):
            await reader.runs.upsert(RunInfo(slug="x", name="X"))


async def test_without_readers_the_reader_is_the_store(store: Store) -> None:
    assert store.reader is store


async def test_set_enrichment_many_skips_events_edited_since(hero: Store) -> None:
    from bot.models import Event
    from bot.store.events import Enriched

    events = [
        Event(
            run_slug="hero",
            source="github",
            external_id=f"c:{i}",
            kind="comment",
            at=T0 + timedelta(minutes=i),
            body=f"comment {i}",
        )
        for i in range(3)
    ]
    await hero.events.upsert_many(events)
    edited = dataclasses.replace(events[2], body="edited", id=None)
    await hero.events.upsert_many([edited])
    written = await hero.events.set_enrichment_many(
        [(e, Enriched(summary=f"s{i}", tag="infra")) for i, e in enumerate(events)]
    )
    assert written == 2
    (pending,) = await hero.events.pending_enrichment("hero")
    assert pending.external_id == "c:2" and pending.body == "edited"
    first = await hero.events.get(events[0].id or 0)
    assert first is not None and (first.summary, first.tag) == ("s0", "infra")


async def test_rewriting_an_unchanged_incident_keeps_its_version(hero: Store) -> None:
    incident = Incident("hero", "stall", "stall", "Stalled", "firing", T0, fired_at=T0)
    await hero.incidents.save(incident)
    version = await hero.incidents.version("hero")
    await hero.incidents.update(incident)  # what the engine does every cycle
    assert await hero.incidents.version("hero") == version
    incident.cause = "node lost"
    await hero.incidents.update(incident)
    assert await hero.incidents.version("hero") == version + 1
