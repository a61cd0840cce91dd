"""Events as stored: the row codec (`event_from_row`) and the SQL helpers the events repository
(`bot.store.events_repo`: writes, enrichment queue, timeline reads) shares."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import aiosqlite

from bot.core.timeutil import from_db, to_db
from bot.models import (
    SOURCE_SPECS,
    Event,
)


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


#: A listing's columns (`TimelineReads.listing`): every column `event_from_row` reads, but the
#: body only as far as a line shows it (the one parameter) and no source data.
LISTED_COLUMNS = (
    "id, run_slug, source, external_id, kind, at, updated_at, author, ref, url, state, title, "
    "substr(body, 1, ?) AS body, thread, '{}' AS extra, deleted, summary, tag, incident, "
    "live_report, severity, newsworthy, enriched_by"
)


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
