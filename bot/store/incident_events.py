"""The events an incident engine reads and links: an incident's linked events, and the windowed
reads of people's reports, W&B state changes and Alertmanager alerts a cycle judges. Every read
is windowed by time or keyed by an index. Mixed into `IncidentsRepo`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.core.timeutil import to_db
from bot.models import SOURCE_SPECS, Event
from bot.store.db import Database
from bot.store.events import event_from_row


def _reports_sql() -> tuple[str, tuple[str, ...]]:
    """`e.source IN (…)` over the sources people write in, and its parameters."""
    sources = SOURCE_SPECS.reports()
    return f"e.source IN ({', '.join('?' * len(sources))})", sources


_UNLINKED = "NOT EXISTS (SELECT 1 FROM incident_events AS ie WHERE ie.event_id = e.id)"


class IncidentEvents:
    db: Database

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
