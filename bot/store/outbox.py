"""The outbox: posts queued for Discord, deduplicated by key, delivered in order."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import aiosqlite

from bot.core.timeutil import from_db, to_db, utcnow
from bot.models import (
    OutboxItem,
)
from bot.store.codec import to_json
from bot.store.db import Database


def _outbox_from_row(row: aiosqlite.Row) -> OutboxItem:
    return OutboxItem(
        id=row["id"],
        run_slug=row["run_slug"],
        channel_id=row["channel_id"],
        kind=row["kind"],
        dedup_key=row["dedup_key"],
        payload=json.loads(row["payload"]),
        status=row["status"],
        attempts=row["attempts"],
        created_at=from_db(row["created_at"]),
        not_before=from_db(row["not_before"]),
        sent_at=from_db(row["sent_at"]),
        message_id=row["message_id"],
        last_error=row["last_error"],
        reply_to=row["reply_to"],
        posted_in=row["posted_in"],
        anchor_id=row["anchor_id"],
        abandoned_at=from_db(row["abandoned_at"]),
    )


class OutboxRepo:
    def __init__(self, db: Database):
        self.db = db

    async def enqueue(self, item: OutboxItem) -> int | None:
        """Queue a post. The dedup key makes this idempotent: a second enqueue of the same key
        returns None and queues nothing."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO outbox (run_slug, channel_id, kind, dedup_key, payload, status, "
                "created_at, not_before, reply_to) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?) "
                "ON CONFLICT (dedup_key) DO NOTHING",
                (
                    item.run_slug,
                    item.channel_id,
                    item.kind,
                    item.dedup_key,
                    to_json(item.payload),
                    to_db(item.created_at or utcnow()),
                    to_db(item.not_before),
                    item.reply_to,
                ),
            )
            if not cursor.rowcount:
                return None
            item.id = int(cursor.lastrowid or 0)
            return item.id

    async def due(self, now: datetime, limit: int = 50) -> list[OutboxItem]:
        """Queued items ready to send, oldest first. Callers deliver per channel in id order and
        stop a channel at its first failure, so order within a channel is kept."""
        rows = await self.db.fetchall(
            "SELECT * FROM outbox WHERE status = 'queued' AND (not_before IS NULL OR "
            "not_before <= ?) ORDER BY id LIMIT ?",
            (to_db(now), limit),
        )
        return [_outbox_from_row(row) for row in rows]

    async def queued(self, limit: int = 50) -> list[OutboxItem]:
        """Every queued item, oldest first, including those still backing off: a poster that
        keeps per-channel order must see a waiting head item to hold the ones behind it."""
        rows = await self.db.fetchall(
            "SELECT * FROM outbox WHERE status = 'queued' ORDER BY id LIMIT ?", (limit,)
        )
        return [_outbox_from_row(row) for row in rows]

    async def get(self, item_id: int) -> OutboxItem | None:
        row = await self.db.fetchone("SELECT * FROM outbox WHERE id = ?", (item_id,))
        return _outbox_from_row(row) if row else None

    async def get_by_key(self, dedup_key: str) -> OutboxItem | None:
        row = await self.db.fetchone("SELECT * FROM outbox WHERE dedup_key = ?", (dedup_key,))
        return _outbox_from_row(row) if row else None

    async def mark_sent(
        self, item_id: int, message_id: str | None, at: datetime, posted_in: int | None = None
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET status = 'sent', sent_at = ?, message_id = ?, posted_in = ?, "
                "attempts = attempts + 1, last_error = NULL WHERE id = ?",
                (to_db(at), message_id, posted_in, item_id),
            )

    async def set_anchor(self, item_id: int, anchor_id: int) -> None:
        """Record the channel's newest message id before the item's first send (kept once set)."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET anchor_id = ? WHERE id = ? AND anchor_id IS NULL",
                (anchor_id, item_id),
            )

    async def mark_retry(
        self, item_id: int, error: str, not_before: datetime, *, give_up: bool = False
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET status = ?, attempts = attempts + 1, last_error = ?, "
                "not_before = ? WHERE id = ?",
                ("failed" if give_up else "queued", error[:500], to_db(not_before), item_id),
            )

    async def abandon(self, item_id: int, at: datetime, error: str) -> bool:
        """Give a queued post up for good (Discord refused it for longer than it could matter);
        False when it was no longer queued."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE outbox SET status = 'failed', abandoned_at = ?, last_error = ? "
                "WHERE id = ? AND status = 'queued'",
                (to_db(at), error[:500], item_id),
            )
            return bool(cursor.rowcount)

    async def replace_payload(self, item_id: int, payload: dict[str, Any]) -> bool:
        """New words for a post not yet delivered (the notice of missed posts, as more are
        given up); False when it is no longer queued."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE outbox SET payload = ? WHERE id = ? AND status = 'queued'",
                (to_json(payload), item_id),
            )
            return bool(cursor.rowcount)

    async def retire_queued(self, run_slug: str, reason: str) -> int:
        """Mark every queued item of `run_slug` as never to be posted (history replayed into
        the store, e.g. by the demo): a bot started later on this database must not announce
        incidents that ended long ago. Returns how many items were retired."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE outbox SET status = 'failed', last_error = ? "
                "WHERE run_slug = ? AND status = 'queued'",
                (reason[:500], run_slug),
            )
            return cursor.rowcount

    async def oldest_queued(self) -> OutboxItem | None:
        """The queued post that has waited longest (None: the queue is empty)."""
        row = await self.db.fetchone(
            "SELECT * FROM outbox WHERE status = 'queued' ORDER BY id LIMIT 1"
        )
        return _outbox_from_row(row) if row is not None else None

    async def pending_count(self) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) FROM outbox WHERE status = 'queued'")
        return int(row[0]) if row else 0
