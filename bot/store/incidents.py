"""Incidents: the records, their linked events, the engine's cursor, silences and the windowed
reads the engine needs. Every read is windowed by time or keyed by an index, so a cycle stays
cheap at millions of events."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import aiosqlite

from bot import jsoncodec
from bot.models import (
    SOURCE_SPECS,
    Event,
    Incident,
    IncidentDetails,
    Recurrence,
    Silence,
)
from bot.store.codec import to_json
from bot.store.db import Database
from bot.store.events import event_from_row
from bot.timeutil import from_db, to_db


def _reports_sql() -> tuple[str, tuple[str, ...]]:
    """`e.source IN (…)` over the sources people write in, and its parameters."""
    sources = SOURCE_SPECS.reports()
    return f"e.source IN ({', '.join('?' * len(sources))})", sources


_UNLINKED = "NOT EXISTS (SELECT 1 FROM incident_events AS ie WHERE ie.event_id = e.id)"


def details_to_json(details: IncidentDetails) -> str:
    """The `details` column. Key names and ISO times are those the engine has always written,
    so a database from before the typed state reads back unchanged."""
    return to_json(jsoncodec.dump(details))


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


class IncidentsRepo:
    def __init__(self, db: Database):
        self.db = db

    # --- incidents -------------------------------------------------------------------------

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
        """For a new incident of `fingerprint`: how many incidents of the run had that condition
        (as their first or a joined one), and the latest of them to resolve; None when none
        did."""
        condition = (
            "(fingerprint = ? OR EXISTS (SELECT 1 FROM json_each(details, '$.members') "
            "WHERE json_each.key = ?))"
        )
        row = await self.db.fetchone(
            f"SELECT COUNT(*) FROM incidents WHERE run_slug = ? AND {condition}",
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

    # --- linked events ---------------------------------------------------------------------

    async def link_event(self, incident_id: int, event_id: int) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT OR IGNORE INTO incident_events (incident_id, event_id) VALUES (?, ?)",
                (incident_id, event_id),
            )

    async def events(self, incident_id: int) -> list[Event]:
        rows = await self.db.fetchall(
            "SELECT e.* FROM events e JOIN incident_events ie ON ie.event_id = e.id "
            "WHERE ie.incident_id = ? ORDER BY e.at",
            (incident_id,),
        )
        return [event_from_row(row) for row in rows]

    async def linked_ids(self, incident_id: int) -> set[int]:
        rows = await self.db.fetchall(
            "SELECT event_id FROM incident_events WHERE incident_id = ?", (incident_id,)
        )
        return {int(row[0]) for row in rows}

    async def human_reports_before(self, incident_id: int, before: datetime) -> int:
        """Live reports by people linked to the incident at or before `before`."""
        reports, sources = _reports_sql()
        row = await self.db.fetchone(
            "SELECT COUNT(*) FROM incident_events AS ie JOIN events AS e ON e.id = ie.event_id "
            f"WHERE ie.incident_id = ? AND e.live_report = 1 AND {reports} "
            "AND e.at <= ?",
            (incident_id, *sources, to_db(before)),
        )
        return int(row[0]) if row else 0

    # --- what the engine reads -------------------------------------------------------------

    async def people_posts(self, run_slug: str, since: datetime, until: datetime) -> list[Event]:
        """What people wrote about the run in (since, until] (watched channels, tracked
        threads), oldest first: read for reports of acting on an incident. Messages, not the
        conversations they were folded into (one author per post)."""
        reports, sources = _reports_sql()
        rows = await self.db.fetchall(
            "SELECT e.* FROM events AS e WHERE e.run_slug = ? AND e.at > ? AND e.at <= ? "
            "AND e.kind != 'conversation' "
            f"AND e.deleted = 0 AND {reports} ORDER BY e.at, e.id",
            (run_slug, to_db(since), to_db(until), *sources),
        )
        return [event_from_row(row) for row in rows]

    async def wandb_events(self, run_slug: str, since: datetime, until: datetime) -> list[Event]:
        """W&B state changes and restarts in [since, until], oldest first."""
        rows = await self.db.fetchall(
            "SELECT * FROM events WHERE run_slug = ? AND source = 'wandb' AND "
            "kind IN ('state', 'restart') AND at >= ? AND at <= ? AND deleted = 0 "
            "ORDER BY at, id",
            (run_slug, to_db(since), to_db(until)),
        )
        return [event_from_row(row) for row in rows]

    async def alert_events(
        self, run_slug: str, ended_since: datetime, until: datetime
    ) -> list[Event]:
        """Alertmanager alerts still firing, and those resolved since `ended_since`, that
        started by `until`; oldest first. Two seeks of the partial index `events_alerts`."""
        # `+at`: the time filters the few rows found, never picks the run's time index (which
        # would walk the run's whole history); sorted here for the same reason.
        rows = await self.db.fetchall(
            "SELECT * FROM events WHERE run_slug = ? AND source = 'alertmanager' "
            "AND state = 'firing' AND +at <= ? AND deleted = 0 "
            "UNION ALL "
            "SELECT * FROM events WHERE run_slug = ? AND source = 'alertmanager' "
            "AND state = 'resolved' AND updated_at >= ? AND +at <= ? AND deleted = 0",
            (run_slug, to_db(until), run_slug, to_db(ended_since), to_db(until)),
        )
        events = [event_from_row(row) for row in rows]
        return sorted(events, key=lambda e: (e.at, e.id or 0))

    async def alerts_open(self) -> bool:
        """Whether any run has an unresolved incident with an Alertmanager alert among its
        conditions (`alert:` members): pushed, never polled, so something must keep judging it
        until it resolves. Through the partial index of open incidents."""
        row = await self.db.fetchone(
            "SELECT 1 FROM incidents WHERE status != 'resolved' "
            "AND (fingerprint LIKE 'alert:%' OR details LIKE '%\"alert:%') LIMIT 1"
        )
        return row is not None

    async def unlinked_reports(
        self, run_slug: str, since: datetime, until: datetime
    ) -> list[Event]:
        """Live reports by people not yet attached to any incident. A chat burst's
        conversation event is never one: its messages are (each flagged as it arrives), so an
        incident starts at the report, not at the greeting that opened the conversation, and
        quotes the reporter, not the burst."""
        reports, sources = _reports_sql()
        rows = await self.db.fetchall(
            "SELECT e.* FROM events AS e WHERE e.run_slug = ? AND e.live_report = 1 AND e.at >= ? "
            "AND e.kind != 'conversation' "
            f"AND e.at <= ? AND e.deleted = 0 AND {reports} AND {_UNLINKED} "
            "ORDER BY e.at, e.id",
            (run_slug, to_db(since), to_db(until), *sources),
        )
        return [event_from_row(row) for row in rows]

    async def unlinked_in_threads(
        self, run_slug: str, threads: Sequence[str], since: datetime, until: datetime
    ) -> list[Event]:
        """New items (comments, reviews, state changes) in the given threads."""
        if not threads:
            return []
        marks = ",".join("?" * len(threads))
        rows = await self.db.fetchall(
            f"SELECT e.* FROM events AS e WHERE e.run_slug = ? AND e.thread IN ({marks}) "
            f"AND e.at >= ? AND e.at <= ? AND e.deleted = 0 AND {_UNLINKED} ORDER BY e.at, e.id",
            (run_slug, *threads, to_db(since), to_db(until)),
        )
        return [event_from_row(row) for row in rows]

    async def engine_state(self, run_slug: str) -> tuple[datetime | None, datetime | None]:
        """(last cycle, last cycle that could see W&B)."""
        row = await self.db.fetchone(
            "SELECT last_detect_at, wandb_seen_at FROM incident_engine_state WHERE run_slug = ?",
            (run_slug,),
        )
        if row is None:
            return None, None
        return from_db(row[0]), from_db(row[1])

    async def set_engine_state(
        self, run_slug: str, last_detect_at: datetime, wandb_seen_at: datetime | None
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO incident_engine_state (run_slug, last_detect_at, wandb_seen_at) "
                "VALUES (?, ?, ?) ON CONFLICT (run_slug) DO UPDATE SET "
                "last_detect_at = MAX(incident_engine_state.last_detect_at, "
                "excluded.last_detect_at), wandb_seen_at = COALESCE(excluded.wandb_seen_at, "
                "incident_engine_state.wandb_seen_at)",
                (run_slug, to_db(last_detect_at), to_db(wandb_seen_at)),
            )

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
