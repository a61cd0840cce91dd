"""The tracked runs: what the runs file said, kept so commands work without it."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import aiosqlite

from bot.config.runsfile import RunConfig
from bot.core.timeutil import from_db, to_db, utcnow
from bot.models import (
    RunInfo,
)
from bot.store.codec import to_json
from bot.store.db import Database

# Kept beside the table in each record (runs recorded before the whole table was stored).
_TOP_LEVEL = ("total_steps", "target_tokens", "launched_at", "timezone", "links")


def slugs_in_file(path: Path) -> list[str]:
    """The runs an existing SQLite file records, read without writing to it (no migration, no
    journal); [] for a missing or empty file, or one that cannot be read this way (opening it
    with `Database.open` says why)."""
    if not path.is_file() or path.stat().st_size == 0:
        return []
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT slug FROM runs ORDER BY slug").fetchall()
    except sqlite3.Error:
        return []
    return [str(row[0]) for row in rows]


class RunsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def upsert(self, run: RunInfo) -> None:
        config = run.config.model_dump(mode="json")
        record = {
            "total_steps": run.total_steps,
            "target_tokens": run.target_tokens,
            "launched_at": to_db(run.launched_at),
            "timezone": run.timezone,
            "links": run.links,
            "config": config,
        }
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO runs (slug, name, config, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (slug) DO UPDATE SET name = excluded.name, config = excluded.config, "
                "updated_at = excluded.updated_at WHERE runs.config != excluded.config "
                "OR runs.name != excluded.name",
                (run.slug, run.name, to_json(record), to_db(utcnow())),
            )

    @staticmethod
    def _from_row(row: aiosqlite.Row) -> RunInfo:
        """The stored table is re-validated into its typed model here, once."""
        record = json.loads(row["config"])
        top = {key: record.get(key) for key in _TOP_LEVEL if record.get(key) is not None}
        config = RunConfig.stored(
            {**top, **(record.get("config") or {}), "slug": row["slug"], "name": row["name"]}
        )
        return RunInfo(
            slug=row["slug"],
            name=row["name"],
            total_steps=record.get("total_steps"),
            target_tokens=record.get("target_tokens"),
            launched_at=from_db(record.get("launched_at")),
            timezone=record.get("timezone") or "UTC",
            links=record.get("links") or {},
            config=config,
        )

    async def get(self, slug: str) -> RunInfo | None:
        row = await self.db.fetchone("SELECT * FROM runs WHERE slug = ?", (slug,))
        return self._from_row(row) if row else None

    async def all(self) -> list[RunInfo]:
        rows = await self.db.fetchall("SELECT * FROM runs ORDER BY slug")
        return [self._from_row(row) for row in rows]

    async def version(self) -> tuple[int, str | None]:
        """Changes whenever a run is recorded or changed (for callers that keep parsed runs)."""
        row = await self.db.fetchone("SELECT count(*), max(updated_at) FROM runs")
        return (int(row[0]), row[1]) if row else (0, None)
