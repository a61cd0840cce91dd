"""The composition root's building blocks: open the database, the HTTP client, the sources and
the LLM for a given configuration, and close them all on the way out. The CLI and the Discord
bot both start from `open_runtime`; nothing is created at import time."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from bot.models import RunInfo
from bot.pipeline import CycleSummary, Detector, Enricher, run_cycle
from bot.settings import RunsFile, Settings
from bot.sources.base import Source
from bot.store import Database, Store

if TYPE_CHECKING:
    from bot.llm.client import LLMClient

log = logging.getLogger(__name__)


async def record_runs(store: Store, runs: RunsFile) -> None:
    for run in runs.runs:
        await store.runs.upsert(RunInfo.from_config(run))


@dataclass(slots=True)
class Runtime:
    settings: Settings
    runs: RunsFile
    store: Store
    sources: list[Source] = field(default_factory=list)
    enricher: Enricher | None = None
    detector: Detector | None = None
    llm: LLMClient | None = None

    async def cycle(self, now: datetime) -> CycleSummary:
        """Poll, enrich, detect. (Narratives are refreshed by the caller's own schedule: the
        bot's narrative loop, or `runscribe poll` after each cycle.)"""
        return await run_cycle(
            self.store, self.sources, now, enricher=self.enricher, detector=self.detector
        )

    async def refresh_narratives(self, now: datetime) -> int:
        from bot import wiring

        slugs = [r.slug for r in self.runs.runs]
        return await wiring.refresh_narratives(self.store, self.llm, slugs, now)


@asynccontextmanager
async def open_store(settings: Settings) -> AsyncIterator[Store]:
    async with Database.open(settings.runscribe_db) as db:
        yield Store(db)


@asynccontextmanager
async def open_runtime(settings: Settings, runs: RunsFile) -> AsyncIterator[Runtime]:
    """Open everything a polling process needs. Live sources and the LLM are attached by
    `bot.wiring` when those modules are present and configured."""
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(settings))
        await record_runs(store, runs)
        runtime = Runtime(settings=settings, runs=runs, store=store)
        from bot import wiring  # late import: wiring pulls in httpx, wandb and anthropic

        await wiring.attach(runtime, stack)
        yield runtime
