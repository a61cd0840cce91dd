"""Single flight: concurrent calls for the same key share one computation. A burst of 50 `/status`
for one run builds the report once instead of 50 times; each caller still gets its own answer
object to send. Nothing is kept after the computation ends, so a later call computes anew."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class SingleFlight(Generic[V]):
    def __init__(self) -> None:
        self._flights: dict[Hashable, asyncio.Future[V]] = {}
        self.started = 0  # computations run (for tests and benchmarks)

    async def run(self, key: Hashable, compute: Callable[[], Awaitable[V]]) -> V:
        future = self._flights.get(key)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._flights[key] = future
            self.started += 1
            task = asyncio.create_task(self._compute(key, compute, future))
            task.add_done_callback(_retrieved)
        # Shielded: a caller that is cancelled never cancels the others' computation.
        return await asyncio.shield(future)

    async def _compute(
        self, key: Hashable, compute: Callable[[], Awaitable[V]], future: asyncio.Future[V]
    ) -> None:
        try:
            value = await compute()
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)
                future.exception()  # every waiter re-raises it; never "never retrieved"
            if not isinstance(exc, Exception):
                raise
        else:
            if not future.done():
                future.set_result(value)
        finally:
            self._flights.pop(key, None)


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()
