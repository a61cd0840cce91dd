"""The latest known W&B state of each run of a chain."""

from __future__ import annotations

import json

import aiosqlite

from bot.core.timeutil import from_db, to_db
from bot.models import (
    RunSnapshot,
)
from bot.store.codec import to_json
from bot.store.db import Database


def _snapshot_from_row(row: aiosqlite.Row) -> RunSnapshot:
    return RunSnapshot(
        wandb_run=row["wandb_run"],
        name=row["name"],
        state=row["state"],
        created_at=from_db(row["created_at"]),
        heartbeat_at=from_db(row["heartbeat_at"]),
        last_step=row["last_step"],
        observed_at=from_db(row["observed_at"]),  # type: ignore[arg-type]
        summary=json.loads(row["summary"]),
    )


class SnapshotsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def upsert(self, run_slug: str, snapshot: RunSnapshot) -> RunSnapshot | None:
        """Store the latest state of one W&B run; return the previous snapshot (None if new)."""
        async with self.db.transaction() as conn:
            previous = await self.get(run_slug, snapshot.wandb_run)
            await conn.execute(
                "INSERT INTO run_snapshots (run_slug, wandb_run, name, state, created_at, "
                "heartbeat_at, last_step, observed_at, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_slug, wandb_run) DO UPDATE SET name = excluded.name, "
                "state = excluded.state, created_at = excluded.created_at, "
                "heartbeat_at = excluded.heartbeat_at, last_step = excluded.last_step, "
                "observed_at = excluded.observed_at, summary = excluded.summary",
                (
                    run_slug,
                    snapshot.wandb_run,
                    snapshot.name,
                    snapshot.state,
                    to_db(snapshot.created_at),
                    to_db(snapshot.heartbeat_at),
                    snapshot.last_step,
                    to_db(snapshot.observed_at),
                    to_json(snapshot.summary),
                ),
            )
        return previous

    async def get(self, run_slug: str, wandb_run: str) -> RunSnapshot | None:
        row = await self.db.fetchone(
            "SELECT * FROM run_snapshots WHERE run_slug = ? AND wandb_run = ?",
            (run_slug, wandb_run),
        )
        return _snapshot_from_row(row) if row else None

    async def chain(self, run_slug: str) -> list[RunSnapshot]:
        """Chain members, oldest first (by creation time)."""
        rows = await self.db.fetchall(
            "SELECT * FROM run_snapshots WHERE run_slug = ? ORDER BY created_at, wandb_run",
            (run_slug,),
        )
        return [_snapshot_from_row(row) for row in rows]
