"""Charts drawn in a real child process (`bot.render.drawer`): the bot's own memory never holds
matplotlib, the child ends when idle and is replaced when it dies, and every failure is a
`ChartError` the caller can answer around, never a hang."""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.analysis.forecast import LossCurve
from bot.models import MetricPoint
from bot.render.chart import render_chart
from bot.render.drawer import ChartDrawer, ChartError, loss_request
from bot.services.status import ChartSeries
from tests.waiting import PATIENCE, until

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 9, 1, tzinfo=UTC)
PNG = b"\x89PNG\r\n\x1a\n"


def series(n: int = 300, zone: object = "Europe/Paris") -> ChartSeries:
    points = [
        MetricPoint("e/p/r", step=i, at=T0 + timedelta(minutes=i), tokens=i * 1e9, loss=3 - i / n)
        for i in range(1, n)
    ]
    curve = LossCurve.from_config([[1, 3.0], [n, 2.0]])
    assert curve is not None
    return ChartSeries(
        points=points,
        restarts=[T0 + timedelta(minutes=n // 2)],
        zone=zone,  # type: ignore[arg-type]
        loss_curve=curve.at,
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead too: its parent has not reaped it yet
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def proc_environ(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")


class HangsWhenUnpickled:
    """Sent to the child, it keeps the child busy for an hour (a draw that hangs)."""

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (time.sleep, (3600,))


class ExitsWhenUnpickled:
    """Sent to the child, it ends the child mid-request (as an out-of-memory kill would)."""

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (os._exit, (3,))


async def test_the_child_draws_what_this_process_would() -> None:
    drawer = ChartDrawer()
    try:
        data = series()
        png = await drawer.loss_chart(data)
        assert png.startswith(PNG)
        assert png == render_chart(
            data.points, data.restarts, zone=data.zone, loss_curve=data.loss_curve
        )
        pid = drawer.pid
        assert pid is not None and pid != os.getpid() and alive(pid)
        # a warm child serves the next chart: no new process
        await drawer.loss_chart(series(500))
        assert (drawer.started, drawer.drawn, drawer.pid) == (1, 2, pid)
    finally:
        await drawer.aclose()
    assert drawer.pid is None and not alive(pid)


async def test_the_child_gets_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISCORD_TOKEN", "GITHUB_TOKEN", "ANTHROPIC_API_KEY", "WANDB_API_KEY"):
        monkeypatch.setenv(name, f"secret-{name}")
    monkeypatch.setenv("RUNSCRIBE_TZ_PROBE", "kept")
    drawer = ChartDrawer()
    try:
        await drawer.loss_chart(series())
        assert drawer.pid is not None
        environ = proc_environ(drawer.pid)
    finally:
        await drawer.aclose()
    assert b"RUNSCRIBE_TZ_PROBE=kept" in environ and b"MPLBACKEND=Agg" in environ
    assert not [v for v in environ if b"secret-" in v]


async def test_concurrent_charts_share_one_child() -> None:
    drawer = ChartDrawer()
    try:
        pngs = await asyncio.gather(*(drawer.loss_chart(series(100 + 50 * i)) for i in range(4)))
        assert all(p.startswith(PNG) for p in pngs) and len(set(pngs)) == 4
        assert drawer.started == 1
    finally:
        await drawer.aclose()


async def test_an_idle_child_ends_and_a_new_one_starts_on_demand() -> None:
    drawer = ChartDrawer(idle=0.3)
    try:
        await drawer.loss_chart(series())
        first = drawer.pid
        assert first is not None
        await until(lambda: drawer.pid is None and not alive(first), "the idle child ending")
        assert (await drawer.loss_chart(series())).startswith(PNG)
        assert drawer.started == 2 and drawer.pid not in (None, first)
    finally:
        await drawer.aclose()


async def test_a_child_killed_while_idle_is_replaced_without_losing_the_chart() -> None:
    drawer = ChartDrawer()
    try:
        await drawer.loss_chart(series())
        pid = drawer.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await until(lambda: not alive(pid), "the killed child gone")
        assert (await drawer.loss_chart(series())).startswith(PNG)
        assert drawer.started == 2
    finally:
        await drawer.aclose()


async def test_a_child_dying_mid_request_is_a_chart_error_and_the_next_chart_works() -> None:
    drawer = ChartDrawer()
    try:
        with pytest.raises(ChartError, match="ended while drawing"):
            await drawer.loss_chart(series(zone=ExitsWhenUnpickled()))
        assert drawer.pid is None
        assert (await drawer.loss_chart(series())).startswith(PNG)
    finally:
        await drawer.aclose()


async def test_a_failing_draw_is_reported_and_the_child_stays() -> None:
    drawer = ChartDrawer()
    try:
        broken = ChartSeries(points=[MetricPoint("e/p/r", 1, "not a time", 1.0, 2.0)], restarts=[])  # type: ignore[arg-type]
        with pytest.raises(ChartError) as caught:
            await drawer.loss_chart(broken)
        assert "Error" in str(caught.value)
        pid = drawer.pid
        assert pid is not None
        assert (await drawer.loss_chart(series())).startswith(PNG)
        assert drawer.pid == pid
    finally:
        await drawer.aclose()


async def test_closing_ends_a_draw_in_flight_at_once() -> None:
    drawer = ChartDrawer()
    await drawer.loss_chart(series())  # a warm child
    pid = drawer.pid
    assert pid is not None
    child = drawer._child
    hanging = asyncio.create_task(drawer.loss_chart(series(zone=HangsWhenUnpickled())))
    await until(lambda: drawer._lock.locked(), "the draw in flight", every=0.001)
    await drawer.aclose()  # an hour's draw: the test would hang if closing waited for it
    with pytest.raises(ChartError, match="closed while drawing"):
        await hanging
    assert child is not None  # ended, not finished:
    assert await asyncio.wait_for(child.wait(), PATIENCE) == -signal.SIGKILL
    assert drawer.pid is None and drawer.started == 1  # no new child for the closed draw
    assert (await drawer.loss_chart(series())).startswith(PNG)  # usable again
    await drawer.aclose()


async def test_a_chart_past_its_timeout_ends_the_child() -> None:
    drawer = ChartDrawer(timeout=0.001)  # less than any child's start
    try:
        with pytest.raises(ChartError, match="longer than"):
            await drawer.loss_chart(series())
        assert drawer.pid is None
        drawer.timeout = 60
        assert (await drawer.loss_chart(series())).startswith(PNG)
    finally:
        await drawer.aclose()


async def test_without_a_child_charts_are_drawn_in_a_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    drawer = ChartDrawer(python=str(ROOT / "no-such-python"))
    png = await drawer.loss_chart(series())
    assert png.startswith(PNG) and drawer.in_process and drawer.started == 0
    assert "cannot start the chart process" in caplog.text
    await drawer.aclose()


def test_the_bot_process_never_imports_matplotlib() -> None:
    """In a fresh interpreter: draw a chart and a forecast chart the way the bot does; the PNGs
    arrive, and matplotlib was imported by the child only."""
    script = textwrap.dedent(
        """
        import asyncio, sys
        from tests.render.test_drawer import series
        from bot.render.drawer import ChartDrawer

        async def main():
            drawer = ChartDrawer()
            png = await drawer.loss_chart(series())
            await drawer.aclose()
            print(len(png), "matplotlib" in sys.modules)

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    size, imported = done.stdout.split()
    assert int(size) > 10_000 and imported == "False"


def test_the_child_starts_light() -> None:
    """What the child imports before matplotlib: no store, no settings, no pydantic (a tenth of
    its start). The request is plain data (`loss_request`), so unpickling needs none of them."""
    script = textwrap.dedent(
        """
        import pickle, sys
        from bot.render import drawer
        drawer._functions()
        request = pickle.loads(sys.stdin.buffer.read())
        print(sorted(m for m in ("pydantic", "bot.models", "bot.store", "aiosqlite")
                     if m in sys.modules))
        """
    )
    payload = pickle.dumps(loss_request(series()))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, input=payload, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "[]"
