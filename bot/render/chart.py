"""Loss and tokens against time as a PNG, restarts marked, laid out for Discord: an embed's image
is shown about 400 px wide, so the figure is 400 px at its nominal 100 dpi with 11 pt text, and
drawn at 2× (800 px) so it stays sharp on dense screens. No title (the embed above it has one);
the legend carries the latest loss and tokens; the time axis is in the run's zone and says so.

Rendering takes ~100 ms and matplotlib's import ~50 MB that a process never gives back, so the
bot draws in a child process (`bot.render.drawer`), one chart at a time, and caches each per
data version (`ChartCache`). matplotlib is imported on the first draw."""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from bot.core.heap import freeze_long_lived
from bot.core.numbers import fmt_big, fmt_value
from bot.core.timeutil import resolve_zone

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.dates import ConciseDateFormatter
    from matplotlib.figure import Figure
    from matplotlib.ticker import Locator

    from bot.models import MetricPoint

log = logging.getLogger(__name__)
_now = time.monotonic

#: Seconds between two redraws of a run's chart at most, however often its points arrive.
REDRAW_EVERY = 60.0
#: How wide Discord shows an embed's image, and the figure's size at its nominal 100 dpi: the
#: two are equal, so a font size in points is its size as read in Discord.
DISPLAY_WIDTH_PX = 400
NOMINAL_DPI = 100
FIGSIZE = (DISPLAY_WIDTH_PX / NOMINAL_DPI, 2.8)
SCALE = 2  # the PNG's pixels per displayed pixel
FONT_PT = 11.0
LOSS_COLOR = "#2f6fc4"
TOKENS_COLOR = "#6b6b6b"
PREDICTED_COLOR = "#d97a0b"
RESTART_COLOR = "#d9534f"
RESTART_GID = "restarts"  # the restart markers' artist, for tests and anyone inspecting a figure
# What a short chart's tick labels leave out (ConciseDateFormatter's levels: years, months,
# days, hours, minutes, seconds), said as people write dates.
OFFSET_FORMATS = ["", "%Y", "%b %Y", "%b %d, %Y", "%b %d, %Y", "%b %d, %Y %H:%M"]


_matplotlib_settled = False


def _imported() -> None:
    """After matplotlib's first import (at the first chart, not at start: a bot that never
    draws never pays its memory), its ~170,000 module objects are moved out of the garbage
    collector's way (`bot.core.heap`)."""
    global _matplotlib_settled
    if not _matplotlib_settled:
        _matplotlib_settled = True
        freeze_long_lived()


def draw_chart(
    points: Sequence[MetricPoint],
    restarts: Sequence[datetime] = (),
    *,
    zone: str = "UTC",
    loss_curve: Callable[[float], float | None] | None = None,
) -> Figure:
    """The chart as a matplotlib Figure (not registered with pyplot; `render_chart` saves it).
    `restarts`: when training resumed, each marked by a vertical line."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # the OO API: no global pyplot state, thread-safe

    _imported()
    tz = resolve_zone(zone)
    # Drawn at the PNG's resolution from the start: the layout pass and the save share one
    # renderer and its text-layout cache.
    fig = Figure(figsize=FIGSIZE, dpi=NOMINAL_DPI * SCALE)
    FigureCanvasAgg(fig)  # its own canvas: `fig.canvas.draw()` lays it out as saved
    ax = fig.add_subplot(1, 1, 1)
    shown = [p for p in points if p.loss is not None and math.isfinite(p.loss)]
    losses = [float(p.loss or 0.0) for p in shown]
    handles = _plot_loss(ax, shown, losses, loss_curve)
    handles += _plot_tokens(ax, points)
    if restarts:
        handles.append(_mark_restarts(ax, restarts))
    _style_axes(ax, tz, shown, losses)
    _legend(fig, ax, handles)
    return fig


def _plot_loss(
    ax: Axes,
    shown: Sequence[MetricPoint],
    losses: list[float],
    loss_curve: Callable[[float], float | None] | None,
) -> list[Artist]:
    from matplotlib import dates as mdates

    if not shown:
        return []
    times = mdates.date2num([p.at for p in shown])
    (line,) = ax.plot(
        times,
        losses,
        color=LOSS_COLOR,
        linewidth=1.4,
        label=f"loss {fmt_value(losses[-1])}",  # 2.346, 0.6012, 0.0123
    )
    handles: list[Artist] = [line]
    if loss_curve is not None:
        # the predicted curve at each point's step, against the same time axis
        predicted = [(t, loss_curve(p.step)) for t, p in zip(times, shown, strict=True)]
        curve = [(t, float(v)) for t, v in predicted if v is not None]
        if curve:
            (line,) = ax.plot(
                [t for t, _ in curve],
                [v for _, v in curve],
                color=PREDICTED_COLOR,
                linewidth=1.3,
                linestyle=":",
                label="predicted",
            )
            handles.append(line)
    return handles


def _plot_tokens(ax: Axes, points: Sequence[MetricPoint]) -> list[Artist]:
    """Tokens on a second y axis at the right, when any point has them."""
    from matplotlib import dates as mdates
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    token_points = [p for p in points if p.tokens is not None and math.isfinite(p.tokens)]
    if not token_points:
        return []
    ax2 = ax.twinx()
    tokens = [float(p.tokens or 0.0) for p in token_points]
    (line,) = ax2.plot(
        mdates.date2num([p.at for p in token_points]),
        tokens,
        color=TOKENS_COLOR,
        linewidth=1.1,
        linestyle="--",
        label=f"{fmt_big(tokens[-1])} tokens",  # 8.42T
    )
    ax2.yaxis.set_major_locator(MaxNLocator(4))
    ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_big(v) if v else "0"))
    ax2.tick_params(axis="y", labelsize=FONT_PT, colors=TOKENS_COLOR, length=3)
    for side in ("left", "top"):
        ax2.spines[side].set_visible(False)
    return [line]


def _mark_restarts(ax: Axes, restarts: Sequence[datetime]) -> Artist:
    from matplotlib import dates as mdates

    # One collection for all of them, spanning the axes' height whatever the loss range.
    marks = ax.vlines(
        mdates.date2num(list(restarts)),
        0,
        1,
        transform=ax.get_xaxis_transform(),
        colors=RESTART_COLOR,
        linewidth=1.0,
        alpha=0.75,
        zorder=1,  # under the curves
        label="restart" if len(restarts) == 1 else f"{len(restarts)} restarts",
    )
    marks.set_gid(RESTART_GID)
    return marks


def _style_axes(ax: Axes, tz: ZoneInfo, shown: Sequence[MetricPoint], losses: list[float]) -> None:
    """The time axis in the run's zone, the loss axis zoomed to the newest part, light grid."""
    from matplotlib import dates as mdates
    from matplotlib.ticker import MaxNLocator

    locator = mdates.AutoDateLocator(tz=tz, minticks=2, maxticks=5)  # 2-4 labels fit 400 px
    # Tick labels say only what changes ("14:00", "Feb"); what they leave out (the day of a
    # short chart) goes in the axis label with the zone, not in a corner label beside it.
    formatter = mdates.ConciseDateFormatter(locator, tz=tz, offset_formats=OFFSET_FORMATS)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(formatter)
    ax.xaxis.get_offset_text().set_visible(False)
    ax.set_xlabel(time_label(formatter, locator, tz.key), fontsize=FONT_PT)
    zoom = loss_zoom([p.at for p in shown], losses)
    if zoom is not None:
        low, high, peak = zoom
        ax.set_ylim(low, high)
        ax.text(
            0.99,
            0.97,
            f"zoomed: earlier loss up to {fmt_value(peak)}",
            ha="right",
            va="top",
            fontsize=FONT_PT * 0.8,
            color="#777777",
            transform=ax.transAxes,
        )
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.tick_params(axis="both", labelsize=FONT_PT, length=3)
    ax.tick_params(axis="y", colors=LOSS_COLOR)
    ax.grid(alpha=0.25)
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)


def _legend(fig: Figure, ax: Axes, handles: list[Artist]) -> None:
    """The legend above the plot, or "no metrics yet" in it; then the layout."""
    if handles:
        # Above the plot, where a title would be: never over the curve.
        fig.legend(
            handles=handles,
            loc="upper center",
            ncol=min(len(handles), 2 if len(handles) > 3 else 3),
            fontsize=FONT_PT,
            frameon=False,
            handlelength=1.4,
            columnspacing=1.0,
            borderaxespad=0.2,
        )
    else:
        ax.text(
            0.5,
            0.5,
            "no metrics yet",
            ha="center",
            va="center",
            fontsize=FONT_PT,
            transform=ax.transAxes,
        )
    rows = 0 if not handles else (1 if len(handles) <= 3 else 2)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.1 * rows), pad=0.3)


#: The loss axis is fitted to the newest part of the run (this share of its time span): the
#: warm-up's fall (10 → 2.8) would otherwise flatten the weeks that matter into a line.
RECENT_SHARE = 0.9
#: ...when the earlier loss reaches this far above the recent stretch's range.
ZOOM_WHEN = 1.5


def loss_zoom(
    times: Sequence[datetime], losses: Sequence[float]
) -> tuple[float, float, float] | None:
    """(bottom, top, earlier peak) of a loss axis fitted to the newest `RECENT_SHARE` of the
    time span, or None when the whole curve already reads well (nothing earlier is more than
    `ZOOM_WHEN` ranges above it). Points above the top leave the plot through its top edge."""
    if len(times) < 3:
        return None
    start, end = times[0], times[-1]
    cut = start + (end - start) * (1 - RECENT_SHARE)
    recent = [v for t, v in zip(times, losses, strict=True) if t >= cut]
    if len(recent) < 2:
        return None
    low, high = min(recent), max(recent)
    span = max(high - low, abs(high) * 0.01, 1e-9)
    peak = max(losses)
    if peak <= high + ZOOM_WHEN * span:
        return None
    pad = span * 0.08
    return min(losses[-1], low) - pad, high + pad, peak


def time_label(formatter: ConciseDateFormatter, locator: Locator, zone: str) -> str:
    """ "time (Europe/Paris)", or with the date the tick labels leave out: "Nov 20, 2026
    (America/Los_Angeles)". It names every month (or day, or year) the axis shows: a chart from
    Nov 24 to Dec 5 says "Nov – Dec 2026", never only the last tick's "Dec 2026". The axis
    limits are final here (autoscaled from the data)."""
    ticks = locator()
    formatter.format_ticks(ticks)
    context = formatter.get_offset()
    if not context:
        return f"time ({zone})"
    axis = locator.axis
    drawn = sorted(axis.get_data_interval()) if axis is not None else []  # not the margins
    if len(ticks) and len(drawn) == 2 and all(math.isfinite(v) for v in drawn):
        from matplotlib import dates as mdates

        tz = resolve_zone(zone)
        left, right = drawn
        first = mdates.num2date(min(left, max(ticks)), tz=tz)
        last = mdates.num2date(max(right, min(ticks)), tz=tz)
        precision = _precision(mdates.num2date(max(ticks), tz=tz), context)
        context = span_caption(first, last, precision) or context
    return f"{context} ({zone})"


def _precision(last_tick: datetime, context: str) -> str | None:
    """Which of the offset formats the formatter used: "day", "month" or "year"."""
    for fmt in OFFSET_FORMATS[3:]:
        if last_tick.strftime(fmt) == context:
            return "day"
    if last_tick.strftime("%b %Y") == context:
        return "month"
    if last_tick.strftime("%Y") == context:
        return "year"
    return None


def span_caption(first: datetime, last: datetime, precision: str | None) -> str | None:
    """The caption for the ticks from `first` to `last`, naming each day ("Nov 30 – Dec 01,
    2026"), month ("Nov – Dec 2026") or year ("2026–2027") they show; None for an unknown
    precision, or a single day (the formatter's own caption already says it)."""
    if precision == "day":
        if first.date() == last.date():
            return None
        if first.year == last.year:
            return f"{first:%b %d} – {last:%b %d, %Y}"
        return f"{first:%b %d, %Y} – {last:%b %d, %Y}"
    if precision == "month":
        if (first.year, first.month) == (last.year, last.month):
            return f"{last:%b %Y}"
        if first.year == last.year:
            return f"{first:%b} – {last:%b %Y}"
        return f"{first:%b %Y} – {last:%b %Y}"
    if precision == "year":
        return f"{last:%Y}" if first.year == last.year else f"{first:%Y}–{last:%Y}"
    return None


def render_chart(
    points: Sequence[MetricPoint],
    restarts: Sequence[datetime] = (),
    *,
    zone: str = "UTC",
    loss_curve: Callable[[float], float | None] | None = None,
) -> bytes:
    """`draw_chart` as PNG bytes, at `SCALE`× the nominal size."""
    fig = draw_chart(points, restarts, zone=zone, loss_curve=loss_curve)
    buffer = io.BytesIO()
    try:
        # zlib level 1: a third of the encode time for a few percent more bytes (flat colours)
        fig.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        return buffer.getvalue()
    finally:
        # Not registered with pyplot, so nothing else holds it: clearing breaks the figure's
        # internal reference cycles and its memory is returned at once, not at the next GC.
        fig.clear()
        del fig


class ChartCache:
    """PNG bytes per run, with the data version they were drawn at.

    - `get(slug, version)`: the chart for exactly this version, if drawn.
    - `ready(slug, version)`: what `/status` may attach without drawing: this version, or the
      run's last chart if it was drawn less than `min_interval` seconds ago (points arrive every
      few seconds; the chart is redrawn at most once a minute however often they do).
    - `latest(slug)`: the run's newest finished chart, whatever version it was drawn at: what
      `/status` attaches while a newer one is drawn in the background.
    - `get_or_draw(slug, version, draw)`: single flight: one draw at a time per run, and only
      one draw at a time overall (a burst of misses costs one render, and one figure's memory);
      concurrent misses await the same future. A failed draw (None or an exception) caches
      nothing and gives None to everyone waiting on it."""

    def __init__(
        self,
        size: int = 16,
        *,
        min_interval: float = REDRAW_EVERY,
        clock: Callable[[], float] = _now,
    ):
        self._items: OrderedDict[str, tuple[str, float, bytes]] = OrderedDict()
        self._size = size
        self._min_interval = min_interval
        self._clock = clock
        self._drawing: dict[str, tuple[str, asyncio.Future[bytes | None]]] = {}
        self._one_render = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()  # draws in flight
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

    def latest(self, slug: str) -> bytes | None:
        item = self._items.get(slug)
        if item is None:
            return None
        self._items.move_to_end(slug)
        self.hits += 1
        return item[2]

    def version_of(self, slug: str) -> str | None:
        """The data version the run's newest chart was drawn at (None: never drawn)."""
        item = self._items.get(slug)
        return None if item is None else item[0]

    def put(self, slug: str, version: str, png: bytes) -> None:
        # An older version of this run's chart is never wanted again: one entry per run.
        self._items[slug] = (version, self._clock(), png)
        self._items.move_to_end(slug)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    async def aclose(self) -> None:
        """End every draw in flight (at shutdown: none may read a store being closed)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

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
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
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
                started = _now()
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
            # One line a minute at most per active run: when a chart became the newest, and
            # which (its digest: what a reader, or bench_charts.py, matches an attachment to).
            log.info(
                "chart of %s drawn at version %s in %.0f ms (%d bytes, sha256 %s)",
                slug,
                version,
                (_now() - started) * 1000,
                len(png),
                hashlib.sha256(png).hexdigest()[:16],
            )
        if not future.done():
            future.set_result(png)


def _consume(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # already turned into None for the waiters; never "never retrieved"


def draw_forecast_chart(
    steps: Sequence[int],
    values: Sequence[float],
    band: Sequence[tuple[int, float, float, float]] = (),
    *,
    drift_step: int | None = None,
    note: str = "",
) -> Figure:
    """One watched metric against its forecast: the values by step, the trend line and its band
    (`band`: (step, low, forecast, high) at the ends of a straight stretch), where a drift began.
    Laid out like the loss chart (400 px at 11 pt, drawn at 2×) and, like it, without a title:
    the embed above names the metric."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    _imported()
    fig = Figure(figsize=FIGSIZE, dpi=NOMINAL_DPI * SCALE)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.tick_params(labelsize=FONT_PT)
    if steps:
        ax.plot(list(steps), list(values), color=LOSS_COLOR, linewidth=1.2, label="value")
    if band:
        xs = [b[0] for b in band]
        ax.fill_between(
            xs, [b[1] for b in band], [b[3] for b in band], color=PREDICTED_COLOR, alpha=0.18,
            linewidth=0, label="forecast band",
        )  # fmt: skip
        ax.plot(xs, [b[2] for b in band], color=PREDICTED_COLOR, linewidth=1.2, linestyle="--",
                label="forecast")  # fmt: skip
    if drift_step is not None:
        ax.axvline(drift_step, color=RESTART_COLOR, linewidth=1.0, alpha=0.8, label="drift began")
    if steps:
        ax.legend(loc="upper left", fontsize=FONT_PT, frameon=False)
    else:
        ax.text(0.5, 0.5, "no values yet", ha="center", va="center", fontsize=FONT_PT,
                transform=ax.transAxes)  # fmt: skip
    if note:
        ax.text(0.99, 0.02, note, ha="right", va="bottom", fontsize=FONT_PT, color="#777777",
                transform=ax.transAxes)  # fmt: skip
    ax.set_xlabel("step", fontsize=FONT_PT)
    ax.grid(alpha=0.25)
    fig.tight_layout()
    return fig


def render_forecast_chart(
    steps: Sequence[int],
    values: Sequence[float],
    band: Sequence[tuple[int, float, float, float]] = (),
    *,
    drift_step: int | None = None,
    note: str = "",
) -> bytes:
    """`draw_forecast_chart` as PNG bytes (blocking: call it in a worker thread)."""
    fig = draw_forecast_chart(steps, values, band, drift_step=drift_step, note=note)
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        fig.clear()  # as in render_chart: its memory back at once, not at the next collection
        del fig
