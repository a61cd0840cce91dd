"""The bot's background loops, kept alive: each runs under `bot.core.loops.repeat` (no exception
ends a loop, it backs off; `CancelledError` always propagates), with its own lock, its round count
and the events that wake it early. No Discord here: the bot spawns its loop bodies through this.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

from bot.core.heap import freeze_long_lived
from bot.core.loops import Probe, Retries, repeat

#: The polling loops' names besides the source families: enrichment and the push endpoints.
ENRICH = "enrich"
HOOKS = "hooks"
#: Commands answered at once before the next ones acknowledge first (`LoopScheduler.busy`).
ANSWERED_AT_ONCE = 2


@dataclass(slots=True)
class LoopIntervals:
    """Seconds between runs of each background loop. `poll` paces each source family's loop
    (W&B, the threads) on its own; `enrich` how often the enrichment queue is looked at (it
    sends a request only when a batch is worth it)."""

    poll: float = 60.0
    enrich: float = 10.0
    outbox: float = 2.0
    digest: float = 20.0
    narrative: float = 300.0  # the refresher decides whether a new narrative is due
    writeups: float = 10.0  # resolved incidents whose write-up the model has not written yet
    # pushed deliveries are read when the doorbell rings; between rings, open alert incidents
    # are judged this often (their resolution is due once the clear has held, 2 min)
    hooks: float = 15.0
    live: float = 15.0  # live status messages: whether one is due (woken after every round)
    integrity: float = 3600.0  # looks each hour whether the daily quick_check is due
    # free heap pages given back to the OS (bot.core.heap): often, so what a sample of the
    # process's memory sees is never far from the trimmed level
    heap: float = 10.0
    max_backoff: float = 300.0


class LoopScheduler:
    """The loops' tasks and shared state: one lock per polling loop (a reload takes them all,
    so it never swaps sources under a running poll, and the loops never wait for each other),
    rounds finished per loop, and the wake-up events."""

    def __init__(
        self,
        intervals: LoopIntervals,
        families: tuple[str, ...],
        *,
        running: Callable[[], bool],
    ):
        self.intervals = intervals
        self.families = families
        self._running = running
        self.tasks: list[asyncio.Task[None]] = []
        self.started = False
        self.locks = {name: asyncio.Lock() for name in (*families, ENRICH, HOOKS)}
        # rounds finished (or failed) per polling loop (`cycles`)
        self.rounds = dict.fromkeys((*families, ENRICH), 0)
        # per source family: enrichment rounds finished when its first round ended
        self.enriched_before: dict[str, int] = {}
        self._answering = 0  # commands between `answering()` enter and exit
        # Set when a loop round queued posts (an alert): the outbox delivers them now instead of
        # at its next tick, so an alert never waits for the outbox's interval.
        self.outbox_due = asyncio.Event()
        # Set when pushed deliveries brought events: enrichment looks at them now, so they are
        # enriched and judged like polled ones without waiting for its interval.
        self.enrich_due = asyncio.Event()
        # Set after every loop round (and when a live message was deleted): the live status
        # messages are looked at now, so a state change shows within the round that saw it.
        self.live_due = asyncio.Event()
        # Set when the last command being answered is done: the heap loop gives back what the
        # answer took (a page of entries, a chart) now, not at its next tick.
        self.heap_due = asyncio.Event()
        # A loop that goes through after failing (the store writable again) retries every loop
        # still backing off at once (`bot.core.loops`).
        self.retries = Retries()

    def spawn(
        self,
        name: str,
        interval: float,
        body: Callable[[], Awaitable[object]],
        *,
        wake: asyncio.Event | None = None,
        probe: Probe | None = None,
    ) -> None:
        """Run `body` every `interval` seconds while the bot is open (`bot.core.loops.repeat`, the
        one supervisor); the modules and clients its first round built are then frozen."""
        loop = repeat(
            name,
            interval,
            body,
            max_backoff=self.intervals.max_backoff,
            wake=wake,
            retries=self.retries,
            probe=probe,
            running=self._running,
            first_done=freeze_long_lived,
        )
        self.tasks.append(asyncio.create_task(loop, name=f"runscribe-{name}"))

    def add(self, task: asyncio.Task[None]) -> None:
        """A one-off background task, cancelled with the loops."""
        self.tasks.append(task)

    async def cancel(self) -> None:
        """Cancel every loop and wait for each to end."""
        tasks, self.tasks = self.tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @contextlib.asynccontextmanager
    async def all_locks(self) -> AsyncIterator[None]:
        """Every loop's lock: no round runs meanwhile (a full cycle, a reload)."""
        async with contextlib.AsyncExitStack() as held:
            for lock in self.locks.values():
                await held.enter_async_context(lock)
            yield

    def delivered_soon(self, result: object) -> object:
        """A round that queued alerts wakes the outbox loop, so they are posted at once; every
        round wakes the live status loop (what it saw may change a live message)."""
        if getattr(result, "alerts_queued", 0):
            self.outbox_due.set()
        self.live_due.set()
        return result

    def family_done(self, family: str) -> None:
        self.rounds[family] += 1
        self.enriched_before.setdefault(family, self.rounds[ENRICH])

    def cycle_done(self) -> None:
        """A full cycle (every family, then enrichment) ended."""
        for family in self.families:  # this cycle enriched after polling
            self.enriched_before.setdefault(family, self.rounds[ENRICH])
        for name in self.rounds:
            self.rounds[name] += 1

    @property
    def cycles(self) -> int:
        """Full cycles since start: rounds that every loop (each family, enrichment) has done."""
        return min(self.rounds.values())

    def enriched_after(self, families: list[str]) -> bool:
        """Whether each of `families` finished a round and enrichment has run after them."""
        if any(family not in self.enriched_before for family in families):
            return False
        after = max((self.enriched_before[f] for f in families), default=0)
        return self.rounds[ENRICH] > after

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Around a command's work, so `busy` knows how many are being answered."""
        self._answering += 1
        try:
            yield
        finally:
            self._answering -= 1
            if not self._answering:
                self.heap_due.set()

    def busy(self, saturated: bool) -> bool:
        """A poll round is running or more than `ANSWERED_AT_ONCE` commands are being answered,
        or (`saturated`) every read connection is taken."""
        return (
            any(lock.locked() for lock in self.locks.values())
            or self._answering > ANSWERED_AT_ONCE
            or saturated
        )
