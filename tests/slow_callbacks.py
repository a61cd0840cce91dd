"""Nothing may block the event loop: the e2e fixtures run the loop in asyncio's debug mode with
a 100 ms slow-callback threshold and fail the test on any "Executing … took" report."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

THRESHOLD = 0.1  # seconds


class SlowCallbacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reports: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Executing ") and " took " in message:
            self.reports.append(message)


@asynccontextmanager
async def no_slow_callbacks(threshold: float = THRESHOLD) -> AsyncIterator[SlowCallbacks]:
    loop = asyncio.get_running_loop()
    debug, duration = loop.get_debug(), loop.slow_callback_duration
    loop.set_debug(True)
    loop.slow_callback_duration = threshold
    handler = SlowCallbacks()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        loop.set_debug(debug)
        loop.slow_callback_duration = duration
    if handler.reports:
        pytest.fail("the event loop was blocked:\n" + "\n".join(handler.reports[:5]), pytrace=False)
