"""The ops-log comments (migration 0021): what each incident's comment on its run's ops-log issue
should say, and what GitHub holds."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import aiosqlite

from bot.core.timeutil import from_db, to_db
from bot.store.db import Database


def body_hash(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()[:16]


@dataclass(slots=True, frozen=True)
class OpsComment:
    incident_id: int
    run_slug: str
    repo: str
    issue: int
    body: str
    body_hash: str
    wanted_at: datetime
    comment_id: int | None = None
    posted_hash: str | None = None
    last_error: str | None = None

    @property
    def due(self) -> bool:
        return self.posted_hash != self.body_hash


def _row(row: aiosqlite.Row) -> OpsComment:
    wanted = from_db(row["wanted_at"])
    assert wanted is not None
    return OpsComment(
        incident_id=row["incident_id"],
        run_slug=row["run_slug"],
        repo=row["repo"],
        issue=row["issue"],
        body=row["body"],
        body_hash=row["body_hash"],
        wanted_at=wanted,
        comment_id=row["comment_id"],
        posted_hash=row["posted_hash"],
        last_error=row["last_error"],
    )


class OpsCommentsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def want(
        self, incident_id: int, run_slug: str, repo: str, issue: int, body: str, now: datetime
    ) -> bool:
        """Store what the comment should say (first, before GitHub hears of it). True when that
        changed. A comment already posted to another issue keeps its place."""
        digest = body_hash(body)
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO ops_comments (incident_id, run_slug, repo, issue, body, body_hash, "
                "wanted_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (incident_id) DO UPDATE SET "
                "body = excluded.body, body_hash = excluded.body_hash, "
                "wanted_at = excluded.wanted_at WHERE body_hash != excluded.body_hash",
                (incident_id, run_slug, repo, issue, body, digest, to_db(now)),
            )
            return cursor.rowcount > 0

    async def get(self, incident_id: int) -> OpsComment | None:
        row = await self.db.fetchone(
            "SELECT * FROM ops_comments WHERE incident_id = ?", (incident_id,)
        )
        return _row(row) if row is not None else None

    async def due(self, limit: int = 20) -> Sequence[OpsComment]:
        rows = await self.db.fetchall(
            "SELECT * FROM ops_comments WHERE posted_hash IS NULL OR posted_hash != body_hash "
            "ORDER BY wanted_at LIMIT ?",
            (limit,),
        )
        return [_row(row) for row in rows]

    async def posted(self, incident_id: int, comment_id: int, digest: str, now: datetime) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE ops_comments SET comment_id = ?, posted_hash = ?, posted_at = ?, "
                "last_error = NULL WHERE incident_id = ?",
                (comment_id, digest, to_db(now), incident_id),
            )

    async def failed(self, incident_id: int, error: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE ops_comments SET last_error = ? WHERE incident_id = ?", (error, incident_id)
            )
