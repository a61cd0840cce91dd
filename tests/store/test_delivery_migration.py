"""Migration 0020 (delivery refusals): on a database written before it, a queued post survives
and is still delivered the usual way; the per-channel delivery state starts empty and records a
refusal and a post given up; `check-config`'s read-only reader sees the refusal."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bot.store import Database, Store
from bot.store.delivery import refused_channels
from tests.store.migrating import schema_before, version_of

REFUSALS = version_of("_delivery_refusals.sql")
AT = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


def build_old(path: Path) -> None:
    conn = schema_before(path, REFUSALS)
    conn.execute(
        "INSERT INTO outbox (run_slug, channel_id, kind, dedup_key, payload, status, attempts, "
        "created_at, last_error) VALUES ('hero', 10, 'alert', 'incident:1:fired', "
        "'{\"content\": \"Node lost\"}', 'queued', 3, '2026-09-02T11:00:00.000000Z', "
        "'HTTP 403: Missing Permissions')"
    )
    conn.commit()
    conn.close()


async def test_a_post_queued_before_the_migration_can_be_held_and_given_up(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    build_old(path)
    async with Database.open(path) as db:
        store = Store(db)
        [item] = await store.outbox.queued()
        assert item.status == "queued" and item.attempts == 3 and item.abandoned_at is None
        assert await store.delivery.all() == []
        why = "403 Missing Permissions (code 50013)"
        await store.delivery.failed(10, AT, why, refused=True)
        assert await store.delivery.refused_channels() == {10}
        [held] = await store.delivery.held()
        assert (held.channel_id, held.count, held.refused_since) == (10, 1, AT)
        assert item.id is not None and await store.outbox.abandon(item.id, AT, f"given up: {why}")
        gap = await store.delivery.add_missed(10, item.created_at or AT, why, AT)
        assert (gap.missed, gap.missed_from, gap.missed_reason) == (1, item.created_at, why)
        gone = await store.outbox.get(item.id)
        assert gone is not None and gone.status == "failed" and gone.abandoned_at == AT
        assert await store.delivery.held() == []  # nothing is queued there any more
    assert refused_channels(path) == {10: why}
