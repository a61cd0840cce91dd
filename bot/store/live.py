"""Live status messages (`live_messages`): one row per run with a `status_channel`. The poster
records where the message is; the refresher (`bot.outputs.live`) what it queued last."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import aiosqlite

from bot.core.timeutil import from_db, to_db
from bot.models import LiveMessage
from bot.store.db import Database, rows_if_readable

LIVE_KIND = "live"  # the outbox kind of a live status update


def _from_row(row: aiosqlite.Row) -> LiveMessage:
    return LiveMessage(
        run_slug=row["run_slug"],
        channel_id=row["channel_id"],
        message_id=row["message_id"],
        chart_digest=row["chart_digest"],
        attachment_id=row["attachment_id"],
        pinned=bool(row["pinned"]),
        pin_refused=bool(row["pin_refused"]),
        posted_at=from_db(row["posted_at"]),
        edited_at=from_db(row["edited_at"]),
        rendered_at=from_db(row["rendered_at"]),
        fingerprint=row["fingerprint"],
    )


class LiveMessagesRepo:
    def __init__(self, db: Database):
        self.db = db

    async def get(self, run_slug: str) -> LiveMessage | None:
        row = await self.db.fetchone("SELECT * FROM live_messages WHERE run_slug = ?", (run_slug,))
        return _from_row(row) if row else None

    async def all(self) -> list[LiveMessage]:
        rows = await self.db.fetchall("SELECT * FROM live_messages ORDER BY run_slug")
        return [_from_row(row) for row in rows]

    async def by_message(self, message_id: int) -> LiveMessage | None:
        row = await self.db.fetchone(
            "SELECT * FROM live_messages WHERE message_id = ?", (message_id,)
        )
        return _from_row(row) if row else None

    async def queued(self, run_slug: str) -> bool:
        """Whether a live update of the run is waiting in the outbox (at most one is queued)."""
        row = await self.db.fetchone(
            "SELECT 1 FROM outbox WHERE run_slug = ? AND status = 'queued' AND kind = ? LIMIT 1",
            (run_slug, LIVE_KIND),
        )
        return row is not None

    async def rendered(self, run_slug: str, fingerprint: str, at: datetime) -> None:
        """The refresher queued content computed at `at` showing `fingerprint`."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO live_messages (run_slug, rendered_at, fingerprint) VALUES (?, ?, ?) "
                "ON CONFLICT (run_slug) DO UPDATE SET rendered_at = excluded.rendered_at, "
                "fingerprint = excluded.fingerprint",
                (run_slug, to_db(at), fingerprint),
            )

    async def posted(
        self,
        run_slug: str,
        channel_id: int,
        message_id: int,
        *,
        chart_digest: str | None,
        attachment_id: int | None,
        at: datetime,
    ) -> None:
        """A new live message is in the channel (not pinned yet)."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO live_messages (run_slug, channel_id, message_id, chart_digest, "
                "attachment_id, pinned, posted_at, edited_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?) "
                "ON CONFLICT (run_slug) DO UPDATE SET channel_id = excluded.channel_id, "
                "message_id = excluded.message_id, chart_digest = excluded.chart_digest, "
                "attachment_id = excluded.attachment_id, pinned = 0, "
                "posted_at = excluded.posted_at, edited_at = excluded.edited_at",
                (
                    run_slug,
                    channel_id,
                    message_id,
                    chart_digest,
                    attachment_id,
                    to_db(at),
                    to_db(at),
                ),
            )

    async def edited(
        self,
        run_slug: str,
        *,
        chart_digest: str | None,
        attachment_id: int | None,
        at: datetime,
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE live_messages SET chart_digest = ?, attachment_id = ?, edited_at = ? "
                "WHERE run_slug = ?",
                (chart_digest, attachment_id, to_db(at), run_slug),
            )

    async def set_pin(self, run_slug: str, *, pinned: bool, refused: bool = False) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE live_messages SET pinned = ?, pin_refused = ? WHERE run_slug = ?",
                (int(pinned), int(refused), run_slug),
            )

    async def forget(self, run_slug: str, message_id: int | None = None) -> bool:
        """The message is gone (deleted): the next update posts a new one. With `message_id`,
        only if that is still the run's message. Returns whether a message was forgotten."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE live_messages SET message_id = NULL, attachment_id = NULL, "
                "chart_digest = NULL, pinned = 0, rendered_at = NULL WHERE run_slug = ? "
                "AND message_id IS NOT NULL AND (? IS NULL OR message_id = ?)",
                (run_slug, message_id, message_id),
            )
            return bool(cursor.rowcount)


def pin_refusals(path: str | Path) -> dict[str, int]:
    """Runs whose live message Discord refused to pin, with its channel, read from the database
    at `path` without opening it for writing (for `check-config`; {} if there is none yet)."""
    rows = rows_if_readable(
        path,
        "SELECT run_slug, channel_id FROM live_messages WHERE pin_refused = 1 "
        "AND message_id IS NOT NULL",
    )
    return {str(slug): int(channel) for slug, channel in rows if channel is not None}
