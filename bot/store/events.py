"""Events from every source: idempotent upserts, enrichment, timelines."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import aiosqlite

from bot.models import (
    SOURCE_SPECS,
    BadRestart,
    Event,
    Restart,
    check_event_data,
)
from bot.store.codec import chunks, to_json
from bot.store.db import Database
from bot.timeutil import from_db, to_db

log = logging.getLogger(__name__)


@dataclass(slots=True)
class UpsertResult:
    inserted: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    unchanged: int = 0

    @property
    def changed(self) -> list[int]:
        return self.inserted + self.updated


_EVENT_COLUMNS = (
    "run_slug, source, external_id, kind, at, updated_at, author, ref, url, state, title, body, "
    "thread, extra, deleted, content_hash"
)


def _live_report(row: aiosqlite.Row) -> bool:
    try:
        return bool(row["live_report"])
    except IndexError:  # a database read before migration 0018 (the flag meant a live report)
        return bool(row["incident"])


#: Rows turned into events on the event loop at most; more are turned in a worker thread (~40 µs a
#: row: a 500-entry timeline would otherwise hold the loop for 20 ms).
ROWS_ON_LOOP = 100


async def events_from_rows(rows: Sequence[aiosqlite.Row]) -> list[Event]:
    """`event_from_row` over `rows`, off the event loop when there are many."""
    if len(rows) <= ROWS_ON_LOOP:
        return [event_from_row(row) for row in rows]
    return await asyncio.to_thread(_events_from_rows, rows)


def _events_from_rows(rows: Sequence[aiosqlite.Row]) -> list[Event]:
    return [event_from_row(row) for row in rows]


def event_from_row(row: aiosqlite.Row) -> Event:
    return Event(
        id=row["id"],
        run_slug=row["run_slug"],
        source=row["source"],
        external_id=row["external_id"],
        kind=row["kind"],
        at=from_db(row["at"]),  # type: ignore[arg-type]
        updated_at=from_db(row["updated_at"]),
        author=row["author"],
        ref=row["ref"],
        url=row["url"],
        state=row["state"],
        title=row["title"],
        body=row["body"],
        thread=row["thread"],
        extra=json.loads(row["extra"]),
        deleted=bool(row["deleted"]),
        summary=row["summary"],
        tag=row["tag"],
        incident=bool(row["incident"]),
        live_report=_live_report(row),
        severity=row["severity"],
        newsworthy=bool(row["newsworthy"]),
        enriched_by=row["enriched_by"],
    )


@dataclass(frozen=True, slots=True)
class Enriched:
    """What enrichment writes on an event (`EventsRepo.set_enrichment_many`)."""

    summary: str
    tag: str
    incident: bool = False
    severity: str | None = None
    newsworthy: bool = True
    enriched_by: str = "rules"
    live_report: bool = False


# The label of events the rules enriched standing in for the LLM (it failed, or a live incident
# report could not wait for the next batch); they are offered to it again.
# Migration 0005 indexes exactly this value (`events_llm_retry`).
RETRY_LABEL = "rules:llm-retry"


class UnknownSource(sqlite3.IntegrityError):
    """An event of a source nobody registered (`bot.models.SOURCE_SPECS`): refused like any
    other constraint of the table (migration 0019 left the names to the registration)."""


def _source_is(source: str, params: list[Any]) -> str:
    """`source = …` for a WHERE clause. A known source is written as a literal: SQLite uses the
    partial index of W&B events (`events_wandb`, migration 0012) only when the query names
    'wandb' itself, not a parameter. Anything else is bound (and matches nothing)."""
    if source in SOURCE_SPECS:  # a registered name is a plain identifier (`SourceSpec`)
        return f"source = '{source}'"
    params.append(source)
    return "source = ?"


def _between(
    since: datetime | None,
    until: datetime | None,
    params: list[Any],
    *,
    until_op: Literal["<", "<="],
) -> str:
    """` AND at >= ? AND at <until_op> ?` for the bounds given (none: no clause)."""
    where = ""
    if since is not None:
        where += " AND at >= ?"
        params.append(to_db(since))
    if until is not None:
        where += f" AND at {until_op} ?"
        params.append(to_db(until))
    return where


def _older(incoming: datetime | None, stored: str | None) -> bool:
    return incoming is not None and stored is not None and (to_db(incoming) or "") < stored


class EventsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def upsert_many(self, events: Sequence[Event]) -> UpsertResult:
        """Insert new events and update edited ones in place. An event whose content hash is
        unchanged is left alone, so ingesting the same input twice changes nothing. An edit clears
        the enrichment hash so the event is enriched again. An event whose data is not what its
        source and kind declare (`check_event_data`) is refused before anything is written."""
        result = UpsertResult()
        if not events:
            return result
        unknown = {e.source for e in events if e.source not in SOURCE_SPECS}
        if unknown:
            raise UnknownSource(f"events of unregistered sources: {', '.join(sorted(unknown))}")
        for event in events:
            check_event_data(event)
        async with self.db.transaction() as conn:
            for chunk in chunks(events):
                existing = await self._existing(conn, chunk)
                fresh: dict[tuple[str, str, str], Event] = {}  # new keys, last version wins
                for event in chunk:
                    digest = event.content_hash
                    key = (event.run_slug, event.source, event.external_id)
                    known = existing.get(key)
                    if known is None:
                        earlier = fresh.get(key)
                        if earlier is not None:
                            result.unchanged += 1  # a duplicate inside the batch
                            if _older(event.updated_at, to_db(earlier.updated_at)):
                                continue
                        fresh[key] = event
                        continue
                    if known[1] == digest or _older(event.updated_at, known[2]):
                        # Same content, or an older version than the stored one (a replay or a
                        # late page): never let it overwrite a newer edit.
                        event.id = known[0]
                        result.unchanged += 1
                        continue
                    await conn.execute(
                        "UPDATE events SET kind = ?, updated_at = ?, author = ?, ref = ?, "
                        "url = ?, state = ?, title = ?, body = ?, thread = ?, extra = ?, "
                        "deleted = ?, content_hash = ?, enriched_hash = NULL WHERE id = ?",
                        (
                            event.kind,
                            to_db(event.updated_at),
                            event.author,
                            event.ref,
                            event.url,
                            event.state,
                            event.title,
                            event.body,
                            event.thread,
                            to_json(event.extra),
                            int(event.deleted),
                            digest,
                            known[0],
                        ),
                    )
                    event.id = known[0]
                    result.updated.append(known[0])
                    existing[key] = (known[0], digest, to_db(event.updated_at))
                if fresh:
                    await self._insert(conn, list(fresh.values()), result)
        return result

    async def _insert(
        self, conn: aiosqlite.Connection, events: list[Event], result: UpsertResult
    ) -> None:
        """Insert new events in one executemany (the per-row round trip to aiosqlite's thread
        is what bounds ingest speed), then read their ids back."""
        await conn.executemany(
            f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES ({', '.join('?' * 16)}) "
            "ON CONFLICT (run_slug, source, external_id) DO NOTHING",
            [
                (
                    e.run_slug,
                    e.source,
                    e.external_id,
                    e.kind,
                    to_db(e.at),
                    to_db(e.updated_at),
                    e.author,
                    e.ref,
                    e.url,
                    e.state,
                    e.title,
                    e.body,
                    e.thread,
                    to_json(e.extra),
                    int(e.deleted),
                    e.content_hash,
                )
                for e in events
            ],
        )
        ids = await self._existing(conn, events)
        for event in events:
            event.id = ids[(event.run_slug, event.source, event.external_id)][0]
            result.inserted.append(event.id)

    @staticmethod
    async def _existing(
        conn: aiosqlite.Connection, chunk: Sequence[Event]
    ) -> dict[tuple[str, str, str], tuple[int, str, str | None]]:
        found: dict[tuple[str, str, str], tuple[int, str, str | None]] = {}
        by_run_source: dict[tuple[str, str], list[str]] = {}
        for event in chunk:
            by_run_source.setdefault((event.run_slug, event.source), []).append(event.external_id)
        for (run_slug, source), ids in by_run_source.items():
            marks = ",".join("?" * len(ids))
            async with conn.execute(
                "SELECT id, external_id, content_hash, updated_at FROM events "
                f"WHERE run_slug = ? AND source = ? AND external_id IN ({marks})",
                (run_slug, source, *ids),
            ) as cursor:
                async for row in cursor:
                    found[(run_slug, source, row[1])] = (row[0], row[2], row[3])
        return found

    async def get(self, event_id: int) -> Event | None:
        row = await self.db.fetchone("SELECT * FROM events WHERE id = ?", (event_id,))
        return event_from_row(row) if row else None

    async def get_by_external(self, run_slug: str, source: str, external_id: str) -> Event | None:
        row = await self.db.fetchone(
            "SELECT * FROM events WHERE run_slug = ? AND source = ? AND external_id = ?",
            (run_slug, source, external_id),
        )
        return event_from_row(row) if row else None

    async def mark_deleted(self, run_slug: str, source: str, external_id: str) -> bool:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE events SET deleted = 1, enriched_hash = NULL WHERE run_slug = ? AND "
                "source = ? AND external_id = ? AND deleted = 0",
                (run_slug, source, external_id),
            )
            return bool(cursor.rowcount)

    async def pending_enrichment(
        self,
        run_slug: str | None = None,
        limit: int = 500,
        *,
        source: str | None = None,
        kind: str | None = None,
    ) -> list[Event]:
        """Events never enriched, or edited since they were (an edit clears `enriched_hash`),
        oldest first. Reads the partial index of pending events run by run, so an idle cycle
        costs nothing however long the history."""
        slugs = [run_slug] if run_slug is not None else await self._run_slugs()
        found: list[Event] = []
        for slug in slugs:
            # INDEXED BY: with a source or kind filter SQLite could otherwise pick another
            # index and walk every Discord message of the run to find the pending ones.
            sql = (
                "SELECT * FROM events INDEXED BY events_pending "
                "WHERE run_slug = ? AND enriched_hash IS NULL"
            )
            params: list[Any] = [slug]
            for column, value in (("source", source), ("kind", kind)):
                if value is not None:
                    sql += f" AND {column} = ?"
                    params.append(value)
            sql += " ORDER BY at LIMIT ?"
            params.append(limit)
            found += await events_from_rows(await self.db.fetchall(sql, params))
        if len(slugs) > 1:
            found.sort(key=lambda e: e.at)
        return found[:limit]

    async def _run_slugs(self) -> list[str]:
        return [row[0] for row in await self.db.fetchall("SELECT slug FROM runs ORDER BY slug")]

    async def enriched_by_label(
        self, label: str, limit: int = 100, *, run_slug: str | None = None
    ) -> list[Event]:
        """Newest first: events whose current enrichment came from `label` (e.g. the rules
        standing in during an LLM outage). `RETRY_LABEL` has its own partial index (its literal
        must appear in the query for SQLite to use it); other labels are not indexed."""
        column = f"enriched_by = '{RETRY_LABEL}'" if label == RETRY_LABEL else "enriched_by = ?"
        slugs = [run_slug] if run_slug is not None else await self._run_slugs()
        found: list[Event] = []
        for slug in slugs:
            params: list[Any] = [] if label == RETRY_LABEL else [label]
            rows = await self.db.fetchall(
                f"SELECT * FROM events WHERE run_slug = ? AND {column} AND deleted = 0 "
                "AND enriched_hash = content_hash ORDER BY at DESC LIMIT ?",
                [slug, *params, limit],
            )
            found += await events_from_rows(rows)
        if len(slugs) > 1:
            found.sort(key=lambda e: e.at, reverse=True)
        return found[:limit]

    async def set_enrichment(
        self,
        event: Event,
        *,
        summary: str,
        tag: str,
        incident: bool,
        severity: str | None,
        newsworthy: bool,
        enriched_by: str,
        live_report: bool = False,
    ) -> bool:
        """Store enrichment for the content the event had when it was read; if it was edited in
        the meantime nothing is written and the newer version is enriched on the next pass."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE events SET summary = ?, tag = ?, incident = ?, live_report = ?, "
                "severity = ?, newsworthy = ?, enriched_by = ?, enriched_hash = content_hash "
                "WHERE id = ? AND content_hash = ?",
                (
                    summary,
                    tag,
                    int(incident),
                    int(live_report),
                    severity,
                    int(newsworthy),
                    enriched_by,
                    event.id,
                    event.content_hash,
                ),
            )
            return bool(cursor.rowcount)

    async def set_enrichment_many(self, items: Sequence[tuple[Event, Enriched]]) -> int:
        """`set_enrichment` for many events in one statement (a backfill, a bulk import).
        Returns how many were written; an event edited since it was read is left pending."""
        if not items:
            return 0
        async with self.db.transaction() as conn:
            cursor = await conn.executemany(
                "UPDATE events SET summary = ?, tag = ?, incident = ?, live_report = ?, "
                "severity = ?, newsworthy = ?, enriched_by = ?, enriched_hash = content_hash "
                "WHERE id = ? AND content_hash = ?",
                [
                    (
                        e.summary,
                        e.tag,
                        int(e.incident),
                        int(e.live_report),
                        e.severity,
                        int(e.newsworthy),
                        e.enriched_by,
                        event.id,
                        event.content_hash,
                    )
                    for event, e in items
                ],
            )
            return max(cursor.rowcount, 0)

    async def timeline(
        self,
        run_slug: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        tag: str | None = None,
        source: str | None = None,
        newsworthy_only: bool = True,
        limit: int = 200,
        offset: int = 0,
    ) -> list[Event]:
        """Newest first. Deleted events are never shown."""
        sql = "SELECT * FROM events WHERE run_slug = ? AND deleted = 0"
        params: list[Any] = [run_slug]
        if since is not None:
            sql += " AND at >= ?"
            params.append(to_db(since))
        if until is not None:
            sql += " AND at < ?"
            params.append(to_db(until))
        if tag is not None:
            sql += " AND tag = ?"
            params.append(tag)
        if source is not None:
            sql += f" AND {_source_is(source, params)}"
        if newsworthy_only:
            sql += " AND newsworthy = 1"
        sql += " ORDER BY at DESC, id DESC LIMIT ? OFFSET ?"
        params.extend([limit, offset])
        return await events_from_rows(await self.db.fetchall(sql, params))

    async def alert_names(self, run_slug: str) -> list[str]:
        """The names of the Alertmanager alerts a run has received (they are incident kinds a
        silence may name). Through the partial index of alert events."""
        rows = await self.db.fetchall(
            "SELECT DISTINCT ref FROM events WHERE run_slug = ? AND source = 'alertmanager' "
            "AND state IN ('firing', 'resolved') AND ref IS NOT NULL",
            (run_slug,),
        )
        return [str(row[0]) for row in rows]

    async def authors(self, run_slug: str, limit: int = 500) -> list[str]:
        """The distinct authors of a run's events, the most recent first, at most `limit` (the
        people the LLM checks know of: `bot.llm.people.known_people`)."""
        rows = await self.db.fetchall(
            "SELECT author FROM events WHERE run_slug = ? AND author IS NOT NULL "
            "AND author != '' GROUP BY author ORDER BY MAX(at) DESC LIMIT ?",
            (run_slug, limit),
        )
        return [str(row[0]) for row in rows]

    async def latest_in_thread(self, run_slug: str, source: str, thread: str) -> Event | None:
        """The newest stored event of a thread (deleted ones included: they were seen)."""
        row = await self.db.fetchone(
            "SELECT * FROM events WHERE run_slug = ? AND thread = ? AND source = ? "
            "ORDER BY at DESC, id DESC LIMIT 1",
            (run_slug, thread, source),
        )
        return event_from_row(row) if row else None

    async def in_thread(
        self,
        run_slug: str,
        thread: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        kind: str | None = None,
    ) -> list[Event]:
        sql = "SELECT * FROM events WHERE run_slug = ? AND thread = ?"
        params: list[Any] = [run_slug, thread]
        if since is not None:
            sql += " AND at >= ?"
            params.append(to_db(since))
        if until is not None:
            sql += " AND at <= ?"
            params.append(to_db(until))
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        rows = await self.db.fetchall(sql + " ORDER BY at", params)
        return await events_from_rows(rows)

    async def conversation_before(self, run_slug: str, thread: str, at: datetime) -> Event | None:
        """The channel's latest conversation that started at or before `at` (migration 0012
        indexes conversations by channel and time; named, since the thread index has the same
        columns and the planner cannot tell them apart without statistics)."""
        row = await self.db.fetchone(
            "SELECT * FROM events INDEXED BY events_conversations "
            "WHERE run_slug = ? AND thread = ? AND kind = 'conversation' "
            "AND at <= ? AND deleted = 0 ORDER BY at DESC, id DESC LIMIT 1",
            (run_slug, thread, to_db(at)),
        )
        return event_from_row(row) if row else None

    async def conversations_between(
        self, run_slug: str, thread: str, since: datetime, until: datetime
    ) -> list[Event]:
        """The channel's conversations that started in [since, until], oldest first."""
        rows = await self.db.fetchall(
            "SELECT * FROM events INDEXED BY events_conversations "
            "WHERE run_slug = ? AND thread = ? AND kind = 'conversation' "
            "AND at >= ? AND at <= ? AND deleted = 0 ORDER BY at, id",
            (run_slug, thread, to_db(since), to_db(until)),
        )
        return await events_from_rows(rows)

    async def requeue(self, event_ids: Sequence[int]) -> int:
        """Clear the enrichment of these events so they are enriched again (a message that was
        part of a conversation and is on its own again)."""
        if not event_ids:
            return 0
        async with self.db.transaction() as conn:
            cursor = await conn.executemany(
                "UPDATE events SET enriched_hash = NULL WHERE id = ? AND enriched_hash IS NOT NULL",
                [(event_id,) for event_id in event_ids],
            )
            return max(cursor.rowcount, 0)

    async def count(self, run_slug: str, *, since: datetime | None = None) -> int:
        sql = "SELECT COUNT(*) FROM events WHERE run_slug = ? AND deleted = 0"
        params: list[Any] = [run_slug]
        if since is not None:
            sql += " AND at >= ?"
            params.append(to_db(since))
        row = await self.db.fetchone(sql, params)
        return int(row[0]) if row else 0

    async def of_kind(
        self,
        run_slug: str,
        source: str,
        kind: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 1000,
    ) -> list[Event]:
        """The run's newest `limit` events of one source and kind, in [since, until] when given,
        oldest first (for W&B, e.g. every restart for the chart, a range of the `events_wandb`
        index; for another source, a range of the run's time index: bounded by the window)."""
        params: list[Any] = [run_slug]
        where = _source_is(source, params) + " AND kind = ?"
        params.append(kind)
        where += _between(since, until, params, until_op="<=")
        rows = await self.db.fetchall(
            f"SELECT * FROM events WHERE run_slug = ? AND {where} AND deleted = 0 "
            "ORDER BY at DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        return await events_from_rows(list(reversed(rows)))

    async def restarts(
        self,
        run_slug: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 1000,
    ) -> list[Restart]:
        """The run's restarts as the W&B source recorded them, oldest first: the newest `limit`
        in [since, until). A record that does not read back as a restart is logged and left
        out (it was written by an older version)."""
        params: list[Any] = [run_slug]
        where = _source_is("wandb", params) + _between(since, until, params, until_op="<")
        rows = await self.db.fetchall(
            f"SELECT * FROM events WHERE run_slug = ? AND {where} AND kind = 'restart' "
            "AND deleted = 0 ORDER BY at DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        out: list[Restart] = []
        for row in reversed(rows):
            event = event_from_row(row)
            try:
                out.append(Restart.of_event(event))
            except BadRestart as exc:
                log.warning("restart event %s left out: %s", event.external_id, exc)
        return out

    async def last_restart(self, run_slug: str) -> Restart | None:
        found = await self.restarts(run_slug, limit=1)
        return found[-1] if found else None
