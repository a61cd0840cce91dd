"""The live status message: one message per run, edited in place as the run moves, posted anew
(and pinned) when there is none, when it is gone or when it moved, the old one deleted first so
there is never a second. Its chart is uploaded only when the chart's bytes changed."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime

from bot.models import LiveMessage, OutboxItem
from bot.outbox.dedup import SentCheck
from bot.outbox.payload import LiveSpec, ParsedPayload
from bot.outbox.transport import DeliveryError, OutgoingMessage, Transport, Upload, render_item
from bot.store import Store

log = logging.getLogger(__name__)

#: The chart PNG of a run at a data version (`RunscribeBot.status_chart`), None if not drawn.
ChartSource = Callable[[str, str], Awaitable[bytes | None]]
CHART_FILE = "chart.png"  # the live message's chart attachment (its embed shows it)


def _digest(png: bytes) -> str:
    """What tells an attached chart from a new one: its bytes (the chart cache may hand back
    the newest finished chart for a newer data version)."""
    return hashlib.sha256(png).hexdigest()[:16]


def _first(attachments: tuple[int, ...], message: OutgoingMessage) -> int | None:
    """The id of the one file the message uploaded (the chart), if it uploaded one."""
    return attachments[-1] if message.files and attachments else None


class LiveMessages:
    """Posts, edits, replaces and pins each run's live status message."""

    def __init__(
        self,
        store: Store,
        transport: Transport,
        sent: SentCheck,
        charts: ChartSource | None,
        clock: Callable[[], datetime],
    ):
        self.store = store
        self.transport = transport
        self.sent = sent
        self.charts = charts
        self.clock = clock
        self._pin_tried: set[str] = set()  # runs whose live message this process tried to pin
        self._pin_refusal_logged: set[str] = set()

    async def deliver(
        self, item: OutboxItem, payload: ParsedPayload, spec: LiveSpec
    ) -> tuple[int, int, bool]:
        """A run's live status message: the stored one edited in place; posted anew (and pinned)
        when there is none, when it is gone (404), or moved (`repost`, another channel), the old
        one deleted first, so there is never a second."""
        assert item.id is not None
        row = await self.store.live.get(spec.slug)
        png = await self._chart(spec)
        message = render_item(item.id, item.dedup_key, replace(payload, live=None))[0]
        if message.card is not None:
            message.card.image = CHART_FILE if png is not None else None
        if row is not None and row.message_id is not None:
            if row.channel_id == item.channel_id and not spec.repost:
                if await self._edit_live(spec.slug, row, message, spec, png):
                    return row.message_id, item.channel_id, False
            else:
                await self._retire_live(row)
        return await self._post_live(item, spec.slug, message, spec, png)

    async def _chart(self, spec: LiveSpec) -> bytes | None:
        if spec.chart is None or self.charts is None:
            return None
        try:
            return await self.charts(spec.slug, spec.chart)
        except Exception:  # a chart never costs the message
            log.exception("chart for the live status message of %s failed", spec.slug)
            return None

    async def _edit_live(
        self,
        slug: str,
        row: LiveMessage,
        message: OutgoingMessage,
        spec: LiveSpec,
        png: bytes | None,
    ) -> bool:
        """Edit the stored message; False when it is gone (forgotten: post a new one). The chart
        is uploaded only when it changed (its bytes); otherwise its attachment is kept."""
        assert row.message_id is not None and row.channel_id is not None
        same_chart = png is not None and row.chart_digest == _digest(png) and row.attachment_id
        if same_chart:
            assert row.attachment_id is not None
            message.keep = (row.attachment_id,)
        else:
            message.keep = ()
            message.files = (Upload(CHART_FILE, png),) if png is not None else ()
        try:
            posted = await self.transport.revise(row.channel_id, row.message_id, message)
        except DeliveryError as exc:
            if exc.status == 404:
                log.info(
                    "the live status message of %s (%s) is gone; posting a new one",
                    slug,
                    row.message_id,
                )
                await self.store.live.forget(slug, row.message_id)
                return False
            if exc.gone:  # 403: the bot may not see the channel; the next refresh tries again
                exc.final = True
            raise
        attachment = row.attachment_id if same_chart else _first(posted.attachments, message)
        await self.store.live.edited(
            slug,
            chart_digest=_digest(png) if attachment is not None and png else None,
            attachment_id=attachment,
            at=self.clock(),
        )
        if not row.pinned and (not row.pin_refused or slug not in self._pin_tried):
            await self._pin(slug, row.channel_id, row.message_id)
        return True

    async def _retire_live(self, row: LiveMessage) -> None:
        """Delete the old live message before its replacement is posted (a crash in between
        leaves none, which the retry posts, rather than two)."""
        assert row.message_id is not None and row.channel_id is not None
        try:
            await self.transport.delete(row.channel_id, row.message_id)
        except DeliveryError as exc:
            if not exc.gone:
                raise
            log.info("old live status message %s of %s: %s", row.message_id, row.run_slug, exc)
        await self.store.live.forget(row.run_slug, row.message_id)

    async def _post_live(
        self,
        item: OutboxItem,
        slug: str,
        message: OutgoingMessage,
        spec: LiveSpec,
        png: bytes | None,
    ) -> tuple[int, int, bool]:
        """Post the live message, crash-safe like any post (anchor, marker, history check),
        record it, pin it."""
        assert item.id is not None
        channel = item.channel_id
        seen = await self.sent.before_send(item, channel, {message.marker}, advance=False)
        attachment = None
        if message.marker in seen:
            message_id = seen[message.marker]
            log.info("live status message of %s was already posted (%s)", slug, message_id)
        else:
            message.files = (Upload(CHART_FILE, png),) if png is not None else ()
            try:
                posted = await self.transport.publish(channel, message)
            except DeliveryError as exc:
                if exc.gone:  # no access to the channel: the next refresh tries again
                    exc.final = True
                raise
            message_id = posted.id
            attachment = _first(posted.attachments, message)
            self.sent.posted(channel, message_id)
        await self.store.live.posted(
            slug,
            channel,
            message_id,
            chart_digest=_digest(png) if attachment is not None and png else None,
            attachment_id=attachment,
            at=self.clock(),
        )
        await self._pin(slug, channel, message_id)
        return message_id, channel, message.marker in seen

    async def _pin(self, slug: str, channel_id: int, message_id: int) -> None:
        """Pin the live message. Without the permission it stays unpinned, said once in the
        log (and by `check-config`); any other failure is tried again at the next update."""
        self._pin_tried.add(slug)
        try:
            await self.transport.pin(channel_id, message_id)
        except DeliveryError as exc:
            if exc.status != 403:
                log.warning("could not pin the live status message of %s: %s", slug, exc)
                return
            if slug not in self._pin_refusal_logged:
                self._pin_refusal_logged.add(slug)
                log.warning(
                    "the live status message of %s stays unpinned: the bot needs Manage "
                    "Messages in channel %s to pin it",
                    slug,
                    channel_id,
                )
            await self.store.live.set_pin(slug, pinned=False, refused=True)
            return
        await self.store.live.set_pin(slug, pinned=True)
