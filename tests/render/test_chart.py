"""The /status loss chart as Discord shows it: drawn from a real store, inspected through the
matplotlib figure (`draw_chart`) rather than its pixels, and the PNG's own header for its size."""

from __future__ import annotations

import struct
from datetime import UTC, datetime, timedelta

import pytest
from matplotlib import dates as mdates
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.text import Text

from bot.models import RESTORE, Event, MetricPoint, Restart, RunInfo
from bot.render.cards import status_card
from bot.render.chart import (
    DISPLAY_WIDTH_PX,
    NOMINAL_DPI,
    RESTART_GID,
    draw_chart,
    render_chart,
)
from bot.render.drawer import ChartDrawer
from bot.render.terminal import local_formatter
from bot.services.narrative import Narrative
from bot.services.status import build_status, chart_series
from bot.store import Store

START = datetime(2026, 8, 1, tzinfo=UTC)
RUN = "e/p/hero-1"
# Restores that repeat only a few steps: in the downsampled points (the last point of each
# ~50 min display bucket) the step still goes up across them, so the points cannot show them.
RESTORES = [(i * 350 + 100, 3) for i in range(1, 6)]  # (point index of the resume, steps back)


def series_points() -> list[MetricPoint]:
    points, step = [], 0
    restore_at = dict(RESTORES)
    for i in range(2000):  # every 10 min for ~14 days: more than the chart's 400 buckets
        step = step - restore_at[i] if i in restore_at else step + 1
        points.append(
            MetricPoint(
                RUN,
                step=step,
                at=START + timedelta(minutes=10 * i),
                tokens=step * 4.2e9,
                loss=4.0 - i / 1000,
            )
        )
    return points


def restart_event(slug: str, point: MetricPoint, *, deleted: bool = False) -> Event:
    return Event(
        run_slug=slug,
        source="wandb",
        external_id=f"restart:restore:{RUN}:{point.step}:{point.at.isoformat()}",
        kind="restart",
        at=point.at,
        ref="hero-1",
        title=f"W&B run hero-1 resumed from step {point.step:,}",
        extra=Restart(
            point.at, RESTORE, RUN, from_step=point.step + 3, to_step=point.step
        ).to_json(),
        deleted=deleted,
    )


async def seed(store: Store) -> list[MetricPoint]:
    points = series_points()
    await store.runs.upsert(
        RunInfo(
            slug="hero",
            name="Hero 535B",
            total_steps=10_000,
            timezone="Europe/Paris",
            config={"wandb_runs": [RUN]},
        )
    )
    await store.runs.upsert(RunInfo(slug="side", name="Side", config={"wandb_runs": ["e/p/s"]}))
    await store.metrics.add_points("hero", points)
    resumed = [points[i] for i, _ in RESTORES]
    await store.events.upsert_many(
        [restart_event("hero", p) for p in resumed]
        + [restart_event("side", points[50])]  # another run's restart
        + [restart_event("hero", points[1600], deleted=True)]  # withdrawn
    )
    return resumed


def figure_texts(fig: Figure) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def legend_texts(fig: Figure) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def restart_marks(fig: Figure) -> list[float]:
    marks = [a for a in fig.findobj(LineCollection) if a.get_gid() == RESTART_GID]
    assert len(marks) == 1
    return sorted(float(segment[0][0]) for segment in marks[0].get_segments())


def png_size(png: bytes) -> tuple[int, int]:
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


async def test_every_stored_restart_is_marked_even_between_downsampled_points(
    store: Store,
) -> None:
    resumed = await seed(store)
    series = await chart_series(store, "hero")

    # The downsampled points the chart plots do not show all five (some fall inside a bucket).
    assert len(series.points) < 2000
    assert not {p.at for p in resumed} <= {p.at for p in series.points}
    # The stored events do: all five, not the other run's, not the withdrawn one.
    assert series.restarts == [p.at for p in resumed]

    fig = draw_chart(series.points, series.restarts, zone=series.zone)
    assert restart_marks(fig) == pytest.approx(list(mdates.date2num([p.at for p in resumed])))
    assert "5 restarts" in legend_texts(fig)


async def test_chart_reads_at_discord_size(store: Store) -> None:
    await seed(store)
    series = await chart_series(store, "hero")
    assert series.zone == "Europe/Paris"
    fig = draw_chart(series.points, series.restarts, zone=series.zone)

    # the latest loss and tokens in the legend, with the one token formatter's words
    latest = series.points[-1]
    assert latest.loss is not None and latest.tokens is not None
    labels = legend_texts(fig)
    assert latest.at == START + timedelta(minutes=10 * 1999)  # the newest point
    assert latest.loss == pytest.approx(2.001) and latest.tokens == pytest.approx(8.316e12)
    assert labels[:2] == ["loss 2.001", "8.32T tokens"]  # as the card writes both
    # the time axis names its zone
    assert fig.axes[0].get_xlabel().endswith("(Europe/Paris)")

    # No title: the embed above the image has one. Nothing repeats the run's name either.
    now = START + timedelta(days=14)
    report = await build_status(store, "hero", now)
    card = status_card(
        report, Narrative("x", now, "template"), local_formatter("Europe/Paris", now)
    )
    assert fig.get_suptitle() == "" and all(ax.get_title() == "" for ax in fig.axes)
    texts = [t.get_text() for t in figure_texts(fig)]
    assert card.title not in texts
    assert not any(report.run.name in text for text in texts)

    # Legible at 400 px: every text is at least 11 pt once the figure is shown that wide.
    fig.canvas.draw()
    shown_at = DISPLAY_WIDTH_PX / (fig.get_figwidth() * NOMINAL_DPI)
    sizes = {t.get_text(): t.get_fontsize() * shown_at for t in figure_texts(fig)}
    assert sizes and min(sizes.values()) >= 11, sizes
    # ... and nothing drawn reaches past the figure's edges (inches, a hair of tolerance).
    drawn = fig.get_tightbbox()
    assert drawn is not None
    assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01, drawn
    assert drawn.x1 <= fig.get_figwidth() + 0.01 and drawn.y1 <= fig.get_figheight() + 0.01

    # The legend sits above the plot, where a title would be, never over the curves.
    (legend,) = fig.legends
    assert legend.get_window_extent().y0 >= fig.axes[0].get_window_extent().y1 - 1

    # Drawn at 2×: the PNG is twice the nominal 400 px figure.
    # ... and the PNG the bot attaches, drawn by its chart process, is the same figure.
    drawer = ChartDrawer()
    try:
        png = await drawer.loss_chart(series)
    finally:
        await drawer.aclose()
    assert png == render_chart(series.points, series.restarts, zone=series.zone)
    width, height = png_size(png)
    nominal = fig.get_figwidth() * NOMINAL_DPI
    assert 400 <= nominal <= 800
    assert width >= 2 * nominal and width >= 2 * DISPLAY_WIDTH_PX
    assert height == pytest.approx(2 * fig.get_figheight() * NOMINAL_DPI, abs=1)


def test_time_axis_is_in_the_runs_zone() -> None:
    t0 = datetime(2026, 9, 1, 18, 0, tzinfo=UTC)  # 03:00 on Sep 2 in Tokyo (UTC+9)
    points = [
        MetricPoint(RUN, step=i, at=t0 + timedelta(minutes=5 * i), tokens=i * 1e9, loss=3.0)
        for i in range(72)  # six hours
    ]
    tokyo = draw_chart(points, zone="Asia/Tokyo")
    axis = tokyo.axes[0].xaxis
    tokyo.canvas.draw()
    # The day the hour labels leave out is Tokyo's, named with its zone.
    assert axis.get_label_text() == "Sep 02, 2026 (Asia/Tokyo)"
    labels = {t.get_text() for t in axis.get_ticklabels() if t.get_text()}
    in_view = [
        t
        for t in (mdates.num2date(v) for v in axis.get_majorticklocs())
        if t0 <= t <= points[-1].at and t.minute == 0
    ]
    assert in_view
    # Hour labels read in Tokyo time: 03:00 … 09:00, never UTC's 18:00 … 23:00.
    assert {f"{(t.hour + 9) % 24:02d}:00" for t in in_view} <= labels
    assert not {f"{h}:00" for h in range(18, 24)} & labels


def test_a_chart_without_metrics_says_so() -> None:
    fig = draw_chart([], zone="UTC")
    texts = [t.get_text() for t in figure_texts(fig)]
    assert "no metrics yet" in texts and not fig.legends
    assert png_size(render_chart([], zone="Nowhere/Else"))[0] == 2 * DISPLAY_WIDTH_PX


def test_one_restart_is_labelled_in_the_singular_with_the_predicted_curve() -> None:
    t0 = datetime(2026, 9, 1, tzinfo=UTC)
    points = [
        MetricPoint(RUN, step=i, at=t0 + timedelta(hours=i), tokens=i * 1e9, loss=3 - i / 100)
        for i in range(1, 50)
    ]
    fig = draw_chart(points, [points[20].at], zone="UTC", loss_curve=lambda s: 3.05 - s / 100)
    labels = legend_texts(fig)
    assert labels == ["loss 2.51", "predicted", "49B tokens", "restart"]
    assert len(restart_marks(fig)) == 1


async def test_status_page_marks_a_restart_behind_many_newer_wandb_events(store: Store) -> None:
    """The page's chart reads restarts by kind, so a busy W&B history after a restart (more
    events than any fixed scan of the newest ones) cannot hide it."""
    from bot.outputs.statuspage import RESTART_SCAN, chart_data

    resumed = await seed(store)
    noise_at = resumed[-1].at + timedelta(minutes=1)
    await store.events.upsert_many(
        [
            Event(
                run_slug="hero",
                source="wandb",
                external_id=f"state:{i}",
                kind="state",
                at=noise_at + timedelta(seconds=i),
                ref="hero-1",
                title="W&B run hero-1 is running",
            )
            for i in range(RESTART_SCAN + 50)
        ]
    )
    data = await chart_data(store, "hero")
    assert [at for _, at in data.restarts] == [p.at for p in resumed]
    assert [step for step, _ in data.restarts] == [p.step for p in resumed]


def test_forecast_chart_has_no_title_and_reads_at_discord_size() -> None:
    """The /forecast embed names the metric; its chart does not repeat it and is laid out like
    the loss chart: 2× pixels of the 400 px figure."""
    from bot.render.chart import draw_forecast_chart, render_forecast_chart

    args = (
        list(range(0, 1000, 10)),
        [3.0 - i / 1000 for i in range(0, 1000, 10)],
        [(0, 2.8, 3.0, 3.2), (990, 1.8, 2.0, 2.2)],
    )
    fig = draw_forecast_chart(*args, drift_step=800, note="drifting since step 800")
    assert fig.get_suptitle() == "" and all(ax.get_title() == "" for ax in fig.axes)
    fig.canvas.draw()
    shown_at = DISPLAY_WIDTH_PX / (fig.get_figwidth() * NOMINAL_DPI)
    sizes = {t.get_text(): t.get_fontsize() * shown_at for t in figure_texts(fig)}
    assert "drifting since step 800" in sizes and min(sizes.values()) >= 11, sizes
    width, _ = png_size(render_forecast_chart(*args, drift_step=800))
    assert width == 2 * DISPLAY_WIDTH_PX


async def warm_run(store: Store, start: datetime, days: int) -> list[MetricPoint]:
    """A run's whole history in the store: the warm-up's fall from 10 to 2.8 in its first
    six hours, then a slow decline from 2.8 to about 2.5 over the weeks that matter."""
    points = []
    for hour in range(days * 24):
        loss = 10.0 - 7.2 * hour / 6 if hour < 6 else 2.8 - 0.3 * (hour - 6) / (days * 24)
        points.append(
            MetricPoint(
                RUN, hour * 100, start + timedelta(hours=hour), tokens=hour * 1e11, loss=loss
            )
        )
    await store.runs.upsert(
        RunInfo(slug="hero", name="Hero", timezone="America/New_York", config={"wandb_runs": [RUN]})
    )
    await store.metrics.add_points("hero", points)
    return points


async def test_the_time_caption_names_every_month_shown(store: Store) -> None:
    """Nov 9 to Dec 4: ticks in both months, so the caption says both (it said "Dec 2026")."""
    await warm_run(store, datetime(2026, 11, 9, 5, tzinfo=UTC), days=25)
    series = await chart_series(store, "hero")
    fig = draw_chart(series.points, series.restarts, zone=series.zone)
    fig.canvas.draw()
    axis = fig.axes[0].xaxis
    assert axis.get_label_text() == "Nov – Dec 2026 (America/New_York)"
    months = {mdates.num2date(v).month for v in axis.get_majorticklocs()}
    assert months == {11, 12}

    # across a year: both years; within one month: that month alone
    year_end = [MetricPoint(RUN, i, datetime(2026, 12, 20, tzinfo=UTC) + timedelta(hours=6 * i),
                            loss=2.5) for i in range(80)]  # fmt: skip
    fig = draw_chart(year_end, zone="UTC")
    fig.canvas.draw()
    assert fig.axes[0].get_xlabel() == "Dec 2026 – Jan 2027 (UTC)"
    november = [p for p in series.points if p.at < datetime(2026, 11, 28, tzinfo=UTC)]
    fig = draw_chart(november[-200:], zone="UTC")
    fig.canvas.draw()
    assert fig.axes[0].get_xlabel() == "Nov 2026 (UTC)"


async def test_the_loss_axis_shows_the_recent_weeks_not_the_warm_up(store: Store) -> None:
    points = await warm_run(store, datetime(2026, 11, 9, 5, tzinfo=UTC), days=25)
    series = await chart_series(store, "hero")
    fig = draw_chart(series.points, series.restarts, zone=series.zone)
    low, high = fig.axes[0].get_ylim()
    recent = [p.loss for p in points[72:] if p.loss is not None]  # after the first 3 days
    # the weeks that matter fill most of the axis; the warm-up leaves through its top
    assert low <= min(recent) and high >= max(recent)
    assert (max(recent) - min(recent)) / (high - low) > 0.75
    assert high < 3.0 < 10.0
    [note] = [t.get_text() for t in figure_texts(fig) if t.get_text().startswith("zoomed")]
    # the drawn (downsampled) warm-up's highest point, above the axis
    assert note.startswith("zoomed: earlier loss up to ") and float(note.rsplit(" ", 1)[1]) > 8

    # a run without a warm-up to hide is drawn whole, with no note
    fig = draw_chart(points[72:], zone="UTC")
    assert not any(t.get_text().startswith("zoomed") for t in figure_texts(fig))

    # and the chart process draws the same request (the PNG, at Discord's size)
    drawer = ChartDrawer()
    try:
        png = await drawer.loss_chart(series)
    finally:
        await drawer.aclose()
    assert png_size(png)[0] == 2 * DISPLAY_WIDTH_PX
