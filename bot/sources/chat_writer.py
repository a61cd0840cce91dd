"""Writing watched chat to the store, losing none of it while the store refuses writes. The
Discord half (turning messages into events, reading history back) is `cogs/watch.py`; this half
knows only events and the store.

A batch that cannot be written (the database locked past its busy timeout, a full disk) is kept
in memory, in order, at most `UNSTORED_LIMIT` events, and written again with a growing wait
(`RETRY_WAITS`); later batches queue behind it. Once the store takes them, the writer asks for a
read-back (`on_overflow`) if memory could not hold everything. Live messages that arrive while a
write is under way join the next write (within the same limit) rather than each waiting for the
lock in a task of its own."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime

from bot.models import Event
from bot.store import Store
from bot.store.integrity import describe_sqlite_error

log = logging.getLogger(__name__)
SOURCE = "discord"
UNSTORED_LIMIT = 20_000  # events kept in memory while the store refuses writes
RETRY_WAITS = (0.5, 1.0, 2.0, 5.0, 10.0)  # seconds between tries to write them; then every 10 s
WRITE_CHUNK = 500


class ChatWriter:
    """The one writer of watched chat events: one write at a time, in arrival order."""

    def __init__(
        self,
        store: Store,
        clock: Callable[[], datetime],
        on_overflow: Callable[[str], object],
        limit: int = UNSTORED_LIMIT,
    ) -> None:
        self.store = store
        self.clock = clock
        self.on_overflow = on_overflow  # asked to read back what memory could not keep
        # Events the store refused, oldest first, and whether more came than could be kept.
        self.unstored: deque[Event] = deque()
        self.unstored_limit = limit
        self._overflowed = False
        self._joined: deque[Event] = deque()  # live events that came while a write was under way
        self._retry: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()
        self._closed = False

    @property
    def writing(self) -> bool:
        return self._writing.locked()

    @property
    def joined(self) -> int:
        return len(self._joined)

    async def close(self) -> None:
        """Stop retrying (what is still in memory is then read back at the next start)."""
        self._closed = True
        if self._retry is not None:
            self._retry.cancel()
            await asyncio.gather(self._retry, return_exceptions=True)

    async def write(self, events: list[Event], *, join: bool = False) -> int:
        """Store events (the store keeps a version only when its content changed and it is not
        older than the stored one). Returns the number inserted or changed (0 for those that
        `join` a write under way, or that wait in memory)."""
        if not events:
            return 0
        if join and self._writing.locked():
            # A write is under way (perhaps waiting out a locked database): these ride with
            # the next one, in order, instead of each message waiting for the lock in its own
            # task; a slow store then holds one bounded list, not a task per message.
            self._keep(events, self._joined)
            return 0
        # One write at a time (read-backs and deletions wait for the lock; live messages join).
        async with self._writing:
            if self._joined:  # left by a write that ended early (cancelled): they came first
                await self._store(self._take_joined())
            changed = await self._store(events)
            while self._joined:  # what arrived meanwhile, written before the lock is let go
                await self._store(self._take_joined())
            if self._overflowed and not self.unstored:  # more joined than memory kept
                self._overflowed = False
                self.on_overflow("messages came faster than the store took them")
            return changed

    async def delete(self, slugs: Iterable[str], keys: set[str]) -> None:
        """Mark messages deleted, through the same lock as writes, in arrival order (an edit
        waiting on the store is never written after the deletion that followed it)."""
        slugs = list(slugs)
        async with self._writing:
            for event in self.unstored:  # kept in memory, not stored yet: deleted there
                if event.external_id in keys and event.run_slug in slugs:
                    event.deleted = True
            try:
                for slug in slugs:
                    for key in sorted(keys):
                        await self.store.events.mark_deleted(slug, SOURCE, key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                said = self._said(exc) or str(exc)
                log.error("could not record %d deleted message(s): %s", len(keys), said)

    def _said(self, exc: Exception) -> str | None:
        db = self.store.db
        return describe_sqlite_error(exc, db.path, db.busy_timeout)

    def _take_joined(self) -> list[Event]:
        batch = list(self._joined)
        self._joined.clear()
        return batch

    async def _store(self, events: list[Event]) -> int:
        """Write under the lock, or keep the events in memory while the store refuses."""
        if self.unstored:  # the store is refusing writes: keep the order, queue behind
            self._keep(events)
            return 0
        try:
            return await self._write(events)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._keep(events)
            self._refused(exc, len(events))
            return 0

    async def _write(self, events: list[Event]) -> int:
        result = await self.store.events.upsert_many(events)
        now = self.clock()
        for slug in sorted({e.run_slug for e in events}):
            await self.store.health.record_success(SOURCE, slug, now)
        return len(result.changed)

    def _keep(self, events: list[Event], into: deque[Event] | None = None) -> None:
        """Keep events in memory (`unstored`, or `_joined` waiting for the write under way),
        both together at most `unstored_limit`; beyond it the newest are dropped and a
        read-back after the store recovers finds them."""
        room = self.unstored_limit - len(self.unstored) - len(self._joined)
        if room < len(events):
            self._overflowed = True
        (self.unstored if into is None else into).extend(events[: max(room, 0)])

    def _refused(self, exc: Exception, count: int) -> None:
        said = self._said(exc) or f"{type(exc).__name__}: {exc}"
        log.error(
            "could not store %d watched message(s): %s; keeping them in memory and retrying",
            count,
            said,
        )
        if (self._retry is None or self._retry.done()) and not self._closed:
            self._retry = asyncio.create_task(self._retry_writes(), name="runscribe-watch-retry")

    async def _retry_writes(self) -> None:
        """Write the kept events, oldest first, waiting longer after each refusal; then ask for
        a read-back of whatever could not be kept."""
        tries = 0
        written = 0
        while self.unstored:
            await asyncio.sleep(RETRY_WAITS[min(tries, len(RETRY_WAITS) - 1)])
            try:
                while self.unstored:
                    async with self._writing:
                        count = min(WRITE_CHUNK, len(self.unstored))
                        try:
                            await self._write([self.unstored[i] for i in range(count)])
                            for _ in range(count):
                                self.unstored.popleft()
                        finally:  # what arrived meanwhile queues behind, written or not
                            self.unstored.extend(self._take_joined())
                    written += count
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                tries += 1
                if tries % 10 == 1:  # one line now and then, not one per try
                    said = self._said(exc) or str(exc)
                    log.warning(
                        "still cannot store %d watched message(s) (try %d): %s",
                        len(self.unstored),
                        tries,
                        said,
                    )
        log.info("the store took the %d watched message(s) it had refused", written)
        if self._overflowed:
            self._overflowed = False
            self.on_overflow("the store recovered")
