"""Lanes: what is delivered in order. A channel's new posts go strictly in id order, a channel
stopped at its first failure; the edits of one message and a run's live status message each keep
their own order without holding up the channel's posts. Lanes run in parallel."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.models import OutboxItem
from bot.outbox.refusals import MISSED_KIND
from bot.store.live import LIVE_KIND

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


async def run_lanes(
    plan: dict[Lane, list[OutboxItem]],
    deliver: Callable[[list[OutboxItem]], Coroutine[Any, Any, None]],
) -> None:
    """Every lane at once; an edit whose message is queued in this drain starts once that
    message's lane is done (so a head and its edit still go out in one drain)."""
    posts: dict[Lane, asyncio.Task[None]] = {
        key: asyncio.create_task(deliver(items))
        for key, items in plan.items()
        if isinstance(key, int)
    }
    lane_of = {item.id: key for key, items in plan.items() for item in items}

    async def edits(key: tuple[str, int | str], items: list[OutboxItem]) -> None:
        held = lane_of.get(key[1]) if key[0] == "edit" and isinstance(key[1], int) else None
        target = posts.get(held) if held is not None else None
        if target is not None:
            await asyncio.wait([target])
        await deliver(items)

    others = [edits(key, items) for key, items in plan.items() if not isinstance(key, int)]
    await asyncio.gather(*posts.values(), *others)
