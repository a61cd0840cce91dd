"""A per-user sliding-window rate limit (5 questions a minute by default), with an injected
clock so tests never sleep. In memory: a restart forgets it, which is fine for a courtesy limit."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class RateLimiter:
    def __init__(
        self,
        limit: int = 5,
        window: float = 60.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.limit = limit
        self.window = window
        self.clock = clock
        self._seen: dict[int, deque[float]] = {}

    def try_acquire(self, user_id: int) -> float | None:
        """Record a use and return None, or return the seconds until the next one is allowed."""
        now = self.clock()
        seen = self._seen.setdefault(user_id, deque())
        while seen and seen[0] <= now - self.window:
            seen.popleft()
        if len(seen) >= self.limit:
            return max(0.0, seen[0] + self.window - now)
        seen.append(now)
        if len(self._seen) > 10_000:  # forget idle users now and then
            self._seen = {k: v for k, v in self._seen.items() if v and v[-1] > now - self.window}
        return None


__all__ = ["RateLimiter"]
