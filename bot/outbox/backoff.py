"""Rate limits and backoff: what a failed try of an outbox item leads to.

A rate limit waits exactly what the server said (`retry_after`), inside the drain, so a 429 storm
costs about the sum of its `retry_after` values; an error the transport has already retried with
its own waits (`DeliveryError.retried`) is tried again at the next drain; other transient
failures back off 2, 4, 8 … seconds capped at `BACKOFF_CAP`, and a channel backing off from a
server error is tried again at once when a request elsewhere succeeds (the outage is over). A
refusal (403, 404, 401: no access) is held (`bot.outbox.refusals`); other 4xx answers are tried
`MAX_PERMANENT_ATTEMPTS` times."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.models import OutboxItem
from bot.outbox.dedup import SentCheck
from bot.outbox.lanes import DrainReport
from bot.outbox.refusals import Refusals
from bot.outbox.transport import DeliveryError
from bot.store import Store
from bot.store.live import LIVE_KIND

log = logging.getLogger(__name__)

BACKOFF_BASE = 2.0  # seconds; doubles per attempt
BACKOFF_CAP = 25.0  # a long outage is retried at least this often: with the outbox loop's
# 2 s tick, an alert queued during an outage goes out within 30 s of its end
RETRY_AFTER_CAP = 600.0  # a server's retry_after is obeyed up to this
IN_DRAIN_WAIT = 5.0  # a retry_after up to this is waited inside the drain, not the next loop
MAX_PERMANENT_ATTEMPTS = 6  # a 4xx neither 429 nor a refusal: tried this often, then failed


def backoff_delay(
    attempts: int, retry_after: float | None = None, base: float = BACKOFF_BASE
) -> float:
    """Seconds before the next try after `attempts` failed ones. When the server said how long
    (`retry_after`), exactly that: a rate limit is not a fault to back off from. Otherwise base,
    2·base, 4·base … capped at `BACKOFF_CAP`."""
    if retry_after is not None:
        return max(0.0, min(retry_after, RETRY_AFTER_CAP))
    return min(BACKOFF_CAP, base * (2 ** min(attempts, 20)))


@dataclass(slots=True, frozen=True)
class RateLimited:
    """The item was rate limited: try it again in `delay` seconds, within this drain."""

    delay: float


class Failures:
    """Records a failed try: held (refused), retried later, retried within the drain (rate
    limited) or given up. Remembers which items back off from a server error, so a request that
    goes through elsewhere wakes them."""

    def __init__(
        self,
        store: Store,
        refusals: Refusals,
        sent: SentCheck,
        clock: Callable[[], datetime],
        backoff_base: float,
    ):
        self.store = store
        self.refusals = refusals
        self.sent = sent
        self.clock = clock
        self.backoff_base = backoff_base
        self.server_down: set[int] = set()  # items backing off from a server error

    async def failed(
        self, item: OutboxItem, exc: DeliveryError | TimeoutError, report: DrainReport
    ) -> bool | RateLimited:
        """True: the lane goes on (the item is done); False: the lane stops for this drain."""
        assert item.id is not None
        self.sent.ended(item.id, self.clock())
        if isinstance(exc, DeliveryError) and exc.refused and item.kind != LIVE_KIND:
            # no access: held for hours (or given up past that), never after a minute
            self.server_down.discard(item.id)
            held = await self.refusals.refused(item, exc.reason, item.attempts)
            (report.held if held else report.abandoned).append(item.id)
            return False
        permanent = isinstance(exc, DeliveryError) and exc.permanent
        retry_after = exc.retry_after if isinstance(exc, DeliveryError) else None
        error = str(exc) or type(exc).__name__
        final = isinstance(exc, DeliveryError) and exc.final
        if retry_after is None and not (final and getattr(exc, "status", None) != 403):
            # the channel's last try failed (a rate limit is pacing; a deleted message or an
            # edit of a post never made is no fault of the channel's): /healthz says so until a
            # post there goes through
            why = exc.reason if isinstance(exc, DeliveryError) else error
            await self.refusals.failed(item.channel_id, why)
        give_up = permanent and (final or item.attempts + 1 >= MAX_PERMANENT_ATTEMPTS)
        delay = backoff_delay(item.attempts, retry_after, self.backoff_base)
        if isinstance(exc, DeliveryError) and exc.retried and retry_after is None:
            delay = 0.0  # the transport's own retries were the wait
        next_at = self.clock() + timedelta(seconds=delay)
        await self.store.outbox.mark_retry(item.id, error, next_at, give_up=give_up)
        if retry_after is None and not permanent:
            self.server_down.add(item.id)
        else:
            self.server_down.discard(item.id)
        if give_up:
            self._gave_up(item, error, final=final)
            report.failed.append(item.id)
            return True  # a dead item must not block its channel forever
        log.warning(
            "outbox item %s to channel %s failed (attempt %d), retrying in %.1f s: %s",
            item.id, item.channel_id, item.attempts + 1, delay, error,
        )  # fmt: skip
        if item.id not in report.retried:
            report.retried.append(item.id)
        if retry_after is not None and delay <= IN_DRAIN_WAIT:
            return RateLimited(delay)
        return False

    def _gave_up(self, item: OutboxItem, error: str, *, final: bool) -> None:
        assert item.id is not None
        if final:
            log.warning(
                "outbox item %s (%s) to channel %s cannot succeed, ended at once: %s",
                item.id, item.kind, item.channel_id, error,
            )  # fmt: skip
            return
        log.error(
            "outbox item %s (%s) to channel %s failed %d times, giving up: %s",
            item.id, item.kind, item.channel_id, item.attempts + 1, error,
        )  # fmt: skip
        self.sent.tried_until.pop(item.id, None)
