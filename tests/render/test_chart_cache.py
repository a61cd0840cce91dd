"""The chart cache: one draw per run at a time however many ask, at most one redraw a minute
however often points arrive, and a failed draw that caches nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.models import MetricPoint
from bot.render.chart import ChartCache, render_chart


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Drawer:
    """A draw that waits to be released, counting how many ran at once."""

    def __init__(self) -> None:
        self.calls = 0
        self.running = 0
        self.most_at_once = 0
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    async def __call__(self) -> bytes | None:
        self.calls += 1
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        self.started.set()
        try:
            await self.release.wait()
            return f"png{self.calls}".encode()
        finally:
            self.running -= 1


async def test_concurrent_misses_share_one_draw() -> None:
    cache = ChartCache(clock=Clock())
    draw = Drawer()
    waiters = [asyncio.create_task(cache.get_or_draw("hero", "v1", draw)) for _ in range(25)]
    await draw.started.wait()
    draw.release.set()
    assert await asyncio.gather(*waiters) == [b"png1"] * 25
    assert draw.calls == 1 and cache.draws == 1
    assert cache.get("hero", "v1") == b"png1"


async def test_one_render_at_a_time_across_runs() -> None:
    cache = ChartCache(clock=Clock())
    draw = Drawer()
    first = asyncio.create_task(cache.get_or_draw("a", "v1", draw))
    second = asyncio.create_task(cache.get_or_draw("b", "v1", draw))
    await draw.started.wait()
    draw.release.set()
    assert sorted(await asyncio.gather(first, second)) == [b"png1", b"png2"]
    assert draw.calls == 2 and draw.most_at_once == 1


async def test_redrawn_at_most_once_a_minute() -> None:
    clock = Clock()
    cache = ChartCache(clock=clock, min_interval=60.0)
    draw = Drawer()
    draw.release.set()
    assert await cache.get_or_draw("hero", "v1", draw) == b"png1"
    clock.now += 59
    assert cache.ready("hero", "v2") == b"png1"  # newer points, but drawn 59 s ago
    assert await cache.get_or_draw("hero", "v3", draw) == b"png1"
    assert cache.get("hero", "v3") is None  # an exact lookup still tells them apart
    clock.now += 2
    assert cache.ready("hero", "v3") is None
    assert await cache.get_or_draw("hero", "v3", draw) == b"png2"
    assert draw.calls == 2


async def test_a_failed_draw_caches_nothing_and_answers_none() -> None:
    cache = ChartCache(clock=Clock())

    async def broken() -> bytes | None:
        raise RuntimeError("no fonts")

    assert await cache.get_or_draw("hero", "v1", broken) is None
    assert cache.ready("hero", "v1") is None
    draw = Drawer()
    draw.release.set()
    assert await cache.get_or_draw("hero", "v1", draw) == b"png1"  # the next ask draws again


async def test_a_waiter_giving_up_does_not_cancel_the_draw() -> None:
    cache = ChartCache(clock=Clock())
    draw = Drawer()
    impatient = asyncio.create_task(cache.get_or_draw("hero", "v1", draw))
    patient = asyncio.create_task(cache.get_or_draw("hero", "v1", draw))
    await draw.started.wait()
    impatient.cancel()
    draw.release.set()
    assert await patient == b"png1"
    assert impatient.cancelled()
    assert cache.get("hero", "v1") == b"png1"


def test_render_chart_draws_a_png() -> None:
    t0 = datetime(2026, 9, 1, tzinfo=UTC)
    points = [
        MetricPoint("e/p/a", step=i, at=t0 + timedelta(minutes=i), tokens=i * 1e9, loss=3 - i / 100)
        for i in range(50)
    ]
    png = render_chart(points, zone="UTC")
    assert png.startswith(b"\x89PNG") and len(png) > 1000


async def test_closing_ends_the_draws_in_flight() -> None:
    """At shutdown no draw may go on reading a store that is being closed: `aclose` ends it,
    its waiters get None and nothing is cached."""
    cache = ChartCache(clock=Clock())
    draw = Drawer()
    waiter = asyncio.create_task(cache.get_or_draw("hero", "v1", draw))
    await draw.started.wait()
    await cache.aclose()
    assert draw.running == 0  # the draw was cancelled, not left waiting
    assert await waiter is None
    assert cache.latest("hero") is None


def test_latest_is_the_newest_chart_whatever_its_version() -> None:
    cache = ChartCache(clock=Clock())
    assert cache.latest("hero") is None and cache.version_of("hero") is None
    cache.put("hero", "v1", b"one")
    cache.put("hero", "v2", b"two")
    assert cache.latest("hero") == b"two" and cache.version_of("hero") == "v2"
    assert cache.ready("hero", "v3") == b"two"  # drawn under a minute ago: still ready
