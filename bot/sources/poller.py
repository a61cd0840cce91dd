"""Runs every configured source once per cycle. A failing source is logged, its failure and
next attempt are stored (exponential backoff per source, kept in the database so `status` and
`/healthz` can say when it is tried again), and the other sources carry on.

Recovery is at once, not at the end of a long wait:

- each source's backoff is capped (`Source.backoff_cap`, default `BACKOFF_CAP`; W&B, whose silence
  is an alert risk, 2 minutes);
- while a source backs off from an outage (not from a configuration error or a server-given
  `retry_after`), it is probed cheaply every cycle (`Source.probe`, a request that costs the
  server nothing); the moment it answers, it is polled;
- a refused credential or a missing repository is tried again a minute later, every time
  (`FATAL_BACKOFF`): access given back without a restart is seen within a minute;
- a new process, or a changed credential, tries every source at once whatever the stored backoff
  says (`PollSession`): a fixed token plus a restart never waits out the old token's backoff.
"""

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
# A refused token or a missing repository (a fatal error) is tried again a minute later, every
# time, however often it failed: access is often given back without a restart (a token renewed,
# a permission restored, a repository made visible) and must be seen at once. A try costs one
# refused request, what a probe would cost.
FATAL_BACKOFF = timedelta(minutes=1)
PROBE_TIMEOUT = 10.0  # seconds a probe may take before it counts as "still down"


def backoff_delay(
    failures: int, *, base: timedelta = BACKOFF_BASE, cap: timedelta = BACKOFF_CAP
) -> timedelta:
    """30 s, 60 s, 2 min, … capped at `cap` (30 min unless the source says less)."""
    seconds = base.total_seconds() * (2 ** min(max(failures - 1, 0), 20))
    return min(timedelta(seconds=seconds), cap)


def source_cap(source: Source) -> timedelta:
    cap = getattr(source, "backoff_cap", None)
    return cap if isinstance(cap, timedelta) else BACKOFF_CAP


def credential_of(source: Source) -> str:
    """A fingerprint of the credential the source polls with ("" when it says nothing)."""
    return str(getattr(source, "credential", "") or "")


@dataclass(slots=True)
class PollSession:
    """What this process knows about each source's backoff, keyed by source key. A key this
    session has not tried yet, or whose credential changed since, is tried at once; failures
    counted here (not the stored count, which spans restarts) set the next delay; `probe_ok`
    says whether the last failure was an outage worth probing for."""

    credentials: dict[str, str] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    probe_ok: dict[str, bool] = field(default_factory=dict)

    def is_fresh(self, source: Source) -> bool:
        return self.credentials.get(source.key) != credential_of(source)

    def tried(self, source: Source, *, failed: bool, probe_ok: bool = False) -> int:
        """Record an attempt; returns the failures in a row this session (0 after a success)."""
        key = source.key
        if self.credentials.get(key) != credential_of(source):
            self.failures.pop(key, None)
        self.credentials[key] = credential_of(source)
        count = self.failures.get(key, 0) + 1 if failed else 0
        self.failures[key] = count
        self.probe_ok[key] = failed and probe_ok
        return count


@dataclass(slots=True)
class CycleReport:
    results: dict[str, PollResult] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    # Each skipped source's next attempt and the error that put it in backoff.
    retry_at: dict[str, datetime] = field(default_factory=dict)
    backoff_errors: dict[str, str] = field(default_factory=dict)
    probed: list[str] = field(default_factory=list)  # backing off, probed, answered: polled
    # sources that failed on their configuration (a refused token, a missing run or repository)
    misconfigured: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.failures


async def _answers(source: Source) -> bool:
    probe = getattr(source, "probe", None)
    if probe is None:
        return False
    try:
        return bool(await asyncio.wait_for(probe(), PROBE_TIMEOUT))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a probe that fails says "still down", nothing more
        log.debug("%s: probe failed: %s", source.key, exc)
        return False


async def poll_once(
    store: Store,
    sources: Sequence[Source],
    now: datetime,
    *,
    respect_backoff: bool = True,
    session: PollSession | None = None,
) -> CycleReport:
    """One poll of each source. Without a `session`, the stored backoff is obeyed as stored
    (no probe, no reset); the bot and the CLI pass their process's session."""
    report = CycleReport()
    for source in sources:
        health = await store.health.get(source.name, source.key)
        backing_off = (
            respect_backoff
            and health is not None
            and health.next_attempt_at is not None
            and health.next_attempt_at > now
        )
        if backing_off and session is not None:
            assert health is not None and health.next_attempt_at is not None
            if session.is_fresh(source):
                log.info(
                    "%s: trying at once (new process or credential; the stored backoff ran "
                    "until %s)",
                    source.key,
                    f"{health.next_attempt_at:%H:%M:%S} UTC",
                )
                backing_off = False
            elif session.probe_ok.get(source.key) and await _answers(source):
                log.info("%s answers again: polling it now", source.key)
                report.probed.append(source.key)
                backing_off = False
        if backing_off:
            assert health is not None and health.next_attempt_at is not None
            report.skipped.append(source.key)
            report.retry_at[source.key] = health.next_attempt_at
            report.backoff_errors[source.key] = health.last_error or "failed"
            continue
        try:
            result = await source.poll(now)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one source never takes the others down
            await _record_failure(store, source, exc, health, now, report, session)
            continue
        if session is not None:
            session.tried(source, failed=False)
        await store.health.record_success(source.name, source.key, now)
        for slug in source.run_slugs:
            await store.health.record_success(source.name, slug, now)
        report.results[source.key] = result
    return report


async def _record_failure(
    store: Store,
    source: Source,
    exc: Exception,
    health: object,
    now: datetime,
    report: CycleReport,
    session: PollSession | None,
) -> None:
    unavailable = exc if isinstance(exc, SourceUnavailable) else None
    outage = unavailable is None or (not unavailable.fatal and unavailable.retry_after is None)
    if session is not None:
        failures = session.tried(source, failed=True, probe_ok=outage)
    else:
        failures = getattr(health, "consecutive_failures", 0) + 1
    cap = source_cap(source)
    delay = backoff_delay(failures, cap=cap)
    if unavailable is not None and unavailable.fatal:
        delay = min(FATAL_BACKOFF, cap)
    if unavailable is not None and unavailable.retry_after is not None:
        delay = max(delay, timedelta(seconds=unavailable.retry_after))
    message = str(exc) or type(exc).__name__
    again = getattr(health, "last_error", None) == message
    if unavailable is not None and unavailable.fatal and again:
        # said when it began; tried every minute, so not said every minute
        log.debug("%s: %s (still; retry in %s)", source.key, message, delay)
    elif unavailable is not None:
        log.error("%s: %s (retry in %s)", source.key, message, delay)
    else:
        log.exception("%s: poll failed (retry in %s)", source.key, delay)
    await store.health.record_failure(source.name, source.key, now, message, now + delay)
    for slug in source.run_slugs:
        await store.health.record_failure(source.name, slug, now, message, None)
    report.failures[source.key] = message
    if unavailable is not None and unavailable.fatal:
        report.misconfigured.add(source.key)
