"""The enrichment queue of events: what is pending (new or edited since enriched), what the
rules enriched standing in for the LLM, and the enrichment written for the content it was read
from. Mixed into `EventsRepo`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.models import Event
from bot.store.db import Database
from bot.store.events import RETRY_LABEL, Enriched, events_from_rows


class EventEnrichment:
    db: Database

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
