"""Sending and edits: an outbox item's messages posted in its channel or its parent's thread (the
thread opened on the parent's message when needed), parts already posted skipped, and edits of a
posted message in place."""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import replace

from bot.models import OutboxItem
from bot.outbox.dedup import SentCheck
from bot.outbox.markers import Marker
from bot.outbox.payload import ParsedPayload, PayloadError, parse_payload
from bot.outbox.transport import DeliveryError, OutgoingMessage, Transport, render_item
from bot.store import Store

log = logging.getLogger(__name__)

THREADS_KEPT = 1024  # alert threads remembered by message id
ARCHIVED_THREAD = 50083  # Discord error code: "Thread is archived" (edits are refused)


class Wait(Exception):
    """The item depends on another that is not delivered yet; try again next drain."""


class Sender:
    """Posts and edits through a Transport; remembers the threads it opened or found."""

    def __init__(self, store: Store, transport: Transport, sent: SentCheck):
        self.store = store
        self.transport = transport
        self.sent = sent
        # message id → thread id (None: no thread); the newest THREADS_KEPT, older ones are
        # asked of the platform again (a thread started from a message shares its id)
        self.threads: OrderedDict[int, int | None] = OrderedDict()

    async def post(
        self, item: OutboxItem, payload: ParsedPayload
    ) -> tuple[int | None, int | None, bool]:
        """Send; return (message id, the channel or thread it is in, whether it was found
        already posted). The id is None for a thread-only item that had no thread."""
        assert item.id is not None
        channel_id = item.channel_id
        if item.reply_to is not None:
            channel_id = await self._thread_for_reply(item)
            if channel_id == item.channel_id and payload.thread_only:
                log.info("outbox item %s is for a thread that does not exist; dropped", item.id)
                return None, None, False
        messages = render_item(item.id, item.dedup_key, payload)
        seen: dict[Marker, int] = await self.sent.before_send(
            item, channel_id, {m.marker for m in messages}
        )
        ids: list[int] = []
        for message in messages:
            if message.marker in seen:
                ids.append(seen[message.marker])
                continue
            ids.append(await self.transport.send(channel_id, message))
            self.sent.posted(channel_id, ids[-1])
        recovered = all(m.marker in seen for m in messages)
        if recovered:
            log.info(
                "outbox item %s was already posted (message %s); not re-sending", item.id, ids[0]
            )
        if payload.thread_name and channel_id == item.channel_id:
            await self.open_thread(channel_id, ids[0], payload.thread_name)
        if payload.archive_thread and channel_id != item.channel_id:
            await self._archive(channel_id)
        return ids[0], channel_id, recovered

    async def _archive(self, thread_id: int) -> None:
        """A failure Discord will repeat (permissions) is logged and the post counts as sent; a
        transient one fails the item, whose retry finds the post by its marker and archives."""
        try:
            await self.transport.archive_thread(thread_id)
        except DeliveryError as exc:
            if not exc.permanent:
                raise
            log.warning("could not archive thread %s: %s", thread_id, exc)

    async def edit(self, item: OutboxItem, payload: ParsedPayload) -> tuple[int, int]:
        assert payload.edit_of is not None
        target = await self.store.outbox.get(payload.edit_of)
        if target is None or target.status == "failed":
            never = DeliveryError(
                f"outbox item {payload.edit_of} to edit was never posted", permanent=True
            )
            never.final = True  # it never will be
            raise never
        if target.status != "sent" or not target.message_id:
            raise Wait(f"edit target {target.id} not posted yet")
        assert target.id is not None
        message = render_item(target.id, target.dedup_key, replace(payload, edit_of=None))[0]
        destination = target.posted_in or target.channel_id
        if target.posted_in is None and target.reply_to is not None:
            # rows sent before posted_in was recorded: the thread, if this process knows it
            parent = await self.store.outbox.get(target.reply_to)
            if parent is not None and parent.message_id:
                thread = self.threads.get(int(parent.message_id))
                destination = thread if thread is not None else target.channel_id
        try:
            await self.transport.edit(destination, int(target.message_id), message)
        except DeliveryError as exc:
            if exc.code == ARCHIVED_THREAD and destination != target.channel_id:
                await self._edit_in_archived(destination, int(target.message_id), message)
                return int(target.message_id), destination
            if exc.status == 404:  # deleted: trying again cannot help (a 403 is held)
                exc.final = True
            raise
        return int(target.message_id), destination

    async def _edit_in_archived(
        self, thread_id: int, message_id: int, message: OutgoingMessage
    ) -> None:
        """Discord refuses edits in an archived thread (an incident's thread is archived when
        it resolves; a write-up or a group summary may change later): reopen it, edit, and
        archive it again. A failure to reopen fails the edit like any other refusal."""
        await self.transport.archive_thread(thread_id, archived=False)
        try:
            await self.transport.edit(thread_id, message_id, message)
        finally:
            await self._archive(thread_id)

    async def _thread_for_reply(self, item: OutboxItem) -> int:
        assert item.reply_to is not None
        parent = await self.store.outbox.get(item.reply_to)
        if (
            parent is None
            or parent.status == "failed"
            or (parent.status == "sent" and not parent.message_id)
        ):
            return item.channel_id
        if parent.status != "sent" or parent.message_id is None:
            raise Wait(f"parent {parent.id} not posted yet")
        name = "Updates"
        try:
            name = parse_payload(parent.payload).thread_name or name
        except PayloadError:
            pass
        thread = await self.open_thread(parent.channel_id, int(parent.message_id), name)
        return thread if thread is not None else item.channel_id

    async def open_thread(self, channel_id: int, message_id: int, name: str) -> int | None:
        if message_id in self.threads:
            self.threads.move_to_end(message_id)
            return self.threads[message_id]
        try:
            thread = await self.transport.open_thread(channel_id, message_id, name)
        except DeliveryError as exc:
            if not exc.permanent:
                raise
            thread = None
        if thread is None:
            log.info(
                "no thread on message %s in channel %s; posting in the channel",
                message_id,
                channel_id,
            )
        self.threads[message_id] = thread
        while len(self.threads) > THREADS_KEPT:
            self.threads.popitem(last=False)
        return thread
