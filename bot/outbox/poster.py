"""The poster: drains the outbox through a platform `Transport`, in order per channel, with
backoff, and with the crash-safe "was it already sent?" check. The Discord half
(`bot.app.DiscordTransport`) only turns an `OutgoingMessage` into an HTTP call and classifies
errors.

Each of the poster's jobs has its own module, and the poster runs a drain through them:

- lanes and ordering (`bot.outbox.lanes`): channels in parallel, items within a channel strictly
  in id order, a channel stopped at its first failure;
- sending and edits (`bot.outbox.sending`), and the live status message
  (`bot.outbox.live_message`);
- rate limits and backoff (`bot.outbox.backoff`);
- refusals and abandonment (`bot.outbox.refusals`): a post Discord refuses is held for hours,
  then given up and reported in its channel;
- markers and restart dedup (`bot.outbox.dedup`, `bot.outbox.markers`): a retried or restarted
  post is found in the channel's history by its marker instead of being sent twice."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from bot.core.timeutil import utcnow
from bot.models import OutboxItem
from bot.outbox.backoff import BACKOFF_BASE, Failures, RateLimited
from bot.outbox.dedup import SentCheck
from bot.outbox.lanes import DrainReport, Lane, plan_channels, run_lanes
from bot.outbox.live_message import ChartSource, LiveMessages
from bot.outbox.payload import ParsedPayload, PayloadError, parse_payload
from bot.outbox.refusals import DEFAULT_HOLD, REFUSAL_CAP, Refusals
from bot.outbox.sending import Sender, Wait
from bot.outbox.transport import (
    DeliveryError,
    OutgoingMessage,
    Posted,
    SeenMessage,
    Transport,
    Upload,
)
from bot.store import Store

# `bot.app` (the Discord transport) imports these from here with the poster.
__all__ = [
    "DeliveryError",
    "OutboxPoster",
    "OutgoingMessage",
    "Posted",
    "SeenMessage",
    "Transport",
    "Upload",
]

log = logging.getLogger(__name__)

IN_DRAIN_RETRIES = 50  # rate-limited tries of one item within one drain


class OutboxPoster:
    """Drains the outbox through a Transport. One drain at a time; channels in parallel, items
    within a channel strictly in id order, a channel stopped at its first failure."""

    def __init__(
        self,
        store: Store,
        transport: Transport,
        *,
        clock: Callable[[], datetime] = utcnow,
        backoff_base: float = BACKOFF_BASE,
        batch: int = 500,
        send_timeout: float = 90.0,
        charts: ChartSource | None = None,
        hold: timedelta = DEFAULT_HOLD,
        refusal_cap: float = REFUSAL_CAP,
    ):
        self.store = store
        self.transport = transport
        self.clock = clock
        self.batch = batch
        self.send_timeout = send_timeout
        self.started_at = clock()
        self.sent = SentCheck(store, transport, self.started_at)
        self._newest = self.sent.newest  # channel → newest message id this process knows
        self.refusals = Refusals(store, clock=clock, hold=hold, cap=refusal_cap, base=backoff_base)
        self.failures = Failures(store, self.refusals, self.sent, clock, backoff_base)
        self.sender = Sender(store, transport, self.sent)
        self.live = LiveMessages(store, transport, self.sent, charts, clock)
        self._lock = asyncio.Lock()

    def saw(self, channel_id: int, message_id: int) -> None:
        """A message in a channel (from the gateway): the next anchor there is at least this."""
        self.sent.saw(channel_id, message_id)

    async def drain(self) -> DrainReport:
        async with self._lock:
            report = DrainReport()
            self.refusals.begin()
            queued = await self.store.outbox.queued(limit=self.batch)
            before = {i.id for i in queued}
            queued = await self.refusals.expire(queued)
            report.abandoned.extend(sorted(i for i in before - {i.id for i in queued} if i))
            plan = plan_channels(queued, self.clock())
            if plan:
                await self._lanes(plan, report)
            # A request went through: a server outage is over, and a channel that took a post
            # takes its held ones: the waiting heads go now, oldest first per channel, instead
            # of sitting out their backoff.
            wake = self.refusals.woken()
            if (report.sent or report.recovered) and self.failures.server_down:
                wake |= self.failures.server_down
            if wake:
                queued = await self.store.outbox.queued(limit=self.batch)
                plan = plan_channels(queued, self.clock(), wake)
                plan = {c: items for c, items in plan.items() if items[0].id in wake}
                if plan:
                    await self._lanes(plan, report)
            return report

    async def _lanes(self, plan: dict[Lane, list[OutboxItem]], report: DrainReport) -> None:
        async def deliver(items: list[OutboxItem]) -> None:
            await self._channel(items, report)

        await run_lanes(plan, deliver)

    async def _channel(self, items: list[OutboxItem], report: DrainReport) -> None:
        for item in items:
            for _ in range(IN_DRAIN_RETRIES):
                outcome = await self._one(item, report)
                if not isinstance(outcome, RateLimited):
                    break
                await asyncio.sleep(outcome.delay)  # what the server asked for, no more
                assert item.id is not None
                fresh = await self.store.outbox.get(item.id)
                if fresh is None or fresh.status != "queued":
                    return
                item = fresh
            else:
                return
            if outcome is not True:
                return

    async def _one(self, item: OutboxItem, report: DrainReport) -> bool | RateLimited:
        assert item.id is not None
        try:
            payload = parse_payload(item.payload)
        except PayloadError as exc:
            log.error("outbox item %s has a bad payload and is dropped: %s", item.id, exc)
            await self.store.outbox.mark_retry(
                item.id, f"bad payload: {exc}", self.clock(), give_up=True
            )
            report.failed.append(item.id)
            return True
        try:
            message_id, posted_in, recovered = await asyncio.wait_for(
                self._deliver(item, payload), timeout=self.send_timeout
            )
        except Wait as wait:
            log.debug("outbox item %s waits: %s", item.id, wait)
            report.waiting.append(item.id)
            return False
        except (DeliveryError, TimeoutError) as exc:
            return await self.failures.failed(item, exc, report)
        await self.store.outbox.mark_sent(
            item.id,
            str(message_id) if message_id is not None else None,
            self.clock(),
            posted_in if payload.edit_of is None else None,
        )
        (report.recovered if recovered else report.sent).append(item.id)
        self.sent.done(item.id)
        self.failures.server_down.discard(item.id)
        self.refusals.forget(item.id)
        await self.refusals.delivered(item)
        if report.retried and item.id in report.retried:
            report.retried.remove(item.id)  # rate limited within this drain, then delivered
        return True

    async def _deliver(
        self, item: OutboxItem, payload: ParsedPayload
    ) -> tuple[int | None, int | None, bool]:
        """Send (or edit); return (message id, the channel or thread it is in, whether it was
        found already posted). The id is None for a thread-only item that had no thread."""
        if payload.live is not None:
            return await self.live.deliver(item, payload, payload.live)
        if payload.edit_of is not None:
            message_id, destination = await self.sender.edit(item, payload)
            return message_id, destination, False
        return await self.sender.post(item, payload)
