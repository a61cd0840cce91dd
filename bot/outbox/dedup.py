"""Already sent? The crash-safe check that keeps a retried or restarted post from going out twice.

Before an item's first send the newest message the poster has seen in the channel (posted by it,
or any message the gateway delivered: `saw`) is recorded in its row (`anchor_id`); a later try
reads the history after it, page by page, for the item's marker (`bot.outbox.markers`), until
the messages are newer than the try that may have sent it (a time bound, not a page count). A
check that finds nothing moves the anchor up to the newest message it read, so the anchor stays
recent however long an outage lasts and however busy the channel."""

from __future__ import annotations

from datetime import datetime

from bot.core.limits import HISTORY_PAGE
from bot.models import OutboxItem
from bot.outbox.markers import Marker, find_markers
from bot.outbox.transport import SeenMessage, Transport
from bot.store import Store

HISTORY_LIMIT = HISTORY_PAGE  # Discord's maximum page of channel history


class SentCheck:
    """What this process knows of its tries and of each channel's newest message, and the
    history check that finds an item's parts already posted."""

    def __init__(self, store: Store, transport: Transport, started_at: datetime):
        self.store = store
        self.transport = transport
        self.started_at = started_at
        self.tried: set[int] = set()  # items this process has attempted (maybe half-sent)
        self.newest: dict[int, int] = {}  # channel → newest message id this process knows
        # item → when this process's last try of it ended: a post it made is older than that
        self.tried_until: dict[int, datetime] = {}

    def saw(self, channel_id: int, message_id: int) -> None:
        """A message in a channel (from the gateway): the next anchor there is at least this."""
        if message_id > self.newest.get(channel_id, 0):
            self.newest[channel_id] = message_id

    def posted(self, channel_id: int, message_id: int) -> None:
        """This process posted `message_id` in the channel."""
        self.newest[channel_id] = max(self.newest.get(channel_id, 0), message_id)

    def ended(self, item_id: int, at: datetime) -> None:
        """A try of the item ended (failed) at `at`."""
        self.tried_until[item_id] = at

    def done(self, item_id: int) -> None:
        """The item is delivered or given up: nothing of it is left to check."""
        self.tried.discard(item_id)
        self.tried_until.pop(item_id, None)

    def needs_check(self, item: OutboxItem) -> bool:
        assert item.id is not None
        if item.id in self.tried:
            return True  # an earlier try may have reached Discord before failing
        created = item.created_at
        return created is None or created < self.started_at or item.attempts > 0

    async def before_send(
        self, item: OutboxItem, channel_id: int, wanted: set[Marker], *, advance: bool = True
    ) -> dict[Marker, int]:
        """Before a try: the parts already posted (their message ids), the anchor recorded on
        the first try (or, with `advance`, moved up when the check found nothing), the try
        noted."""
        assert item.id is not None
        seen: dict[Marker, int] = {}
        if self.needs_check(item):
            seen = await self.already_posted(item, channel_id, wanted)
            newest = self.newest.get(channel_id)
            if (
                advance
                and not seen
                and item.anchor_id is not None
                and newest
                and newest > item.anchor_id
            ):
                # nothing of it up to the newest message read: start the next check there
                await self.store.outbox.set_anchor(item.id, newest)
                item.anchor_id = newest
        if item.anchor_id is None:
            await self.record_anchor(item, channel_id)
        self.tried.add(item.id)
        return seen

    async def record_anchor(self, item: OutboxItem, channel_id: int) -> None:
        """Before the first send: the newest message id in the channel, from what this process
        posted there or (once per channel) asked the platform. Anything posted later is newer."""
        assert item.id is not None
        anchor = self.newest.get(channel_id)
        if anchor is None:
            anchor = await self.transport.newest_id(channel_id) or 0
            self.newest[channel_id] = max(self.newest.get(channel_id, 0), anchor)
        await self.store.outbox.set_anchor(item.id, anchor)
        item.anchor_id = anchor

    async def already_posted(
        self, item: OutboxItem, channel_id: int, wanted: set[Marker]
    ) -> dict[Marker, int]:
        """Which of the item's parts are already in the channel, and their message ids. With an
        anchor: the history after it, paged oldest first until every part is found, the channel
        ends, or the messages are newer than this process (a previous process's post cannot be
        there, nor one of this process's tries after that try ended). Rows queued before
        anchors: the last 100."""
        seen: dict[Marker, int] = {}

        def note(old: SeenMessage) -> None:
            for marker in find_markers(old.text):
                if marker in wanted:
                    seen.setdefault(marker, old.id)

        if item.anchor_id is None:
            for old in await self.transport.recent(channel_id, HISTORY_LIMIT):
                note(old)
            return seen
        # A post of an earlier try is older than that try's end (this process), or than this
        # process's start (an earlier process's try).
        bound = self.tried_until.get(item.id) if item.id in self.tried else self.started_at
        after = item.anchor_id
        while True:
            page = await self.transport.after(channel_id, after, HISTORY_LIMIT)
            for old in page:
                note(old)
            if page:
                self.saw(channel_id, max(m.id for m in page))
            if len(seen) == len(wanted) or len(page) < HISTORY_LIMIT:
                break
            last = page[-1]
            if bound is not None and last.created_at is not None and last.created_at > bound:
                break
            after = max(after, last.id)
        return seen
