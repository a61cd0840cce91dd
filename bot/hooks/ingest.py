"""The GitHub deliveries waiting in the store, read into their repositories' sources.

Each delivery goes to the `GitHubSource` of its repository (`GitHubSource.ingest`), which keeps
what a poll would keep of it and nothing else; then its payload is dropped (its id stays, so a
redelivery changes nothing). A delivery the source cannot read now (GitHub unreachable for a
thread it mentions) is left to the poll, which reads the same threads anyway."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from bot.hooks.github import HOOK, pushed
from bot.sources.base import Source
from bot.sources.github_threads import Pushed
from bot.store import Store

log = logging.getLogger(__name__)

BATCH = 200  # deliveries read per step


@runtime_checkable
class PushTarget(Protocol):
    """A source that takes pushed threads (`GitHubSource`)."""

    repo: str

    async def ingest(self, pushes: Sequence[Pushed]) -> int: ...


async def ingest_github(store: Store, sources: Sequence[Source], now: datetime) -> int:
    """Read every waiting GitHub delivery; returns the number of events written."""
    targets = {
        s.repo.lower(): s for s in sources if s.name == "github" and isinstance(s, PushTarget)
    }
    written = 0
    read = 0
    while True:
        batch = await store.hooks.pending(HOOK, limit=BATCH)
        if not batch:
            break
        read += len(batch)
        by_repo: dict[str, list[Pushed]] = {}
        for delivery in batch:
            item = pushed(delivery.event, delivery.payload)
            if item is not None:
                by_repo.setdefault(item.repo.lower(), []).append(item)
        for repo, items in by_repo.items():
            target = targets.get(repo)
            if target is None:
                log.info(
                    "GitHub webhook: %d delivery(ies) for %s, which no source polls",
                    len(items),
                    repo,
                )
                continue
            try:
                written += await target.ingest(items)
            except Exception:
                log.exception(
                    "GitHub webhook: %d delivery(ies) for %s not read; the next poll reads them",
                    len(items),
                    repo,
                )
        await store.hooks.done([d.id for d in batch])
        if len(batch) < BATCH:
            break
    if read:  # nothing waited: nothing to write either (this runs on every hooks round)
        log.info("GitHub webhook: %d delivery(ies) read, %d event(s) stored", read, written)
        await store.hooks.prune(now)
    return written
