"""Silences (`/silence`): matchers that keep an incident from alerting for a while. Mixed into
`IncidentsRepo`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import aiosqlite

from bot.core.timeutil import from_db, to_db
from bot.models import Silence
from bot.store.db import Database


def _silence_from_row(row: aiosqlite.Row) -> Silence:
    return Silence(
        id=row["id"],
        run_slug=row["run_slug"],
        matcher=row["matcher"],
        starts_at=from_db(row["starts_at"]),  # type: ignore[arg-type]
        ends_at=from_db(row["ends_at"]),  # type: ignore[arg-type]
        owner=row["owner"],
        reason=row["reason"],
        created_at=from_db(row["created_at"]),
        cancelled_at=from_db(row["cancelled_at"]),
        cancelled_by=row["cancelled_by"],
    )


class Silences:
    db: Database

    async def add_silence(self, silence: Silence) -> int:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO incident_silences (run_slug, matcher, starts_at, ends_at, owner, "
                "reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    silence.run_slug,
                    silence.matcher,
                    to_db(silence.starts_at),
                    to_db(silence.ends_at),
                    silence.owner,
                    silence.reason,
                    to_db(silence.created_at or silence.starts_at),
                ),
            )
            silence.id = int(cursor.lastrowid or 0)
            return silence.id

    async def active_silences(self, run_slug: str, now: datetime) -> list[Silence]:
        rows = await self.db.fetchall(
            "SELECT * FROM incident_silences WHERE run_slug = ? AND ends_at > ? AND "
            "starts_at <= ? AND cancelled_at IS NULL ORDER BY id",
            (run_slug, to_db(now), to_db(now)),
        )
        return [_silence_from_row(row) for row in rows]

    async def silences(self, run_slug: str | None = None) -> list[Silence]:
        sql = "SELECT * FROM incident_silences"
        params: list[Any] = []
        if run_slug is not None:
            sql += " WHERE run_slug = ?"
            params.append(run_slug)
        sql += " ORDER BY id DESC LIMIT 100"
        return [_silence_from_row(row) for row in await self.db.fetchall(sql, params)]

    async def get_silence(self, silence_id: int) -> Silence | None:
        row = await self.db.fetchone("SELECT * FROM incident_silences WHERE id = ?", (silence_id,))
        return _silence_from_row(row) if row else None

    async def cancel_silence(self, silence_id: int, who: str, at: datetime) -> bool:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE incident_silences SET cancelled_at = ?, cancelled_by = ? WHERE id = ? "
                "AND cancelled_at IS NULL",
                (to_db(at), who, silence_id),
            )
            return bool(cursor.rowcount)
