"""The poller's isolation and backoff on a real store, with scripted sources."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.models import RunInfo
from bot.sources.base import PollResult, SourceUnavailable
from bot.sources.poller import (
    BACKOFF_BASE,
    FATAL_BACKOFF,
    PollSession,
    backoff_delay,
    poll_once,
)
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
    report = await poll_once(store, [missing], now + timedelta(seconds=30))
    assert report.skipped == ["github:o/gone"]
    assert report.retry_at == {"github:o/gone": now + FATAL_BACKOFF}
    assert report.backoff_errors == {"github:o/gone": "repository o/gone not found"}
    freshness = await store.health.get("github", "hero")
    assert freshness is not None and freshness.failing and freshness.failing_since == now


class Probed(Scripted):
    """A source with a cheap probe and a credential, as the W&B source has."""

    name = "wandb"
    backoff_cap = timedelta(minutes=2)

    def __init__(self, key: str, outcomes: list[Exception | None], credential: str = "k1"):
        super().__init__(key, outcomes)
        self.credential = credential
        self.up = False
        self.probes = 0

    async def probe(self) -> bool:
        self.probes += 1
        return self.up


async def test_wandb_backoff_is_capped_at_two_minutes(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    down = Probed("wandb:hero", [SourceUnavailable("W&B is unreachable (HTTP 503)")] * 20)
    fatal = Probed("wandb:other", [SourceUnavailable("rejected the API key", fatal=True)] * 20)
    session = PollSession()
    at = now
    for _ in range(12):
        await poll_once(store, [down, fatal], at, session=session, respect_backoff=False)
        at += timedelta(minutes=5)
    health = await store.health.get("wandb", "wandb:hero")
    assert health is not None and health.consecutive_failures == 12
    assert health.last_attempt_at is not None and health.next_attempt_at is not None
    assert health.next_attempt_at - health.last_attempt_at == timedelta(minutes=2)
    wrong_key = await store.health.get("wandb", "wandb:other")
    assert wrong_key is not None and wrong_key.next_attempt_at is not None
    assert wrong_key.last_attempt_at is not None
    # A wrong key is looked at again a minute later, as any refused credential is.
    assert wrong_key.next_attempt_at - wrong_key.last_attempt_at == FATAL_BACKOFF


async def test_an_outage_is_probed_while_backing_off_and_polled_once_it_answers(
    store: Store, now: datetime
) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    source = Probed("wandb:hero", [SourceUnavailable("W&B is unreachable (HTTP 503)")] * 3)
    session = PollSession()
    for minutes in range(3):  # fails at +0, +1 min (30 s backoff), then +2 (60 s)
        await poll_once(store, [source], now + timedelta(minutes=minutes), session=session)
    assert source.calls == 3
    health = await store.health.get("wandb", "wandb:hero")
    assert health is not None and health.next_attempt_at == now + timedelta(minutes=4)
    # Still backing off: probed, down, skipped; nothing polled.
    report = await poll_once(store, [source], now + timedelta(minutes=3), session=session)
    assert report.skipped == ["wandb:hero"] and source.probes == 1 and source.calls == 3
    # It answers: the next cycle polls it, however long the stored backoff still runs.
    source.up = True
    report = await poll_once(
        store, [source], now + timedelta(minutes=3, seconds=30), session=session
    )
    assert report.probed == ["wandb:hero"] and "wandb:hero" in report.results
    health = await store.health.get("wandb", "wandb:hero")
    assert health is not None and not health.failing and health.next_attempt_at is None


async def test_configuration_errors_are_not_probed(store: Store, now: datetime) -> None:
    """A probe says "the server answers"; a wrong key or a missing run stays wrong: not polled
    every cycle because the server is up."""
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    wrong = Probed("wandb:hero", [SourceUnavailable("rejected the API key", fatal=True)])
    wrong.up = True
    session = PollSession()
    await poll_once(store, [wrong], now, session=session)
    report = await poll_once(store, [wrong], now + timedelta(seconds=30), session=session)
    assert report.skipped == ["wandb:hero"] and wrong.probes == 0 and wrong.calls == 1


async def test_a_restart_or_a_changed_credential_tries_at_once(store: Store, now: datetime) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    github = Scripted("github:o/r", [SourceUnavailable("token invalid", fatal=True)] * 5)
    await poll_once(store, [github], now, session=PollSession())
    health = await store.health.get("github", "github:o/r")
    assert health is not None and health.next_attempt_at == now + FATAL_BACKOFF

    # The same process: the stored backoff is obeyed.
    session = PollSession()
    github.outcomes.clear()  # the token was fixed
    restarted = await poll_once(store, [github], now + timedelta(seconds=20), session=session)
    # A new process (a new session): tried at once despite the stored backoff.
    assert "github:o/r" in restarted.results and github.calls == 2

    wandb = Probed("wandb:hero", [SourceUnavailable("rejected the API key", fatal=True)] * 2)
    session = PollSession()
    await poll_once(store, [wandb], now, session=session)
    report = await poll_once(store, [wandb], now + timedelta(seconds=10), session=session)
    assert report.skipped == ["wandb:hero"]
    wandb.credential = "k2"  # a new key, same process (e.g. a reloaded client)
    report = await poll_once(store, [wandb], now + timedelta(seconds=20), session=session)
    assert "wandb:hero" in report.failures and wandb.calls == 2  # tried at once, still wrong
    assert session.failures["wandb:hero"] == 1  # the count starts again with the new key


async def test_a_refused_token_is_tried_again_every_minute(store: Store, now: datetime) -> None:
    """A GitHub 401 that clears by itself (a token renewed, access given back) is seen within a
    minute, however many times it was refused before: the wait does not grow."""
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    github = Scripted("github:o/r", [SourceUnavailable("token invalid (HTTP 401)", fatal=True)] * 8)
    session = PollSession()
    at = now
    for _ in range(8):
        report = await poll_once(store, [github], at, session=session)
        assert report.failures == {"github:o/r": "token invalid (HTTP 401)"}
        health = await store.health.get("github", "github:o/r")
        assert health is not None and health.next_attempt_at is not None
        assert health.next_attempt_at - at <= timedelta(minutes=1)
        at = health.next_attempt_at
    assert github.calls == 8
    report = await poll_once(store, [github], at, session=session)  # access is back
    assert "github:o/r" in report.results and github.calls == 9
