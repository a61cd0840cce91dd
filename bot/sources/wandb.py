"""The W&B source: one tracked run, i.e. a *chain* of W&B runs (resumes, forks), polled cheaply.

Per poll, on the W&B worker thread (see `bot.sources.wandb_client`):

1. Each chain member is loaded with one `Run` query (state, heartbeat, creation time, summary and
   `historyKeys.lastStep`). `Api.run()` caches runs, so later polls call `run.load(force=True)`.
2. With `wandb_run_pattern`, one `Runs` query (lightweight fragment) lists the project's runs
   created at or after the newest one already examined (`createdAt $gte`); names and display
   names are matched against the pattern here, in Python (W&B's server-side `$regex` is RE2 and
   would not see both names). New matches join the chain.
3. History is read incrementally. Nothing is scanned when `lastStep` has not moved. Otherwise one
   keyed scan per configured metric (`metrics.loss`, `metrics.tokens`, each with the step key and
   `_timestamp`), joined on `_step`. Why not one scan with every key: W&B only returns rows holding
   *all* requested keys, so a loss and a token count logged by separate `wandb.log` calls would
   never appear. Why not a key-less scan: that transfers every logged key and, once W&B has
   exported the history to parquet, downloads whole files. Scans start after the last `_step`
   read, except the first (loss) scan, which re-reads its last row once to prove the history was
   not rewritten (a rewind, `resume_from=...?_step=N`); the bench shows this costs one row.
   Each `[[runs.forecasts]]` key gets its own keyed scan over the same range; its values go to
   the `metric_series` table (`store.series`), not into the points.
4. A rewind (the history shrank, or the last row read changed) is located by galloping back from
   the old position until rows older than the last one read appear, then only the rows logged
   after it are taken.
5. A job restarted under the same run id (`resume="allow"`) logs on at the next step: W&B drops
   rows logged again below a run's `_step`. Where `RESUME_GAP` or more passed between two rows,
   `_runtime` is read for those two rows only (one small scan): a resumed run's runtime does not
   count the time it was down. A restart in place is such a silence after W&B saw the run
   stopped, or with `RUNTIME_LOST` missing from its runtime, or, without a runtime, one of
   `LONG_SILENCE` or more. Which checkpoint it resumed from is not in W&B (`Restart.went_on`).

Then, on the event loop, one `store.transaction()` commits the points, snapshots, events and the
cursors together, so a crash between fetching and committing re-reads the same rows next time
and nothing is lost or stored twice (points are also keyed on (run, step, time)).

The jobs live in their own modules: chain discovery (steps 1, 2) in `wandb_chain`, history
reading (3, 4) in `wandb_history` with its cursors in `wandb_cursors`, restart detection (5)
and the points in `wandb_restarts`, heartbeat and state snapshots in `wandb_state`; this module
polls and commits.

Facts recorded as events (source "wandb"): every chain member after the first (`restart`,
`restart:new-run:<path>`), a step going back inside one run, or going on after the run stopped
(`restart`, `restart:restore:<path>:<to_step>:<at>`), and state changes (`state`,
`state:<path>:<state>:<when>`; the first observation of a run records its state once). Every
event is dated by the run's own data (a history row's `_timestamp`, the heartbeat, the run's
creation), never by when it was observed (`state_changed_at`): a crash W&B recorded three days
before Runscribe first looked is dated three days ago.
A W&B failure raises before anything is written: an unreachable W&B is never mistaken for a
crashed run.

Cursors (table `source_cursors`, source "wandb"): `<path>:history` holds the history position as
JSON (`step`: last `_step` covered, `check_step`/`check_ts`: the last loss row read, `value`/
`value_ts`: the last training step stored, `first`: the run's first training step);
`<slug>:chain` holds the chain (`members` in order, `discovered` with creation times, `since`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bot.analysis.forecast import SeriesPoint
from bot.config.settings import RunConfig, Settings
from bot.models import UNHEALTHY_STATES, Event
from bot.sources.base import LiveContext, PollResult
from bot.sources.wandb_chain import ChainFetcher
from bot.sources.wandb_client import (
    DEFAULT_POLL_TIMEOUT,
    DEFAULT_TIMEOUT,
    ApiFactory,
    WandbClient,
)
from bot.sources.wandb_cursors import ChainCursor, HistoryCursor
from bot.sources.wandb_history import (
    PAGE_SIZE,
    SOURCE,
    ChainFetch,
    HistoryReader,
)
from bot.sources.wandb_restarts import Plan, RoundPlanner
from bot.sources.wandb_state import snapshot_of, state_event
from bot.store import Store

__all__ = ["HistoryCursor", "WandbSource", "build_wandb_client", "build_wandb_sources"]

log = logging.getLogger(__name__)


class WandbSource:
    """Polls the W&B chain of one tracked run. Implements `bot.sources.base.Source`."""

    name = SOURCE

    def __init__(
        self,
        store: Store,
        run: RunConfig,
        client: WandbClient,
        *,
        page_size: int = PAGE_SIZE,
    ):
        if not run.wandb_runs:
            raise ValueError(f"run {run.slug!r} lists no wandb_runs")
        self.store = store
        self.run = run
        self.client = client
        self.slug = run.slug
        self.history = HistoryReader(self.key, run, page_size=page_size)
        self.chain = ChainFetcher(self.key, run, client, self.history)
        self.planner = RoundPlanner(run)
        self.step_key = self.history.step_key

    # W&B's silence is an alert risk: never wait more than 2 min before looking again.
    backoff_cap = timedelta(minutes=2)

    @property
    def key(self) -> str:
        return f"wandb:{self.slug}"

    @property
    def credential(self) -> str:
        return self.client.credential

    async def probe(self) -> bool:
        """Whether W&B answers now (the poller asks while this source backs off)."""
        return await self.client.reachable()

    @property
    def run_slugs(self) -> list[str]:
        return [self.slug]

    # ------------------------------------------------------------------ poll

    async def poll(self, now: datetime) -> PollResult:
        chain = ChainCursor.load((await self.store.cursors.get(SOURCE, self._chain_key))[0])
        known = self.chain.ordered_members(chain)
        cursors: dict[str, HistoryCursor] = {}
        for path in dict.fromkeys([*known, *chain.discovered]):
            value, _ = await self.store.cursors.get(SOURCE, f"{path}:history")
            if value is not None:
                cursors[path] = HistoryCursor.load(value)
        fetched: ChainFetch = await self.client.call(self._fetch, chain, dict(cursors))
        return await self._commit(fetched, cursors, now)

    @property
    def _chain_key(self) -> str:
        return f"{self.slug}:chain"

    def _fetch(self, api: Any, chain: ChainCursor, cursors: dict[str, HistoryCursor]) -> ChainFetch:
        """On the W&B worker thread: the chain and each member's new rows."""
        return self.chain.fetch(api, chain, cursors)

    def _plan(
        self,
        fetched: ChainFetch,
        cursors: dict[str, HistoryCursor],
        now: datetime,
        stopped: set[str] | frozenset[str] = frozenset(),
    ) -> tuple[list[Plan], list[Event], dict[str, dict[str, list[SeriesPoint]]]]:
        """In a worker thread: what the round's rows become (`RoundPlanner.plan`)."""
        return self.planner.plan(fetched, cursors, now, stopped)

    async def _commit(
        self, fetched: ChainFetch, cursors: dict[str, HistoryCursor], now: datetime
    ) -> PollResult:
        result = PollResult(requests=fetched.requests)
        # Turning a round's rows into points, series and events is CPU work proportional to the
        # logging rate (600 rows a minute at ten steps a second): done in a worker thread.
        stopped = {
            m.path
            for m in fetched.members
            if (seen := await self.store.snapshots.get(self.slug, m.path)) is not None
            and seen.state in UNHEALTHY_STATES
        }
        plans, events, watched = await asyncio.to_thread(self._plan, fetched, cursors, now, stopped)
        async with self.store.transaction():
            for member, points, after in plans:
                snapshot = snapshot_of(member, after, self.step_key, now)
                previous_snapshot = await self.store.snapshots.upsert(self.slug, snapshot)
                event = state_event(self.slug, member, previous_snapshot, snapshot, after, now)
                if event is not None:
                    events.append(event)
                result.points += await self.store.metrics.add_points(self.slug, points)
                for metric, series in watched[member.path].items():
                    result.points += await self.store.series.add(self.slug, metric, series)
                await self.store.cursors.set(SOURCE, f"{member.path}:history", after.dump())
            if events:
                upserted = await self.store.events.upsert_many(events)
                result.events = len(upserted.changed)
            await self.store.cursors.set(SOURCE, self._chain_key, fetched.chain.dump())
        if result.points or result.events:
            log.info(
                "%s: %d new points, %d events (%d W&B requests)",
                self.key,
                result.points,
                result.events,
                result.requests,
            )
        return result


# ----------------------------------------------------------------------------- wiring


def build_wandb_client(
    settings: Settings,
    runs: Sequence[RunConfig],
    *,
    state_dir: Path | None = None,
    api_factory: ApiFactory | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_timeout: float = DEFAULT_POLL_TIMEOUT,
) -> WandbClient:
    """The process-wide client. The entity override is that of the first W&B run configured
    (paths are always fully qualified; the override only spares a `GetDefaultEntity` request)."""
    entity = next((r.wandb_runs[0].split("/")[0] for r in runs if r.wandb_runs), None)
    if api_factory is not None:
        return WandbClient(
            api_factory,
            poll_timeout=poll_timeout,
            describe=f"W&B at {settings.wandb_base_url}" if settings.wandb_base_url else "W&B",
        )
    key = settings.wandb_api_key.get_secret_value() if settings.wandb_api_key else None
    return WandbClient.from_settings(
        base_url=settings.wandb_base_url,
        api_key=key,
        entity=entity,
        timeout=timeout,
        state_dir=state_dir,
        poll_timeout=poll_timeout,
    )


def build_wandb_sources(
    store: Store, runs: Sequence[RunConfig], client: WandbClient
) -> list[WandbSource]:
    """One source per tracked run that lists W&B runs."""
    return [WandbSource(store, run, client) for run in runs if run.wandb_runs]


def wandb_state_dir(settings: Settings) -> Path:
    """wandb's own files (cache, config) live beside the database, never in $HOME."""
    return Path(settings.runscribe_db).resolve().parent / "wandb"


async def live_sources(context: LiveContext, runs: Sequence[RunConfig]) -> list[WandbSource]:
    """The registration's builder (`SourceSpec.build`): one source per run, sharing one client
    for the whole process (built for the first runs file; the wandb-core process is shut down
    with it)."""

    @asynccontextmanager
    async def open_client() -> AsyncIterator[WandbClient]:
        client = build_wandb_client(
            context.settings, runs, state_dir=wandb_state_dir(context.settings)
        )
        try:
            yield client
        finally:
            await client.aclose(teardown=True)

    client = await context.shared("wandb", open_client)
    return build_wandb_sources(context.store, runs, client)
