"""SQL the incident engine needs beyond `bot.store.repos` (tables from migration 0002). Every
read is windowed by time or keyed by an index, so a cycle stays cheap at millions of events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiosqlite

from bot.models import Event, Incident
from bot.store import Store
from bot.store.repos import event_from_row, incident_from_row, to_json
from bot.timeutil import from_db, to_db

REPORT_SOURCES = ("github", "discord")


@dataclass(slots=True)
class Silence:
    run_slug: str
    matcher: str
    starts_at: datetime
    ends_at: datetime
    owner: str
    reason: str = ""
    created_at: datetime | None = None
    cancelled_at: datetime | None = None
    cancelled_by: str | None = None
    id: int | None = None

    def active(self, now: datetime) -> bool:
        return self.cancelled_at is None and self.starts_at <= now < self.ends_at


def _silence(row: aiosqlite.Row) -> Silence:
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


class IncidentRepo:
    def __init__(self, store: Store):
        self.store = store
        self.db = store.db

    # --- engine cursor ---------------------------------------------------------------------

    async def engine_state(self, slug: str) -> tuple[datetime | None, datetime | None]:
        row = await self.db.fetchone(
            "SELECT last_detect_at, wandb_seen_at FROM incident_engine_state WHERE run_slug = ?",
            (slug,),
        )
        if row is None:
            return None, None
        return from_db(row[0]), from_db(row[1])

    async def set_engine_state(
        self, slug: str, last_detect_at: datetime, wandb_seen_at: datetime | None
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO incident_engine_state (run_slug, last_detect_at, wandb_seen_at) "
                "VALUES (?, ?, ?) ON CONFLICT (run_slug) DO UPDATE SET "
                "last_detect_at = MAX(incident_engine_state.last_detect_at, "
                "excluded.last_detect_at), wandb_seen_at = COALESCE(excluded.wandb_seen_at, "
                "incident_engine_state.wandb_seen_at)",
                (slug, to_db(last_detect_at), to_db(wandb_seen_at)),
            )

    # --- events ----------------------------------------------------------------------------

    async def wandb_events(self, slug: str, since: datetime, until: datetime) -> list[Event]:
        """W&B state changes and restarts in [since, until], oldest first."""
        rows = await self.db.fetchall(
            "SELECT * FROM events WHERE run_slug = ? AND source = 'wandb' AND "
            "kind IN ('state', 'restart') AND at >= ? AND at <= ? AND deleted = 0 "
            "ORDER BY at, id",
            (slug, to_db(since), to_db(until)),
        )
        return [event_from_row(row) for row in rows]

    async def unlinked_reports(self, slug: str, since: datetime, until: datetime) -> list[Event]:
        """Incident-flagged GitHub/Discord events not yet attached to any incident."""
        rows = await self.db.fetchall(
            "SELECT e.* FROM events AS e WHERE e.run_slug = ? AND e.incident = 1 AND e.at >= ? "
            "AND e.at <= ? AND e.deleted = 0 AND e.source IN ('github', 'discord') AND NOT EXISTS "
            "(SELECT 1 FROM incident_events AS ie WHERE ie.event_id = e.id) ORDER BY e.at, e.id",
            (slug, to_db(since), to_db(until)),
        )
        return [event_from_row(row) for row in rows]

    async def unlinked_in_threads(
        self, slug: str, threads: Sequence[str], since: datetime, until: datetime
    ) -> list[Event]:
        """New items (comments, reviews, state changes) in the given threads."""
        if not threads:
            return []
        marks = ",".join("?" * len(threads))
        rows = await self.db.fetchall(
            f"SELECT e.* FROM events AS e WHERE e.run_slug = ? AND e.thread IN ({marks}) "
            "AND e.at >= ? AND e.at <= ? AND e.deleted = 0 AND NOT EXISTS "
            "(SELECT 1 FROM incident_events AS ie WHERE ie.event_id = e.id) ORDER BY e.at, e.id",
            (slug, *threads, to_db(since), to_db(until)),
        )
        return [event_from_row(row) for row in rows]

    async def linked_ids(self, incident_id: int) -> set[int]:
        rows = await self.db.fetchall(
            "SELECT event_id FROM incident_events WHERE incident_id = ?", (incident_id,)
        )
        return {int(row[0]) for row in rows}

    # --- incidents -------------------------------------------------------------------------

    async def relevant(self, slug: str, resolved_since: datetime) -> list[Incident]:
        """Open incidents plus those resolved at or after `resolved_since`, oldest first."""
        rows = await self.db.fetchall(
            "SELECT * FROM incidents WHERE run_slug = ? AND (status != 'resolved' OR "
            "resolved_at >= ?) ORDER BY started_at, id",
            (slug, to_db(resolved_since)),
        )
        return [incident_from_row(row) for row in rows]

    async def update(self, incident: Incident) -> None:
        """Write the engine's fields. Acknowledgement columns are left alone, so an ack made by
        a command while a cycle runs is never overwritten."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE incidents SET kind = ?, title = ?, status = ?, severity = ?, "
                "started_at = ?, fired_at = ?, resolved_at = ?, last_seen_at = ?, cause = ?, "
                "resolution = ?, details = ? WHERE id = ?",
                (
                    incident.kind,
                    incident.title,
                    incident.status,
                    incident.severity,
                    to_db(incident.started_at),
                    to_db(incident.fired_at),
                    to_db(incident.resolved_at),
                    to_db(incident.last_seen_at),
                    incident.cause,
                    incident.resolution,
                    to_json(incident.details),
                    incident.id,
                ),
            )

    async def acknowledge(self, incident_id: int, who: str, at: datetime) -> bool:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE incidents SET acked_by = ?, acked_at = ? WHERE id = ? AND acked_by IS NULL",
                (who, to_db(at), incident_id),
            )
            return bool(cursor.rowcount)

    async def listing(
        self, slug: str | None, *, open_only: bool, limit: int, offset: int = 0
    ) -> list[Incident]:
        sql = "SELECT * FROM incidents WHERE 1 = 1"
        params: list[Any] = []
        if slug is not None:
            sql += " AND run_slug = ?"
            params.append(slug)
        if open_only:
            sql += " AND status != 'resolved'"
        sql += " ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?"
        params.extend([limit, offset])
        return [incident_from_row(row) for row in await self.db.fetchall(sql, params)]

    async def all_for(self, slug: str, since: datetime | None = None) -> list[Incident]:
        sql = "SELECT * FROM incidents WHERE run_slug = ?"
        params: list[Any] = [slug]
        if since is not None:
            sql += " AND started_at >= ?"
            params.append(to_db(since))
        sql += " ORDER BY started_at, id"
        return [incident_from_row(row) for row in await self.db.fetchall(sql, params)]

    async def human_reports_before(self, incident_id: int, before: datetime) -> int:
        """Incident-flagged GitHub/Discord reports linked to the incident before `before`."""
        row = await self.db.fetchone(
            "SELECT COUNT(*) FROM incident_events AS ie JOIN events AS e ON e.id = ie.event_id "
            "WHERE ie.incident_id = ? AND e.incident = 1 AND e.source IN ('github', 'discord') "
            "AND e.at <= ?",
            (incident_id, to_db(before)),
        )
        return int(row[0]) if row else 0

    # --- silences --------------------------------------------------------------------------

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

    async def active_silences(self, slug: str, now: datetime) -> list[Silence]:
        rows = await self.db.fetchall(
            "SELECT * FROM incident_silences WHERE run_slug = ? AND ends_at > ? AND "
            "starts_at <= ? AND cancelled_at IS NULL ORDER BY id",
            (slug, to_db(now), to_db(now)),
        )
        return [_silence(row) for row in rows]

    async def silences(self, slug: str | None = None) -> list[Silence]:
        sql = "SELECT * FROM incident_silences"
        params: list[Any] = []
        if slug is not None:
            sql += " WHERE run_slug = ?"
            params.append(slug)
        sql += " ORDER BY id DESC LIMIT 100"
        return [_silence(row) for row in await self.db.fetchall(sql, params)]

    async def get_silence(self, silence_id: int) -> Silence | None:
        row = await self.db.fetchone("SELECT * FROM incident_silences WHERE id = ?", (silence_id,))
        return _silence(row) if row else None

    async def cancel_silence(self, silence_id: int, who: str, at: datetime) -> bool:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE incident_silences SET cancelled_at = ?, cancelled_by = ? WHERE id = ? "
                "AND cancelled_at IS NULL",
                (to_db(at), who, silence_id),
            )
            return bool(cursor.rowcount)
