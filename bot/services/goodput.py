"""The run's goodput, read from the store (`bot.analysis.goodput` computes it): its restarts,
the incidents since launch, and the pace around each restart."""

from __future__ import annotations

from datetime import datetime

from bot.analysis.goodput import WEEK, RunGoodput, moved, run_goodput
from bot.models import RunInfo
from bot.store import Store

#: The most restarts read (the newest); a run has a handful, this only bounds a read.
RESTART_SCAN = 500


async def run_goodput_of(
    store: Store, slug: str, *, launched_at: datetime | None, now: datetime
) -> RunGoodput:
    since = launched_at if launched_at is not None else now - WEEK
    restarts = [
        r
        for r in await store.events.restarts(slug, limit=RESTART_SCAN)
        if (r.resumed_at or r.at) >= since
    ]
    incidents = await store.incidents.find(slug, since=since)
    paces = [(await store.metrics.pace_around(slug, r)).seconds_per_step for r in restarts]
    return run_goodput(restarts, incidents, paces, launched_at=launched_at, now=now)


async def launch_of(store: Store, run: RunInfo) -> datetime | None:
    """The runs file's launch time, else the creation of the chain's first W&B run."""
    if run.launched_at is not None:
        return run.launched_at
    created = [s.created_at for s in await store.snapshots.chain(run.slug) if s.created_at]
    return min(created) if created else None


async def goodput_moved(store: Store, run: RunInfo, start: datetime, now: datetime) -> str | None:
    """The digest's sentence on how goodput since launch moved over [start, now] (None: by
    less than 0.1 point, or the launch is not known)."""
    launched = await launch_of(store, run)
    if launched is None or launched >= start:
        return None
    before = await run_goodput_of(store, run.slug, launched_at=launched, now=start)
    after = await run_goodput_of(store, run.slug, launched_at=launched, now=now)
    return moved(before.since_launch, after.since_launch)
