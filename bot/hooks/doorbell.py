"""How a web handler that stored a pushed delivery wakes the process's pipeline at once, instead
of leaving it for the next poll: it rings, the hooks loop (`RunscribeBot`, `runscribe web`)
reads what was pushed, judges it, and wakes the enrichment and the outbox in turn."""

from __future__ import annotations

import asyncio


class Doorbell:
    """A wake-up for one loop: rings coalesce until the loop has taken them."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.rings = 0  # how many times it was rung (tests and benchmarks read it)

    def ring(self) -> None:
        self.rings += 1
        self.event.set()
