"""Event writes: idempotent upserts (an unchanged event is left alone, an older version never
overwrites a newer edit) and deletions. Mixed into `EventsRepo`."""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from bot.core.timeutil import to_db
from bot.models import SOURCE_SPECS, Event, check_event_data
from bot.store.codec import chunks, to_json
from bot.store.db import Database
from bot.store.events import _EVENT_COLUMNS, UnknownSource, UpsertResult, _older

_Existing = dict[tuple[str, str, str], tuple[int, str, str | None]]


class EventWrites:
    db: Database

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
                await self._upsert_chunk(conn, chunk, result)
        return result

    async def _upsert_chunk(
        self, conn: aiosqlite.Connection, chunk: Sequence[Event], result: UpsertResult
    ) -> None:
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
                # Same content, or an older version than the stored one (a replay or a late
                # page): never let it overwrite a newer edit.
                event.id = known[0]
                result.unchanged += 1
                continue
            await self._update(conn, event, known[0])
            result.updated.append(known[0])
            existing[key] = (known[0], digest, to_db(event.updated_at))
        if fresh:
            await self._insert(conn, list(fresh.values()), result)

    @staticmethod
    async def _update(conn: aiosqlite.Connection, event: Event, event_id: int) -> None:
        """An edit in place; it clears the enrichment hash so the event is enriched again."""
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
                event.content_hash,
                event_id,
            ),
        )
        event.id = event_id

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
    async def _existing(conn: aiosqlite.Connection, chunk: Sequence[Event]) -> _Existing:
        found: _Existing = {}
        by_run_source: dict[tuple[str, str], list[str]] = {}
        for event in chunk:
            by_run_source.setdefault((event.run_slug, event.source), []).append(event.external_id)
        for (run_slug, source), ids in by_run_source.items():
            marks = ",".join("?" * len(ids))
            rows = await conn.execute_fetchall(
                "SELECT id, external_id, content_hash, updated_at FROM events "
                f"WHERE run_slug = ? AND source = ? AND external_id IN ({marks})",
                (run_slug, source, *ids),
            )
            for row in rows:
                found[(run_slug, source, row[1])] = (row[0], row[2], row[3])
        return found

    async def mark_deleted(self, run_slug: str, source: str, external_id: str) -> bool:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE events SET deleted = 1, enriched_hash = NULL WHERE run_slug = ? AND "
                "source = ? AND external_id = ? AND deleted = 0",
                (run_slug, source, external_id),
            )
            return bool(cursor.rowcount)
