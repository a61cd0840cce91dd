"""`runscribe demo`: the bundled sample run replayed through the real pipeline (store,
enrichment, analysis, incident detection, rendering), offline and without keys.

The sample is replayed day by day, so the store sees history arrive the way a live poller would
deliver it, and incident detection runs after each day just as it does on every poll cycle."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.analysis.progress import Restart, detect_restarts
from bot.models import POLLED_SOURCES, Event, MetricPoint, RunSnapshot
from bot.pipeline import Detector, Enricher, enrich_pending
from bot.runtime import record_runs
from bot.settings import RunsFile, parse_runs
from bot.sources.replay import SampleRun, WandbRunState, load_sample
from bot.store import Store

log = logging.getLogger(__name__)


def wandb_run_id(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def state_event(slug: str, change: WandbRunState, previous: str | None) -> Event:
    run_id = wandb_run_id(change.wandb_run)
    if previous is None:
        title = f"W&B run {run_id} appeared, state {change.state}"
    else:
        title = f"W&B run {run_id} went from {previous} to {change.state}"
    if change.last_step is not None:
        title += f" at step {change.last_step:,}"
    return Event(
        run_slug=slug,
        source="wandb",
        external_id=f"state:{change.wandb_run}:{change.state}:{change.at.isoformat()}",
        kind="state",
        at=change.at,
        ref=run_id,
        state=change.state,
        title=title,
        body=title + ".",
        thread=f"wandb:{change.wandb_run}",
        extra={"wandb_run": change.wandb_run, "previous": previous, "step": change.last_step},
    )


def restart_event(slug: str, restart: Restart) -> Event:
    run_id = wandb_run_id(restart.wandb_run)
    if restart.kind == "new-run":
        title = f"Training continued in W&B run {run_id} from step {restart.to_step:,}"
    else:
        title = f"W&B run {run_id} restored from a checkpoint at step {restart.to_step:,}"
    if restart.from_step is not None:
        title += f" (last step before: {restart.from_step:,})"
    return Event(
        run_slug=slug,
        source="wandb",
        external_id=f"restart:{restart.kind}:{restart.wandb_run}:{restart.to_step}:"
        f"{restart.at.isoformat()}",
        kind="restart",
        at=restart.at,
        ref=run_id,
        state="running",
        title=title,
        body=title + ".",
        thread=f"wandb:{restart.wandb_run}",
        extra={
            "wandb_run": restart.wandb_run,
            "from_step": restart.from_step,
            "to_step": restart.to_step,
            "recomputed_steps": restart.recomputed_steps,
            "down_seconds": restart.down_for.total_seconds() if restart.down_for else None,
        },
    )


@dataclass(slots=True)
class ReplayStats:
    events: int = 0
    points: int = 0
    enriched: int = 0
    alerts: int = 0


async def replay_into(
    store: Store,
    sample: SampleRun,
    *,
    enricher: Enricher | None = None,
    detector: Detector | None = None,
    step: timedelta = timedelta(days=1),
) -> ReplayStats:
    """Feed the sample into the store in time slices, as a poller would, running enrichment and
    detection after each slice. Idempotent: replaying twice leaves the same rows."""
    runs = sample_runs_file(sample)
    await record_runs(store, runs)
    slug = runs.runs[0].slug
    chain = [str(p) for p in runs.runs[0].wandb_runs]
    stats = ReplayStats()
    restarts = detect_restarts(sample.points, chain)
    last_state: dict[str, str] = {}
    wandb_events: list[Event] = []
    for change in sample.state_history:
        previous = last_state.get(change.wandb_run)
        if previous != change.state:
            wandb_events.append(state_event(slug, change, previous))
            last_state[change.wandb_run] = change.state
    wandb_events += [restart_event(slug, r) for r in restarts]
    events: Sequence[Event] = sorted(
        [*sample.superseded, *sample.events, *wandb_events],
        key=lambda e: e.updated_at or e.at,
    )
    cursor = sample.start
    while cursor < sample.end:
        upto = min(cursor + step, sample.end)
        points: list[MetricPoint] = [p for p in sample.points if cursor <= p.at < upto]
        if upto == sample.end:
            points += [p for p in sample.points if p.at == sample.end]
        stats.points += await store.metrics.add_points(slug, points)
        batch = [
            e
            for e in events
            if cursor <= (e.updated_at or e.at) < upto
            or (upto == sample.end and (e.updated_at or e.at) >= upto)
        ]
        result = await store.events.upsert_many(batch)
        stats.events += len(result.changed)
        for snapshot in sample.snapshots:
            if snapshot.created_at is None or snapshot.created_at < upto:
                await store.snapshots.upsert(slug, _snapshot_at(sample, snapshot.wandb_run, upto))
        for source in POLLED_SOURCES:
            await store.health.record_success(source, slug, upto)
        stats.enriched += await enrich_pending(store, enricher, run_slug=slug)
        if detector is not None:
            stats.alerts += await detector.detect(store, upto)
        cursor = upto
    return stats


def _snapshot_at(sample: SampleRun, wandb_run: str, at: datetime) -> RunSnapshot:
    """The W&B run's state as it was at `at` (the last state change before it)."""
    final = next(s for s in sample.snapshots if s.wandb_run == wandb_run)
    changes = [c for c in sample.state_history if c.wandb_run == wandb_run and c.at <= at]
    if not changes or at >= sample.end:
        return final
    last = changes[-1]
    heartbeat = last.heartbeat_at
    if last.state == "running":
        heartbeat = at  # a running process keeps beating
    from dataclasses import replace

    return replace(
        final,
        state=last.state,
        heartbeat_at=heartbeat,
        last_step=last.last_step,
        observed_at=at,
    )


def sample_runs_file(sample: SampleRun) -> RunsFile:
    return parse_runs({"runs": [sample.run_config]})


def load(now: datetime) -> SampleRun:
    return load_sample(now)
