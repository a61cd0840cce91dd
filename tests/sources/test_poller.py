"""The poller's isolation and backoff on a real store, with scripted sources."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.models import RunInfo
from bot.sources.base import PollResult, SourceUnavailable
from bot.sources.poller import BACKOFF_BASE, FATAL_BACKOFF, backoff_delay, poll_once
from bot.store import Store


class Scripted:
    name = "github"

    def __init__(self, key: str, outcomes: list[Exception | None]):
        self._key = key
        self.outcomes = outcomes
        self.calls = 0

    @property
    def key(self) -> str:
        return self._key

    @property
    def run_slugs(self) -> list[str]:
        return ["hero"]

    async def poll(self, now: datetime) -> PollResult:
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome
        return PollResult(events=1, requests=2)


def test_backoff_doubles_and_is_capped() -> None:
    assert backoff_delay(1) == BACKOFF_BASE
    assert backoff_delay(2) == 2 * BACKOFF_BASE
    assert backoff_delay(50) == timedelta(minutes=30)


async def test_a_failing_source_does_not_stop_the_others(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    broken = Scripted("github:o/broken", [RuntimeError("502 Bad Gateway")] * 3)
    fine = Scripted("github:o/fine", [])
    report = await poll_once(store, [broken, fine], now)
    assert report.failures == {"github:o/broken": "502 Bad Gateway"}
    assert "github:o/fine" in report.results
    health = await store.health.get("github", "github:o/broken")
    assert health is not None and health.consecutive_failures == 1
    assert health.next_attempt_at == now + BACKOFF_BASE

    # During the backoff the broken source is skipped; the healthy one keeps polling.
    report = await poll_once(store, [broken, fine], now + timedelta(seconds=10))
    assert report.skipped == ["github:o/broken"] and broken.calls == 1 and fine.calls == 2

    # After it, a second failure doubles the wait; a success clears everything.
    await poll_once(store, [broken], now + BACKOFF_BASE)
    health = await store.health.get("github", "github:o/broken")
    assert health is not None and health.consecutive_failures == 2
    assert health.next_attempt_at == now + BACKOFF_BASE + 2 * BACKOFF_BASE
    broken.outcomes.clear()
    report = await poll_once(store, [broken], now + timedelta(hours=1))
    assert report.ok
    health = await store.health.get("github", "github:o/broken")
    assert health is not None and health.consecutive_failures == 0 and health.last_error is None
    freshness = await store.health.get("github", "hero")
    assert freshness is not None and freshness.last_success_at == now + timedelta(hours=1)


async def test_retry_after_and_fatal_errors_wait_longer(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    limited = Scripted("github:o/limited", [SourceUnavailable("secondary limit", retry_after=600)])
    denied = Scripted("github:o/denied", [SourceUnavailable("token invalid", fatal=True)])
    await poll_once(store, [limited, denied], now)
    limited_health = await store.health.get("github", "github:o/limited")
    denied_health = await store.health.get("github", "github:o/denied")
    assert limited_health is not None and denied_health is not None
    assert limited_health.next_attempt_at == now + timedelta(seconds=600)
    assert denied_health.next_attempt_at == now + FATAL_BACKOFF
    assert denied_health.last_error == "token invalid"


async def test_skipped_sources_say_when_they_will_be_tried_again(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    missing = Scripted(
        "github:o/gone", [SourceUnavailable("repository o/gone not found", fatal=True)]
    )
    await poll_once(store, [missing], now)
    report = await poll_once(store, [missing], now + timedelta(minutes=1))
    assert report.skipped == ["github:o/gone"]
    assert report.retry_at == {"github:o/gone": now + FATAL_BACKOFF}
    assert report.backoff_errors == {"github:o/gone": "repository o/gone not found"}
    freshness = await store.health.get("github", "hero")
    assert freshness is not None and freshness.failing and freshness.failing_since == now
