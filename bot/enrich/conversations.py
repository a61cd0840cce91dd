"""Discord arrives in bursts: consecutive messages of one channel, each within a few minutes
of the previous one, are one conversation. Grouping them before enrichment gives the timeline one
entry per exchange and the LLM one item per exchange instead of ten one-liners."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from bot.models import Event

GAP = timedelta(minutes=15)


def _names(authors: list[str]) -> str:
    if not authors:
        return "someone"
    if len(authors) == 1:
        return authors[0]
    if len(authors) <= 3:
        return ", ".join(authors[:-1]) + " and " + authors[-1]
    return f"{', '.join(authors[:2])} and {len(authors) - 2} others"


def group_conversations(events: Sequence[Event], gap: timedelta = GAP) -> list[Event]:
    """Consecutive Discord messages of one channel, each within `gap` of the previous one, become
    ONE `conversation` event; everything else (and a lone message) passes through unchanged.

    The conversation is `Event(kind="conversation", external_id="conv:<first message id>",
    thread=<channel>, author="A" / "A and B" / "A, B and C", body="author: text" lines)`, stamped
    with the first message's time and the last message's time as `updated_at`;
    `extra["messages"]` lists the member external ids. The first message's id keys it, so when a
    later poll adds a message to the burst the same conversation is updated (new content hash →
    enriched again) rather than duplicated.

    Pipeline use (the caller decides about storage): after storing raw messages, take the recent
    (e.g. last 2 h) non-deleted Discord messages of each watched channel, call this, upsert the
    `conversation` events it returns, and enrich those; the member messages are then given
    `newsworthy=False` (enriched_by "rules") so the timeline shows the conversation once.
    Deleted messages are left out of a conversation; output order is by time.
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
        messages.sort(key=lambda e: (e.at, e.external_id))
        groups: list[list[Event]] = []
        for message in messages:
            if groups and message.at - groups[-1][-1].at <= gap:
                groups[-1].append(message)
            else:
                groups.append([message])
        for group in groups:
            out.append(group[0] if len(group) == 1 else _conversation(group, channel))
    out.sort(key=lambda e: e.at)
    return out


def _conversation(group: list[Event], channel: str) -> Event:
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
        updated_at=max((m.updated_at or m.at) for m in group) if group else last.at,
        extra={"messages": [m.external_id for m in group], "count": len(group)},
    )
