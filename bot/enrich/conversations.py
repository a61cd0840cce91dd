"""Chat arrives in bursts (Discord, and any source registered with `SourceSpec.chat`):
consecutive messages of one channel, each within a few minutes of the previous one, are one
conversation. The conversation is context, never an entry: a message with substance (a report
of a fault, an action, a decision, a number) stands on its own, at its own time, linked to its own
message, with its author, and is judged on its own (rules at once, the model with the conversation
so far as context, `context_lines`); only chit-chat and acknowledgements are folded into the
conversation (`folds`), and a conversation is no timeline news. So no entry ever glues two
people's messages, and no entry's summary changes as the chat goes on.

A busy channel can chat for hours without a pause, so a conversation is also closed once it holds
`MAX_MESSAGES` messages or spans `MAX_SPAN`; the next message starts the next one. The grouping is
deterministic from any group's first message onwards, so the pipeline can regroup just the tail of
a channel each cycle and get the same conversations (same ids) back, extended in place."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.enrich.reports import fault_excerpt, is_substantive, reports_action, substance
from bot.enrich.summary import truncate
from bot.models import SOURCE_SPECS, ConversationData, Event

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


def folds(message: Event) -> bool:
    """Whether a message of a burst is folded into its conversation: chit-chat and
    acknowledgements ("Morning all", "+1", "thanks dave!"). Anything with substance (a report, an
    action, a decision, a number) is its own entry."""
    return not is_substantive(message.body or "")


def context_lines(channel: Sequence[Event], message: Event, limit: int = 600) -> list[str]:
    """The "author: text" lines of the burst `message` belongs to, said before it (the latest
    kept when they do not all fit in `limit` characters): what the model reads a message
    against. `channel` is the channel's messages up to it (read from the store, so a message
    is never judged without its context because its conversation is not written yet). Empty
    when it starts its burst."""
    for group in bursts([m for m in channel if not m.deleted]):
        ids = [m.external_id for m in group]
        if message.external_id not in ids:
            continue
        kept: list[str] = []
        size = 0
        for m in reversed(group[: ids.index(message.external_id)]):
            line = f"{m.author or 'someone'}: {' '.join((m.body or '').split())}"
            size += len(line) + 1
            if size > limit:
                break
            kept.append(line)
        return kept[::-1]
    return []


def burst_bounds(event: Event) -> tuple[datetime, datetime, int]:
    """(first, last, count) of the burst an event stands for: a conversation's members, or a
    lone message by itself."""
    if event.kind == "conversation":
        data = ConversationData.of(event)
        return event.at, data.until or event.updated_at or event.at, data.count
    return event.at, event.at, 1


def group_conversations(events: Sequence[Event], gap: timedelta = GAP) -> list[Event]:
    """Consecutive chat messages of one channel (a source registered with `chat`; see `joins`)
    become ONE `conversation` event of that source; everything else (and a lone message)
    passes through unchanged.

    The conversation is `Event(kind="conversation", external_id="conv:<first message id>",
    thread=<channel>, author="A" / "A and B" / "A, B and C", body="author: text" lines)`, stamped
    with the first message's time and the last message's time as `updated_at`;
    `extra` holds the member external ids (`messages`), their `count` and the last member's time
    (`until`). The first message's id keys it, so when a later poll adds a message to the burst
    the same conversation is updated in place rather than duplicated.

    The pipeline (`bot.process.pipeline.group_chat_bursts`) regroups the tail of each channel with
    new messages, upserts the conversations (context, never news) and folds their chit-chat
    members in (`folds`); the other members are enriched on their own. Deleted messages are left
    out; output is by time.
    """
    passthrough: list[Event] = []
    chat = SOURCE_SPECS.chat()
    channels: dict[tuple[str, str, str], list[Event]] = {}
    for event in events:
        if event.source not in chat or event.kind != "message" or event.deleted:
            passthrough.append(event)
            continue
        channel = event.thread or event.ref or ""
        channels.setdefault((event.run_slug, event.source, channel), []).append(event)
    out = list(passthrough)
    for (_, _, channel), messages in channels.items():
        for group in bursts(messages, gap):
            out.append(group[0] if len(group) == 1 else conversation_of(group, channel))
    out.sort(key=lambda e: e.at)
    return out


def conversation_of(group: Sequence[Event], channel: str) -> Event:
    """The conversation event of a burst of two or more messages (sorted by time) of one
    channel, hence of one source."""
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
        source=first.source,
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
        extra=ConversationData(
            messages=tuple(m.external_id for m in group), count=len(group), until=last.at
        ).to_json(),
    )


# -- the no-key summary of a burst -----------------------------------------------------------

SUMMARY_LIMIT = 200
_LINE = re.compile(r"^([^:\n]{1,80}):\s+(.*)$")


def speakers(body: str) -> list[tuple[str, str]]:
    """A conversation's "author: text" lines as (author, text) pairs, in order."""
    out = []
    for line in body.splitlines():
        m = _LINE.match(line)
        if m is not None:
            out.append((m.group(1).strip(), m.group(2).strip()))
        elif line.strip() and out:
            out[-1] = (out[-1][0], f"{out[-1][1]} {line.strip()}")
    return out


def summarize_burst(body: str, limit: int = SUMMARY_LIMIT) -> str | None:
    """What a chat burst said, from its substantive messages only (reports, actions, decisions,
    numbers), each credited to its author: "bob: node lost, ECC errors on host 12; dave: drained
    host 12 and requeued". Greetings, acks, lunch plans and "+1" contribute nothing; None when
    nothing but that was said. When everything does not fit, fault reports are kept first, then
    actions, then the rest; what is kept is told in order."""
    items: list[tuple[int, int, str, str]] = []  # (rank, position, author, said)
    for position, (author, text) in enumerate(speakers(body)):
        if not is_substantive(text):
            continue
        fault = fault_excerpt(text, limit)
        said = fault or substance(text, limit)
        rank = 0 if fault else 1 if reports_action(text) else 2
        items.append((rank, position, author, said.rstrip(".")))
    if not items:
        return None
    kept: list[tuple[int, int, str, str]] = []
    for item in sorted(items):
        trial = _credited(sorted([*kept, item], key=lambda i: i[1]))
        if len(trial) <= limit:
            kept.append(item)
        elif not kept:
            return truncate(trial, limit)
    return _credited(sorted(kept, key=lambda i: i[1]))


def _credited(items: list[tuple[int, int, str, str]]) -> str:
    """ "a: x. y; b: z": consecutive messages of one author told together."""
    parts: list[tuple[str, list[str]]] = []
    for _, _, author, said in items:
        if parts and parts[-1][0] == author:
            parts[-1][1].append(said)
        else:
            parts.append((author, [said]))
    return "; ".join(f"{author}: {'. '.join(said)}" for author, said in parts)
