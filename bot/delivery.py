"""Delivering outbox posts, and scheduling the daily digest, without Discord.

Everything the bot posts on its own (alerts, resolutions, digests) is an outbox row first. This
module holds the platform-neutral half of the poster: the payload format, splitting and trimming
to Discord's limits, the delivery marker, ordering per channel, the backoff schedule, and the
crash-safe "was it already sent?" check. The Discord half (`bot.app.DiscordTransport`) only turns
an `OutgoingMessage` into an HTTP call and classifies errors.

## Payload (the `outbox.payload` JSON column)

```
{
  "content":     str | null,      # plain text; split over several messages past 2,000 chars
  "card":        {                # an embed, see bot.render.cards.Card
      "title": str, "description": str, "color": "ok|warning|bad|stale|done|unknown|info" | int,
      "url": str | null, "fields": [{"name": str, "value": str, "inline": bool}],
      "footer": str | null, "image": "https://…" | null
  } | null,
  "thread_name": str | null,      # open a thread on the posted message with this name
  "edit_of":     int | null,      # outbox id whose message is edited in place with this payload
  "buttons":     [{"custom_id": str, "label": str}] | null   # at most 5, on the first message;
                                  # handled by a persistent handler (e.g. the incident Ack
                                  # button); on an edit, null keeps the buttons and [] removes them
}
```

At least one of `content` and `card` is required. An item with `reply_to` (outbox id) is posted
in the thread opened on that item's message, or in the channel when no thread can be made. Build
payloads with `payload_from_card` / `make_payload`; never hand-write the dict.

## Exactly once

Every message carries a marker: Discord's `nonce` (with `enforce_nonce`, Discord itself drops a
repeat within a few minutes) and an invisible run of zero-width characters encoding the outbox
id, the part number and a hash of the dedup key, at the end of the content or of the embed
footer. Before (re)sending an item that this process has not itself created-and-tried since it
started, the poster reads the channel's recent history and skips the parts already there. So a
crash between sending and `mark_sent` never produces a duplicate.

## Digest schedule

`due_digest_date` decides, from the run's local `digest_time` (DST-aware) and the last date a
digest was handled (kept in `store.cursors`, source "digest", key = run slug), whether a digest
is due now. A digest missed while the bot was down is caught up once, if it is less than
`CATCH_UP` late; a quiet day records the date and posts nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol, TypedDict

from bot.models import OutboxItem
from bot.render.cards import (
    DESCRIPTION_LIMIT,
    FIELD_NAME_LIMIT,
    FIELD_VALUE_LIMIT,
    FIELDS_LIMIT,
    FOOTER_LIMIT,
    TITLE_LIMIT,
    TOTAL_LIMIT,
    Card,
    CardField,
    TimeFormatter,
    clip,
    digest_card,
)
from bot.services.digest import DigestFacts, build_digest
from bot.settings import RunConfig
from bot.store import Store
from bot.timeutil import utcnow

log = logging.getLogger(__name__)

CONTENT_LIMIT = 2000
MAX_PARTS = 5  # a longer text is trimmed on its last part rather than flooding a channel
HISTORY_LIMIT = 100  # Discord's maximum page of channel history
BACKOFF_BASE = 2.0  # seconds; doubles per attempt
BACKOFF_CAP = 300.0
MAX_PERMANENT_ATTEMPTS = 6  # a 4xx other than 429 is retried this often, then the row fails
CATCH_UP = timedelta(hours=12)
DIGEST_SOURCE = "digest"  # store.cursors source for "last digest date per run"
_COLORS = ("ok", "warning", "bad", "stale", "done", "unknown", "info")


# --- payload ----------------------------------------------------------------------------------


class FieldPayload(TypedDict):
    name: str
    value: str
    inline: bool


class CardPayload(TypedDict, total=False):
    title: str
    description: str
    color: str | int
    url: str | None
    fields: list[FieldPayload]
    footer: str | None
    image: str | None


class ButtonPayload(TypedDict):
    custom_id: str
    label: str


class Payload(TypedDict, total=False):
    content: str | None
    card: CardPayload | None
    thread_name: str | None
    edit_of: int | None
    buttons: list[ButtonPayload] | None


class PayloadError(ValueError):
    """An outbox payload that can never be delivered (malformed JSON shape)."""


def card_to_payload(card: Card) -> CardPayload:
    return {
        "title": card.title,
        "description": card.description,
        "color": card.color,
        "url": card.url,
        "fields": [{"name": f.name, "value": f.value, "inline": f.inline} for f in card.fields],
        "footer": card.footer,
        "image": card.image,
    }


def make_payload(
    content: str | None = None,
    card: Card | None = None,
    *,
    thread_name: str | None = None,
    edit_of: int | None = None,
    buttons: list[ButtonPayload] | None = None,
    thread_only: bool = False,
) -> dict[str, Any]:
    """The JSON stored in `outbox.payload`. Raises PayloadError when there is nothing to post.
    `thread_only` marks a reply that is pointless outside its thread (the channel gets its own
    copy): where no thread can be opened it is dropped instead of posted twice."""
    if not content and card is None:
        raise PayloadError("a post needs content or a card")
    payload: dict[str, Any] = {
        "content": content or None,
        "card": card_to_payload(card) if card is not None else None,
        "thread_name": thread_name or None,
        "edit_of": edit_of,
    }
    if thread_only:
        payload["thread_only"] = True
    if buttons is not None:
        payload["buttons"] = [dict(b) for b in buttons]
    return payload


def payload_from_card(
    card: Card,
    content: str | None = None,
    *,
    thread_name: str | None = None,
    edit_of: int | None = None,
    buttons: list[ButtonPayload] | None = None,
    thread_only: bool = False,
) -> dict[str, Any]:
    return make_payload(
        content,
        card,
        thread_name=thread_name,
        edit_of=edit_of,
        buttons=buttons,
        thread_only=thread_only,
    )


def card_from_payload(data: Mapping[str, Any]) -> Card:
    color = data.get("color", "info")
    fields = []
    for raw in data.get("fields") or []:
        if not isinstance(raw, Mapping):
            raise PayloadError("card.fields must hold objects")
        fields.append(
            CardField(str(raw.get("name") or "\u200b"), str(raw.get("value") or "\u200b"))
        )
        fields[-1].inline = bool(raw.get("inline", False))
    return Card(
        title=str(data.get("title") or ""),
        description=str(data.get("description") or ""),
        color=color if color in _COLORS else "info",  # type: ignore[arg-type]
        url=_http_url(data.get("url")),
        fields=fields,
        footer=str(data["footer"]) if data.get("footer") else None,
        image=_http_url(data.get("image")),
    )


def _http_url(value: Any) -> str | None:
    if isinstance(value, str) and re.match(r"^https?://\S+$", value):
        return value
    return None


@dataclass(slots=True)
class ParsedPayload:
    content: str | None
    card: Card | None
    thread_name: str | None
    edit_of: int | None
    color_value: int | None = None  # an explicit integer color, when the writer gave one
    buttons: list[ButtonPayload] | None = None  # None: none (or unchanged on an edit)
    thread_only: bool = False  # drop, rather than post in the channel, when there is no thread


def parse_payload(data: Mapping[str, Any]) -> ParsedPayload:
    if not isinstance(data, Mapping):
        raise PayloadError("payload must be a JSON object")
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        raise PayloadError("content must be a string")
    raw_card = data.get("card")
    card = None
    color_value = None
    if raw_card is not None:
        if not isinstance(raw_card, Mapping):
            raise PayloadError("card must be an object")
        card = card_from_payload(raw_card)
        if isinstance(raw_card.get("color"), int):
            color_value = int(raw_card["color"])
    if not (content and content.strip()) and card is None:
        raise PayloadError("a post needs content or a card")
    edit_of = data.get("edit_of")
    if edit_of is not None and not isinstance(edit_of, int):
        raise PayloadError("edit_of must be an outbox id")
    thread_name = data.get("thread_name")
    buttons = _buttons(data.get("buttons"))
    return ParsedPayload(
        content=content if content and content.strip() else None,
        card=card,
        thread_name=str(thread_name)[:100] if thread_name else None,
        edit_of=edit_of,
        color_value=color_value,
        buttons=buttons,
        thread_only=bool(data.get("thread_only", False)),
    )


def _buttons(raw: Any) -> list[ButtonPayload] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise PayloadError("buttons must be a list")
    buttons: list[ButtonPayload] = []
    for button in raw[:5]:
        if not isinstance(button, Mapping) or not isinstance(button.get("custom_id"), str):
            raise PayloadError("each button needs a custom_id")
        label = str(button.get("label") or "Open")[:80]
        buttons.append({"custom_id": button["custom_id"][:100], "label": label})
    return buttons


# --- text safety and limits ----------------------------------------------------------------------

_MENTION = re.compile(r"@(everyone|here|[!&]?\d+>)")


def escape_mentions(text: str) -> str:
    """Break `@everyone`, `@here`, `<@id>`, `<@!id>`, `<@&role>` with a zero-width space so they
    cannot ping even if a client-side setting were lost. (allowed_mentions stays none too.)"""
    return _MENTION.sub("@\u200b\\1", text)


def split_text(text: str, limit: int, max_parts: int = MAX_PARTS) -> list[str]:
    """Split at paragraph, line, then word boundaries into at most `max_parts` pieces of at most
    `limit` characters; whatever does not fit is trimmed with an ellipsis."""
    text = text.strip()
    parts: list[str] = []
    while text:
        if len(text) <= limit:
            parts.append(text)
            break
        if len(parts) == max_parts - 1:
            parts.append(clip(text, limit - len(" (trimmed)")) + " (trimmed)")
            break
        window = text[:limit]
        cut = -1
        for sep in ("\n\n", "\n", " "):
            cut = window.rfind(sep)
            if cut > limit // 2:
                break
        if cut <= limit // 2:
            cut = limit
        parts.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return parts


def fit_card(card: Card, reserve: int = 0) -> Card:
    """A copy of `card` within every embed limit, keeping `reserve` characters free for a marker
    in the footer. Mentions are escaped."""
    fields = [
        CardField(
            clip(escape_mentions(f.name), FIELD_NAME_LIMIT) or "\u200b",
            clip(escape_mentions(f.value), FIELD_VALUE_LIMIT) or "\u200b",
            f.inline,
        )
        for f in card.fields[:FIELDS_LIMIT]
    ]
    out = Card(
        title=clip(escape_mentions(card.title), TITLE_LIMIT),
        description=clip(escape_mentions(card.description), DESCRIPTION_LIMIT),
        color=card.color,
        url=card.url,
        fields=fields,
        footer=clip(escape_mentions(card.footer), FOOTER_LIMIT - reserve) if card.footer else None,
        image=card.image,
    )
    budget = TOTAL_LIMIT - reserve
    while out.size() > budget and out.fields:
        out.fields.pop()
    if out.size() > budget:
        room = budget - (out.size() - len(out.description))
        out.description = clip(out.description, max(room, 1))
    return out


# --- markers ------------------------------------------------------------------------------------

_MARK_EDGE = "\u2063"  # INVISIBLE SEPARATOR
_MARK_DIGITS = "\u200b\u200c\u200d\u2060"  # zero-width space / non-joiner / joiner / word joiner
_MARK_RE = re.compile(f"{_MARK_EDGE}([{_MARK_DIGITS}]+){_MARK_EDGE}")
MARKER_RESERVE = 48  # characters kept free for a marker


@dataclass(slots=True, frozen=True, order=True)
class Marker:
    item_id: int
    part: int
    key_hash: int  # 24 bits of sha1(dedup_key): tells two databases' item 7 apart

    @classmethod
    def for_item(cls, item_id: int, part: int, dedup_key: str) -> Marker:
        digest = hashlib.sha1(dedup_key.encode("utf-8")).digest()
        return cls(item_id, part, int.from_bytes(digest[:3], "big"))

    @property
    def value(self) -> int:
        return (self.item_id << 32) | ((self.part & 0xFF) << 24) | self.key_hash

    @classmethod
    def from_value(cls, value: int) -> Marker:
        return cls(value >> 32, (value >> 24) & 0xFF, value & 0xFFFFFF)

    def encode(self) -> str:
        value, digits = self.value, []
        while True:
            value, rest = divmod(value, 4)
            digits.append(_MARK_DIGITS[rest])
            if not value:
                break
        return _MARK_EDGE + "".join(reversed(digits)) + _MARK_EDGE

    @property
    def nonce(self) -> str:
        """Discord nonces are at most 25 characters."""
        return f"rs{self.item_id:x}.{self.part}.{self.key_hash:06x}"[:25]


def find_markers(text: str) -> list[Marker]:
    found = []
    for match in _MARK_RE.finditer(text):
        value = 0
        for char in match.group(1):
            value = value * 4 + _MARK_DIGITS.index(char)
        found.append(Marker.from_value(value))
    return found


# --- rendering an outbox item -------------------------------------------------------------------


@dataclass(slots=True)
class OutgoingMessage:
    """One Discord message, ready for a transport: limits applied, mentions escaped, marker in."""

    content: str | None
    card: Card | None
    marker: Marker
    color_value: int | None = None
    buttons: list[ButtonPayload] | None = None

    @property
    def nonce(self) -> str:
        return self.marker.nonce


def render_item(item_id: int, dedup_key: str, payload: ParsedPayload) -> list[OutgoingMessage]:
    """The messages an outbox item becomes: the card rides on the first; text past 2,000
    characters continues in further messages."""
    texts = (
        split_text(escape_mentions(payload.content), CONTENT_LIMIT - MARKER_RESERVE)
        if payload.content
        else []
    )
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
            )
        )
    return messages


# --- the poster ---------------------------------------------------------------------------------


class DeliveryError(Exception):
    """A failed send. `permanent` errors (4xx other than 429) will not succeed by waiting."""

    def __init__(self, message: str, *, permanent: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after


@dataclass(slots=True, frozen=True)
class SeenMessage:
    id: int
    text: str  # content, embed footers and descriptions joined: where markers can be


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

    async def recent(self, channel_id: int, limit: int) -> list[SeenMessage]: ...


def backoff_delay(
    attempts: int, retry_after: float | None = None, base: float = BACKOFF_BASE
) -> float:
    """Seconds before the next try after `attempts` failed ones: base, 2·base, 4·base … capped at
    5 minutes, and never sooner than the server's retry_after."""
    delay = min(BACKOFF_CAP, base * (2 ** min(attempts, 20)))
    if retry_after is not None:
        delay = max(delay, min(retry_after, BACKOFF_CAP * 4))
    return delay


def plan_channels(items: Sequence[OutboxItem], now: datetime) -> dict[int, list[OutboxItem]]:
    """Group queued items by channel in id order, keeping only the due prefix of each channel:
    a channel whose oldest queued item is backing off waits as a whole, so order is kept."""
    plan: dict[int, list[OutboxItem]] = {}
    blocked: set[int] = set()
    for item in sorted(items, key=lambda i: i.id or 0):
        if item.channel_id in blocked:
            continue
        if item.not_before is not None and item.not_before > now:
            blocked.add(item.channel_id)
            continue
        plan.setdefault(item.channel_id, []).append(item)
    return plan


@dataclass(slots=True)
class DrainReport:
    sent: list[int] = field(default_factory=list)
    retried: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)  # found already posted, not re-sent


class _Wait(Exception):
    """The item depends on another that is not delivered yet; try again next drain."""


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
    ):
        self.store = store
        self.transport = transport
        self.clock = clock
        self.backoff_base = backoff_base
        self.batch = batch
        self.send_timeout = send_timeout
        self.started_at = clock()
        self._tried: set[int] = set()  # items this process has attempted (maybe half-sent)
        self._threads: dict[int, int | None] = {}  # message id → thread id (None: no thread)
        self._lock = asyncio.Lock()

    async def drain(self) -> DrainReport:
        async with self._lock:
            report = DrainReport()
            now = self.clock()
            queued = await self.store.outbox.queued(limit=self.batch)
            plan = plan_channels(queued, now)
            if plan:
                await asyncio.gather(*(self._channel(items, report) for items in plan.values()))
            return report

    async def _channel(self, items: list[OutboxItem], report: DrainReport) -> None:
        for item in items:
            if not await self._one(item, report):
                return

    def _needs_history_check(self, item: OutboxItem) -> bool:
        assert item.id is not None
        if item.id in self._tried:
            return True  # an earlier try may have reached Discord before failing
        created = item.created_at
        return created is None or created < self.started_at or item.attempts > 0

    async def _one(self, item: OutboxItem, report: DrainReport) -> bool:
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
        return True

    async def _failed(
        self, item: OutboxItem, exc: DeliveryError | TimeoutError, report: DrainReport
    ) -> bool:
        assert item.id is not None
        permanent = isinstance(exc, DeliveryError) and exc.permanent
        retry_after = exc.retry_after if isinstance(exc, DeliveryError) else None
        error = str(exc) or type(exc).__name__
        attempts = item.attempts + 1
        give_up = permanent and attempts >= MAX_PERMANENT_ATTEMPTS
        delay = backoff_delay(item.attempts, retry_after, self.backoff_base)
        next_at = self.clock() + timedelta(seconds=delay)
        await self.store.outbox.mark_retry(item.id, error, next_at, give_up=give_up)
        if give_up:
            log.error(
                "outbox item %s (%s) to channel %s failed %d times, giving up: %s",
                item.id, item.kind, item.channel_id, attempts, error,
            )  # fmt: skip
            report.failed.append(item.id)
            return True  # a dead item must not block its channel forever
        log.warning(
            "outbox item %s to channel %s failed (attempt %d), retrying in %.0f s: %s",
            item.id, item.channel_id, attempts, delay, error,
        )  # fmt: skip
        report.retried.append(item.id)
        return False

    async def _deliver(
        self, item: OutboxItem, payload: ParsedPayload
    ) -> tuple[int | None, int | None, bool]:
        """Send (or edit); return (message id, the channel or thread it is in, whether it was
        found already posted). The id is None for a thread-only item that had no thread."""
        assert item.id is not None
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
            for old in await self.transport.recent(channel_id, HISTORY_LIMIT):
                for marker in find_markers(old.text):
                    seen.setdefault(marker, old.id)
        self._tried.add(item.id)
        ids: list[int] = []
        for message in messages:
            if message.marker in seen:
                ids.append(seen[message.marker])
                continue
            ids.append(await self.transport.send(channel_id, message))
        recovered = all(m.marker in seen for m in messages)
        if recovered:
            log.info(
                "outbox item %s was already posted (message %s); not re-sending", item.id, ids[0]
            )
        if payload.thread_name and channel_id == item.channel_id:
            await self._open_thread(channel_id, ids[0], payload.thread_name)
        return ids[0], channel_id, recovered

    async def _edit(self, item: OutboxItem, payload: ParsedPayload) -> tuple[int, int]:
        assert payload.edit_of is not None
        target = await self.store.outbox.get(payload.edit_of)
        if target is None or target.status == "failed":
            raise DeliveryError(
                f"outbox item {payload.edit_of} to edit was never posted", permanent=True
            )
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
        await self.transport.edit(destination, int(target.message_id), message)
        return int(target.message_id), destination

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
        return thread


# --- digest scheduling --------------------------------------------------------------------------


def occurrence(day: date, clock: time) -> datetime:
    """The UTC instant of `clock` (aware, in the run's zone) on local `day`. A time skipped by a
    spring-forward change moves forward by the gap; a repeated one takes its first occurrence."""
    zone = clock.tzinfo
    local = datetime.combine(day, clock.replace(tzinfo=None)).replace(tzinfo=zone, fold=0)
    return local.astimezone(UTC)


def latest_occurrence(now: datetime, clock: time) -> tuple[date, datetime]:
    """The most recent scheduled digest at or before `now`: (local date, UTC instant)."""
    today = now.astimezone(clock.tzinfo).date()
    for day in (today, today - timedelta(days=1), today - timedelta(days=2)):
        at = occurrence(day, clock)
        if at <= now:
            return day, at
    raise AssertionError("unreachable: a day has passed")  # pragma: no cover


def next_occurrence(now: datetime, clock: time) -> datetime:
    today = now.astimezone(clock.tzinfo).date()
    for offset in range(3):
        at = occurrence(today + timedelta(days=offset), clock)
        if at > now:
            return at
    raise AssertionError("unreachable")  # pragma: no cover


def due_digest_date(
    now: datetime, clock: time, last: date | None, catch_up: timedelta = CATCH_UP
) -> date | None:
    """The local date whose digest should be handled now, or None. Due once the scheduled time
    has passed and that date was not handled yet; a digest missed by more than `catch_up` (the
    bot was down) is skipped, since the next one is close."""
    day, at = latest_occurrence(now, clock)
    if last is not None and last >= day:
        return None
    if now - at > catch_up:
        return None
    return day


DigestComposer = Callable[[DigestFacts], Awaitable[str | None]]


async def compose_text(facts: DigestFacts, composer: DigestComposer | None) -> str:
    """The composer's text, or the template already in facts.text when there is none or it
    fails: an LLM outage never stops a digest."""
    if composer is None:
        return facts.text
    try:
        text = await composer(facts)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("digest composer failed for %s; using the template", facts.run.slug)
        return facts.text
    return text or facts.text


async def last_digest_date(store: Store, slug: str) -> date | None:
    value, _ = await store.cursors.get(DIGEST_SOURCE, slug)
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


async def enqueue_digest(
    store: Store,
    run: RunConfig,
    now: datetime,
    *,
    fmt: TimeFormatter,
    composer: DigestComposer | None = None,
    dedup_key: str | None = None,
    skip_quiet: bool = True,
    channel_id: int | None = None,
) -> int | None:
    """Compose the run's digest and queue it for its digest channel. Returns the outbox id, or
    None when the day was quiet (and `skip_quiet`), the key was already queued, or there is no
    channel."""
    channel = channel_id or run.digest_channel
    if channel is None:
        return None
    facts = await build_digest(store, run.slug, now)
    if skip_quiet and facts.quiet:
        return None
    facts.text = await compose_text(facts, composer)
    card = digest_card(facts, fmt)
    local_day = now.astimezone(run.zone).date()
    item = OutboxItem(
        channel_id=channel,
        kind="digest",
        payload=payload_from_card(card),
        dedup_key=dedup_key or f"digest:{run.slug}:{local_day.isoformat()}",
        run_slug=run.slug,
        created_at=now,
    )
    return await store.outbox.enqueue(item)


async def run_due_digests(
    store: Store,
    runs: Sequence[RunConfig],
    now: datetime,
    *,
    fmt: TimeFormatter,
    composer: DigestComposer | None = None,
) -> list[tuple[str, date, int | None]]:
    """One scheduler tick: for every run with a digest channel whose digest is due, queue it
    (or skip a quiet day) and record the date. Returns (slug, date, outbox id or None)."""
    done = []
    for run in runs:
        if run.digest_channel is None:
            continue
        try:
            day = due_digest_date(now, run.digest_clock, await last_digest_date(store, run.slug))
            if day is None:
                continue
            facts_key = f"digest:{run.slug}:{day.isoformat()}"
            item_id = await enqueue_digest(
                store, run, now, fmt=fmt, composer=composer, dedup_key=facts_key
            )
            await store.cursors.set(DIGEST_SOURCE, run.slug, day.isoformat())
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("digest for %s failed; will try again", run.slug)
            continue
        if item_id is None:
            log.info(
                "digest for %s on %s: quiet day or already queued, nothing posted", run.slug, day
            )
        else:
            log.info("digest for %s on %s queued as outbox item %s", run.slug, day, item_id)
        done.append((run.slug, day, item_id))
    return done
