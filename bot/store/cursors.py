"""Per-source cursors (where a poll resumes) and health (freshness, backoff)."""

from __future__ import annotations

from datetime import datetime

from bot.core.timeutil import from_db, to_db, utcnow
from bot.models import (
    SourceHealth,
)
from bot.store.db import Database


class CursorsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def get(self, source: str, key: str) -> tuple[str | None, str | None]:
        """(value, etag) or (None, None)."""
        row = await self.db.fetchone(
            "SELECT value, etag FROM source_cursors WHERE source = ? AND key = ?", (source, key)
        )
        return (row[0], row[1]) if row else (None, None)

    async def set(self, source: str, key: str, value: str | None, etag: str | None = None) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO source_cursors (source, key, value, etag, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (source, key) DO UPDATE SET "
                "value = excluded.value, etag = excluded.etag, updated_at = excluded.updated_at",
                (source, key, value, etag, to_db(utcnow())),
            )


class HealthRepo:
    """Per-source health. Scope is a run slug for freshness ("W&B 2 min ago") or a source key
    (a repository, a W&B project) for backoff."""

    def __init__(self, db: Database):
        self.db = db

    async def record_success(self, source: str, scope: str, at: datetime) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO source_health (source, scope, last_attempt_at, last_success_at, "
                "consecutive_failures, next_attempt_at, last_error) VALUES (?, ?, ?, ?, 0, NULL, "
                "NULL) ON CONFLICT (source, scope) DO UPDATE SET last_attempt_at = "
                "excluded.last_attempt_at, last_success_at = excluded.last_success_at, "
                "consecutive_failures = 0, next_attempt_at = NULL, last_error = NULL, "
                "failing_since = NULL",
                (source, scope, to_db(at), to_db(at)),
            )

    async def record_failure(
        self, source: str, scope: str, at: datetime, error: str, next_attempt_at: datetime | None
    ) -> int:
        """Returns the number of consecutive failures including this one."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO source_health (source, scope, last_attempt_at, "
                "consecutive_failures, next_attempt_at, last_error, failing_since) "
                "VALUES (?, ?, ?, 1, ?, ?, ?) "
                "ON CONFLICT (source, scope) DO UPDATE SET "
                "last_attempt_at = excluded.last_attempt_at, consecutive_failures = "
                "source_health.consecutive_failures + 1, next_attempt_at = "
                "excluded.next_attempt_at, last_error = excluded.last_error, failing_since = "
                "COALESCE(source_health.failing_since, excluded.failing_since)",
                (source, scope, to_db(at), to_db(next_attempt_at), error[:500], to_db(at)),
            )
        health = await self.get(source, scope)
        return health.consecutive_failures if health else 1

    async def get(self, source: str, scope: str) -> SourceHealth | None:
        row = await self.db.fetchone(
            "SELECT * FROM source_health WHERE source = ? AND scope = ?", (source, scope)
        )
        if row is None:
            return None
        return SourceHealth(
            source=row["source"],
            scope=row["scope"],
            last_attempt_at=from_db(row["last_attempt_at"]),
            last_success_at=from_db(row["last_success_at"]),
            consecutive_failures=row["consecutive_failures"],
            next_attempt_at=from_db(row["next_attempt_at"]),
            last_error=row["last_error"],
            failing_since=from_db(row["failing_since"]),
        )

    async def for_run(self, run_slug: str) -> dict[str, SourceHealth]:
        rows = await self.db.fetchall(
            "SELECT source FROM source_health WHERE scope = ?", (run_slug,)
        )
        result = {}
        for row in rows:
            health = await self.get(row[0], run_slug)
            if health:
                result[row[0]] = health
        return result
