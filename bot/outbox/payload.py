"""The outbox payload (the `outbox.payload` JSON column) and Discord's limits.

Everything the bot posts on its own (alerts, resolutions, digests) is an outbox row first.

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
  "buttons":     [{"custom_id": str, "label": str}] | null,  # at most 5, on the first message;
                                  # handled by a persistent handler (e.g. the incident Ack
                                  # button); on an edit, null keeps the buttons and [] removes them
  "ping_role":   int | null,      # the one role this post pings (an incident's first post, with
                                  # the run's `alert_role`); every other post pings nobody
  "archive_thread": bool,         # a reply that closes its thread: archive it once posted
  "live":        {                # a run's live status message (outbox kind "live"): edited
      "slug": str,                #   in place, posted anew (and pinned) when it is gone
      "chart": str | null,        #   the chart data version to show (uploaded again only when
      "repost": bool              #   its PNG differs); repost: a new message, the old deleted
  } | null
}
```

At least one of `content` and `card` is required. An item with `reply_to` (outbox id) is posted
in the thread opened on that item's message, or in the channel when no thread can be made. Build
payloads with `payload_from_card` / `make_payload`; never hand-write the dict."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict, cast

from bot.core import jsoncodec
from bot.core.limits import (
    CUSTOM_ID_LIMIT,
    DESCRIPTION_LIMIT,
    FIELD_NAME_LIMIT,
    FIELD_VALUE_LIMIT,
    FIELDS_LIMIT,
    FOOTER_LIMIT,
    MESSAGE_LIMIT,
    THREAD_NAME_LIMIT,
    TITLE_LIMIT,
    TOTAL_LIMIT,
)
from bot.core.mentions import defuse_mentions
from bot.render.cards import Card, CardField, Color, clip

CONTENT_LIMIT = MESSAGE_LIMIT  # a message's content: longer text is split over several
MAX_PARTS = 5  # a longer text is trimmed on its last part rather than flooding a channel
_COLORS = ("ok", "warning", "bad", "stale", "done", "unknown", "info")


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


def _copies(buttons: list[ButtonPayload] | None) -> list[dict[str, str]] | None:
    if buttons is None:
        return None
    return [{"custom_id": b["custom_id"], "label": b["label"]} for b in buttons]


class PayloadError(ValueError):
    """An outbox payload that can never be delivered (malformed JSON shape)."""


def card_to_payload(card: Card) -> CardPayload:
    return cast(CardPayload, jsoncodec.dump(card))


def make_payload(
    content: str | None = None,
    card: Card | None = None,
    *,
    thread_name: str | None = None,
    edit_of: int | None = None,
    buttons: list[ButtonPayload] | None = None,
    thread_only: bool = False,
    ping_role: int | None = None,
    archive_thread: bool = False,
    live: LiveSpec | None = None,
) -> dict[str, Any]:
    """The JSON stored in `outbox.payload`. Raises PayloadError when there is nothing to post.
    `thread_only` marks a reply that is pointless outside its thread (the channel gets its own
    copy): where no thread can be opened it is dropped instead of posted twice. `ping_role`
    makes the post ping that one role; `archive_thread` archives the reply's thread after it."""
    if not content and card is None:
        raise PayloadError("a post needs content or a card")
    parsed = ParsedPayload(
        content or None,
        card,
        thread_name or None,
        edit_of,
        buttons=buttons,
        thread_only=thread_only,
        ping_role=ping_role,
        archive_thread=archive_thread,
        live=live,
    )
    return jsoncodec.dump(parsed, omit=("color_value",), sparse=ParsedPayload.SPARSE)


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


def card_from_payload(data: Any) -> Card | None:
    """A stored card, made safe to show: a missing text reads as blank, an unknown color as
    info, a link that is not http(s) as none."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise PayloadError("card must be an object")
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
        color=cast(Color, color) if color in _COLORS else "info",
        url=_http_url(data.get("url")),
        fields=fields,
        footer=str(data["footer"]) if data.get("footer") else None,
        image=_http_url(data.get("image")),
    )


def _http_url(value: Any) -> str | None:
    if isinstance(value, str) and re.match(r"^https?://\S+$", value):
        return value
    return None


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
        buttons.append({"custom_id": button["custom_id"][:CUSTOM_ID_LIMIT], "label": label})
    return buttons


@dataclass(slots=True, frozen=True)
class LiveSpec:
    """What makes a payload a run's live status message."""

    slug: str
    chart: str | None = None  # the chart's data version; None: no chart
    repost: bool = False  # post a new message (and delete the old one) instead of editing


def _live(raw: Any) -> LiveSpec | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("slug"), str) or not raw["slug"]:
        raise PayloadError("live needs the run's slug")
    return jsoncodec.load(LiveSpec, raw)


@dataclass(slots=True)
class ParsedPayload:
    """A payload as stored (`bot.core.jsoncodec` writes and reads it), and as the poster reads
    it."""

    SPARSE: ClassVar[frozenset[str]] = frozenset(
        {"buttons", "thread_only", "ping_role", "archive_thread", "live"}
    )

    content: str | None = None
    card: Card | None = field(
        default=None,
        metadata=jsoncodec.json_field(
            dump=lambda card: card_to_payload(card) if card else None, load=card_from_payload
        ),
    )
    thread_name: str | None = None
    edit_of: int | None = None
    color_value: int | None = None  # an explicit integer color, when the writer gave one
    # None: none (or unchanged on an edit)
    buttons: list[ButtonPayload] | None = field(
        default=None, metadata=jsoncodec.json_field(dump=_copies, load=_buttons)
    )
    thread_only: bool = False  # drop, rather than post in the channel, when there is no thread
    ping_role: int | None = None  # the one role the first message pings
    archive_thread: bool = False  # archive the thread the reply went to, once posted
    live: LiveSpec | None = field(  # a run's live status message
        default=None,
        metadata=jsoncodec.json_field(
            dump=lambda live: jsoncodec.dump(live) if live else None, load=_live
        ),
    )


def parse_payload(data: Mapping[str, Any]) -> ParsedPayload:
    try:
        parsed = jsoncodec.load(ParsedPayload, data, lenient=True, omit=("color_value",))
    except jsoncodec.CodecError as exc:
        raise PayloadError(f"payload: {exc}") from None
    raw_card = data.get("card")
    if isinstance(raw_card, Mapping) and isinstance(raw_card.get("color"), int):
        parsed.color_value = int(raw_card["color"])
    content = parsed.content
    parsed.content = content if content and content.strip() else None
    if parsed.content is None and parsed.card is None:
        raise PayloadError("a post needs content or a card")
    ping_role = parsed.ping_role
    if ping_role is not None and ping_role <= 0:
        raise PayloadError("ping_role must be a role id")
    if parsed.thread_name:
        parsed.thread_name = parsed.thread_name[:THREAD_NAME_LIMIT]
    return parsed


# --- limits ---------------------------------------------------------------------------------------


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
            clip(defuse_mentions(f.name), FIELD_NAME_LIMIT) or "\u200b",
            clip(defuse_mentions(f.value), FIELD_VALUE_LIMIT) or "\u200b",
            f.inline,
        )
        for f in card.fields[:FIELDS_LIMIT]
    ]
    out = Card(
        title=clip(defuse_mentions(card.title), TITLE_LIMIT),
        description=clip(defuse_mentions(card.description), DESCRIPTION_LIMIT),
        color=card.color,
        url=card.url,
        fields=fields,
        footer=clip(defuse_mentions(card.footer), FOOTER_LIMIT - reserve) if card.footer else None,
        image=card.image,
    )
    budget = TOTAL_LIMIT - reserve
    while out.size() > budget and out.fields:
        out.fields.pop()
    if out.size() > budget:
        room = budget - (out.size() - len(out.description))
        out.description = clip(out.description, max(room, 1))
    return out
