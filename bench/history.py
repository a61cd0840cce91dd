"""A run's history at constant density, built through the store's own API (`upsert_many`,
`set_enrichment_many`, `add_points`, `incidents.save`), for bench_bot.py and bench_scaling.py.

Density: 1,000,000 events and 400,000 metric points per 120 days (a busy year-long run has a few
million events). Event i happens at START + i / density, so a store grows forward in time as a
live one does (10k, then 100k, …: appended, never back-filled), and a store of N events is
measured at `now_for(N)`, just after its newest event.
"""

from __future__ import annotations

import random
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.core.timeutil import from_db
from bot.models import Event, Incident, MetricPoint, RunInfo, RunSnapshot
from bot.store import Store
from bot.store.events import Enriched
from bot.store.metrics import MetricsRepo

SLUG = "bench"
NAME = "Bench 500B"
WANDB = "e/p/r1"
START = datetime(2025, 1, 1, tzinfo=UTC)
EVENTS_PER_SECOND = 1_000_000 / (120 * 86400)
POINTS_PER_EVENT = 0.4
EVENTS_PER_INCIDENT = 2000
TAGS = ["incident", "ablation", "optimizer", "training-dynamics", "evals", "data", "infra", "other"]
CHUNK = 20_000

BODIES = [
    "Loss curve after the warmup looks healthy; grad norm settles around 0.3 by step {n}.",
    "Restarted from the step {n} checkpoint after the node in slice 3 dropped out of the mesh.",
    "Eval suite on checkpoint {n}: MMLU up half a point, long-context retrieval flat.",
    "Data mixture v{n} is staged; tokenizer fix lands with it, no change to the schedule.",
    "Throughput dipped for 20 minutes around step {n}; preemption on the spot pool, resolved.",
]


def event_at(index: int) -> datetime:
    return START + timedelta(seconds=index / EVENTS_PER_SECOND)


def now_for(events: int) -> datetime:
    """The clock of a store holding `events` events: a minute after the newest."""
    return event_at(events - 1) + timedelta(minutes=1)


def make_events(first: int, last: int) -> list[Event]:
    """Events with index first..last-1 (0 is the oldest)."""
    out = []
    for n in range(first, last):
        source = ("github", "discord", "github", "discord", "wandb")[n % 5]
        issue = 1000 + n % 5000
        body = BODIES[n % len(BODIES)].format(n=n)
        if source == "github":
            event = Event(
                run_slug=SLUG,
                source=source,
                external_id=f"comment:{n}",
                kind="comment",
                at=event_at(n),
                author=f"user{n % 97}",
                ref=f"#{issue}",
                url=f"https://github.com/o/r/issues/{issue}#issuecomment-{n}",
                state="open",
                title=f"Hero run: tracking issue {issue}",
                body=body,
                thread=f"github:o/r#{issue}",
            )
        elif source == "discord":
            event = Event(
                run_slug=SLUG,
                source=source,
                external_id=f"msg:{n}",
                kind="message",
                at=event_at(n),
                author=f"member{n % 41}",
                ref="#hero-run",
                url=f"https://discord.com/channels/1/2/{n}",
                body=body,
                thread="discord:2",
            )
        else:
            event = Event(
                run_slug=SLUG,
                source=source,
                external_id=f"wandb:state:{n}",
                kind="state",
                at=event_at(n),
                ref=WANDB.rsplit("/", 1)[-1],
                state="running",
                title=f"W&B run resumed at step {n}",
            )
        out.append(event)
    return out


def enrichment(event: Event, n: int) -> Enriched:
    return Enriched(
        summary=f"{(event.body or event.title or '')[:70]}",
        tag=TAGS[n % len(TAGS)],
        incident=n % 500 == 0,
        newsworthy=event.source != "discord" or n % 3 == 0,
        enriched_by="facts" if event.source == "wandb" else "llm:enrich@1a2b3c",
    )


def point_at(index: int) -> datetime:
    return START + timedelta(seconds=index / (EVENTS_PER_SECOND * POINTS_PER_EVENT))


def make_points(first: int, last: int, rng: random.Random) -> list[MetricPoint]:
    """Points with index first..last-1 (0 is the oldest); one step per point."""
    out = []
    for n in range(first, last):
        step = n + 1
        loss = 1.8 + 8 / (1 + step / 2000) + rng.gauss(0, 0.01)
        out.append(MetricPoint(WANDB, step=step, at=point_at(n), tokens=step * 4e6, loss=loss))
    return out


@dataclass
class Grown:
    events: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


async def record_run(store: Store) -> None:
    await store.runs.upsert(
        RunInfo(
            slug=SLUG,
            name=NAME,
            total_steps=4_000_000,
            target_tokens=1.6e13,
            launched_at=START,
            links={"W&B": "https://wandb.ai/e/p"},
            config={"wandb_runs": [WANDB], "github_repo": "o/r", "watch_channels": [2]},
        )
    )


async def mark_fresh(store: Store, events: int) -> None:
    """The W&B snapshot and source health as a live poller leaves them at `now_for(events)`."""
    now = now_for(events)
    last_step = int(events * POINTS_PER_EVENT)
    await store.snapshots.upsert(
        SLUG, RunSnapshot(WANDB, "r1", "running", START, now, last_step, now)
    )
    for source in ("wandb", "github", "discord"):
        await store.health.record_success(source, SLUG, now)


async def grow(store: Store, have: int, want: int, *, log: bool = True) -> Grown:
    """Add events have..want-1, their enrichment, the metric points and the resolved incidents
    of that span, through the repositories, in time order: each chunk of `CHUNK` events is one
    transaction (the repositories' own transactions join it), as a bulk import would write it.
    Returns the ingest rate of the whole chunk (events, enrichment, points, incidents)."""
    rng = random.Random(have)
    spent = 0.0
    started = time.perf_counter()
    for first in range(have, want, CHUNK):
        last = min(first + CHUNK, want)
        batch = make_events(first, last)
        enriched = [(e, enrichment(e, first + i)) for i, e in enumerate(batch)]
        p_first, p_last = int(first * POINTS_PER_EVENT), int(last * POINTS_PER_EVENT)
        points = make_points(p_first, p_last, rng)
        incidents = [
            incident_at(k) for k in range(first // EVENTS_PER_INCIDENT, last // EVENTS_PER_INCIDENT)
        ]
        t0 = time.perf_counter()
        async with store.transaction():
            await store.events.upsert_many(batch)
            await store.events.set_enrichment_many(enriched)
            await store.metrics.add_points(SLUG, points)
            for incident in incidents:
                await store.incidents.save(incident)
        spent += time.perf_counter() - t0
        if log and (last - have) % 500_000 < CHUNK and last != have:
            rate = (last - have) / (time.perf_counter() - started)
            print(f"  … {last:,} events ({rate:,.0f}/s overall)", flush=True)
    await mark_fresh(store, want)
    return Grown(want - have, spent)


def incident_at(k: int) -> Incident:
    """The k-th resolved incident of the history (one per `EVENTS_PER_INCIDENT` events)."""
    at = event_at(k * EVENTS_PER_INCIDENT)
    incident = Incident(
        SLUG,
        f"stall:{k}",
        "stall" if k % 3 else "crash",
        "Training stalled" if k % 3 else "W&B run crashed",
        "resolved",
        at,
        fired_at=at,
        resolved_at=at + timedelta(minutes=40),
    )
    incident.details.fired = True
    return incident


def db_bytes(path: Path) -> int:
    """The database's size after a checkpoint (main file + what WAL still holds)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        (size,) = conn.execute("PRAGMA page_size").fetchone()
    return int(pages) * int(size)


def where_the_bytes_go(path: Path, events: int, top: int = 10) -> list[tuple[str, float]]:
    """Bytes per event of the largest tables and indexes (SQLite's `dbstat`; [] without it)."""
    try:
        with sqlite3.connect(path) as conn:
            rows = conn.execute(
                "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT ?",
                (top,),
            ).fetchall()
    except sqlite3.OperationalError:
        return []
    return [(str(name), int(size) / events) for name, size in rows]


def counts(path: Path) -> tuple[int, int]:
    if not path.exists():
        return -1, -1
    try:
        with sqlite3.connect(path) as conn:
            (events,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()
            (points,) = conn.execute("SELECT COUNT(*) FROM metric_points").fetchone()
    except sqlite3.Error:
        return -1, -1
    return int(events), int(points)


async def naive_chart_data(store: Store) -> list[MetricPoint]:
    """The chart's data as it was read before buckets: a window function over every point."""
    span = await store.db.fetchone(
        "SELECT MIN(at), MAX(at), COUNT(*) FROM metric_points WHERE run_slug = ?", (SLUG,)
    )
    assert span is not None
    first, last = from_db(span[0]), from_db(span[1])
    assert first is not None and last is not None
    width = max((last - first).total_seconds() / 400, 1.0)
    rows = await store.db.fetchall(
        "SELECT wandb_run, step, at, tokens, loss FROM ("
        " SELECT *, ROW_NUMBER() OVER (PARTITION BY wandb_run,"
        "  CAST((julianday(at) - julianday(?)) * 86400 / ? AS INTEGER) ORDER BY at DESC) AS rn"
        " FROM metric_points WHERE run_slug = ?) WHERE rn = 1 ORDER BY at",
        (span[0], width, SLUG),
    )
    return [MetricsRepo._point(row) for row in rows]
