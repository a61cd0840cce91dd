"""The one loop supervisor: every background loop (the bot's, `runscribe poll`'s) runs its round
through `repeat`, so a failing round is logged and retried with backoff, never the end of the
loop, and cancellation always goes through.

A backoff is a ceiling, not a sentence: it ends at once when there is news that the next round
can go through —

- the loop's `wake` event (new work queued: an alert for the poster, a push for the hooks);
- another loop of the process going through after failing (`Retries`: the store is writable
  again, access is back), which retries every loop waiting out a backoff;
- the loop's `probe` (asked every `probe_every` seconds while it backs off) saying the cause of
  the failure is gone (the store takes a write again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence

log = logging.getLogger(__name__)

#: Seconds between two looks of a loop's `probe` while it backs off.
PROBE_EVERY = 5.0

#: Whether the cause of a failed round has gone (the error the round raised): a probe.
Probe = Callable[[Exception], Awaitable[bool]]


class Retries:
    """What the loops of one process share: a loop whose round goes through after failing
    says so (`recovered`), and every loop then waiting out a backoff tries again at once (the
    store that failed them all is writable again, or access came back)."""

    def __init__(self) -> None:
        self._waiting: set[asyncio.Event] = set()

    def recovered(self) -> None:
        for event in self._waiting:
            event.set()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[asyncio.Event]:
        """An event set when another loop recovers, for as long as the block waits."""
        event = asyncio.Event()
        self._waiting.add(event)
        try:
            yield event
        finally:
            self._waiting.discard(event)


async def first_of(events: Sequence[asyncio.Event], within: float) -> bool:
    """Wait until one of `events` is set or `within` seconds pass; whether one was set."""
    if any(event.is_set() for event in events):
        return True
    if not events:
        await asyncio.sleep(within)
        return False
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        done, _ = await asyncio.wait(waiters, timeout=within, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    return bool(done)


async def _back_off(
    delay: float,
    events: Sequence[asyncio.Event],
    error: Exception,
    probe: Probe | None,
    probe_every: float,
) -> None:
    """Wait out a backoff of `delay` seconds, cut short by any of `events` or by the probe."""
    loop = asyncio.get_running_loop()
    end = loop.time() + delay
    while (left := end - loop.time()) > 0:
        step = left if probe is None else min(left, probe_every)
        if await first_of(events, step):
            return
        if probe is not None and loop.time() < end and await _probed(probe, error):
            return


async def _probed(probe: Probe, error: Exception) -> bool:
    try:
        return await probe(error)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a probe that fails says "not yet", nothing more
        log.debug("loop probe failed: %s", exc)
        return False


async def repeat(
    name: str,
    interval: float,
    body: Callable[[], Awaitable[object]],
    *,
    max_backoff: float = 300.0,
    wake: asyncio.Event | None = None,
    retries: Retries | None = None,
    probe: Probe | None = None,
    probe_every: float = PROBE_EVERY,
    running: Callable[[], bool] = lambda: True,
    first_done: Callable[[], object] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Run `body` every `interval` seconds while `running()`; after a failure wait twice as
    long each time (capped at `max_backoff`) so one broken loop neither spins nor stops the
    others. `wake` (when given) cuts any wait short, a healthy one or a backoff; so do
    `retries` (another loop recovered) and `probe` during a backoff (see the module). A loop
    with none of them waits with `sleep`. `first_done` is called once, after the first round
    that succeeds. A failure's traceback is logged when its cause is new, one line after."""
    failures = finished = 0
    said: str | None = None
    while running():
        if wake is not None:
            wake.clear()  # a wake-up from now on means work queued after this round began
        try:
            await body()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failures += 1
            delay = min(max(interval, 1.0) * 2**failures, max_backoff)
            cause = f"{type(exc).__name__}: {exc}"
            log.error(
                "%s loop failed (%d in a row); next try in %.0f s at most",
                name,
                failures,
                delay,
                exc_info=exc if cause != said else None,
            )
            said = cause
            await _wait_after_failure(delay, exc, wake, retries, probe, probe_every, sleep)
            continue
        if finished == 0 and first_done is not None:
            first_done()
        finished += 1
        if failures and retries is not None:
            log.info("%s loop works again after %d failed rounds", name, failures)
            retries.recovered()
        failures, said = 0, None
        if wake is None:
            await sleep(interval)
        else:
            await first_of([wake], interval)


async def _wait_after_failure(
    delay: float,
    error: Exception,
    wake: asyncio.Event | None,
    retries: Retries | None,
    probe: Probe | None,
    probe_every: float,
    sleep: Callable[[float], Awaitable[None]],
) -> None:
    if wake is None and retries is None and probe is None:
        await sleep(delay)
        return
    events = [wake] if wake is not None else []
    if retries is None:
        await _back_off(delay, events, error, probe, probe_every)
        return
    with retries.waiting() as news:
        await _back_off(delay, [*events, news], error, probe, probe_every)


__all__ = ["PROBE_EVERY", "Probe", "Retries", "first_of", "repeat"]
