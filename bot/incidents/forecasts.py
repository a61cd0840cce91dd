"""Advancing the forecast of each watched metric (`[[runs.forecasts]]`) from the store: the
points stored since the tracker's cursor go through `bot.analysis.forecast.Tracker` (O(new points)
per poll), and the tracker is saved back. The incident engine calls it once per cycle inside its
transaction; readers (`bot.services.forecasts`) call it with `save=False`, so a status read
between polls is current without writing. A tracker further behind than `CATCHUP` points (the
first poll of a long run, a metric added to the runs file late) starts from the newest `CATCHUP`
points instead of replaying the whole history: old drifts are history, not alerts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime

from bot.analysis.forecast import Tracker
from bot.config.runsfile import ForecastConfig
from bot.models import RunInfo
from bot.store import Store

log = logging.getLogger(__name__)

CATCHUP = 2000  # a tracker further behind than this starts from the newest points
BATCH = 5000  # points read per query while catching up


def forecast_configs(run: RunInfo) -> list[ForecastConfig]:
    """The run's `[[runs.forecasts]]` as recorded in the store."""
    return list(run.config.forecasts)


async def advance_forecasts(
    store: Store, run: RunInfo, chain: Sequence[str], now: datetime, *, save: bool = True
) -> list[Tracker]:
    """Every watched metric's tracker, brought up to date with the stored points."""
    trackers = []
    for config in forecast_configs(run):
        cursor, data = await store.forecasts.get(run.slug, config.metric)
        settings = config.model_dump()
        if data is not None and data.get("config") != settings:
            cursor, data = 0, None  # thresholds changed: learn again under the new ones
        tracker = Tracker.from_json(config, data)
        rows = await store.series.after(run.slug, config.metric, cursor, CATCHUP + 1)
        if len(rows) > CATCHUP:
            jump = await store.series.tail_cursor(run.slug, config.metric, CATCHUP)
            if jump is not None and jump > cursor:
                if tracker.seen:
                    log.info(
                        "run %s: forecast of %s is far behind; starting from the newest %d points",
                        run.slug,
                        config.metric,
                        CATCHUP,
                    )
                tracker = Tracker(config)
                cursor = jump
                rows = await store.series.after(run.slug, config.metric, cursor, BATCH)
        while rows:
            # CPU work (a refit every few points: a catch-up of 2,000 points is ~100 ms), so it
            # runs in a worker thread, never on the event loop; the tracker is this call's own.
            await asyncio.to_thread(tracker.update, [point for _, point in rows], chain)
            cursor = rows[-1][0]
            if len(rows) < BATCH:
                break
            rows = await store.series.after(run.slug, config.metric, cursor, BATCH)
        if save:
            state = tracker.as_json()
            state["config"] = settings
            await store.forecasts.put(run.slug, config.metric, cursor, state, now)
        trackers.append(tracker)
    return trackers
