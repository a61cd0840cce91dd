"""The poster: drains the outbox through a platform `Transport`, in order per channel, with
backoff, and with the crash-safe "was it already sent?" check (see `bot.outbox.markers`). The
Discord half (`bot.app.DiscordTransport`) only turns an `OutgoingMessage` into an HTTP call and
classifies errors.

Waiting: a rate limit waits exactly what the server said (`retry_after`), inside the drain, so a
429 storm costs about the sum of its `retry_after` values; an error the transport has already
retried with its own waits (`DeliveryError.retried`) is tried again at the next drain; other
transient failures back off
2, 4, 8 … seconds capped at `BACKOFF_CAP` (25 s), and a channel backing off from a server error
is tried again at once when a request elsewhere succeeds (the outage is over). A refusal (403,
404, 401: no access) holds the post for hours and is then given up and reported in its channel
(`bot.outbox.refusals`); other 4xx answers are tried `MAX_PERMANENT_ATTEMPTS` times.

Already sent? Before an item's first send the newest message the bot has seen in the channel
(posted by it, or any message the gateway delivered: `saw`) is recorded in its row
(`anchor_id`); a later try reads the history after it, page by page, for the item's marker,
until the messages are newer than the try that may have sent it (a time bound, not a page
count). A check that finds nothing moves the anchor up to the newest message it read, so the
anchor stays recent however long an outage lasts and however busy the channel."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

from bot.limits import HISTORY_PAGE
from bot.mentions import defuse_mentions
from bot.models import LiveMessage, OutboxItem
from bot.outbox.markers import MARKER_RESERVE, Marker, find_markers
from bot.outbox.payload import (
    CONTENT_LIMIT,
    ButtonPayload,
    LiveSpec,
    ParsedPayload,
    PayloadError,
    fit_card,
    parse_payload,
    split_text,
)
from bot.outbox.refusals import (
    DEFAULT_HOLD,
    MISSED_KIND,
    REFUSAL_CAP,
    REFUSED_STATUSES,
    Refusals,
)
from bot.render.cards import Card
from bot.store import Store
from bot.store.live import LIVE_KIND
from bot.timeutil import utcnow

log = logging.getLogger(__name__)

HISTORY_LIMIT = HISTORY_PAGE  # Discord's maximum page of channel history
BACKOFF_BASE = 2.0  # seconds; doubles per attempt
BACKOFF_CAP = 25.0  # a long outage is retried at least this often: with the outbox loop's
# 2 s tick, an alert queued during an outage goes out within 30 s of its end
RETRY_AFTER_CAP = 600.0  # a server's retry_after is obeyed up to this
IN_DRAIN_WAIT = 5.0  # a retry_after up to this is waited inside the drain, not the next loop
IN_DRAIN_RETRIES = 50  # rate-limited tries of one item within one drain
THREADS_KEPT = 1024  # alert threads remembered by message id
MAX_PERMANENT_ATTEMPTS = 6  # a 4xx neither 429 nor a refusal: tried this often, then failed
GONE_STATUSES = frozenset({403, 404})  # a live message so answered waits for its next refresh


@dataclass(slots=True, frozen=True)
class Upload:
    """A file sent with a message (the live status message's chart)."""

    filename: str
    data: bytes


@dataclass(slots=True)
class OutgoingMessage:
    """One Discord message, ready for a transport: limits applied, mentions escaped, marker in."""

    content: str | None
    card: Card | None
    marker: Marker
    color_value: int | None = None
    buttons: list[ButtonPayload] | None = None
    ping_role: int | None = None  # the one role this message may ping (its mention is in content)
    files: tuple[Upload, ...] = ()  # uploaded with it (`publish`, `revise`)
    keep: tuple[int, ...] | None = None  # on `revise`: the attachments kept (None: all)

    @property
    def nonce(self) -> str:
        return self.marker.nonce


@dataclass(slots=True, frozen=True)
class Posted:
    """A message as the platform answered: its id and its attachments' ids, in order."""

    id: int
    attachments: tuple[int, ...] = ()


def role_mention(role_id: int) -> str:
    return f"<@&{role_id}>"


def render_item(item_id: int, dedup_key: str, payload: ParsedPayload) -> list[OutgoingMessage]:
    """The messages an outbox item becomes: the card rides on the first; text past 2,000
    characters continues in further messages. A `ping_role` mention is added to the first
    message after the text's own mentions were defused, so it is the only one there is."""
    ping = payload.ping_role
    prefix = f"{role_mention(ping)} " if ping is not None else ""
    texts = (
        split_text(defuse_mentions(payload.content), CONTENT_LIMIT - MARKER_RESERVE - len(prefix))
        if payload.content
        else []
    )
    if prefix:
        texts = [prefix + (texts[0] if texts else "").rstrip(), *texts[1:]]
    count = max(1, len(texts))
    messages = []
    for part in range(count):
        marker = Marker.for_item(item_id, part, dedup_key)
        content = texts[part] if part < len(texts) else None
        card = fit_card(payload.card, MARKER_RESERVE) if part == 0 and payload.card else None
        if content is not None:
            content += marker.encode()
        elif card is not None:
            card.footer = (card.footer or "Runscribe") + " " + marker.encode()
        messages.append(
            OutgoingMessage(
                content,
                card,
                marker,
                payload.color_value if card else None,
                payload.buttons if part == 0 else None,
                ping if part == 0 else None,
            )
        )
    return messages


def _digest(png: bytes) -> str:
    """What tells an attached chart from a new one: its bytes (the chart cache may hand back
    the newest finished chart for a newer data version)."""
    return hashlib.sha256(png).hexdigest()[:16]


def _first(attachments: tuple[int, ...], message: OutgoingMessage) -> int | None:
    """The id of the one file the message uploaded (the chart), if it uploaded one."""
    return attachments[-1] if message.files and attachments else None


# --- the poster ---------------------------------------------------------------------------------


class DeliveryError(Exception):
    """A failed send. `permanent` errors (4xx other than 429) will not succeed by waiting;
    `status` is the HTTP status when there was an answer, `code` and `detail` Discord's error
    code and message. A 401, 403 or 404 is a refusal (`refused`): held, not dropped, until a
    person gives the access back (`bot.outbox.refusals`). `final` ends the item at its first
    try (an edit of a message that is gone, a live message the next refresh replaces).
    `retried`: the transport has already retried it with its own waits (discord.py retries a
    500, 502, 504 and 524 five times over 25 s), so the poster tries again at its next drain
    instead of backing off on top: one retry policy per error, never two stacked."""

    def __init__(
        self,
        message: str,
        *,
        permanent: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        retried: bool = False,
        code: int | None = None,
        detail: str | None = None,
    ):
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after
        self.status = status
        self.retried = retried
        self.code = code
        self.detail = detail
        self.final = False

    @property
    def refused(self) -> bool:
        """Discord will not let the bot do it until a person changes something."""
        return self.status in REFUSED_STATUSES and not self.final

    @property
    def reason(self) -> str:
        """'403 Missing Permissions (code 50013)': what the log and the notices say."""
        if self.status is None:
            return str(self) or type(self).__name__
        words = self.detail or str(self).removeprefix(f"HTTP {self.status}: ")
        return f"{self.status} {words}" + (f" (code {self.code})" if self.code else "")

    @property
    def gone(self) -> bool:
        """The message (or its channel) is not there for the bot: 404, or 403 (no access)."""
        return self.status in GONE_STATUSES


@dataclass(slots=True, frozen=True)
class SeenMessage:
    id: int
    text: str  # content, embed footers and descriptions joined: where markers can be
    created_at: datetime | None = None


class Transport(Protocol):
    """What the poster needs from a chat platform. Raise DeliveryError on failure."""

    async def send(self, channel_id: int, message: OutgoingMessage) -> int:
        """Post; return the new message id."""
        ...

    async def edit(self, channel_id: int, message_id: int, message: OutgoingMessage) -> None: ...

    async def open_thread(self, channel_id: int, message_id: int, name: str) -> int | None:
        """Open (or find) the thread on a message; its id, or None where threads are not
        possible (permissions, channel type): the caller then posts in the channel."""
        ...

    async def recent(self, channel_id: int, limit: int) -> list[SeenMessage]:
        """The newest `limit` messages, newest first."""
        ...

    async def newest_id(self, channel_id: int) -> int | None:
        """The id of the channel's newest message (None: the channel is empty)."""
        ...

    async def after(self, channel_id: int, after_id: int, limit: int) -> list[SeenMessage]:
        """The oldest `limit` messages newer than `after_id`, oldest first (every author: the
        ids page on; text only where a marker can be)."""
        ...

    async def archive_thread(self, thread_id: int) -> None:
        """Archive a thread (it reopens by itself if anyone posts in it again)."""
        ...

    async def publish(self, channel_id: int, message: OutgoingMessage) -> Posted:
        """Post with `message.files`; the new message and its attachments."""
        ...

    async def revise(self, channel_id: int, message_id: int, message: OutgoingMessage) -> Posted:
        """Edit in place: the attachments become `message.keep` (None: unchanged) plus
        `message.files`."""
        ...

    async def pin(self, channel_id: int, message_id: int) -> None: ...

    async def delete(self, channel_id: int, message_id: int) -> None: ...


#: The chart PNG of a run at a data version (`RunscribeBot.status_chart`), None if not drawn.
ChartSource = Callable[[str, str], Awaitable[bytes | None]]
CHART_FILE = "chart.png"  # the live message's chart attachment (its embed shows it)


def backoff_delay(
    attempts: int, retry_after: float | None = None, base: float = BACKOFF_BASE
) -> float:
    """Seconds before the next try after `attempts` failed ones. When the server said how long
    (`retry_after`), exactly that: a rate limit is not a fault to back off from. Otherwise base,
    2·base, 4·base … capped at `BACKOFF_CAP`."""
    if retry_after is not None:
        return max(0.0, min(retry_after, RETRY_AFTER_CAP))
    return min(BACKOFF_CAP, base * (2 ** min(attempts, 20)))


#: What is delivered in order: a channel's new posts (its id), the edits of one message
#: (`("edit", outbox id)`), one run's live status message (`("live", slug)`).
Lane = int | tuple[str, int | str]


def lane(item: OutboxItem) -> Lane:
    """Edits keep their own order but never hold up a channel's posts: an edit waiting out a
    failure (or for its message) must not delay an alert queued behind it."""
    if item.kind == LIVE_KIND and item.run_slug:
        return ("live", item.run_slug)
    edit_of = item.payload.get("edit_of") if isinstance(item.payload, dict) else None
    if isinstance(edit_of, int) and not isinstance(edit_of, bool):
        return ("edit", edit_of)
    return item.channel_id


def plan_channels(
    items: Sequence[OutboxItem], now: datetime, wake: frozenset[int] = frozenset()
) -> dict[Lane, list[OutboxItem]]:
    """Group queued items by lane (a channel's posts, or the edits of one message) in id
    order, keeping only the due prefix of each: a lane whose oldest queued item is backing off
    waits as a whole, so order is kept. Items in `wake` are due whatever their backoff. A
    notice of missed posts leads its lane: the first post through says what was missed."""
    plan: dict[Lane, list[OutboxItem]] = {}
    blocked: set[Lane] = set()
    for item in sorted(items, key=lambda i: (i.kind != MISSED_KIND, i.id or 0)):
        key = lane(item)
        if key in blocked:
            continue
        if item.not_before is not None and item.not_before > now and item.id not in wake:
            blocked.add(key)
            continue
        plan.setdefault(key, []).append(item)
    return plan


@dataclass(slots=True)
class DrainReport:
    sent: list[int] = field(default_factory=list)
    retried: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)  # found already posted, not re-sent
    held: list[int] = field(default_factory=list)  # refused by Discord, tried again later
    abandoned: list[int] = field(default_factory=list)  # refused past their hold: given up


class _Wait(Exception):
    """The item depends on another that is not delivered yet; try again next drain."""


@dataclass(slots=True, frozen=True)
class _RateLimited:
    """The item was rate limited: try it again in `delay` seconds, within this drain."""

    delay: float


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
        self.charts = charts
        self._pin_tried: set[str] = set()  # runs whose live message this process tried to pin
        self._pin_refusal_logged: set[str] = set()
        self.clock = clock
        self.backoff_base = backoff_base
        self.batch = batch
        self.send_timeout = send_timeout
        self.started_at = clock()
        self._tried: set[int] = set()  # items this process has attempted (maybe half-sent)
        # message id → thread id (None: no thread); the newest THREADS_KEPT, older ones are
        # asked of the platform again (a thread started from a message shares its id)
        self._threads: OrderedDict[int, int | None] = OrderedDict()
        self._newest: dict[int, int] = {}  # channel → newest message id this process knows
        # item → when this process's last try of it ended: a post it made is older than that
        self._tried_until: dict[int, datetime] = {}
        self._server_down: set[int] = set()  # items backing off from a server error
        self.refusals = Refusals(store, clock=clock, hold=hold, cap=refusal_cap, base=backoff_base)
        self._lock = asyncio.Lock()

    def saw(self, channel_id: int, message_id: int) -> None:
        """A message in a channel (from the gateway): the next anchor there is at least this."""
        if message_id > self._newest.get(channel_id, 0):
            self._newest[channel_id] = message_id

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
            if (report.sent or report.recovered) and self._server_down:
                wake |= self._server_down
            if wake:
                queued = await self.store.outbox.queued(limit=self.batch)
                plan = plan_channels(queued, self.clock(), wake)
                plan = {c: items for c, items in plan.items() if items[0].id in wake}
                if plan:
                    await self._lanes(plan, report)
            return report

    async def _lanes(self, plan: dict[Lane, list[OutboxItem]], report: DrainReport) -> None:
        """Every lane at once; an edit whose message is queued in this drain starts once that
        message's lane is done (so a head and its edit still go out in one drain)."""
        posts: dict[Lane, asyncio.Task[None]] = {
            key: asyncio.create_task(self._channel(items, report))
            for key, items in plan.items()
            if isinstance(key, int)
        }
        lane_of = {item.id: key for key, items in plan.items() for item in items}

        async def edits(key: tuple[str, int | str], items: list[OutboxItem]) -> None:
            held = lane_of.get(key[1]) if key[0] == "edit" and isinstance(key[1], int) else None
            target = posts.get(held) if held is not None else None
            if target is not None:
                await asyncio.wait([target])
            await self._channel(items, report)

        others = [edits(key, items) for key, items in plan.items() if not isinstance(key, int)]
        await asyncio.gather(*posts.values(), *others)

    async def _channel(self, items: list[OutboxItem], report: DrainReport) -> None:
        for item in items:
            for _ in range(IN_DRAIN_RETRIES):
                outcome = await self._one(item, report)
                if not isinstance(outcome, _RateLimited):
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

    def _needs_history_check(self, item: OutboxItem) -> bool:
        assert item.id is not None
        if item.id in self._tried:
            return True  # an earlier try may have reached Discord before failing
        created = item.created_at
        return created is None or created < self.started_at or item.attempts > 0

    async def _one(self, item: OutboxItem, report: DrainReport) -> bool | _RateLimited:
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
        except _Wait as wait:
            log.debug("outbox item %s waits: %s", item.id, wait)
            report.waiting.append(item.id)
            return False
        except (DeliveryError, TimeoutError) as exc:
            return await self._failed(item, exc, report)
        await self.store.outbox.mark_sent(
            item.id,
            str(message_id) if message_id is not None else None,
            self.clock(),
            posted_in if payload.edit_of is None else None,
        )
        (report.recovered if recovered else report.sent).append(item.id)
        self._tried.discard(item.id)
        self._tried_until.pop(item.id, None)
        self._server_down.discard(item.id)
        self.refusals.forget(item.id)
        await self.refusals.delivered(item)
        if report.retried and item.id in report.retried:
            report.retried.remove(item.id)  # rate limited within this drain, then delivered
        return True

    async def _failed(
        self, item: OutboxItem, exc: DeliveryError | TimeoutError, report: DrainReport
    ) -> bool | _RateLimited:
        assert item.id is not None
        self._tried_until[item.id] = self.clock()
        if isinstance(exc, DeliveryError) and exc.refused and item.kind != LIVE_KIND:
            # no access: held for hours (or given up past that), never after a minute
            self._server_down.discard(item.id)
            held = await self.refusals.refused(item, exc.reason, item.attempts)
            (report.held if held else report.abandoned).append(item.id)
            return False
        permanent = isinstance(exc, DeliveryError) and exc.permanent
        retry_after = exc.retry_after if isinstance(exc, DeliveryError) else None
        error = str(exc) or type(exc).__name__
        attempts = item.attempts + 1
        final = isinstance(exc, DeliveryError) and exc.final
        if retry_after is None and not (final and getattr(exc, "status", None) != 403):
            # the channel's last try failed (a rate limit is pacing; a deleted message or an
            # edit of a post never made is no fault of the channel's): /healthz says so until a
            # post there goes through
            why = exc.reason if isinstance(exc, DeliveryError) else error
            await self.refusals.failed(item.channel_id, why)
        give_up = permanent and (final or attempts >= MAX_PERMANENT_ATTEMPTS)
        delay = backoff_delay(item.attempts, retry_after, self.backoff_base)
        if isinstance(exc, DeliveryError) and exc.retried and retry_after is None:
            delay = 0.0  # the transport's own retries were the wait
        next_at = self.clock() + timedelta(seconds=delay)
        await self.store.outbox.mark_retry(item.id, error, next_at, give_up=give_up)
        if retry_after is None and not permanent:
            self._server_down.add(item.id)
        else:
            self._server_down.discard(item.id)
        if give_up and final:
            log.warning(
                "outbox item %s (%s) to channel %s cannot succeed, ended at once: %s",
                item.id, item.kind, item.channel_id, error,
            )  # fmt: skip
            report.failed.append(item.id)
            return True
        if give_up:
            log.error(
                "outbox item %s (%s) to channel %s failed %d times, giving up: %s",
                item.id, item.kind, item.channel_id, attempts, error,
            )  # fmt: skip
            report.failed.append(item.id)
            self._tried_until.pop(item.id, None)
            return True  # a dead item must not block its channel forever
        log.warning(
            "outbox item %s to channel %s failed (attempt %d), retrying in %.1f s: %s",
            item.id, item.channel_id, attempts, delay, error,
        )  # fmt: skip
        if item.id not in report.retried:
            report.retried.append(item.id)
        if retry_after is not None and delay <= IN_DRAIN_WAIT:
            return _RateLimited(delay)
        return False

    async def _deliver(
        self, item: OutboxItem, payload: ParsedPayload
    ) -> tuple[int | None, int | None, bool]:
        """Send (or edit); return (message id, the channel or thread it is in, whether it was
        found already posted). The id is None for a thread-only item that had no thread."""
        assert item.id is not None
        if payload.live is not None:
            return await self._live(item, payload, payload.live)
        if payload.edit_of is not None:
            message_id, destination = await self._edit(item, payload)
            return message_id, destination, False
        channel_id = item.channel_id
        if item.reply_to is not None:
            channel_id = await self._thread_for_reply(item)
            if channel_id == item.channel_id and payload.thread_only:
                log.info("outbox item %s is for a thread that does not exist; dropped", item.id)
                return None, None, False
        messages = render_item(item.id, item.dedup_key, payload)
        seen: dict[Marker, int] = {}
        if self._needs_history_check(item):
            seen = await self._already_posted(item, channel_id, {m.marker for m in messages})
            newest = self._newest.get(channel_id)
            if not seen and item.anchor_id is not None and newest and newest > item.anchor_id:
                # nothing of it up to the newest message read: start the next check there
                await self.store.outbox.set_anchor(item.id, newest)
                item.anchor_id = newest
        if item.anchor_id is None:
            await self._record_anchor(item, channel_id)
        self._tried.add(item.id)
        ids: list[int] = []
        for message in messages:
            if message.marker in seen:
                ids.append(seen[message.marker])
                continue
            ids.append(await self.transport.send(channel_id, message))
            self._newest[channel_id] = max(self._newest.get(channel_id, 0), ids[-1])
        recovered = all(m.marker in seen for m in messages)
        if recovered:
            log.info(
                "outbox item %s was already posted (message %s); not re-sending", item.id, ids[0]
            )
        if payload.thread_name and channel_id == item.channel_id:
            await self._open_thread(channel_id, ids[0], payload.thread_name)
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

    async def _record_anchor(self, item: OutboxItem, channel_id: int) -> None:
        """Before the first send: the newest message id in the channel, from what this process
        posted there or (once per channel) asked the platform. Anything posted later is newer."""
        assert item.id is not None
        anchor = self._newest.get(channel_id)
        if anchor is None:
            anchor = await self.transport.newest_id(channel_id) or 0
            self._newest[channel_id] = max(self._newest.get(channel_id, 0), anchor)
        await self.store.outbox.set_anchor(item.id, anchor)
        item.anchor_id = anchor

    async def _already_posted(
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
        bound = self._tried_until.get(item.id) if item.id in self._tried else self.started_at
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

    async def _edit(self, item: OutboxItem, payload: ParsedPayload) -> tuple[int, int]:
        assert payload.edit_of is not None
        target = await self.store.outbox.get(payload.edit_of)
        if target is None or target.status == "failed":
            never = DeliveryError(
                f"outbox item {payload.edit_of} to edit was never posted", permanent=True
            )
            never.final = True  # it never will be
            raise never
        if target.status != "sent" or not target.message_id:
            raise _Wait(f"edit target {target.id} not posted yet")
        assert target.id is not None
        message = render_item(target.id, target.dedup_key, replace(payload, edit_of=None))[0]
        destination = target.posted_in or target.channel_id
        if target.posted_in is None and target.reply_to is not None:
            # rows sent before posted_in was recorded: the thread, if this process knows it
            parent = await self.store.outbox.get(target.reply_to)
            if parent is not None and parent.message_id:
                thread = self._threads.get(int(parent.message_id))
                destination = thread if thread is not None else target.channel_id
        try:
            await self.transport.edit(destination, int(target.message_id), message)
        except DeliveryError as exc:
            if exc.status == 404:  # deleted: trying again cannot help (a 403 is held)
                exc.final = True
            raise
        return int(target.message_id), destination

    # --- the live status message ----------------------------------------------------------------

    async def _live(
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
        seen: dict[Marker, int] = {}
        if self._needs_history_check(item):
            seen = await self._already_posted(item, channel, {message.marker})
        if item.anchor_id is None:
            await self._record_anchor(item, channel)
        self._tried.add(item.id)
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
            self._newest[channel] = max(self._newest.get(channel, 0), message_id)
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
            raise _Wait(f"parent {parent.id} not posted yet")
        name = "Updates"
        try:
            name = parse_payload(parent.payload).thread_name or name
        except PayloadError:
            pass
        thread = await self._open_thread(parent.channel_id, int(parent.message_id), name)
        return thread if thread is not None else item.channel_id

    async def _open_thread(self, channel_id: int, message_id: int, name: str) -> int | None:
        if message_id in self._threads:
            self._threads.move_to_end(message_id)
            return self._threads[message_id]
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
        self._threads[message_id] = thread
        while len(self._threads) > THREADS_KEPT:
            self._threads.popitem(last=False)
        return thread
