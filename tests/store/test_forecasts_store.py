"""The metric series and forecast state repositories on a real SQLite file: duplicates ignored,
reads after a cursor in arrival order, the catch-up jump, and query plans that stay on the index
(a poll's forecast work must not grow with the history)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.analysis.forecast import SeriesPoint
from bot.models import RunInfo
from bot.store import Store

T0 = datetime(2026, 9, 1, tzinfo=UTC)
RUN = "ent/proj/hero-1"


def pts(metric_offset: float, start: int, count: int) -> list[SeriesPoint]:
    return [
        SeriesPoint(RUN, s, T0 + timedelta(minutes=s), metric_offset + s)
        for s in range(start, start + count)
    ]


async def test_series_round_trip_and_cursor_reads(store: Store) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    assert await store.series.add("hero", "a", pts(0, 0, 10)) == 10
    assert await store.series.add("hero", "b", pts(1000, 0, 10)) == 10
    assert await store.series.add("hero", "a", pts(0, 5, 10)) == 5  # 5 were stored already
    rows = await store.series.after("hero", "a", 0, 100)
    assert [p.step for _, p in rows] == list(range(15))
    assert rows[0][1] == SeriesPoint(RUN, 0, T0, 0.0)
    cursor = rows[9][0]
    assert [p.step for _, p in await store.series.after("hero", "a", cursor, 100)] == [
        10, 11, 12, 13, 14,
    ]  # fmt: skip
    assert [p.value for _, p in await store.series.after("hero", "b", 0, 3)] == [1000, 1001, 1002]
    jump = await store.series.tail_cursor("hero", "a", 4)
    assert jump is not None
    assert [p.step for _, p in await store.series.after("hero", "a", jump, 100)] == [
        11, 12, 13, 14,
    ]  # fmt: skip
    assert await store.series.tail_cursor("hero", "a", 100) is None
    assert [p.step for p in await store.series.latest("hero", "b", 3)] == [7, 8, 9]


async def test_forecast_state_upserts(store: Store) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    assert await store.forecasts.get("hero", "a") == (0, None)
    await store.forecasts.put("hero", "a", 7, {"v": 1, "seen": 3}, T0)
    await store.forecasts.put("hero", "a", 9, {"v": 1, "seen": 5}, T0)
    assert await store.forecasts.get("hero", "a") == (9, {"v": 1, "seen": 5})


async def test_cursor_reads_seek_the_metric_index(store: Store) -> None:
    """The statements the repository really runs (captured with their parameters), explained."""
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    await store.series.add("hero", "a", pts(0, 0, 3000))  # one metric: a rowid range tempts
    await store.db.conn.execute("ANALYZE")
    statements: list[str] = []
    await store.db.conn.set_trace_callback(statements.append)
    await store.series.after("hero", "a", 10, 100)
    await store.series.tail_cursor("hero", "a", 50)
    await store.db.conn.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(reads) == 2
    for sql in reads:
        rows = await store.db.fetchall("EXPLAIN QUERY PLAN " + sql)
        detail = " ".join(str(row[3]) for row in rows)
        assert "metric_series_order (run_slug=? AND metric=?" in detail, (sql, detail)
        assert "TEMP B-TREE" not in detail, (sql, detail)
