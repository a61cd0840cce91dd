"""A per-user sliding-window rate limit (5 questions a minute by default), with an injected
clock so tests never sleep. With a store, each user's recent questions are kept in the cursors
table too, so a restart does not hand everyone a fresh allowance."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.store import Store

log = logging.getLogger(__name__)
SOURCE = "ask"


class RateLimiter:
    def __init__(
        self,
        limit: int = 5,
        window: float = 60.0,
        *,
        clock: Callable[[], float] = time.time,
        store: Store | None = None,
    ):
        self.limit = limit
        self.window = window
        self.clock = clock  # wall-clock seconds: the stored uses must mean the same after a restart
        self.store = store
        self._seen: dict[int, deque[float]] = {}
        self._saving: set[asyncio.Task[None]] = set()

    async def try_acquire(self, user_id: int) -> float | None:
        """Record a use and return None, or return the seconds until the next one is allowed."""
        now = self.clock()
        seen = self._seen.get(user_id)
        if seen is None:
            seen = self._seen[user_id] = deque(await self._load(user_id))
        while seen and seen[0] <= now - self.window:
            seen.popleft()
        if len(seen) >= self.limit:
            return max(0.0, seen[0] + self.window - now)
        seen.append(now)
        self._save(user_id, list(seen))
        if len(self._seen) > 10_000:  # forget idle users now and then
            self._seen = {k: v for k, v in self._seen.items() if v and v[-1] > now - self.window}
        return None

    async def _load(self, user_id: int) -> list[float]:
        if self.store is None:
            return []
        try:
            value, _ = await self.store.cursors.get(SOURCE, f"limit:{user_id}")
            return sorted(float(t) for t in json.loads(value or "[]"))[-self.limit :]
        except Exception as exc:  # a courtesy limit never fails a question
            log.warning("could not read the /ask limit of %s: %s", user_id, exc)
            return []

    def _save(self, user_id: int, uses: list[float]) -> None:
        """In the background: the answer never waits for this write."""
        if self.store is None:
            return
        store = self.store

        async def save() -> None:
            try:
                await store.cursors.set(SOURCE, f"limit:{user_id}", json.dumps(uses))
            except Exception as exc:
                log.warning("could not record the /ask limit of %s: %s", user_id, exc)

        task = asyncio.create_task(save(), name="runscribe-ask-limit")
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def flush(self) -> None:
        """Wait for the background writes (tests, shutdown)."""
        if self._saving:
            await asyncio.gather(*list(self._saving), return_exceptions=True)


__all__ = ["RateLimiter"]
