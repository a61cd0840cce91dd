"""Runs every configured source once per cycle. A failing source is logged, its failure and
next attempt are stored (exponential backoff per source, kept in the database so a restart does
not hammer a broken API), and the other sources carry on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.sources.base import PollResult, Source, SourceUnavailable
from bot.store import Store

log = logging.getLogger(__name__)

BACKOFF_BASE = timedelta(seconds=30)
BACKOFF_CAP = timedelta(minutes=30)
# A bad token or an unknown repository will not fix itself in 30 s; look again every 10 min.
FATAL_BACKOFF = timedelta(minutes=10)


def backoff_delay(failures: int, *, base: timedelta = BACKOFF_BASE) -> timedelta:
    """30 s, 60 s, 2 min, … capped at 30 min."""
    seconds = base.total_seconds() * (2 ** min(max(failures - 1, 0), 20))
    return min(timedelta(seconds=seconds), BACKOFF_CAP)


@dataclass(slots=True)
class CycleReport:
    results: dict[str, PollResult] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    # Each skipped source's next attempt and the error that put it in backoff.
    retry_at: dict[str, datetime] = field(default_factory=dict)
    backoff_errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures


async def poll_once(
    store: Store, sources: Sequence[Source], now: datetime, *, respect_backoff: bool = True
) -> CycleReport:
    report = CycleReport()
    for source in sources:
        health = await store.health.get(source.name, source.key)
        if (
            respect_backoff
            and health is not None
            and health.next_attempt_at is not None
            and health.next_attempt_at > now
        ):
            report.skipped.append(source.key)
            report.retry_at[source.key] = health.next_attempt_at
            report.backoff_errors[source.key] = health.last_error or "failed"
            continue
        try:
            result = await source.poll(now)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one source never takes the others down
            failures = (health.consecutive_failures if health else 0) + 1
            delay = backoff_delay(failures)
            if isinstance(exc, SourceUnavailable):
                if exc.retry_after is not None:
                    delay = max(delay, timedelta(seconds=exc.retry_after))
                if exc.fatal:
                    delay = max(delay, FATAL_BACKOFF)
            message = str(exc) or type(exc).__name__
            if isinstance(exc, SourceUnavailable):
                log.error("%s: %s (retry in %s)", source.key, message, delay)
            else:
                log.exception("%s: poll failed (retry in %s)", source.key, delay)
            await store.health.record_failure(source.name, source.key, now, message, now + delay)
            for slug in source.run_slugs:
                await store.health.record_failure(source.name, slug, now, message, None)
            report.failures[source.key] = message
            continue
        await store.health.record_success(source.name, source.key, now)
        for slug in source.run_slugs:
            await store.health.record_success(source.name, slug, now)
        report.results[source.key] = result
    return report
