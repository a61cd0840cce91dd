"""Chart PNGs drawn in a child process, so the bot's own memory never holds matplotlib.

matplotlib's import alone is ~50 MB of a process's memory that CPython never gives back, and a
long-running bot that draws one chart a minute would carry it forever. `ChartDrawer` starts a
child (`python -m bot.render.drawer`) at the first chart, sends it one request at a time over a
pipe, and ends it once it has been idle for `idle` seconds: after a burst of charts the memory
goes with the child. A warm child draws a chart in the same time as a thread would (~100 ms);
a cold one first pays matplotlib's import, on the other core, never on the bot's event loop.

- One request at a time (a lock): a burst of misses is already one draw per version
  (`ChartCache`), and one child holds one figure's memory.
- A child that died while idle (killed, out of memory) is replaced and the request sent again,
  once; a child that fails a request it was started for, or takes longer than `timeout`, is
  ended and the call raises `ChartError` (callers answer without the chart).
- A child that cannot be started at all (no interpreter at `sys.executable`, a process limit)
  leaves charts to a worker thread of this process, with one warning: charts keep working, at
  the memory cost this module exists to avoid.
- The pipe carries pickles between this process and its own child, nothing else: no untrusted
  input is ever unpickled. Frames are a 4-byte big-endian length and the pickle.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import struct
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from bot.core.numbers import fmt_value

if TYPE_CHECKING:
    from bot.services.forecasts import ForecastPanel
    from bot.services.status import ChartSeries

log = logging.getLogger(__name__)

#: Seconds a child may sit idle before it is ended. A burst of commands shares one child; the
#: chart is redrawn at most once a minute, so between bursts the bot holds no child at all.
IDLE_SECONDS = 10.0
#: Seconds one request may take, the child's first import included (a few seconds on a loaded
#: machine); past it the child is ended.
TIMEOUT_SECONDS = 60.0
_HEADER = struct.Struct(">I")
#: Where this `bot` package was imported from: the child imports it from there, whatever its
#: working directory or sys.path tricks (benchmarks, tests, an unpacked checkout).
_IMPORT_ROOT = str(Path(__file__).resolve().parents[2])
_SECRETS = frozenset({"DISCORD_TOKEN", "GITHUB_TOKEN", "ANTHROPIC_API_KEY", "WANDB_API_KEY"})


class ChartError(Exception):
    """A chart could not be drawn (the child failed, died or took too long)."""


# --- the requests ---------------------------------------------------------------------------
# Plain data in, PNG bytes out: what crosses the pipe is a function name from this table and
# its arguments, built here from the services' types, so the child never imports the store.


class _Point(NamedTuple):
    """A metric point as the chart reads it (`MetricPoint`'s fields), in plain types: the child
    then needs neither `bot.models` nor pydantic, a tenth of its start."""

    at: datetime
    step: int
    loss: float | None
    tokens: float | None


def _loss_chart(
    points: list[tuple[datetime, int, float | None, float | None]],
    restarts: list[datetime],
    zone: str,
    predicted: dict[int, float | None] | None,
) -> bytes:
    from bot.render.chart import render_chart

    return render_chart(
        [_Point(*p) for p in points],  # type: ignore[misc]
        restarts,
        zone=zone,
        loss_curve=None if predicted is None else predicted.get,  # type: ignore[arg-type]
    )


def _functions() -> dict[str, Callable[..., bytes]]:
    from bot.render import chart

    return {"loss": _loss_chart, "forecast": chart.render_forecast_chart}


def loss_request(series: ChartSeries) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """The /status chart as plain data; the predicted curve is evaluated here, at each step."""
    curve = series.loss_curve
    points = [(p.at, p.step, p.loss, p.tokens) for p in series.points]
    predicted = None if curve is None else {p.step: curve(p.step) for p in series.points}
    return ("loss", (points, list(series.restarts), series.zone, predicted), {})


def forecast_request(panel: ForecastPanel) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    view = panel.view
    return (
        "forecast",
        ([p.step for p in panel.points], [p.value for p in panel.points], panel.band()),
        {"drift_step": view.drift_since_step, "note": view.reason or ""},
    )


# --- this process's side ----------------------------------------------------------------------


class ChartDrawer:
    """Draws charts in a child process (see the module's notes). `in_process=True` draws in a
    worker thread of this process instead (one-shot commands, tests of the figures)."""

    def __init__(
        self,
        *,
        idle: float = IDLE_SECONDS,
        timeout: float = TIMEOUT_SECONDS,
        in_process: bool = False,
        python: str | None = None,
    ):
        self.idle = idle
        self.timeout = timeout
        self.in_process = in_process
        self._python = python or sys.executable
        self._lock = asyncio.Lock()
        self._child: asyncio.subprocess.Process | None = None
        self._retire_timer: asyncio.TimerHandle | None = None
        self._retiring: asyncio.Task[None] | None = None
        self._closing = False
        self.started = 0  # children started, for tests and benchmarks
        self.drawn = 0

    @property
    def pid(self) -> int | None:
        """The running child's pid, or None when there is none."""
        child = self._child
        return child.pid if child is not None and child.returncode is None else None

    async def loss_chart(self, series: ChartSeries) -> bytes:
        """The /status chart of `bot.services.status.chart_series`."""
        return await self._call(*loss_request(series))

    async def forecast_chart(self, panel: ForecastPanel) -> bytes:
        """The `/forecast` chart of one watched metric."""
        return await self._call(*forecast_request(panel))

    async def aclose(self) -> None:
        """End the child (if any) now, a draw in flight included (its caller gets a
        ChartError rather than waiting for it at shutdown); later calls draw in a new one."""
        self._cancel_retire()
        self._closing = True
        try:
            if self._lock.locked():
                self._kill()
            async with self._lock:
                await self._stop()
        finally:
            self._closing = False

    # -- the calls -------------------------------------------------------------------------

    async def _call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
        if self.in_process:
            return await self._in_thread(name, args, kwargs)
        async with self._lock:
            self._cancel_retire()
            try:
                return await self._send(name, args, kwargs)
            finally:
                self._schedule_retire()

    async def _in_thread(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
        function = _functions()[name]
        png = await asyncio.to_thread(function, *args, **kwargs)
        self.drawn += 1
        return png

    async def _send(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
        payload = pickle.dumps((name, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        for attempt in (1, 2):
            fresh = self._child is None or self._child.returncode is not None
            try:
                child = await self._ensure_child()
            except OSError as exc:
                log.warning(
                    "cannot start the chart process (%s); drawing charts in this process", exc
                )
                self.in_process = True
                return await self._in_thread(name, args, kwargs)
            try:
                reply = await asyncio.wait_for(_exchange(child, payload), self.timeout)
            except TimeoutError:
                self._kill()
                raise ChartError(
                    f"the chart took longer than {fmt_value(self.timeout)} s"
                ) from None
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                self._kill()
                if self._closing:
                    raise ChartError("the chart process was closed while drawing") from exc
                if fresh or attempt == 2:
                    raise ChartError("the chart process ended while drawing") from exc
                log.info("the idle chart process was gone; starting a new one")
                continue
            except BaseException:
                # Cancelled mid-exchange: the pipe is in an unknown state, so the child goes.
                self._kill()
                raise
            status, value = pickle.loads(reply)
            if status != "ok":
                raise ChartError(str(value))
            self.drawn += 1
            return bytes(value)
        raise ChartError("no attempt made")  # pragma: no cover - the loop returns or raises

    async def _ensure_child(self) -> asyncio.subprocess.Process:
        child = self._child
        if child is not None and child.returncode is None:
            return child
        # Everything but the credentials: a process that only draws needs none of them.
        env = {k: v for k, v in os.environ.items() if k not in _SECRETS}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_IMPORT_ROOT, env.get("PYTHONPATH")) if p)
        env["MPLBACKEND"] = "Agg"
        self._child = await asyncio.create_subprocess_exec(
            self._python,
            "-m",
            "bot.render.drawer",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        self.started += 1
        return self._child

    # -- ending the child --------------------------------------------------------------------

    def _schedule_retire(self) -> None:
        if self._child is None:
            return
        loop = asyncio.get_running_loop()
        self._retire_timer = loop.call_later(self.idle, self._retire_soon)

    def _cancel_retire(self) -> None:
        if self._retire_timer is not None:
            self._retire_timer.cancel()
            self._retire_timer = None

    def _retire_soon(self) -> None:
        self._retire_timer = None
        self._retiring = asyncio.get_running_loop().create_task(self._retire())

    async def _retire(self) -> None:
        async with self._lock:
            if self._retire_timer is None:  # no request came in meanwhile
                await self._stop()

    async def _stop(self) -> None:
        child, self._child = self._child, None
        if child is None or child.returncode is not None:
            return
        if child.stdin is not None:
            child.stdin.close()  # the child's loop ends at end of input
        try:
            await asyncio.wait_for(child.wait(), 5.0)
        except TimeoutError:
            child.kill()
            await child.wait()

    def _kill(self) -> None:
        child, self._child = self._child, None
        if child is not None and child.returncode is None:
            try:
                child.kill()
            except ProcessLookupError:
                pass


async def _exchange(child: asyncio.subprocess.Process, payload: bytes) -> bytes:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(_HEADER.pack(len(payload)) + payload)
    await child.stdin.drain()
    (size,) = _HEADER.unpack(await child.stdout.readexactly(_HEADER.size))
    return await child.stdout.readexactly(size)


# --- the child's side --------------------------------------------------------------------------


def _read_frame(stream: BinaryIO) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None  # end of input: the parent is done with us (or gone)
    (size,) = _HEADER.unpack(header)
    body = stream.read(size)
    return body if len(body) == size else None


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """Answer requests until end of input: each a (function name, args, kwargs) pickle, each
    answered ("ok", png) or ("error", "what went wrong")."""
    functions = _functions()  # matplotlib is imported by the first draw
    while (frame := _read_frame(requests)) is not None:
        try:
            name, args, kwargs = pickle.loads(frame)
            reply: tuple[str, object] = ("ok", functions[name](*args, **kwargs))
        except Exception as exc:
            reply = ("error", f"{type(exc).__name__}: {exc}")
        body = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        replies.write(_HEADER.pack(len(body)) + body)
        replies.flush()


def main() -> None:
    # The protocol gets its own copy of stdout; file descriptor 1 then points at stderr, so a
    # stray print or a library's warning can never corrupt a frame.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        serve(sys.stdin.buffer, replies)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
