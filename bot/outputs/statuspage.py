"""The status page's data, its health report and the files `runscribe page` writes.

`gather_run_page` is the one place that reads the store for the page: it asks the same services
`/status` and `/timeline` use and hands what they computed (the typed `StatusReport`, of which
`status --json` is a serialisation, its narrative and the timeline entries) to the pure renderer
in `bot.render.page`, plus the chart series and the poll loop's heartbeat.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bot.analysis.progress import effective_series
from bot.models import DETECTION, SOURCE_SPECS, SourceHealth
from bot.narrative.format import fmt_projected
from bot.render.json import iso
from bot.render.page import (
    ChartData,
    IndexEntry,
    RunPage,
    render_index,
    render_run_page,
)
from bot.services.delivery import delivery_report
from bot.services.narrative import status_with_narrative
from bot.services.status import StatusReport, build_status
from bot.services.timeline import build_timeline, validate_filters
from bot.store import Store

DEFAULT_DAYS = 30
# More than fit in the page's byte budget even at the shortest entries; the budget decides.
TIMELINE_LIMIT = 2000
RESTART_SCAN = 1000
STUCK_AFTER_CYCLES = 3


def validate_days(days: int) -> None:
    validate_filters(days, None, None)


async def chart_data(store: Store, slug: str) -> ChartData:
    run = await store.runs.get(slug)
    chain = run.wandb_chain(await store.snapshots.chain(slug)) if run else []
    series = [
        p
        for p in effective_series(await store.metrics.downsampled(slug), chain)
        if p.loss is not None and math.isfinite(p.loss)
    ]
    points = [(p.step, float(p.loss)) for p in series if p.loss is not None]
    segments = [
        i
        for i in range(1, len(series))
        if series[i].wandb_run != series[i - 1].wandb_run or series[i].step <= series[i - 1].step
    ]
    restarts = [
        (r.to_step, r.at)
        for r in await store.events.restarts(slug, limit=RESTART_SCAN)
        if r.to_step is not None
    ]
    forecast: list[tuple[float, float]] = []
    # `loss_forecast` ([[step, loss], …] in the runs file) is drawn whenever a run has one.
    knots = getattr(run.config, "loss_forecast", None) if run else None
    for knot in knots or []:
        try:
            if isinstance(knot, list | tuple):
                step, loss = float(knot[0]), float(knot[1])
            else:
                step, loss = float(knot.step), float(knot.loss)
        except (TypeError, ValueError, IndexError, AttributeError):
            continue
        if step > 0 and loss > 0 and math.isfinite(step) and math.isfinite(loss):
            forecast.append((step, loss))
    return ChartData(points=points, segments=segments, restarts=restarts, forecast=forecast)


async def gather_run_page(
    store: Store,
    slug: str,
    now: datetime,
    *,
    days: int = DEFAULT_DAYS,
    index_href: str = "index.html",
    poll_interval: float | None = None,
) -> RunPage:
    """Everything one run's page shows. (Re-point here when the services move.)"""
    report, narrative = await status_with_narrative(store, slug, now)
    entries = await build_timeline(store, slug, now, days=days, limit=TIMELINE_LIMIT)
    cycle = await store.cycles.last()
    return RunPage(
        report=report,
        narrative=narrative,
        timeline=entries,
        now=now,
        days=days,
        chart=await chart_data(store, slug),
        last_cycle_at=cycle.finished_at if cycle else None,
        poll_interval=cycle.interval_seconds if cycle else poll_interval,
        index_href=index_href,
        projected_end=projected_words(report),
    )


def projected_words(report: StatusReport) -> str | None:
    p = report.progress
    if p.finished or p.projected_end is None:
        return None
    return fmt_projected(p.projected_end, report.projected_margin, report.run.timezone, report.now)


async def gather_index(store: Store, now: datetime, href: Callable[[str], str]) -> list[IndexEntry]:
    entries = []
    for run in await store.runs.all():
        report = await build_status(store, run.slug, now)
        entries.append(IndexEntry(report=report, href=href(run.slug)))
    return entries


async def render_pages(
    store: Store, now: datetime, *, days: int = DEFAULT_DAYS, only: str | None = None
) -> dict[str, str]:
    """`runscribe page`: file name → HTML for index.html (every run) and <slug>.html (each run,
    or only `only`)."""
    validate_days(days)
    index = await gather_index(store, now, lambda slug: f"{slug}.html")
    pages = {"index.html": render_index(index, now)}
    for entry in index:
        slug = entry.report.slug
        if only is None or slug == only:
            page = await gather_run_page(store, slug, now, days=days)
            pages[f"{slug}.html"] = render_run_page(page)
    return pages


def write_pages(out: Path, pages: dict[str, str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in pages.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# --- /healthz --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Health:
    ok: bool
    body: dict[str, Any]


def _detection_health(row: SourceHealth | None) -> dict[str, Any]:
    """Whether the run's last incident-detection round went through (`bot.incidents.engine`
    records each failing one and the first clean one after)."""
    failing = row is not None and row.consecutive_failures > 0
    return {
        "ok": not failing,
        "error": (row.last_error or "")[:300] if failing and row else None,
        "failing_since": iso(row.failing_since) if failing and row else None,
        "failed_rounds": row.consecutive_failures if row else 0,
    }


async def health_report(
    store: Store, now: datetime, *, poll_interval: float, watching_since: datetime
) -> Health:
    """Per-source health of every run, the last cycle's time and whether posts get through
    (`bot.services.delivery`). Not ok when a configured source is failing, no cycle has finished for
    more than three poll intervals (counted from `watching_since`, the server's start, while no
    cycle was ever recorded), or posts cannot be delivered; `problems` says which."""
    cycle = await store.cycles.last()
    interval = cycle.interval_seconds if cycle else poll_interval
    reference = cycle.finished_at if cycle else watching_since
    stuck = now - reference > timedelta(seconds=STUCK_AFTER_CYCLES * interval)
    problems = []
    if stuck:
        problems.append(
            f"no poll cycle since {iso(reference)}" if cycle else "no poll cycle recorded yet"
        )
    runs: dict[str, dict[str, Any]] = {}
    detection: dict[str, dict[str, Any]] = {}
    for run in await store.runs.all():
        rows = await store.health.for_run(run.slug)
        sources: dict[str, Any] = {}
        for spec in SOURCE_SPECS.polled():
            source = spec.name
            if not spec.configured(run.config):
                sources[source] = None
                continue
            row = rows.get(source)
            failing = row is not None and row.consecutive_failures > 0
            sources[source] = {
                "ok": not failing,
                "error": (row.last_error or "")[:200] if failing and row else None,
                "consecutive_failures": row.consecutive_failures if row else 0,
                "last_success_at": iso(row.last_success_at) if row else None,
                "last_attempt_at": iso(row.last_attempt_at) if row else None,
            }
            if failing:
                problems.append(f"{run.slug}: {source} failing")
        runs[run.slug] = sources
        detection[run.slug] = _detection_health(rows.get(DETECTION))
        if not detection[run.slug]["ok"]:
            problems.append(f"{run.slug}: detection failing")
    delivery, undelivered = await delivery_report(store, now)
    problems += undelivered
    ok = not problems
    return Health(
        ok=ok,
        body={
            "status": "ok" if ok else "failing",
            "last_cycle_at": iso(cycle.finished_at) if cycle else None,
            "poll_interval": interval,
            "stuck": stuck,
            "problems": problems,
            "runs": runs,
            "detection": detection,
            "delivery": delivery,
            "checked_at": iso(now),
        },
    )
