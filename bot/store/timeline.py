"""Timeline reads of events: by id, by time window, by thread and conversation, of one kind,
and the run's restarts. Deleted events are never shown where a reader sees them. Mixed into
`EventsRepo`."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from bot.core.timeutil import to_db
from bot.models import LINE_BODY_CHARS, BadRestart, Event, Restart
from bot.store.db import Database
from bot.store.events import (
    LISTED_COLUMNS,
    _between,
    _source_is,
    event_from_row,
    events_from_rows,
)

log = logging.getLogger(__name__)


def _timeline_where(
    since: datetime | None,
    until: datetime | None,
    tag: str | None,
    source: str | None,
    newsworthy_only: bool,
    params: list[Any],
) -> str:
    """The WHERE clause of a run's timeline (its run slug already in `params`)."""
    where = "run_slug = ? AND deleted = 0" + _between(since, until, params, until_op="<")
    if tag is not None:
        where += " AND tag = ?"
        params.append(tag)
    if source is not None:
        where += f" AND {_source_is(source, params)}"
    if newsworthy_only:
        where += " AND newsworthy = 1"
    return where


class TimelineReads:
    db: Database

    async def get(self, event_id: int) -> Event | None:
        row = await self.db.fetchone("SELECT * FROM events WHERE id = ?", (event_id,))
        return event_from_row(row) if row else None

    async def get_by_external(self, run_slug: str, source: str, external_id: str) -> Event | None:
        row = await self.db.fetchone(
            "SELECT * FROM events WHERE run_slug = ? AND source = ? AND external_id = ?",
            (run_slug, source, external_id),
        )
        return event_from_row(row) if row else None

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
        params: list[Any] = [run_slug]
        where = _timeline_where(since, until, tag, source, newsworthy_only, params)
        sql = f"SELECT * FROM events WHERE {where} ORDER BY at DESC, id DESC LIMIT ? OFFSET ?"
        return await events_from_rows(await self.db.fetchall(sql, [*params, limit, offset]))

    async def listing(
        self,
        run_slug: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        tag: str | None = None,
        source: str | None = None,
        limit: int = 200,
        offset: int = 0,
    ) -> list[Event]:
        """`timeline`'s newsworthy events as a listing shows them, one line each: each body cut
        to its first `LINE_BODY_CHARS` characters (what a line without summary or title falls back
        to) and no source data (`extra`), so a page of 500 entries never reads the posts'
        whole text into memory. For showing only: never write these events back."""
        params: list[Any] = [run_slug]
        where = _timeline_where(since, until, tag, source, True, params)
        sql = f"SELECT {LISTED_COLUMNS} FROM events WHERE {where} ORDER BY at DESC, id DESC"
        sql += " LIMIT ? OFFSET ?"
        rows = await self.db.fetchall(sql, [LINE_BODY_CHARS, *params, limit, offset])
        return await events_from_rows(rows)

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
        params: list[Any] = [run_slug, thread]
        sql = "SELECT * FROM events WHERE run_slug = ? AND thread = ?"
        sql += _between(since, until, params, until_op="<=")
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
