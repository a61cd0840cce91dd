"""The /ask rate limit on a real store: a restart (a new limiter over the same database) keeps
what the last process counted."""

from __future__ import annotations

from bot.ask.limits import RateLimiter
from bot.store import Store


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_the_limit_survives_a_restart(store: Store) -> None:
    clock = Clock()
    before = RateLimiter(limit=5, window=60, clock=clock, store=store)
    for _ in range(5):
        assert await before.try_acquire(42) is None
        clock.now += 1
    await before.flush()
    after = RateLimiter(limit=5, window=60, clock=clock, store=store)  # the bot restarted
    wait = await after.try_acquire(42)
    assert wait is not None and 0 < wait <= 60
    assert await after.try_acquire(43) is None  # someone else is not limited
    clock.now += 60
    assert await after.try_acquire(42) is None  # the window passed


async def test_without_a_store_the_limit_is_in_memory(store: Store) -> None:
    clock = Clock()
    limiter = RateLimiter(limit=1, window=60, clock=clock)
    assert await limiter.try_acquire(1) is None
    assert await limiter.try_acquire(1) is not None
