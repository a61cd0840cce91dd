"""Discord arrives in bursts: consecutive messages of one channel, each within a few minutes
of the previous one, are one conversation. Grouping them before enrichment gives the timeline one
entry per exchange and the LLM one item per exchange instead of ten one-liners.

A busy channel can chat for hours without a pause, so a conversation is also closed once it holds
`MAX_MESSAGES` messages or spans `MAX_SPAN`; the next message starts the next one. The grouping is
deterministic from any group's first message onwards, so the pipeline can regroup just the tail of
a channel each cycle and get the same conversations (same ids) back, extended in place."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.models import Event
from bot.timeutil import from_db, to_db

GAP = timedelta(minutes=15)
MAX_MESSAGES = 40
MAX_SPAN = timedelta(hours=1)


def _names(authors: list[str]) -> str:
    if not authors:
        return "someone"
    if len(authors) == 1:
        return authors[0]
    if len(authors) <= 3:
        return ", ".join(authors[:-1]) + " and " + authors[-1]
    return f"{', '.join(authors[:2])} and {len(authors) - 2} others"


def joins(group: Sequence[Event], message: Event, gap: timedelta = GAP) -> bool:
    """Whether `message` (the next in time) continues `group` rather than starting a new one."""
    first, last = group[0], group[-1]
    return (
        message.at - last.at <= gap
        and len(group) < MAX_MESSAGES
        and message.at - first.at < MAX_SPAN
    )


def bursts(messages: Sequence[Event], gap: timedelta = GAP) -> list[list[Event]]:
    """One channel's messages (sorted here by time) cut into bursts; see `joins`."""
    groups: list[list[Event]] = []
    for message in sorted(messages, key=lambda e: (e.at, e.external_id)):
        if groups and joins(groups[-1], message, gap):
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


def settled(first: datetime, last: datetime, count: int, now: datetime | None) -> bool:
    """Whether a burst can no longer grow at `now` (None: the caller treats everything as
    settled): it is full, its span is used up, or the channel has been quiet for `GAP`."""
    if now is None or count >= MAX_MESSAGES:
        return True
    return now - last > GAP or now - first >= MAX_SPAN


def settles_at(first: datetime, last: datetime, count: int) -> datetime:
    """When a burst stops being able to grow (`settled` turns true)."""
    if count >= MAX_MESSAGES:
        return last
    return min(last + GAP, first + MAX_SPAN)


def burst_bounds(event: Event) -> tuple[datetime, datetime, int]:
    """(first, last, count) of the burst an event stands for: a conversation's members, or a
    lone message by itself."""
    if event.kind == "conversation":
        until = from_db(event.extra.get("until")) if event.extra.get("until") else None
        return event.at, until or event.updated_at or event.at, int(event.extra.get("count", 2))
    return event.at, event.at, 1


def group_conversations(events: Sequence[Event], gap: timedelta = GAP) -> list[Event]:
    """Consecutive Discord messages of one channel (see `joins`) become ONE `conversation`
    event; everything else (and a lone message) passes through unchanged.

    The conversation is `Event(kind="conversation", external_id="conv:<first message id>",
    thread=<channel>, author="A" / "A and B" / "A, B and C", body="author: text" lines)`, stamped
    with the first message's time and the last message's time as `updated_at`;
    `extra` holds the member external ids (`messages`), their `count` and the last member's time
    (`until`). The first message's id keys it, so when a later poll adds a message to the burst
    the same conversation is updated in place rather than duplicated.

    The pipeline (`bot.pipeline.group_discord_bursts`) regroups the tail of each channel with
    new messages, upserts the conversations and marks their members as not newsworthy, so the
    timeline shows the conversation once. Deleted messages are left out; output is by time.
    """
    passthrough: list[Event] = []
    channels: dict[tuple[str, str], list[Event]] = {}
    for event in events:
        if event.source != "discord" or event.kind != "message" or event.deleted:
            passthrough.append(event)
            continue
        channel = event.thread or event.ref or ""
        channels.setdefault((event.run_slug, channel), []).append(event)
    out = list(passthrough)
    for (_, channel), messages in channels.items():
        for group in bursts(messages, gap):
            out.append(group[0] if len(group) == 1 else conversation_of(group, channel))
    out.sort(key=lambda e: e.at)
    return out


def conversation_of(group: Sequence[Event], channel: str) -> Event:
    """The conversation event of a burst of two or more messages (sorted by time)."""
    first, last = group[0], group[-1]
    authors: list[str] = []
    for message in group:
        name = message.author or "someone"
        if name not in authors:
            authors.append(name)
    first_id = first.external_id.split(":", 1)[1] if ":" in first.external_id else first.external_id
    lines = [f"{m.author or 'someone'}: {' '.join((m.body or '').split())}" for m in group]
    return Event(
        run_slug=first.run_slug,
        source="discord",
        external_id=f"conv:{first_id}",
        kind="conversation",
        at=first.at,
        author=_names(authors),
        ref=first.ref,
        url=first.url,
        title=None,
        body="\n".join(lines),
        thread=channel or None,
        updated_at=max((m.updated_at or m.at) for m in group),
        extra={
            "messages": [m.external_id for m in group],
            "count": len(group),
            "until": to_db(last.at),
        },
    )
