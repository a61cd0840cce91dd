"""The queries a command or an idle poll cycle runs must not grow with the history: every
statement they issue is captured and `EXPLAIN QUERY PLAN`ned, and a full scan of `events` or
`metric_points` fails the test. Tables stay tiny; the plan is what is checked, not the time."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import aiosqlite
import pytest

from bot.enrich.rules import Enrichment
from bot.hooks.ingest import ingest_github
from bot.incidents.detectors import DETECTORS, Detection, DetectorSpec, RunData
from bot.incidents.engine import IncidentEngine
from bot.incidents.service import incident_stats
from bot.models import Event, Incident, MetricPoint, RunInfo
from bot.posts.incidents import IncidentPosts
from bot.process.pipeline import Gather, enrich_step, rules_enrichment, run_cycle
from bot.services.narrative import status_with_narrative
from bot.services.status import chart_series
from bot.services.timeline import build_timeline
from bot.store import Store
from bot.store.events import RETRY_LABEL

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)
FULL_SCAN = re.compile(r"\bSCAN (events|metric_points|metric_minutes)\b")


class StillDown:
    """An LLM enricher whose model is still unreachable: the rules stand in again."""

    name = "llm"
    retry_label = RETRY_LABEL

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        return {e.id: (rules_enrichment(e), RETRY_LABEL) for e in events if e.id is not None}


async def seed(store: Store) -> None:
    config = {"wandb_runs": ["e/p/r1"], "watch_channels": [1], "github_repo": "o/r"}
    await store.runs.upsert(RunInfo(slug="hero", name="Hero", total_steps=10_000, config=config))
    await store.runs.upsert(RunInfo(slug="side", name="Side", total_steps=10_000))
    start = NOW - timedelta(days=4)
    await store.metrics.add_points(
        "hero",
        [
            MetricPoint("e/p/r1", step=i * 10, at=start + timedelta(minutes=10 * i), loss=3.0)
            for i in range(500)
        ],
    )
    messages = [
        Event(
            run_slug="hero",
            source="discord",
            external_id=f"msg:{i}",
            kind="message",
            at=NOW - timedelta(minutes=10 - i),
            author="ada",
            thread="channel:1",
            body=f"message {i}",
        )
        for i in range(3)
    ]
    comment = Event(
        run_slug="hero",
        source="github",
        external_id="c:1",
        kind="comment",
        at=NOW - timedelta(hours=1),
        body="loss spiked",
    )
    result = await store.events.upsert_many([*messages, comment])
    stored = await store.events.get(result.inserted[-1])
    assert stored is not None
    await store.events.set_enrichment(
        stored,
        summary="loss spiked",
        tag="incident",
        incident=True,
        severity=None,
        newsworthy=True,
        enriched_by=RETRY_LABEL,
    )
    incident = Incident(
        run_slug="hero",
        fingerprint="stall",
        kind="stall",
        title="Training stalled",
        status="resolved",
        started_at=NOW - timedelta(hours=3),
        resolved_at=NOW - timedelta(hours=2),
    )
    await store.incidents.save(incident)
    assert incident.id is not None
    await store.incidents.link_event(incident.id, stored.id or 0)


async def plans(conn: aiosqlite.Connection, statements: list[str]) -> dict[str, str]:
    out = {}
    for sql in statements:
        head = sql.lstrip().split(None, 1)[0].upper()
        if head not in ("SELECT", "WITH", "UPDATE", "DELETE", "INSERT"):
            continue
        async with conn.execute(f"EXPLAIN QUERY PLAN {sql}") as cursor:
            rows = await cursor.fetchall()
        out[sql] = "\n".join(str(row[3]) for row in rows)
    return out


async def test_command_and_idle_cycle_queries_never_scan_the_history(store: Store) -> None:
    await seed(store)
    statements: list[str] = []
    conn = store.db.conn
    await conn.set_trace_callback(statements.append)

    # What /status, /timeline and the chart read per request.
    await status_with_narrative(store, "hero", NOW)
    await store.metrics.version("hero")
    series = await chart_series(store, "hero")
    await incident_stats(store, "hero")
    await build_timeline(store, "hero", NOW, days=7)
    # What a poll cycle reads when nothing is new: pending enrichment (with the Discord bursts'
    # conversation lookup), the LLM fallback retry, and detection.
    await run_cycle(store, [], NOW, enricher=StillDown(), detector=IncidentEngine(IncidentPosts()))
    await run_cycle(store, [], NOW, enricher=StillDown(), detector=IncidentEngine(IncidentPosts()))
    # ... and the running bot's enrichment loop, which gathers events into batches.
    await enrich_step(store, NOW, enricher=StillDown(), gather=Gather())
    # ... and the hooks loop's round with nothing pushed (and a silence naming an alert).
    await ingest_github(store, [], NOW)
    await store.incidents.alerts_open()
    await store.events.alert_names("hero")
    await conn.set_trace_callback(None)

    assert len(series.points) <= 500  # downsampled, from the buckets
    found = await plans(conn, statements)
    issued = " ".join(found)
    for needle in ("metric_spans", "metric_buckets", "incident_versions", "enriched_hash IS NULL"):
        assert needle in issued, f"expected a query on {needle}"
    assert "events_llm_retry" in "\n".join(found.values())
    assert "events_thread" in "\n".join(found.values())
    # the channel's current conversation and those new messages may touch: conversations only
    conversation_plans = [
        p
        for sql, p in found.items()
        if "kind = 'conversation'" in sql and "events_pending" not in sql  # pending: its own index
    ]
    assert conversation_plans and all("events_conversations" in p for p in conversation_plans)
    # the chart's restarts: every stored W&B restart, a range of the index of W&B events
    restarts = [sql for sql in found if "kind = 'restart'" in sql]
    # (a seek on the kind, not a walk back through every W&B state change)
    # (the projected end's pace reads the last week's: the same seek, narrowed by time)
    assert restarts and all(
        "USING INDEX events_wandb (run_slug=? AND kind=?" in found[sql] for sql in restarts
    ), [found[sql] for sql in restarts]
    for sql, plan in found.items():
        if "enriched_hash IS NULL" in sql and sql.lstrip().upper().startswith("SELECT"):
            # the pending set, never the run's history of one source or kind
            assert "USING INDEX events_pending" in plan, f"{sql}\n  {plan}"
    # the engine's firing and lately resolved alerts, and the alert names a silence may use
    alerts = [sql for sql in found if "source = 'alertmanager'" in sql and "state" in sql]
    assert len(alerts) >= 2 and all("events_alerts" in found[sql] for sql in alerts), alerts
    scans = {sql: plan for sql, plan in found.items() if FULL_SCAN.search(plan)}
    assert not scans, "\n\n".join(f"{sql}\n  {plan}" for sql, plan in scans.items())


async def test_the_guard_catches_a_full_scan(store: Store) -> None:
    """The check above can fail: the queries it replaced scan the history."""
    await seed(store)
    old = [
        "SELECT * FROM events WHERE (enriched_hash IS NULL OR enriched_hash != content_hash) "
        "ORDER BY at LIMIT 200",
    ]
    found = await plans(store.db.conn, old)
    assert FULL_SCAN.search(found[old[0]])


async def test_the_events_a_detector_declares_are_read_through_an_index(store: Store) -> None:
    """A detector's `reads` (`DetectorSpec.reads`): each (source, kind) is one query per run and
    cycle, a range of an index bounded by the window (the run's time index; W&B's own partial
    index for W&B kinds), never the history; a detector sees exactly what it declared."""
    await seed(store)
    seen: list[RunData] = []

    def judge(data: RunData) -> Detection:
        seen.append(data)
        return Detection()

    spec = DetectorSpec(
        "reads-probe", judge, "monitor", reads=(("discord", "message"), ("wandb", "state"))
    )
    DETECTORS.register(spec)
    statements: list[str] = []
    try:
        await store.db.conn.set_trace_callback(statements.append)
        await IncidentEngine(IncidentPosts(), runs=["hero"]).detect(store, NOW)
        await store.db.conn.set_trace_callback(None)
    finally:
        DETECTORS.unregister(spec.fingerprint)
    [data] = seen
    assert set(data.events) == {("discord", "message"), ("wandb", "state")}
    assert [e.external_id for e in data.events_of("discord", "message")] == [
        "msg:0",
        "msg:1",
        "msg:2",
    ]
    with pytest.raises(KeyError, match=r"DetectorSpec\.reads"):
        data.events_of("github", "comment")  # not declared: not read
    found = await plans(store.db.conn, statements)
    reads = {sql: plan for sql, plan in found.items() if "ORDER BY at DESC, id DESC" in sql}
    assert len(reads) == 2, list(reads)
    [discord] = [plan for sql, plan in reads.items() if "kind = 'message'" in sql]
    [wandb] = [plan for sql, plan in reads.items() if "kind = 'state'" in sql]
    assert "USING INDEX events_run_at (run_slug=? AND at>? AND at<?)" in discord, discord
    assert "USING INDEX events_wandb (run_slug=? AND kind=? AND at>? AND at<?)" in wandb, wandb
    assert not [plan for plan in found.values() if FULL_SCAN.search(plan)]
