"""Loss and tokens against time as a PNG, restarts marked. Rendering takes ~100 ms, so callers
run it in a worker thread (`render_chart_async`), one at a time, and cache it per data version
(`ChartCache`)."""

from __future__ import annotations

import asyncio
import io
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from bot.analysis.progress import Restart
from bot.heap import freeze_long_lived
from bot.models import MetricPoint
from bot.services.forecasts import ForecastPanel
from bot.services.status import ChartSeries

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)
_now = time.monotonic
_FIGURE: type[Figure] | None = None


def _figure_class() -> type[Figure]:
    """matplotlib's Figure (the OO API: no global pyplot state, thread-safe), imported at the
    first chart, not at start: a bot that never draws never pays its memory."""
    global _FIGURE
    if _FIGURE is None:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure

        _FIGURE = Figure
        freeze_long_lived()  # matplotlib's ~170,000 module objects: never walked by the GC
    return _FIGURE


def render_chart(
    points: Sequence[MetricPoint],
    restarts: Sequence[Restart] = (),
    *,
    title: str = "",
    now: datetime | None = None,
    loss_curve: Callable[[float], float | None] | None = None,
) -> bytes:
    fig = _figure_class()(figsize=(8, 3.2), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    times = [p.at for p in points if p.loss is not None and math.isfinite(p.loss)]
    losses = [p.loss for p in points if p.loss is not None and math.isfinite(p.loss)]
    if times:
        ax.plot(times, losses, color="#3b7dd8", linewidth=1.1, label="loss")  # type: ignore[arg-type]
    if loss_curve is not None and times:
        # the predicted curve at each point's step, against the same time axis
        predicted = [
            (p.at, loss_curve(p.step))
            for p in points
            if p.loss is not None and math.isfinite(p.loss)
        ]
        shown = [(t, v) for t, v in predicted if v is not None]
        if shown:
            ax.plot(
                [t for t, _ in shown],  # type: ignore[arg-type]
                [v for _, v in shown],
                color="#e08a1e",
                linewidth=1.0,
                linestyle=":",
                label="predicted",
            )
    ax.set_ylabel("loss", color="#3b7dd8")
    ax.grid(alpha=0.25)
    token_points = [(p.at, p.tokens) for p in points if p.tokens is not None]
    if token_points:
        ax2 = ax.twinx()
        ax2.plot(
            [t for t, _ in token_points],  # type: ignore[arg-type]
            [v / 1e12 for _, v in token_points],
            color="#999999",
            linewidth=0.9,
            linestyle="--",
            label="tokens (T)",
        )
        ax2.set_ylabel("tokens (T)", color="#777777")
    for restart in restarts:
        ax.axvline(restart.at, color="#d9534f", linewidth=0.8, alpha=0.7)  # type: ignore[arg-type]
    if restarts:
        ax.plot([], [], color="#d9534f", linewidth=0.8, label="restart")
    if times:
        ax.legend(loc="upper right", fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, "no metrics yet", ha="center", va="center", transform=ax.transAxes)
    if title:
        ax.set_title(title, fontsize=10)
    fig.autofmt_xdate()
    fig.tight_layout()
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        # Not registered with pyplot, so nothing else holds it: clearing breaks the figure's
        # internal reference cycles and its memory is returned at once, not at the next GC.
        fig.clear()
        del fig, ax


async def render_chart_async(
    points: Sequence[MetricPoint],
    restarts: Sequence[Restart] = (),
    *,
    title: str = "",
    loss_curve: Callable[[float], float | None] | None = None,
) -> bytes:
    return await asyncio.to_thread(
        render_chart, points, restarts, title=title, loss_curve=loss_curve
    )


async def render_series(series: ChartSeries) -> bytes:
    """The /status chart of `bot.services.status.chart_series`, drawn in a worker thread."""
    return await render_chart_async(
        series.points, series.restarts, title=series.title, loss_curve=series.loss_curve
    )


class ChartCache:
    """PNG bytes per run, with the data version they were drawn at.

    - `get(slug, version)`: the chart for exactly this version, if drawn.
    - `ready(slug, version)`: what `/status` may attach without drawing: this version, or the
      run's last chart if it was drawn less than `min_interval` seconds ago (points arrive every
      few seconds; the chart is redrawn at most once a minute however often they do).
    - `get_or_draw(slug, version, draw)`: single flight: one draw at a time per run, and only
      one draw at a time overall (a burst of misses costs one render, and one figure's memory);
      concurrent misses await the same future. A failed draw (None or an exception) caches
      nothing and gives None to everyone waiting on it."""

    def __init__(
        self, size: int = 16, *, min_interval: float = 60.0, clock: Callable[[], float] = _now
    ):
        self._items: OrderedDict[str, tuple[str, float, bytes]] = OrderedDict()
        self._size = size
        self._min_interval = min_interval
        self._clock = clock
        self._drawing: dict[str, tuple[str, asyncio.Future[bytes | None]]] = {}
        self._one_render = asyncio.Lock()
        self.hits = 0
        self.misses = 0
        self.draws = 0

    def get(self, slug: str, version: str) -> bytes | None:
        item = self._items.get(slug)
        if item is not None and item[0] == version:
            self._items.move_to_end(slug)
            self.hits += 1
            return item[2]
        self.misses += 1
        return None

    def ready(self, slug: str, version: str) -> bytes | None:
        item = self._items.get(slug)
        if item is None:
            return None
        drawn_version, drawn_at, png = item
        if drawn_version == version or self._clock() - drawn_at < self._min_interval:
            self._items.move_to_end(slug)
            self.hits += 1
            return png
        return None

    def put(self, slug: str, version: str, png: bytes) -> None:
        # An older version of this run's chart is never wanted again: one entry per run.
        self._items[slug] = (version, self._clock(), png)
        self._items.move_to_end(slug)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    async def get_or_draw(
        self, slug: str, version: str, draw: Callable[[], Awaitable[bytes | None]]
    ) -> bytes | None:
        png = self.ready(slug, version)
        if png is not None:
            return png
        self.misses += 1
        flight = self._drawing.get(slug)
        if flight is None:
            future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
            self._drawing[slug] = (version, future)
            task = asyncio.create_task(self._draw(slug, version, draw, future))
            task.add_done_callback(_consume)
        else:
            future = flight[1]
        # Shielded: a waiter that gives up (its interaction expired) never cancels the draw the
        # others wait for.
        return await asyncio.shield(future)

    async def _draw(
        self,
        slug: str,
        version: str,
        draw: Callable[[], Awaitable[bytes | None]],
        future: asyncio.Future[bytes | None],
    ) -> None:
        try:
            async with self._one_render:
                self.draws += 1
                png = await draw()
        except BaseException as exc:
            if not future.done():
                future.set_result(None)
            if not isinstance(exc, Exception):
                raise
            log.exception("chart for %s failed", slug)
            return
        finally:
            self._drawing.pop(slug, None)
        if png is not None:
            self.put(slug, version, png)
        if not future.done():
            future.set_result(png)


def _consume(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # already turned into None for the waiters; never "never retrieved"


def render_forecast_chart(
    steps: Sequence[int],
    values: Sequence[float],
    band: Sequence[tuple[int, float, float, float]] = (),
    *,
    title: str = "",
    drift_step: int | None = None,
    note: str = "",
) -> bytes:
    """One watched metric against its forecast: the values by step, the trend line and its band
    (`band`: (step, low, forecast, high) at the ends of a straight stretch), where a drift began."""
    fig = _figure_class()(figsize=(8, 3.0), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    if steps:
        ax.plot(list(steps), list(values), color="#3b7dd8", linewidth=1.0, label="value")
    if band:
        xs = [b[0] for b in band]
        ax.fill_between(
            xs, [b[1] for b in band], [b[3] for b in band], color="#e08a1e", alpha=0.18,
            linewidth=0, label="forecast band",
        )  # fmt: skip
        ax.plot(xs, [b[2] for b in band], color="#e08a1e", linewidth=1.0, linestyle="--",
                label="forecast")  # fmt: skip
    if drift_step is not None:
        ax.axvline(drift_step, color="#d9534f", linewidth=0.9, alpha=0.8, label="drift began")
    if steps:
        ax.legend(loc="upper left", fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, "no values yet", ha="center", va="center", transform=ax.transAxes)
    if note:
        ax.text(0.99, 0.02, note, ha="right", va="bottom", fontsize=8, color="#777777",
                transform=ax.transAxes)  # fmt: skip
    ax.set_xlabel("step")
    ax.grid(alpha=0.25)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        fig.clear()  # see render_chart
        del fig, ax


def forecast_panel_chart(panel: ForecastPanel) -> bytes:
    """The `/forecast` chart of one watched metric (blocking: call it in a worker thread)."""
    view = panel.view
    return render_forecast_chart(
        [p.step for p in panel.points],
        [p.value for p in panel.points],
        panel.band(),
        title=view.name,
        drift_step=view.drift_since_step,
        note=view.reason or "",
    )
