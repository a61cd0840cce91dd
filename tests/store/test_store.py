"""Repositories against a real SQLite file."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.config.settings import Settings
from bot.models import Event, Incident, LLMOutput, MetricPoint, OutboxItem, RunInfo, RunSnapshot
from bot.store import Database, Store, StoreError
from bot.store.db import load_migrations
from bot.store.errors import BUSY_SECONDS, describe_sqlite_error

T0 = datetime(2026, 8, 20, tzinfo=UTC)


def event(external_id: str, body: str = "hello", **kw: object) -> Event:
    fields: dict[str, object] = {
        "run_slug": "hero",
        "source": "github",
        "external_id": external_id,
        "kind": "comment",
        "at": T0,
        "author": "ada",
        "ref": "#1",
        "body": body,
    }
    fields.update(kw)
    return Event(**fields)  # type: ignore[arg-type]


@pytest.fixture
async def hero(store: Store) -> Store:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero", total_steps=1000))
    return store


async def test_open_sets_pragmas_and_version(db_path: Path) -> None:
    async with Database.open(db_path) as db:
        mode = await db.fetchone("PRAGMA journal_mode")
        fk = await db.fetchone("PRAGMA foreign_keys")
        busy = await db.fetchone("PRAGMA busy_timeout")
        assert mode is not None and mode[0] == "wal"
        assert fk is not None and fk[0] == 1
        assert busy is not None and busy[0] >= 5000
        assert await db.user_version() == load_migrations()[-1].version


async def test_the_busy_timeout_is_set_on_every_connection_and_named_when_it_runs_out(
    db_path: Path,
) -> None:
    async with Database.open(db_path, readers=1, busy_timeout=0.25) as db:
        reader = db.read_only()
        assert (await db.fetchone("PRAGMA busy_timeout"))[0] == 250  # type: ignore[index]
        assert (await reader.fetchone("PRAGMA busy_timeout"))[0] == 250  # type: ignore[index]
        other = sqlite3.connect(db_path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock
        try:
            with pytest.raises(sqlite3.OperationalError) as locked:
                await Store(db).runs.upsert(RunInfo(slug="a", name="A"))
        finally:
            other.execute("ROLLBACK")
            other.close()
        said = describe_sqlite_error(locked.value, db.path, db.busy_timeout)
        assert said is not None and "locked by another process (waited 0.25 s)" in said, said
    default = Settings(_env_file=None)  # type: ignore[call-arg]
    assert default.runscribe_db_busy_timeout == BUSY_SECONDS
    short = Settings(_env_file=None, runscribe_db_busy_timeout="0.5")  # type: ignore[call-arg]
    assert short.runscribe_db_busy_timeout == 0.5
    with pytest.raises(ValidationError, match="greater than 0"):
        Settings(_env_file=None, runscribe_db_busy_timeout=0)  # type: ignore[call-arg]


async def test_reopen_does_not_reapply_migrations(db_path: Path) -> None:
    async with Database.open(db_path) as db:
        await Store(db).runs.upsert(RunInfo(slug="a", name="A"))
    async with Database.open(db_path) as db:
        assert [r.slug for r in await Store(db).runs.all()] == ["a"]


async def test_newer_database_is_refused(db_path: Path) -> None:
    async with Database.open(db_path):
        pass
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(StoreError, match="schema version 999"):
        async with Database.open(db_path):
            pass


async def test_upsert_is_idempotent_and_edits_update_in_place(hero: Store) -> None:
    first = await hero.events.upsert_many([event("comment:1"), event("comment:2")])
    assert len(first.inserted) == 2
    again = await hero.events.upsert_many([event("comment:1"), event("comment:2")])
    assert again.inserted == [] and again.updated == [] and again.unchanged == 2
    edited = await hero.events.upsert_many([event("comment:1", body="hello, edited")])
    assert edited.updated == [first.inserted[0]]
    rows = await hero.db.fetchall("SELECT id, body FROM events ORDER BY id")
    assert [(r[0], r[1]) for r in rows] == [
        (first.inserted[0], "hello, edited"),
        (first.inserted[1], "hello"),
    ]


async def test_duplicate_inside_one_batch_is_stored_once(hero: Store) -> None:
    result = await hero.events.upsert_many([event("comment:9"), event("comment:9")])
    assert len(result.inserted) == 1
    assert await hero.events.count("hero") == 1


async def test_enrichment_is_rearmed_by_an_edit(hero: Store) -> None:
    await hero.events.upsert_many([event("comment:1")])
    (pending,) = await hero.events.pending_enrichment()
    assert await hero.events.set_enrichment(
        pending,
        summary="s",
        tag="other",
        incident=False,
        severity=None,
        newsworthy=True,
        enriched_by="rules",
    )
    assert await hero.events.pending_enrichment() == []
    await hero.events.upsert_many([event("comment:1", body="changed")])
    (again,) = await hero.events.pending_enrichment()
    assert again.body == "changed"


async def test_enrichment_of_a_stale_read_is_not_written(hero: Store) -> None:
    await hero.events.upsert_many([event("comment:1")])
    (stale,) = await hero.events.pending_enrichment()
    await hero.events.upsert_many([event("comment:1", body="edited meanwhile")])
    wrote = await hero.events.set_enrichment(
        stale,
        summary="old",
        tag="other",
        incident=False,
        severity=None,
        newsworthy=True,
        enriched_by="rules",
    )
    assert wrote is False


async def test_timeline_filters_and_order(hero: Store) -> None:
    events = [
        event("a", at=T0, source="github"),
        event("b", at=T0 + timedelta(hours=1), source="discord"),
        event("c", at=T0 + timedelta(hours=2), source="github", deleted=True),
    ]
    await hero.events.upsert_many(events)
    got = await hero.events.timeline("hero")
    assert [e.external_id for e in got] == ["b", "a"]  # newest first, deleted hidden
    assert [e.external_id for e in await hero.events.timeline("hero", source="github")] == ["a"]
    since = await hero.events.timeline("hero", since=T0 + timedelta(minutes=30))
    assert [e.external_id for e in since] == ["b"]


async def test_mark_deleted(hero: Store) -> None:
    await hero.events.upsert_many([event("msg:1", source="discord")])
    assert await hero.events.mark_deleted("hero", "discord", "msg:1")
    assert not await hero.events.mark_deleted("hero", "discord", "msg:1")
    assert await hero.events.timeline("hero") == []


async def test_events_need_a_known_run(store: Store) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        await store.events.upsert_many([event("x")])


async def test_failed_transaction_rolls_back(hero: Store) -> None:
    with pytest.raises(RuntimeError):
        async with hero.transaction():
            await hero.events.upsert_many([event("comment:1")])
            await hero.cursors.set("github", "o/r:issues", "2026-01-01")
            raise RuntimeError("killed between fetch and commit")
    assert await hero.events.count("hero") == 0
    assert await hero.cursors.get("github", "o/r:issues") == (None, None)


async def test_metric_points_dedup_and_window(hero: Store) -> None:
    points = [
        MetricPoint("e/p/a", step=i * 10, at=T0 + timedelta(hours=i), loss=3.0 - i * 0.1)
        for i in range(10)
    ]
    assert await hero.metrics.add_points("hero", points) == 10
    assert await hero.metrics.add_points("hero", points) == 0
    # A restore logs step 50 again later: a new row, not a conflict.
    replay = MetricPoint("e/p/a", step=50, at=T0 + timedelta(hours=11), loss=2.5)
    assert await hero.metrics.add_points("hero", [replay]) == 1
    window = await hero.metrics.window("hero", T0 + timedelta(hours=8, minutes=30))
    assert [p.step for p in window] == [80, 90, 50]
    latest = await hero.metrics.latest("hero")
    assert latest is not None and latest.step == 50


async def test_downsampled_keeps_shape_and_bounds(hero: Store) -> None:
    points = [MetricPoint("e/p/a", step=i, at=T0 + timedelta(minutes=i)) for i in range(3000)]
    await hero.metrics.add_points("hero", points)
    sampled = await hero.metrics.downsampled("hero", buckets=100)
    assert 90 <= len(sampled) <= 102
    assert sampled[-1].step == 2999
    assert [p.at for p in sampled] == sorted(p.at for p in sampled)


async def test_snapshot_upsert_returns_previous(hero: Store) -> None:
    snap = RunSnapshot("e/p/a", "a", "running", T0, T0, 10, T0)
    assert await hero.snapshots.upsert("hero", snap) is None
    crashed = RunSnapshot("e/p/a", "a", "crashed", T0, T0, 12, T0 + timedelta(minutes=5))
    previous = await hero.snapshots.upsert("hero", crashed)
    assert previous is not None and previous.state == "running"
    (only,) = await hero.snapshots.chain("hero")
    assert only.state == "crashed" and only.last_step == 12


async def test_health_backoff_bookkeeping(hero: Store) -> None:
    assert await hero.health.record_failure("github", "hero", T0, "boom", T0) == 1
    assert await hero.health.record_failure("github", "hero", T0, "boom", T0) == 2
    await hero.health.record_success("github", "hero", T0 + timedelta(minutes=1))
    health = await hero.health.get("github", "hero")
    assert health is not None
    assert health.consecutive_failures == 0 and health.last_error is None
    assert health.last_success_at == T0 + timedelta(minutes=1)


async def test_outbox_dedup_and_ordering(hero: Store) -> None:
    def item(key: str) -> OutboxItem:
        return OutboxItem(channel_id=7, kind="alert", payload={"content": key}, dedup_key=key)

    first = await hero.outbox.enqueue(item("a"))
    assert first is not None
    assert await hero.outbox.enqueue(item("a")) is None
    await hero.outbox.enqueue(item("b"))
    due = await hero.outbox.due(datetime.now(UTC))
    assert [i.dedup_key for i in due] == ["a", "b"]
    await hero.outbox.mark_retry(first, "429", datetime.now(UTC) + timedelta(hours=1))
    assert [i.dedup_key for i in await hero.outbox.due(datetime.now(UTC))] == ["b"]
    await hero.outbox.mark_sent(first, "m1", datetime.now(UTC))
    sent = await hero.outbox.get(first)
    assert sent is not None and sent.status == "sent" and sent.message_id == "m1"


async def test_one_open_incident_per_fingerprint(hero: Store) -> None:
    incident = Incident("hero", "wandb-state", "crash", "crashed", "firing", T0)
    await hero.incidents.save(incident)
    with pytest.raises(sqlite3.IntegrityError):
        await hero.incidents.save(Incident("hero", "wandb-state", "crash", "again", "firing", T0))
    incident.status = "resolved"
    incident.resolved_at = T0 + timedelta(minutes=47)
    await hero.incidents.save(incident)
    await hero.incidents.save(Incident("hero", "wandb-state", "crash", "again", "firing", T0))
    assert len(await hero.incidents.find("hero")) == 2
    assert len(await hero.incidents.find("hero", open_only=True)) == 1


async def test_llm_spend_by_task(hero: Store) -> None:
    for task, cost in (("enrich", 0.01), ("enrich", 0.02), ("digest", 0.5)):
        await hero.llm.record(
            LLMOutput(task, "p", "h", "m", "text", datetime.now(UTC), "hero", 10, 5, cost)
        )
    spend = await hero.llm.spend(datetime.now(UTC) - timedelta(hours=1))
    assert spend["enrich"]["calls"] == 2
    assert spend["enrich"]["cost_usd"] == pytest.approx(0.03)
    latest = await hero.llm.latest("hero", "digest")
    assert latest is not None and latest.cost_usd == 0.5


async def test_an_older_version_never_overwrites_a_newer_edit(hero: Store) -> None:
    newer = event("comment:1", body="v2", updated_at=T0 + timedelta(hours=2))
    older = event("comment:1", body="v1", updated_at=T0 + timedelta(hours=1))
    await hero.events.upsert_many([newer])
    result = await hero.events.upsert_many([older])
    assert result.updated == [] and result.unchanged == 1
    stored = await hero.events.get_by_external("hero", "github", "comment:1")
    assert stored is not None and stored.body == "v2"


async def test_transaction_on_one_database_does_not_swallow_anothers(tmp_path: Path) -> None:
    """Two databases used nested in one task: the inner block fails, so its write must be rolled
    back even though the outer database has a transaction open."""
    async with (
        Database.open(tmp_path / "a.db") as db_a,
        Database.open(tmp_path / "b.db") as db_b,
    ):
        async with db_a.transaction() as conn_a:
            await conn_a.execute(
                "INSERT INTO runs (slug, name, config, updated_at) VALUES ('a', 'A', '{}', '')"
            )
            with pytest.raises(RuntimeError):
                async with db_b.transaction() as conn_b:
                    await conn_b.execute(
                        "INSERT INTO runs (slug, name, config, updated_at) "
                        "VALUES ('b', 'B', '{}', '')"
                    )
                    raise RuntimeError("the block failed")
            # Nested use of the same database still joins the outer transaction.
            async with db_a.transaction() as inner:
                assert inner is conn_a
        assert [r.slug for r in await Store(db_a).runs.all()] == ["a"]
        assert await Store(db_b).runs.all() == []
