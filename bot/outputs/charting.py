"""The bot's /status charts: cached per data version (`ChartCache`), drawn in a child process that
ends when idle (`ChartDrawer`), redrawn in the background after W&B rounds so a command never
draws one itself. No Discord here: the bot, its cogs and the outbox poster call it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from bot.config.runsfile import RunConfig
from bot.render.chart import REDRAW_EVERY, ChartCache
from bot.render.drawer import IDLE_SECONDS, ChartDrawer
from bot.services.status import chart_series
from bot.store import Store
from bot.store.metrics import NO_POINTS

log = logging.getLogger(__name__)

#: Seconds a command waits for a run's first chart before answering without it: as long as the
#: chart process may take (its start imports matplotlib, which takes seconds on a loaded machine),
#: well inside the 15 minutes Discord gives a deferred answer.
FIRST_CHART_WAIT = 60.0


class ChartService:
    """Charts for the runs `runs()` lists, read through `reader()`. `warm=False` (tests that
    want a cold cache) draws nothing in the background."""

    def __init__(
        self,
        reader: Callable[[], Store],
        runs: Callable[[], Sequence[RunConfig]],
        *,
        poll: float,
        warm: bool = True,
    ):
        self._reader = reader
        self._runs = runs
        self.warm = warm
        self.cache = ChartCache()
        # Charts are drawn in a child process that ends when idle: matplotlib's memory never
        # stays in the bot after a run goes quiet. While a run logs, its chart is redrawn after
        # W&B rounds (at most once a minute, so the next redraw comes up to a minute and a poll
        # later), and the child outlives that gap and two poll intervals: a redraw never pays its
        # start while the run logs.
        self.drawer = ChartDrawer(idle=max(IDLE_SECONDS, 2 * poll + 30, REDRAW_EVERY + poll + 30))
        self._refresh: asyncio.Task[None] | None = None
        self._closing = False
        self._tasks: set[asyncio.Task[bytes | None]] = set()

    async def status_chart(self, slug: str, version: str) -> bytes | None:
        """The /status chart at this data version: cached, or drawn once however many ask at
        once (`ChartCache`); None if it cannot be drawn (a broken chart never costs a card)."""
        return await self.cache.get_or_draw(slug, version, partial(self.draw, slug))

    async def first_chart(self, slug: str, version: str) -> bytes | None:
        """A run's first chart, waited for at most `FIRST_CHART_WAIT` seconds (a cold chart
        process on a loaded machine); past it the answer goes without, and the draw goes on."""
        try:
            return await asyncio.wait_for(self.status_chart(slug, version), FIRST_CHART_WAIT)
        except TimeoutError:
            log.warning("the first chart of %s is still being drawn; answering without it", slug)
            return None

    async def draw(self, slug: str) -> bytes | None:
        try:
            return await self.drawer.loss_chart(await chart_series(self._reader(), slug))
        except Exception:
            log.exception("chart for %s failed; answering without it", slug)
            return None

    def chart_soon(self, slug: str, version: str) -> None:
        """Draw this version of the run's chart in the background (single flight: a draw under
        way or one less than a minute old is not repeated); `/status` meanwhile attaches the
        newest finished chart."""
        if self._closing:
            return
        task = asyncio.create_task(self.status_chart(slug, version), name=f"chart-{slug}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def refresh_soon(self) -> None:
        """After a W&B round: each run whose data changed gets its chart redrawn in the
        background, so `/status` answers with a current chart and never draws one itself. One
        refresh at a time."""
        if not self.warm or self._closing:
            return
        if self._refresh is not None and not self._refresh.done():
            return
        self._refresh = asyncio.create_task(self.refresh(), name="chart-refresh")

    async def refresh(self) -> None:
        for run in self._runs():
            version = await self._reader().metrics.version(run.slug)
            # a run with no points has nothing to draw; one drawn at this version is current
            if version != NO_POINTS and self.cache.version_of(run.slug) != version:
                await self.status_chart(run.slug, version)

    async def warm_up(
        self, first_round_done: Callable[[], bool], *, first_poll_within: float = 60.0
    ) -> None:
        """Each run's chart drawn once at start (runs with points), after the first W&B round (or
        `first_poll_within` seconds): the first /status of a run answers without drawing while
        its data has not changed. Later rounds redraw it when its data changed (`refresh_soon`)."""
        waited = 0.0
        while not first_round_done() and waited < first_poll_within:
            await asyncio.sleep(0.5)
            waited += 0.5
        await self.refresh()

    def stop(self) -> None:
        """From here no background chart is started."""
        self._closing = True

    async def aclose(self) -> None:
        """Stop, cancel the background charts under way and end the chart process."""
        self.stop()
        background: list[asyncio.Future[Any]] = [*self._tasks]
        if self._refresh is not None:
            background.append(self._refresh)
        for task in background:
            task.cancel()
        for task in background:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.cache.aclose()
        await self.drawer.aclose()
