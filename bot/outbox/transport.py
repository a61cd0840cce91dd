"""What the poster hands a chat platform and what it gets back: the `Transport` protocol, the
`OutgoingMessage` an outbox item becomes (`render_item`: limits applied, mentions defused, marker
in), and `DeliveryError`, which classifies a failed request for the poster's retry policy."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.core.mentions import defuse_mentions
from bot.outbox.markers import MARKER_RESERVE, Marker
from bot.outbox.payload import CONTENT_LIMIT, ButtonPayload, ParsedPayload, fit_card, split_text
from bot.outbox.refusals import REFUSED_STATUSES
from bot.render.cards import Card

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

    async def archive_thread(self, thread_id: int, *, archived: bool = True) -> None:
        """Archive a thread (it reopens by itself if anyone posts in it again), or with
        `archived=False` reopen it (Discord refuses edits in an archived thread)."""
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
