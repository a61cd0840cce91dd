"""The bodies of the bot's background loops, each safe to call on its own (from tests or an admin
command): a poll round per source family, enrichment, pushed deliveries, digests, narratives.
Each round runs under its loop's lock (`bot.process.scheduler.LoopScheduler`) and wakes the loops
that deliver what it queued. No Discord here: the bot spawns these and its cogs call them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Protocol

from bot.config.runsfile import RunConfig
from bot.config.settings import RunsFile, Settings
from bot.outputs.digests import DigestComposer, run_due_digests
from bot.process.pipeline import THREADS, WANDB
from bot.process.scheduler import ENRICH, HOOKS, LoopScheduler
from bot.render.cards import TimeFormatter
from bot.store import Store

log = logging.getLogger(__name__)

NarrativeRefresher = Callable[[str, datetime], Awaitable[object]]


class BotServices(Protocol):
    """What the bot needs from `bot.process.runtime.Runtime` (structural, so tests can hand in
    less)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def runs(self) -> RunsFile: ...
    @property
    def store(self) -> Store: ...

    async def cycle(self, now: datetime) -> Any: ...

    async def poll(self, family: str, now: datetime) -> Any: ...

    async def enrich(self, now: datetime) -> Any: ...

    async def ingest_pushed(self, now: datetime, *, judge: bool = True) -> Any: ...

    async def judge(self, now: datetime) -> Any: ...

    async def reload(self, runs: RunsFile) -> BotServices: ...


class LoopRounds:
    """One round of each loop over `runtime` (swapped by `reload`). `after_wandb` runs after
    every W&B round (the charts' redraw); `fmt` writes times in digests; `read_backs` says how
    many read-backs of watched channels have finished."""

    def __init__(
        self,
        runtime: BotServices,
        scheduler: LoopScheduler,
        clock: Callable[[], datetime],
        *,
        after_wandb: Callable[[], None],
        fmt: TimeFormatter,
        read_backs: Callable[[], int],
        narrative: NarrativeRefresher | None = None,
        digest_composer: DigestComposer | None = None,
    ):
        self.runtime = runtime
        self.loops = scheduler
        self.clock = clock
        self._after_wandb = after_wandb
        self._fmt = fmt
        self._read_backs = read_backs
        self.narrative = narrative
        self.digest_composer = digest_composer
        self._rings_seen = 0  # the doorbell's count when the hooks loop last looked

    @property
    def runs(self) -> list[RunConfig]:
        return list(self.runtime.runs.runs)

    async def reload(self, runs: RunsFile) -> None:
        """Rebuild the sources from `runs`, never under a running round."""
        async with self.loops.all_locks():
            self.runtime = await self.runtime.reload(runs)

    async def poll_once(self) -> object:
        """One cycle of everything (all families, enrichment, detection)."""
        async with self.loops.all_locks():
            try:
                return self.loops.delivered_soon(await self.runtime.cycle(self.clock()))
            finally:
                self.loops.cycle_done()
                self._after_wandb()

    async def poll_family(self, family: str) -> object:
        async with self.loops.locks[family]:
            try:
                return self.loops.delivered_soon(await self.runtime.poll(family, self.clock()))
            finally:
                self.loops.family_done(family)
                if family == WANDB:
                    self._after_wandb()

    async def ingest_pushed(self) -> object:
        """Read what the push endpoints stored, judge it, and wake the enrichment (GitHub
        events) and the outbox (alerts queued) at once."""
        doorbell = getattr(self.runtime, "doorbell", None)
        rings = doorbell.rings if doorbell is not None else 0
        rung, self._rings_seen = rings != self._rings_seen, rings
        async with self.loops.locks[HOOKS]:
            result = await self.runtime.ingest_pushed(self.clock(), judge=rung)
        hooks = getattr(result, "poll", None)
        pushed = hooks.results.get("hooks") if hooks is not None else None
        if pushed is not None and pushed.events:
            self.loops.enrich_due.set()
        return self.loops.delivered_soon(result)

    async def acknowledged(self) -> object:
        """After an acknowledgement (the button or `/incidents ack`): judge now, so the alert's
        head says who acknowledged it at once, and deliver the edit."""
        async with self.loops.locks[WANDB]:  # judged between polls, never inside one
            return self.loops.delivered_soon(await self.runtime.judge(self.clock()))

    async def write_writeups(self) -> object:
        """The model's write-ups of resolved incidents (its own loop: never an alert's wait),
        then detection at once, so what was stored is posted (and the ops log written) now."""
        write = getattr(self.runtime, "write_writeups", None)
        if write is None or not await write(self.clock()):
            return 0
        async with self.loops.locks[WANDB]:  # judged between polls, never inside one
            return self.loops.delivered_soon(await self.runtime.judge(self.clock()))

    async def enrich_once(self) -> object:
        async with self.loops.locks[ENRICH]:
            try:
                return self.loops.delivered_soon(await self.runtime.enrich(self.clock()))
            finally:
                self.loops.rounds[ENRICH] += 1

    async def schedule_digests(self) -> object:
        return await run_due_digests(
            self.runtime.store,
            self.runs,
            self.clock(),
            fmt=self._fmt,
            composer=self.digest_composer,
            ready=self.heard_since_start,
        )

    def heard_since_start(self, run: RunConfig) -> bool:
        """Whether every source the run uses has finished a round since this process started
        (W&B, the GitHub threads, the read-back of watched channels) and enrichment has run
        after them: what a digest may be composed from."""
        families = [WANDB] if run.wandb_runs or run.wandb_run_pattern else []
        if run.github_repo:
            families.append(THREADS)
        if not self.loops.enriched_after(families):
            return False
        return not run.watch_channels or self._read_backs() > 0

    async def refresh_narratives(self) -> None:
        assert self.narrative is not None
        for run in self.runs:
            try:
                await self.narrative(run.slug, self.clock())
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("narrative refresh failed for %s", run.slug)
