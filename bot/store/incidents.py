"""Incidents: the records, their linked events, the engine's cursor, silences and the windowed
reads the engine needs. Every read is windowed by time or keyed by an index, so a cycle stays
cheap at millions of events."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import aiosqlite

from bot.core import jsoncodec
from bot.core.timeutil import from_db, to_db
from bot.models import (
    Incident,
    IncidentDetails,
    Recurrence,
)
from bot.store.codec import to_json
from bot.store.db import Database
from bot.store.engine_state import EngineState
from bot.store.incident_events import IncidentEvents
from bot.store.silences import Silences


def details_to_json(details: IncidentDetails) -> str:
    """The `details` column. Key names and ISO times are those the engine has always written,
    so a database from before the typed state reads back unchanged; a reopened incident's keys
    (`outages`, `reopen_posted`) are written only once it has reopened."""
    data = jsoncodec.dump(details, sparse=("reopen_posted",))
    if not details.outages:
        del data["outages"]
    return to_json(data)


def details_from_json(text: str) -> IncidentDetails:
    """Leniently: a row an older version wrote lacks later keys (they take their defaults)."""
    return jsoncodec.load(IncidentDetails, json.loads(text or "{}"), lenient=True)


def incident_from_row(row: aiosqlite.Row) -> Incident:
    return Incident(
        id=row["id"],
        run_slug=row["run_slug"],
        fingerprint=row["fingerprint"],
        kind=row["kind"],
        title=row["title"],
        status=row["status"],
        severity=row["severity"],
        started_at=from_db(row["started_at"]),  # type: ignore[arg-type]
        fired_at=from_db(row["fired_at"]),
        resolved_at=from_db(row["resolved_at"]),
        last_seen_at=from_db(row["last_seen_at"]),
        cause=row["cause"],
        resolution=row["resolution"],
        acked_by=row["acked_by"],
        acked_at=from_db(row["acked_at"]),
        details=details_from_json(row["details"]),
    )


# The columns the engine owns. Acknowledgement columns are written only by `acknowledge`, so an
# ack made by a command while a cycle runs is never overwritten.
_ENGINE_COLUMNS = (
    "run_slug",
    "fingerprint",
    "kind",
    "title",
    "status",
    "severity",
    "started_at",
    "fired_at",
    "resolved_at",
    "last_seen_at",
    "cause",
    "resolution",
    "details",
)


def _engine_values(incident: Incident) -> tuple[Any, ...]:
    return (
        incident.run_slug,
        incident.fingerprint,
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
        details_to_json(incident.details),
    )


class IncidentsRepo(IncidentEvents, Silences, EngineState):
    """Incident records, with their linked events and the engine's windowed reads
    (`bot.store.incident_events`), silences (`bot.store.silences`) and the engine's state
    (`bot.store.engine_state`)."""

    def __init__(self, db: Database):
        self.db = db

    async def save(self, incident: Incident) -> int:
        """Insert a new incident (its id is set) or write every column of a stored one."""
        columns = (*_ENGINE_COLUMNS, "acked_by", "acked_at")
        params = (*_engine_values(incident), incident.acked_by, to_db(incident.acked_at))
        async with self.db.transaction() as conn:
            if incident.id is None:
                cursor = await conn.execute(
                    f"INSERT INTO incidents ({', '.join(columns)}) "
                    f"VALUES ({', '.join('?' * len(columns))})",
                    params,
                )
                incident.id = int(cursor.lastrowid or 0)
            else:
                await conn.execute(
                    f"UPDATE incidents SET {', '.join(f'{c} = ?' for c in columns)} WHERE id = ?",
                    (*params, incident.id),
                )
        return incident.id

    @staticmethod
    def written(incident: Incident) -> tuple[Any, ...]:
        """The engine's fields as `update` writes them: compare two to know if anything changed."""
        return _engine_values(incident)

    async def recurrence(self, run_slug: str, fingerprint: str) -> Recurrence | None:
        """For a new incident of `fingerprint`: how many outages of the run had that condition
        (incidents with it as their first or a joined one, each reopening one more), and the
        latest of them to resolve; None when none did."""
        condition = (
            "(fingerprint = ? OR EXISTS (SELECT 1 FROM json_each(details, '$.members') "
            "WHERE json_each.key = ?))"
        )
        row = await self.db.fetchone(
            "SELECT COUNT(*) + COALESCE(SUM(json_array_length(details, '$.outages')), 0) "
            f"FROM incidents WHERE run_slug = ? AND {condition}",
            (run_slug, fingerprint, fingerprint),
        )
        count = int(row[0]) if row else 0
        last = await self.db.fetchone(
            f"SELECT id, resolved_at FROM incidents WHERE run_slug = ? AND {condition} "
            "AND status = 'resolved' ORDER BY resolved_at DESC, id DESC LIMIT 1",
            (run_slug, fingerprint, fingerprint),
        )
        if last is None:
            return None
        resolved_at = from_db(last["resolved_at"])
        assert resolved_at is not None  # resolved incidents carry their time
        return Recurrence(count + 1, int(last["id"]), resolved_at)

    async def update(self, incident: Incident, *, was: tuple[Any, ...] | None = None) -> bool:
        """Write the engine's fields, leaving the acknowledgement alone; nothing when they are
        still `was` (what `written` gave when the incident was read). Returns whether it wrote."""
        if was is not None and was == _engine_values(incident):
            return False
        async with self.db.transaction() as conn:
            await conn.execute(
                f"UPDATE incidents SET {', '.join(f'{c} = ?' for c in _ENGINE_COLUMNS)} "
                "WHERE id = ?",
                (*_engine_values(incident), incident.id),
            )
        return True

    async def acknowledge(self, incident_id: int, who: str, at: datetime) -> bool:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE incidents SET acked_by = ?, acked_at = ? WHERE id = ? AND acked_by IS NULL",
                (who, to_db(at), incident_id),
            )
            return bool(cursor.rowcount)

    async def clear_acknowledgement(self, incident_id: int) -> None:
        """A reopened incident is not acknowledged (its acknowledgement of the outage before is
        kept with that outage, in `details`)."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE incidents SET acked_by = NULL, acked_at = NULL WHERE id = ?",
                (incident_id,),
            )

    async def get(self, incident_id: int) -> Incident | None:
        row = await self.db.fetchone("SELECT * FROM incidents WHERE id = ?", (incident_id,))
        return incident_from_row(row) if row else None

    async def _select(
        self, where: list[str], params: list[Any], *, newest_first: bool, limit: int | None = None
    ) -> list[Incident]:
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT * FROM incidents WHERE {' AND '.join(where) or '1 = 1'} "
        sql += f"ORDER BY started_at {order}, id {order}"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
        rows = await self.db.fetchall(sql, params)
        return [incident_from_row(row) for row in rows]

    async def find(
        self, run_slug: str, *, open_only: bool = False, since: datetime | None = None
    ) -> list[Incident]:
        """Newest first; with `since`, those still open or active at or after it."""
        where: list[str] = ["run_slug = ?"]
        params: list[Any] = [run_slug]
        if open_only:
            where.append("status != 'resolved'")
        if since is not None:
            where.append("(resolved_at IS NULL OR resolved_at >= ? OR started_at >= ?)")
            params += [to_db(since), to_db(since)]
        return await self._select(where, params, newest_first=True)

    async def listing(
        self, run_slug: str | None, *, open_only: bool, limit: int, offset: int = 0
    ) -> list[Incident]:
        """A page of incidents, newest first, of one run or of all."""
        where: list[str] = []
        params: list[Any] = []
        if run_slug is not None:
            where.append("run_slug = ?")
            params.append(run_slug)
        if open_only:
            where.append("status != 'resolved'")
        params += [limit, offset]
        return await self._select(where, params, newest_first=True, limit=limit)

    async def version(self, run_slug: str) -> int:
        """Changes whenever an incident of the run, a link to one, or a linked event's incident
        flag changes (maintained by triggers): the key for anything computed from them."""
        row = await self.db.fetchone(
            "SELECT version FROM incident_versions WHERE run_slug = ?", (run_slug,)
        )
        return int(row[0]) if row else 0

    async def started_since(self, run_slug: str, since: datetime | None = None) -> list[Incident]:
        """Oldest first: every incident of the run (started at or after `since`)."""
        where: list[str] = ["run_slug = ?"]
        params: list[Any] = [run_slug]
        if since is not None:
            where.append("started_at >= ?")
            params.append(to_db(since))
        return await self._select(where, params, newest_first=False)

    async def relevant(self, run_slug: str, resolved_since: datetime) -> list[Incident]:
        """Oldest first: open incidents plus those resolved at or after `resolved_since`."""
        where = ["run_slug = ?", "(status != 'resolved' OR resolved_at >= ?)"]
        return await self._select(where, [run_slug, to_db(resolved_since)], newest_first=False)

    async def alerts_open(self) -> bool:
        """Whether any run has an unresolved incident with an Alertmanager alert among its
        conditions (`alert:` members): pushed, never polled, so something must keep judging it
        until it resolves. Through the partial index of open incidents."""
        row = await self.db.fetchone(
            "SELECT 1 FROM incidents WHERE status != 'resolved' "
            "AND (fingerprint LIKE 'alert:%' OR details LIKE '%\"alert:%') LIMIT 1"
        )
        return row is not None

    # --- silences --------------------------------------------------------------------------
