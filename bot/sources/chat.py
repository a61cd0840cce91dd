"""Discord channel watch, the platform-neutral half: what to read back after the bot was away
(stopped, or between an invalidated session and the next READY), and a gate so that two
read-backs of one channel never run at once. The Discord half (history requests, turning
messages into events) is `cogs/watch.py`, which stores read-back and live messages through the
same code.

At every READY and RESUMED (and when the store recovers from a failed write), for each watched
channel and each of its active threads:
- the messages newer than the newest one stored for it, read newest first, page by page, until
  the read meets stored history (no fixed count), none older than `CATCH_UP_WINDOW` (a channel
  with nothing stored gets the last day). One read-back reads at most `READ_BACK_PAGES` pages per
  channel; where it stopped is stored (`ReadBackGaps`, in the cursors table) and the next
  read-back resumes there, after reading what is newer still;
- the `EDIT_LOOKBACK` messages up to and including that newest stored one, so an edit made while
  away updates its event (the store keeps a version only when its content changed and it is not
  older than the stored one, so re-reading is harmless).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from bot.store import Store

PAGE = 100  # Discord's largest history page
READ_BACK_PAGES = 50  # pages per channel (or thread) and read-back; the rest resumes next time
CATCH_UP_WINDOW = timedelta(hours=24)
EDIT_LOOKBACK = 100  # one history page
SOURCE = "discord"
_DISCORD_EPOCH_MS = 1_420_070_400_000

T = TypeVar("T")


def thread_key(channel_id: int) -> str:
    """`Event.thread` of the messages of a channel or thread."""
    return f"{SOURCE}:{channel_id}"


def message_key(message_id: int) -> str:
    """`Event.external_id` of a message."""
    return f"msg:{message_id}"


def snowflake_at(when: datetime) -> int:
    """The smallest Discord id created at `when` (ids are time-ordered)."""
    return max(int(when.timestamp() * 1000) - _DISCORD_EPOCH_MS, 0) << 22


@dataclass(frozen=True, slots=True)
class CatchUpPlan:
    after: int  # read the messages newer than this id, oldest first
    recheck_through: int | None  # and the EDIT_LOOKBACK messages up to this id, for edits


def catch_up_plan(last_seen: int | None, now: datetime) -> CatchUpPlan:
    floor = snowflake_at(now - CATCH_UP_WINDOW)
    if last_seen is None:
        return CatchUpPlan(after=floor, recheck_through=None)
    return CatchUpPlan(after=max(last_seen, floor), recheck_through=last_seen)


@dataclass(frozen=True, slots=True)
class Gap:
    """Messages not read yet: older than `before`, newer than `after` (ids)."""

    before: int
    after: int


class ReadBackGaps:
    """Where read-backs stopped on their budget, per channel, newest gap first; kept in the
    cursors table so a restart resumes them too."""

    def __init__(self, store: Store):
        self.store = store

    @staticmethod
    def _key(channel_id: int) -> str:
        return f"readback-gaps:{channel_id}"

    async def load(self, channel_id: int) -> list[Gap]:
        value, _ = await self.store.cursors.get(SOURCE, self._key(channel_id))
        if not value:
            return []
        try:
            return [Gap(int(b), int(a)) for b, a in json.loads(value)]
        except (ValueError, TypeError):
            return []

    async def save(self, channel_id: int, gaps: list[Gap]) -> None:
        value = json.dumps([[g.before, g.after] for g in gaps]) if gaps else None
        await self.store.cursors.set(SOURCE, self._key(channel_id), value)


async def last_seen(store: Store, slugs: Iterable[str], channel_id: int) -> int | None:
    """The newest message id stored for a channel by every run watching it: the oldest of those
    when runs differ (each run gets what it lacks), None when one of them has nothing."""
    seen = []
    for slug in slugs:
        event = await store.events.latest_in_thread(slug, SOURCE, thread_key(channel_id))
        prefix = message_key(0)[:-1]
        if event is None or not event.external_id.startswith(prefix):
            return None
        seen.append(int(event.external_id.removeprefix(prefix)))
    return min(seen) if seen else None


class ChannelGate:
    """One read-back per channel at a time, and at most one waiting behind it: a trigger that
    finds one already waiting is dropped, since the waiting one starts later and reads
    everything up to then."""

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}
        self._waiting: set[int] = set()

    def busy(self, key: int) -> bool:
        lock = self._locks.get(key)
        return lock is not None and lock.locked()

    async def run(self, key: int, body: Callable[[], Awaitable[T]]) -> T | None:
        """`body()` under the channel's lock; None when it was dropped."""
        if key in self._waiting:
            return None
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._waiting.add(key)
        try:
            await lock.acquire()
        finally:
            self._waiting.discard(key)
        try:
            return await body()
        finally:
            lock.release()
            if key not in self._waiting and not lock.locked():
                self._locks.pop(key, None)  # threads come and go: keep no lock for them
