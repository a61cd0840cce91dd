"""Delivery per channel (`delivery_channels`): how the last try to post there ended, whether
Discord refused it (403/404: the post is held, not dropped), and the posts given up there that
no post has reported yet. The poster writes it; `/healthz` (`bot.services.delivery`) and
`check-config` read it, from any process."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import aiosqlite

from bot.core.timeutil import from_db, to_db
from bot.store.db import Database, rows_if_readable


@dataclass(slots=True, frozen=True)
class ChannelDelivery:
    channel_id: int
    last_attempt_at: datetime | None
    failing_since: datetime | None  # the first failed try since the last success (None: ok)
    last_error: str | None
    refused: bool  # the last failure was a refusal: posts there are held
    missed: int = 0  # posts given up here that no post has reported yet
    missed_from: datetime | None = None  # when the first and the last of them were queued
    missed_until: datetime | None = None
    missed_reason: str | None = None
    notice_id: int | None = None  # the queued post that will report them


@dataclass(slots=True, frozen=True)
class HeldPosts:
    """Posts queued in a channel whose last try Discord refused."""

    channel_id: int
    count: int
    refused_since: datetime | None
    error: str | None


def _from_row(row: aiosqlite.Row) -> ChannelDelivery:
    return ChannelDelivery(
        channel_id=row["channel_id"],
        last_attempt_at=from_db(row["last_attempt_at"]),
        failing_since=from_db(row["failing_since"]),
        last_error=row["last_error"],
        refused=bool(row["refused"]),
        missed=row["missed"],
        missed_from=from_db(row["missed_from"]),
        missed_until=from_db(row["missed_until"]),
        missed_reason=row["missed_reason"],
        notice_id=row["notice_id"],
    )


class DeliveryRepo:
    def __init__(self, db: Database):
        self.db = db

    async def get(self, channel_id: int) -> ChannelDelivery | None:
        row = await self.db.fetchone(
            "SELECT * FROM delivery_channels WHERE channel_id = ?", (channel_id,)
        )
        return _from_row(row) if row is not None else None

    async def all(self) -> list[ChannelDelivery]:
        rows = await self.db.fetchall("SELECT * FROM delivery_channels ORDER BY channel_id")
        return [_from_row(row) for row in rows]

    async def succeeded(self, channel_id: int, at: datetime) -> ChannelDelivery:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO delivery_channels (channel_id, last_attempt_at) VALUES (?, ?) "
                "ON CONFLICT (channel_id) DO UPDATE SET "
                "last_attempt_at = excluded.last_attempt_at, "
                "failing_since = NULL, last_error = NULL, refused = 0",
                (channel_id, to_db(at)),
            )
        row = await self.get(channel_id)
        assert row is not None
        return row

    async def failed(self, channel_id: int, at: datetime, error: str, *, refused: bool) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO delivery_channels (channel_id, last_attempt_at, failing_since, "
                "last_error, refused) VALUES (?, ?, ?, ?, ?) ON CONFLICT (channel_id) DO UPDATE "
                "SET last_attempt_at = excluded.last_attempt_at, failing_since = "
                "COALESCE(delivery_channels.failing_since, excluded.failing_since), "
                "last_error = excluded.last_error, refused = excluded.refused",
                (channel_id, to_db(at), to_db(at), error[:500], int(refused)),
            )

    async def refused_channels(self, since: datetime | None = None) -> set[int]:
        """Channels whose last try was refused (at or after `since`, when given)."""
        rows = await self.db.fetchall(
            "SELECT channel_id FROM delivery_channels "
            "WHERE refused = 1 AND failing_since IS NOT NULL AND last_attempt_at >= ?",
            (to_db(since) if since is not None else "",),
        )
        return {int(row[0]) for row in rows}

    async def add_missed(
        self, channel_id: int, queued_at: datetime, reason: str, at: datetime
    ) -> ChannelDelivery:
        """One more post given up in the channel (queued at `queued_at`)."""
        when = to_db(queued_at)
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO delivery_channels (channel_id, last_attempt_at, missed, missed_from, "
                "missed_until, missed_reason) VALUES (?, ?, 1, ?, ?, ?) ON CONFLICT (channel_id) "
                "DO UPDATE SET missed = delivery_channels.missed + 1, missed_from = "
                "MIN(COALESCE(delivery_channels.missed_from, excluded.missed_from), "
                "excluded.missed_from), missed_until = "
                "MAX(COALESCE(delivery_channels.missed_until, excluded.missed_until), "
                "excluded.missed_until), missed_reason = "
                "excluded.missed_reason",
                (channel_id, to_db(at), when, when, reason[:300]),
            )
        row = await self.get(channel_id)
        assert row is not None
        return row

    async def set_notice(self, channel_id: int, notice_id: int | None) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE delivery_channels SET notice_id = ? WHERE channel_id = ?",
                (notice_id, channel_id),
            )

    async def reported(self, channel_id: int, said: int) -> None:
        """A notice saying `said` missed posts was delivered: those are reported (any given up
        since it was written remain, for the next notice)."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE delivery_channels SET notice_id = NULL, missed = MAX(missed - ?, 0) "
                "WHERE channel_id = ?",
                (said, channel_id),
            )
            await conn.execute(
                "UPDATE delivery_channels SET missed_from = NULL, missed_until = NULL, "
                "missed_reason = NULL WHERE channel_id = ? AND missed = 0",
                (channel_id,),
            )

    async def held(self) -> list[HeldPosts]:
        """Per channel whose last try was refused: the posts queued there (live status
        messages aside: each is replaced by the next refresh)."""
        rows = await self.db.fetchall(
            "SELECT d.channel_id, COUNT(o.id), d.failing_since, d.last_error "
            "FROM delivery_channels d JOIN outbox o ON o.channel_id = d.channel_id "
            "AND o.status = 'queued' AND o.kind != 'live' "
            "WHERE d.refused = 1 AND d.failing_since IS NOT NULL "
            "GROUP BY d.channel_id ORDER BY d.channel_id"
        )
        return [HeldPosts(int(r[0]), int(r[1]), from_db(r[2]), r[3]) for r in rows]


def refused_channels(path: str | Path) -> dict[int, str]:
    """Channels whose last post Discord refused, with why, read from the database at `path`
    without opening it for writing (for `check-config`; {} when there is none yet)."""
    rows = rows_if_readable(
        path,
        "SELECT channel_id, last_error FROM delivery_channels WHERE refused = 1 "
        "AND failing_since IS NOT NULL",
    )
    return {int(channel): str(error or "") for channel, error in rows}
