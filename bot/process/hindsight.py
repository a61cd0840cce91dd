"""The pipeline's thread pass of `bot.enrich.hindsight`: once a GitHub issue or a comment of
its thread is enriched, the issue's 🚨 is read again from the replies soon after it, whichever
was stored first. An unmarked question is marked when a reply is about an incident; a marked
alert is unmarked when its replies' first judgement dismisses it and none reports one live.
Chat is read the same way around freshly enriched messages: one that hints at a failure is
marked when its channel tells an incident within half an hour; one that follows up a live
report within the hour (``follows_up``); an alert, with its answer, when
the channel's next message (another writer's) says it is real; and a marked one is unmarked
when the channel's next message, within minutes, dismisses it. Only the rules' reading is
revisited (a model's is its own), and only the timeline's mark and tag change: no alert is
raised or withdrawn."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from itertools import pairwise

from bot.enrich.hindsight import (
    CHAT_HINDSIGHT,
    FOLLOW_UP,
    HINDSIGHT,
    confirmed_in_chat,
    dismissed_first,
    dismissed_in_chat,
    follows_up,
    may_be_first_word,
    reported_in_hindsight,
    said_first,
)
from bot.enrich.rules import topic_of
from bot.models import SOURCE_SPECS, Event
from bot.store import Store

#: The enrichment label the pass may revisit: the rules' own, no model's.
_RULES = "rules"


async def mark_reports_in_hindsight(store: Store, events: Sequence[Event]) -> int:
    """Run the pass over the threads of freshly enriched GitHub issues and comments, and the
    channels of freshly enriched chat messages. Returns how many posts it marked or unmarked.
    The reading is CPU work (parsing, the scorer): done in a worker thread, as the rules are."""
    threads = {
        (e.run_slug, e.thread)
        for e in events
        if e.source == "github" and e.kind in ("issue", "comment") and e.thread
    }
    chats: dict[tuple[str, str], list[datetime]] = {}
    for e in events:
        if e.kind == "message" and e.thread and SOURCE_SPECS.is_chat(e.source):
            chats.setdefault((e.run_slug, e.thread), []).append(e.at)
    changed = 0
    for slug, thread in sorted(threads):
        changed += await _read_thread_again(store, slug, thread)
    for (slug, thread), times in sorted(chats.items()):
        changed += await _read_channel_again(store, slug, thread, min(times), max(times))
    return changed


async def _read_channel_again(
    store: Store, slug: str, thread: str, first: datetime, last: datetime
) -> int:
    window = max(CHAT_HINDSIGHT, FOLLOW_UP)
    found = await store.events.in_thread(
        slug, thread, since=first - window, until=last + window, kind="message"
    )
    messages = [m for m in found if not m.deleted and m.enriched_by]
    marked = 0
    for message in await asyncio.to_thread(_first_words, messages):
        marked += await _mark(store, message, "incident", incident=True)
    for message in await asyncio.to_thread(_confirmed, messages):
        marked += await _mark(store, message, "incident", incident=True)
    for message in await asyncio.to_thread(_follow_ups, messages):
        marked += await _mark(store, message, "incident", incident=True)
    for message, tag in await asyncio.to_thread(_dismissed, messages):
        marked += await _mark(store, message, tag, incident=False)
    return marked


def _dismissed(messages: Sequence[Event]) -> list[tuple[Event, str]]:
    """Of a channel's messages in time order, those the rules marked whose next message
    dismisses them, with the topic each then shows."""
    return [
        (message, topic_of(message))
        for message, reply in pairwise(messages)
        if message.incident and message.enriched_by == _RULES and dismissed_in_chat(message, reply)
    ]


def _confirmed(messages: Sequence[Event]) -> list[Event]:
    """Of a channel's messages in time order, the alerts the rules left unmarked whose next
    message, another writer's, says they are real, and those answers (unless marked already)."""
    found: list[Event] = []
    for message, reply in pairwise(messages):
        if message.incident or not message.newsworthy or message.enriched_by != _RULES:
            continue
        if confirmed_in_chat(message, reply):
            found.append(message)
            if not reply.incident and (reply.enriched_by or "").startswith(_RULES):
                found.append(reply)
    return found


def _follow_ups(messages: Sequence[Event]) -> list[Event]:
    """Of a channel's messages in time order, those the rules left unmarked that follow up a
    live report before them (``follows_up``)."""
    found: dict[str, Event] = {}
    for n, report in enumerate(messages):
        if not (report.incident and report.live_report):
            continue
        for later in messages[n + 1 :]:
            if later.at - report.at > FOLLOW_UP:
                break
            if (
                later.incident
                or not later.newsworthy
                or not (later.enriched_by or "").startswith(_RULES)
                or later.external_id in found
            ):
                continue
            if follows_up(report, later):
                found[later.external_id] = later
    return list(found.values())


def _first_words(messages: Sequence[Event]) -> list[Event]:
    """Of a channel's messages in time order, those the rules left unmarked that hint at a
    failure and are followed within `CHAT_HINDSIGHT` by one about an incident."""
    found = []
    for n, message in enumerate(messages):
        if (
            message.incident
            or not may_be_first_word(message, message.newsworthy)
            # the rules' reading, alone or folded into a conversation (a pointer is chit-chat)
            or not (message.enriched_by or "").startswith(_RULES)
        ):
            continue
        told = next((m for m in messages[n + 1 :] if m.incident and m.at > message.at), None)
        if told is not None and said_first(message, told):
            found.append(message)
    return found


async def _read_thread_again(store: Store, slug: str, thread: str) -> bool:
    issues = await store.events.in_thread(slug, thread, kind="issue")
    if len(issues) != 1:
        return False
    issue = issues[0]
    if not issue.newsworthy or issue.enriched_by != _RULES or issue.deleted:
        return False
    replies = await store.events.in_thread(
        slug, thread, since=issue.at, until=issue.at + HINDSIGHT, kind="comment"
    )
    replies = [r for r in replies if not r.deleted and r.enriched_by]
    verdict = await asyncio.to_thread(_thread_verdict, issue, replies)
    if verdict is None:
        return False
    tag, incident = verdict
    return await _mark(store, issue, tag, incident=incident)


def _thread_verdict(issue: Event, replies: Sequence[Event]) -> tuple[str, bool] | None:
    """``(tag, incident)`` the issue shows once its replies are read, or None to leave it: a
    marked issue whose first judgement is a dismissal (and no reply a live report) shows its
    topic; an unmarked
    one is marked when the first reply about an incident says it reported one."""
    if issue.incident:
        if dismissed_first(issue, replies, lambda r: r.incident, lambda r: r.live_report):
            return topic_of(issue), False
        return None
    told = [r for r in replies if r.incident]
    if told and reported_in_hindsight(issue, told[0]):
        return "incident", True
    return None


async def _mark(store: Store, issue: Event, tag: str, *, incident: bool) -> bool:
    return await store.events.set_enrichment(
        issue,
        summary=issue.summary or "",
        tag=tag,
        incident=incident,
        severity=issue.severity,
        newsworthy=True,
        enriched_by=_RULES,
        live_report=issue.live_report,
    )
