"""The one loop supervisor: every background loop (the bot's, `runscribe poll`'s) runs its round
through `repeat`, so a failing round is logged and retried with backoff, never the end of the
loop, and cancellation always goes through."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def repeat(
    name: str,
    interval: float,
    body: Callable[[], Awaitable[object]],
    *,
    max_backoff: float = 300.0,
    wake: asyncio.Event | None = None,
    running: Callable[[], bool] = lambda: True,
    first_done: Callable[[], object] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Run `body` every `interval` seconds while `running()`; after a failure wait twice as
    long each time (capped at `max_backoff`) so one broken loop neither spins nor stops the
    others. `wake` (when given) cuts a healthy wait short; after a failure the wait is never
    cut short. `first_done` is called once, after the first round that succeeds."""
    failures = finished = 0
    while running():
        if wake is not None:
            wake.clear()  # a wake-up from now on means work queued after this round began
        try:
            await body()
        except asyncio.CancelledError:
            raise
        except Exception:
            failures += 1
            delay = min(max(interval, 1.0) * 2**failures, max_backoff)
            log.exception("%s loop failed (%d in a row); next try in %.0f s", name, failures, delay)
        else:
            if finished == 0 and first_done is not None:
                first_done()
            finished += 1
            failures = 0
            delay = interval
        if wake is None or failures:
            await sleep(delay)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), delay)


__all__ = ["repeat"]
