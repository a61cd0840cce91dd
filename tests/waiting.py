"""Waiting for something in a test: for the thing itself, never for a guessed time.

PATIENCE is how long a test waits for something that will happen before it calls it lost: a
guard against a hang, never an estimate of how long the thing takes (a machine shared by
several test runs can take many times a quiet machine's figure). A test that passes only
because something happened *within* a time has no place here: that is a benchmark.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

PATIENCE = 120.0  # seconds


async def until(
    check: Callable[[], T | Awaitable[T]],
    what: str = "condition",
    *,
    within: float = PATIENCE,
    every: float = 0.02,
) -> T:
    """`check()`'s first truthy value (awaited when it returns an awaitable), re-checked every
    `every` seconds; AssertionError naming `what` after `within` seconds without one."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not met after waiting {within:g} s")
        await asyncio.sleep(every)


_SERVING = re.compile(rb"serving the status page on http://[^/]+:(\d+)/")


def served_port(output: bytes) -> int | None:
    """The port a process last said it serves on. Processes under test are started with port 0
    so the system picks a free one: a port probed and released here could be taken by anyone
    before the process binds it."""
    ports = _SERVING.findall(output)
    return int(ports[-1]) if ports else None


async def port_in_log(log: Path, process: asyncio.subprocess.Process) -> int:
    """The port `process` (writing to `log`, started with port 0) says it bound."""

    def said() -> int | None:
        assert process.returncode is None, log.read_text()[-3000:]  # it ended before serving
        return served_port(log.read_bytes())

    return await until(said, "the bound port in the log")
