"""Repositories: parameterised SQL in, domain objects out. Each write method is safe alone and
joins an enclosing `db.transaction()` when there is one."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiosqlite

from bot.models import (
    Event,
    Incident,
    LLMOutput,
    MetricPoint,
    OutboxItem,
    RunInfo,
    RunSnapshot,
    SourceHealth,
)
from bot.store.db import Database
from bot.store.forecasts import ForecastStateRepo, SeriesRepo
from bot.timeutil import from_db, parse_time, to_db, utcnow

_CHUNK = 400  # stays under SQLite's host-parameter limit with room to spare


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


class RunsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def upsert(self, run: RunInfo) -> None:
        config = dict(run.config)
        config.setdefault("slug", run.slug)
        config.setdefault("name", run.name)
        record = {
            "total_steps": run.total_steps,
            "target_tokens": run.target_tokens,
            "launched_at": to_db(run.launched_at),
            "timezone": run.timezone,
            "links": run.links,
            "config": config,
        }
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO runs (slug, name, config, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (slug) DO UPDATE SET name = excluded.name, config = excluded.config, "
                "updated_at = excluded.updated_at WHERE runs.config != excluded.config "
                "OR runs.name != excluded.name",
                (run.slug, run.name, to_json(record), to_db(utcnow())),
            )

    @staticmethod
    def _from_row(row: aiosqlite.Row) -> RunInfo:
        record = json.loads(row["config"])
        return RunInfo(
            slug=row["slug"],
            name=row["name"],
            total_steps=record.get("total_steps"),
            target_tokens=record.get("target_tokens"),
            launched_at=from_db(record.get("launched_at")),
            timezone=record.get("timezone") or "UTC",
            links=record.get("links") or {},
            config=record.get("config") or {},
        )

    async def get(self, slug: str) -> RunInfo | None:
        row = await self.db.fetchone("SELECT * FROM runs WHERE slug = ?", (slug,))
        return self._from_row(row) if row else None

    async def all(self) -> list[RunInfo]:
        rows = await self.db.fetchall("SELECT * FROM runs ORDER BY slug")
        return [self._from_row(row) for row in rows]


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
    "thread, extra, deleted, content_hash, ingested_at"
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
        severity=row["severity"],
        newsworthy=bool(row["newsworthy"]),
        enriched_by=row["enriched_by"],
    )


def _older(incoming: datetime | None, stored: str | None) -> bool:
    return incoming is not None and stored is not None and (to_db(incoming) or "") < stored


class EventsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def upsert_many(self, events: Sequence[Event]) -> UpsertResult:
        """Insert new events and update edited ones in place. An event whose content hash is
        unchanged is left alone, so ingesting the same input twice changes nothing. An edit clears
        the enrichment hash so the event is enriched again."""
        result = UpsertResult()
        if not events:
            return result
        now = to_db(utcnow())
        async with self.db.transaction() as conn:
            for chunk in _chunks(events):
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
                    await self._insert(conn, list(fresh.values()), now, result)
        return result

    async def _insert(
        self, conn: aiosqlite.Connection, events: list[Event], now: str | None, result: UpsertResult
    ) -> None:
        """Insert new events in one executemany (the per-row round trip to aiosqlite's thread
        is what bounds ingest speed), then read their ids back."""
        await conn.executemany(
            f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES ({', '.join('?' * 17)}) "
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
                    now,
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
        """Events never enriched, or edited since they were."""
        sql = "SELECT * FROM events WHERE (enriched_hash IS NULL OR enriched_hash != content_hash)"
        params: list[Any] = []
        for column, value in (("run_slug", run_slug), ("source", source), ("kind", kind)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        sql += " ORDER BY at LIMIT ?"
        params.append(limit)
        return [event_from_row(row) for row in await self.db.fetchall(sql, params)]

    async def enriched_by_label(
        self, label: str, limit: int = 100, *, run_slug: str | None = None
    ) -> list[Event]:
        """Newest first: events whose current enrichment came from `label` (e.g. the rules
        standing in during an LLM outage)."""
        sql = "SELECT * FROM events WHERE enriched_by = ? AND deleted = 0"
        params: list[Any] = [label]
        if run_slug is not None:
            sql += " AND run_slug = ?"
            params.append(run_slug)
        sql += " AND enriched_hash = content_hash ORDER BY at DESC LIMIT ?"
        params.append(limit)
        return [event_from_row(row) for row in await self.db.fetchall(sql, params)]

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
    ) -> bool:
        """Store enrichment for the content the event had when it was read; if it was edited in
        the meantime nothing is written and the newer version is enriched on the next pass."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE events SET summary = ?, tag = ?, incident = ?, severity = ?, "
                "newsworthy = ?, enriched_by = ?, enriched_hash = content_hash "
                "WHERE id = ? AND content_hash = ?",
                (
                    summary,
                    tag,
                    int(incident),
                    severity,
                    int(newsworthy),
                    enriched_by,
                    event.id,
                    event.content_hash,
                ),
            )
            return bool(cursor.rowcount)

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
            sql += " AND source = ?"
            params.append(source)
        if newsworthy_only:
            sql += " AND newsworthy = 1"
        sql += " ORDER BY at DESC, id DESC LIMIT ? OFFSET ?"
        params.extend([limit, offset])
        return [event_from_row(row) for row in await self.db.fetchall(sql, params)]

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
        return [event_from_row(row) for row in rows]

    async def count(self, run_slug: str, *, since: datetime | None = None) -> int:
        sql = "SELECT COUNT(*) FROM events WHERE run_slug = ? AND deleted = 0"
        params: list[Any] = [run_slug]
        if since is not None:
            sql += " AND at >= ?"
            params.append(to_db(since))
        row = await self.db.fetchone(sql, params)
        return int(row[0]) if row else 0

    async def last_of_kind(self, run_slug: str, source: str, kind: str) -> Event | None:
        row = await self.db.fetchone(
            "SELECT * FROM events WHERE run_slug = ? AND source = ? AND kind = ? AND deleted = 0 "
            "ORDER BY at DESC, id DESC LIMIT 1",
            (run_slug, source, kind),
        )
        return event_from_row(row) if row else None


class MetricsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def add_points(self, run_slug: str, points: Sequence[MetricPoint]) -> int:
        """Insert history rows; rows already stored are ignored. Returns rows inserted."""
        if not points:
            return 0
        async with self.db.transaction() as conn:
            before = conn.total_changes
            await conn.executemany(
                "INSERT OR IGNORE INTO metric_points (run_slug, wandb_run, step, at, tokens, loss) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(run_slug, p.wandb_run, p.step, to_db(p.at), p.tokens, p.loss) for p in points],
            )
            return conn.total_changes - before

    @staticmethod
    def _point(row: aiosqlite.Row) -> MetricPoint:
        return MetricPoint(
            wandb_run=row[0],
            step=row[1],
            at=from_db(row[2]),  # type: ignore[arg-type]
            tokens=row[3],
            loss=row[4],
        )

    async def points(
        self, run_slug: str, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[MetricPoint]:
        sql = "SELECT wandb_run, step, at, tokens, loss FROM metric_points WHERE run_slug = ?"
        params: list[Any] = [run_slug]
        if since is not None:
            sql += " AND at >= ?"
            params.append(to_db(since))
        if until is not None:
            sql += " AND at < ?"
            params.append(to_db(until))
        sql += " ORDER BY at"
        return [self._point(row) for row in await self.db.fetchall(sql, params)]

    async def window(self, run_slug: str, since: datetime) -> list[MetricPoint]:
        """Points since `since`, plus the last point of each W&B run before it, so a trailing
        rate can be measured from the window's start without reading the whole history."""
        runs = await self.db.fetchall(
            "SELECT wandb_run FROM run_snapshots WHERE run_slug = ?", (run_slug,)
        )
        if not runs:
            # DISTINCT would walk every point; this skip-scan does one index seek per W&B run.
            runs = await self.db.fetchall(
                "WITH RECURSIVE r(w) AS (SELECT MIN(wandb_run) FROM metric_points "
                "WHERE run_slug = ?1 UNION ALL SELECT (SELECT MIN(wandb_run) FROM metric_points "
                "WHERE run_slug = ?1 AND wandb_run > r.w) FROM r WHERE r.w IS NOT NULL) "
                "SELECT w FROM r WHERE w IS NOT NULL",
                (run_slug,),
            )
        before = []
        for (wandb_run,) in runs:
            row = await self.db.fetchone(
                "SELECT wandb_run, step, at, tokens, loss FROM metric_points WHERE run_slug = ? "
                "AND wandb_run = ? AND at < ? ORDER BY at DESC LIMIT 1",
                (run_slug, wandb_run, to_db(since)),
            )
            if row is not None:
                before.append(row)
        return [self._point(row) for row in before] + await self.points(run_slug, since=since)

    async def latest(self, run_slug: str) -> MetricPoint | None:
        row = await self.db.fetchone(
            "SELECT wandb_run, step, at, tokens, loss FROM metric_points WHERE run_slug = ? "
            "ORDER BY at DESC LIMIT 1",
            (run_slug,),
        )
        return self._point(row) if row else None

    async def last_step(self, run_slug: str, wandb_run: str) -> int | None:
        row = await self.db.fetchone(
            "SELECT step FROM metric_points WHERE run_slug = ? AND wandb_run = ? "
            "ORDER BY at DESC LIMIT 1",
            (run_slug, wandb_run),
        )
        return int(row[0]) if row else None

    async def downsampled(self, run_slug: str, buckets: int = 400) -> list[MetricPoint]:
        """At most about `buckets` points per W&B run for charts: the last point of each time
        bucket, computed in SQL so a 400,000-point history never crosses into Python."""
        span = await self.db.fetchone(
            "SELECT MIN(at), MAX(at), COUNT(*) FROM metric_points WHERE run_slug = ?", (run_slug,)
        )
        if not span or not span[2]:
            return []
        if span[2] <= buckets:
            return await self.points(run_slug)
        first, last = from_db(span[0]), from_db(span[1])
        assert first is not None and last is not None
        width = max((last - first).total_seconds() / buckets, 1.0)
        rows = await self.db.fetchall(
            "SELECT wandb_run, step, at, tokens, loss FROM ("
            " SELECT *, ROW_NUMBER() OVER (PARTITION BY wandb_run,"
            "  CAST((julianday(at) - julianday(?)) * 86400 / ? AS INTEGER) ORDER BY at DESC) AS rn"
            " FROM metric_points WHERE run_slug = ?) WHERE rn = 1 ORDER BY at",
            (span[0], width, run_slug),
        )
        return [self._point(row) for row in rows]

    async def version(self, run_slug: str) -> str:
        """Changes whenever a point is added: the cache key for rendered charts."""
        row = await self.db.fetchone(
            "SELECT COUNT(*), MAX(at) FROM metric_points WHERE run_slug = ?", (run_slug,)
        )
        return f"{row[0]}:{row[1]}" if row else "0:"


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


class CursorsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def get(self, source: str, key: str) -> tuple[str | None, str | None]:
        """(value, etag) or (None, None)."""
        row = await self.db.fetchone(
            "SELECT value, etag FROM source_cursors WHERE source = ? AND key = ?", (source, key)
        )
        return (row[0], row[1]) if row else (None, None)

    async def set(self, source: str, key: str, value: str | None, etag: str | None = None) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO source_cursors (source, key, value, etag, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (source, key) DO UPDATE SET "
                "value = excluded.value, etag = excluded.etag, updated_at = excluded.updated_at",
                (source, key, value, etag, to_db(utcnow())),
            )


class HealthRepo:
    """Per-source health. Scope is a run slug for freshness ("W&B 2 min ago") or a source key
    (a repository, a W&B project) for backoff."""

    def __init__(self, db: Database):
        self.db = db

    async def record_success(self, source: str, scope: str, at: datetime) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO source_health (source, scope, last_attempt_at, last_success_at, "
                "consecutive_failures, next_attempt_at, last_error) VALUES (?, ?, ?, ?, 0, NULL, "
                "NULL) ON CONFLICT (source, scope) DO UPDATE SET last_attempt_at = "
                "excluded.last_attempt_at, last_success_at = excluded.last_success_at, "
                "consecutive_failures = 0, next_attempt_at = NULL, last_error = NULL",
                (source, scope, to_db(at), to_db(at)),
            )

    async def record_failure(
        self, source: str, scope: str, at: datetime, error: str, next_attempt_at: datetime | None
    ) -> int:
        """Returns the number of consecutive failures including this one."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO source_health (source, scope, last_attempt_at, "
                "consecutive_failures, next_attempt_at, last_error) VALUES (?, ?, ?, 1, ?, ?) "
                "ON CONFLICT (source, scope) DO UPDATE SET "
                "last_attempt_at = excluded.last_attempt_at, consecutive_failures = "
                "source_health.consecutive_failures + 1, next_attempt_at = "
                "excluded.next_attempt_at, last_error = excluded.last_error",
                (source, scope, to_db(at), to_db(next_attempt_at), error[:500]),
            )
        health = await self.get(source, scope)
        return health.consecutive_failures if health else 1

    async def get(self, source: str, scope: str) -> SourceHealth | None:
        row = await self.db.fetchone(
            "SELECT * FROM source_health WHERE source = ? AND scope = ?", (source, scope)
        )
        if row is None:
            return None
        return SourceHealth(
            source=row["source"],
            scope=row["scope"],
            last_attempt_at=from_db(row["last_attempt_at"]),
            last_success_at=from_db(row["last_success_at"]),
            consecutive_failures=row["consecutive_failures"],
            next_attempt_at=from_db(row["next_attempt_at"]),
            last_error=row["last_error"],
        )

    async def for_run(self, run_slug: str) -> dict[str, SourceHealth]:
        rows = await self.db.fetchall(
            "SELECT source FROM source_health WHERE scope = ?", (run_slug,)
        )
        result = {}
        for row in rows:
            health = await self.get(row[0], run_slug)
            if health:
                result[row[0]] = health
        return result


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
        details=json.loads(row["details"]),
    )


class IncidentsRepo:
    def __init__(self, db: Database):
        self.db = db

    async def save(self, incident: Incident) -> int:
        params = (
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
            incident.acked_by,
            to_db(incident.acked_at),
            to_json(incident.details),
        )
        async with self.db.transaction() as conn:
            if incident.id is None:
                cursor = await conn.execute(
                    "INSERT INTO incidents (run_slug, fingerprint, kind, title, status, severity, "
                    "started_at, fired_at, resolved_at, last_seen_at, cause, resolution, "
                    "acked_by, acked_at, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    "?, ?)",
                    params,
                )
                incident.id = int(cursor.lastrowid or 0)
            else:
                await conn.execute(
                    "UPDATE incidents SET run_slug = ?, fingerprint = ?, kind = ?, title = ?, "
                    "status = ?, severity = ?, started_at = ?, fired_at = ?, resolved_at = ?, "
                    "last_seen_at = ?, cause = ?, resolution = ?, acked_by = ?, acked_at = ?, "
                    "details = ? WHERE id = ?",
                    (*params, incident.id),
                )
        return incident.id

    async def get(self, incident_id: int) -> Incident | None:
        row = await self.db.fetchone("SELECT * FROM incidents WHERE id = ?", (incident_id,))
        return incident_from_row(row) if row else None

    async def open_for(self, run_slug: str, fingerprint: str) -> Incident | None:
        row = await self.db.fetchone(
            "SELECT * FROM incidents WHERE run_slug = ? AND fingerprint = ? AND "
            "status != 'resolved'",
            (run_slug, fingerprint),
        )
        return incident_from_row(row) if row else None

    async def find(
        self, run_slug: str, *, open_only: bool = False, since: datetime | None = None
    ) -> list[Incident]:
        sql = "SELECT * FROM incidents WHERE run_slug = ?"
        params: list[Any] = [run_slug]
        if open_only:
            sql += " AND status != 'resolved'"
        if since is not None:
            sql += " AND (resolved_at IS NULL OR resolved_at >= ? OR started_at >= ?)"
            params.extend([to_db(since), to_db(since)])
        sql += " ORDER BY started_at DESC, id DESC"
        return [incident_from_row(row) for row in await self.db.fetchall(sql, params)]

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


def _outbox_from_row(row: aiosqlite.Row) -> OutboxItem:
    return OutboxItem(
        id=row["id"],
        run_slug=row["run_slug"],
        channel_id=row["channel_id"],
        kind=row["kind"],
        dedup_key=row["dedup_key"],
        payload=json.loads(row["payload"]),
        status=row["status"],
        attempts=row["attempts"],
        created_at=from_db(row["created_at"]),
        not_before=from_db(row["not_before"]),
        sent_at=from_db(row["sent_at"]),
        message_id=row["message_id"],
        last_error=row["last_error"],
        reply_to=row["reply_to"],
        posted_in=row["posted_in"],
    )


class OutboxRepo:
    def __init__(self, db: Database):
        self.db = db

    async def enqueue(self, item: OutboxItem) -> int | None:
        """Queue a post. The dedup key makes this idempotent: a second enqueue of the same key
        returns None and queues nothing."""
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO outbox (run_slug, channel_id, kind, dedup_key, payload, status, "
                "created_at, not_before, reply_to) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?) "
                "ON CONFLICT (dedup_key) DO NOTHING",
                (
                    item.run_slug,
                    item.channel_id,
                    item.kind,
                    item.dedup_key,
                    to_json(item.payload),
                    to_db(item.created_at or utcnow()),
                    to_db(item.not_before),
                    item.reply_to,
                ),
            )
            if not cursor.rowcount:
                return None
            item.id = int(cursor.lastrowid or 0)
            return item.id

    async def due(self, now: datetime, limit: int = 50) -> list[OutboxItem]:
        """Queued items ready to send, oldest first. Callers deliver per channel in id order and
        stop a channel at its first failure, so order within a channel is kept."""
        rows = await self.db.fetchall(
            "SELECT * FROM outbox WHERE status = 'queued' AND (not_before IS NULL OR "
            "not_before <= ?) ORDER BY id LIMIT ?",
            (to_db(now), limit),
        )
        return [_outbox_from_row(row) for row in rows]

    async def queued(self, limit: int = 50) -> list[OutboxItem]:
        """Every queued item, oldest first, including those still backing off: a poster that
        keeps per-channel order must see a waiting head item to hold the ones behind it."""
        rows = await self.db.fetchall(
            "SELECT * FROM outbox WHERE status = 'queued' ORDER BY id LIMIT ?", (limit,)
        )
        return [_outbox_from_row(row) for row in rows]

    async def get(self, item_id: int) -> OutboxItem | None:
        row = await self.db.fetchone("SELECT * FROM outbox WHERE id = ?", (item_id,))
        return _outbox_from_row(row) if row else None

    async def get_by_key(self, dedup_key: str) -> OutboxItem | None:
        row = await self.db.fetchone("SELECT * FROM outbox WHERE dedup_key = ?", (dedup_key,))
        return _outbox_from_row(row) if row else None

    async def mark_sent(
        self, item_id: int, message_id: str | None, at: datetime, posted_in: int | None = None
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET status = 'sent', sent_at = ?, message_id = ?, posted_in = ?, "
                "attempts = attempts + 1, last_error = NULL WHERE id = ?",
                (to_db(at), message_id, posted_in, item_id),
            )

    async def mark_retry(
        self, item_id: int, error: str, not_before: datetime, *, give_up: bool = False
    ) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET status = ?, attempts = attempts + 1, last_error = ?, "
                "not_before = ? WHERE id = ?",
                ("failed" if give_up else "queued", error[:500], to_db(not_before), item_id),
            )

    async def pending_count(self) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) FROM outbox WHERE status = 'queued'")
        return int(row[0]) if row else 0


def _llm_from_row(row: aiosqlite.Row) -> LLMOutput:
    return LLMOutput(
        id=row["id"],
        run_slug=row["run_slug"],
        task=row["task"],
        prompt_name=row["prompt_name"],
        prompt_hash=row["prompt_hash"],
        model=row["model"],
        content=row["content"],
        created_at=from_db(row["created_at"]),  # type: ignore[arg-type]
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost_usd=row["cost_usd"],
        fallback=bool(row["fallback"]),
        cache_key=row["cache_key"],
    )


class LLMRepo:
    def __init__(self, db: Database):
        self.db = db

    async def record(self, output: LLMOutput) -> int:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO llm_outputs (run_slug, task, prompt_name, prompt_hash, model, "
                "content, created_at, input_tokens, output_tokens, cost_usd, fallback, cache_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    output.run_slug,
                    output.task,
                    output.prompt_name,
                    output.prompt_hash,
                    output.model,
                    output.content,
                    to_db(output.created_at),
                    output.input_tokens,
                    output.output_tokens,
                    output.cost_usd,
                    int(output.fallback),
                    output.cache_key,
                ),
            )
            output.id = int(cursor.lastrowid or 0)
            return output.id

    async def latest(self, run_slug: str | None, task: str) -> LLMOutput | None:
        row = await self.db.fetchone(
            "SELECT * FROM llm_outputs WHERE run_slug IS ? AND task = ? "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            (run_slug, task),
        )
        return _llm_from_row(row) if row else None

    async def by_cache_key(self, cache_key: str) -> LLMOutput | None:
        row = await self.db.fetchone(
            "SELECT * FROM llm_outputs WHERE cache_key = ? ORDER BY id DESC LIMIT 1", (cache_key,)
        )
        return _llm_from_row(row) if row else None

    async def spend(self, since: datetime) -> dict[str, dict[str, float]]:
        """Per task: calls, input/output tokens and dollars since `since`."""
        rows = await self.db.fetchall(
            "SELECT task, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cost_usd) "
            "FROM llm_outputs WHERE created_at >= ? AND fallback = 0 GROUP BY task ORDER BY task",
            (to_db(since),),
        )
        return {
            row[0]: {
                "calls": row[1],
                "input_tokens": row[2] or 0,
                "output_tokens": row[3] or 0,
                "cost_usd": row[4] or 0.0,
            }
            for row in rows
        }


class Store:
    """The repositories over one Database, handed to services by the composition root."""

    def __init__(self, db: Database):
        self.db = db
        self.runs = RunsRepo(db)
        self.events = EventsRepo(db)
        self.metrics = MetricsRepo(db)
        self.snapshots = SnapshotsRepo(db)
        self.cursors = CursorsRepo(db)
        self.health = HealthRepo(db)
        self.incidents = IncidentsRepo(db)
        self.outbox = OutboxRepo(db)
        self.llm = LLMRepo(db)
        self.series = SeriesRepo(db)
        self.forecasts = ForecastStateRepo(db)

    def transaction(self):  # type: ignore[no-untyped-def]
        return self.db.transaction()


__all__ = ["Store", "UpsertResult", "event_from_row", "parse_time"]
