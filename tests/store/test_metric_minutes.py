"""The per-minute rollup behind `MetricsRepo.window` (migration 0016): a day read at a bounded
resolution whatever the logging rate, the raw points themselves when a run logs at most twice a
minute, and the same progress, rate, restart and downtime as the raw points give."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.analysis.progress import compute_progress
from bot.core.timeutil import to_db
from bot.models import MetricPoint, RunInfo
from bot.store import Database, Store
from bot.store.db import load_migrations

NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
MINUTES = next(m.version for m in load_migrations() if m.name.endswith("_metric_minutes.sql"))


async def _run(store: Store) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero", total_steps=10**9, config={}))


def _every(seconds: float, start: datetime, until: datetime, run: str, step0: int) -> list:
    points, at, step = [], start, step0
    while at < until:
        points.append(MetricPoint(run, step, at, tokens=step * 4e6, loss=3.0 - step / 1e7))
        at += timedelta(seconds=seconds)
        step += 1
    return points


async def _raw_window(store: Store, since: datetime) -> list[MetricPoint]:
    """What `window` returned before the rollup: every raw point, plus each run's last before."""
    before = []
    for run in await store.metrics.wandb_runs("hero"):
        older = [p for p in await store.metrics.points("hero", until=since) if p.wandb_run == run]
        if older:
            before.append(older[-1])
    return before + await store.metrics.points("hero", since=since)


async def test_a_run_logging_twice_a_minute_reads_exactly_its_raw_points(store: Store) -> None:
    await _run(store)
    start = NOW - timedelta(hours=30)
    await store.metrics.add_points("hero", _every(30, start, NOW, "e/p/a", 1))
    since = NOW - timedelta(hours=24, seconds=13)  # not on a minute
    assert await store.metrics.window("hero", since) == await _raw_window(store, since)


async def test_a_run_logging_every_second_reads_at_most_two_points_a_minute(
    store: Store,
) -> None:
    await _run(store)
    # a step a second for 3 h in run a, a 17 min outage, then run b resumes 300 steps back
    crash = NOW - timedelta(hours=1)
    a = _every(1, NOW - timedelta(hours=4), crash, "e/p/a", 1)
    resumed_at = crash + timedelta(minutes=17, seconds=21)
    b = _every(1, resumed_at, NOW, "e/p/b", a[-1].step - 300)
    await store.metrics.add_points("hero", a[:5000])
    await store.metrics.add_points("hero", a[5000:] + b)  # in two rounds, as the source adds

    since = NOW - timedelta(hours=24)
    thin = await store.metrics.window("hero", since)
    raw = await _raw_window(store, since)
    assert len(raw) > 13_000
    assert len(thin) <= 2 * (4 * 60) + 2  # two points per minute at most
    # what readers measure is kept exactly: the newest point, the last before the outage and
    # the first after it
    assert thin[-1] == raw[-1]
    assert a[-1] in thin and b[0] in thin

    chain = ["e/p/a", "e/p/b"]
    args = {"total_steps": 10**9, "target_tokens": None, "now": NOW, "chain": chain}
    exact, approx = compute_progress(raw, **args), compute_progress(thin, **args)
    assert approx.step == exact.step and approx.tokens == exact.tokens
    assert approx.loss == exact.loss and approx.last_point_at == exact.last_point_at
    # the outage's edges, which a restart's downtime and recomputed steps are measured between
    before, after = thin[thin.index(a[-1])], thin[thin.index(a[-1]) + 1]
    assert after == b[0] and after.at - before.at == resumed_at - a[-1].at
    assert before.step - after.step == 300
    assert exact.steps_per_hour is not None and approx.steps_per_hour is not None
    assert abs(approx.steps_per_hour / exact.steps_per_hour - 1) < 1e-3


async def test_points_arriving_out_of_order_keep_each_minutes_first_and_last(
    store: Store,
) -> None:
    await _run(store)
    minute = NOW.replace(second=0)
    points = [MetricPoint("e/p/a", s, minute + timedelta(seconds=s), 1.0, 2.0) for s in range(60)]
    await store.metrics.add_points("hero", points[20:40])
    await store.metrics.add_points("hero", points[40:] + points[:20][::-1])
    thin = await store.metrics.window("hero", minute - timedelta(minutes=1))
    assert thin == [points[0], points[-1]]


async def test_the_migration_rolls_up_the_points_already_stored(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    for migration in load_migrations():
        if migration.version < MINUTES:
            conn.executescript(migration.sql)
    conn.execute(f"PRAGMA user_version = {MINUTES - 1}")
    conn.execute("INSERT INTO runs VALUES ('hero', 'Hero', '{}', '2026-09-01T00:00:00Z')")
    stored = _every(7, NOW - timedelta(hours=2), NOW, "e/p/a", 1)
    conn.executemany(
        "INSERT INTO metric_points VALUES ('hero', ?, ?, ?, ?, ?)",
        [(p.wandb_run, p.step, to_db(p.at), p.tokens, p.loss) for p in stored],
    )
    conn.commit()
    conn.close()
    async with Database.open(db_path) as db:
        store = Store(db)
        thin = await store.metrics.window("hero", NOW - timedelta(hours=3))
        # every 7 s: 8 or 9 points a minute, of which the first and the last are kept
        assert 2 * 119 <= len(thin) <= 2 * 121
        assert thin[0] == stored[0] and thin[-1] == stored[-1]
        # and the trigger goes on from there
        newer = MetricPoint("e/p/a", stored[-1].step + 1, NOW + timedelta(seconds=1), 1.0, 1.0)
        await store.metrics.add_points("hero", [newer])
        assert (await store.metrics.window("hero", NOW - timedelta(hours=3)))[-1] == newer


async def test_raw_since_reads_every_point_of_the_tail_in_order(store: Store) -> None:
    await _run(store)
    await store.metrics.add_points("hero", _every(1, NOW - timedelta(hours=2), NOW, "e/p/a", 1))
    await store.metrics.add_points(
        "hero", _every(7, NOW - timedelta(minutes=30), NOW, "e/p/b", 9_000)
    )
    since = NOW - timedelta(minutes=10, seconds=20)
    until = NOW - timedelta(minutes=1, seconds=3)
    tail = await store.metrics.raw_since("hero", since, until)
    expected = [p for p in await store.metrics.points("hero", since=since) if p.at <= until]
    assert tail == sorted(expected, key=lambda p: (p.at, p.wandb_run, p.step))
    assert len(tail) > 2 * 11 * 2  # not thinned: far more than two points a minute per run
