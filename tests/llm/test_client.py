"""The adapter against the fake server: retries with a capped wait, fallbacks, budget, cost."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest

from bot.config.settings import Settings
from bot.llm.client import (
    DEFAULT_PRICE,
    LLMClient,
    LLMUnavailable,
    cost_usd,
    format_usage,
    price_for,
    usage_report,
)
from bot.models import LLMOutput
from bot.store import Store
from tests.fakes.anthropic import FakeAnthropic, error, slow, text

MESSAGES = [{"role": "user", "content": "Say hello."}]


async def call(llm: LLMClient, now: datetime, **kw: object):
    return await llm.complete(system="Be brief.", messages=MESSAGES, max_tokens=50, now=now, **kw)


async def test_call_sends_bearer_auth_version_and_no_sdk_retries(fake, make_llm, now):
    fake.push(text("Hello."))
    result = await call(make_llm(), now)
    assert result.text == "Hello."
    [request] = fake.message_requests
    assert request.headers["Authorization"] == "Bearer sk-test-not-a-secret"
    assert request.headers["anthropic-version"]
    assert request.body["model"] == "claude-sonnet-4-6"
    assert "temperature" not in request.body
    assert result.input_tokens > 0 and result.output_tokens > 0
    assert result.cost_usd == pytest.approx(
        cost_usd("claude-sonnet-4-6", result.input_tokens, result.output_tokens)
    )


async def test_429_retry_after_is_capped(fake, make_llm, now):
    """The 30 s the server asks for is capped at `max_retry_wait`: the client's own sleep is
    recorded (no clock), so an ignored cap shows as a 30 s wait asked for."""
    fake.push(error(429, "slow down", headers={"retry-after": "30"}), text("Hello."))
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    result = await call(make_llm(max_retry_wait=0.05, sleep=sleep), now)
    assert result.text == "Hello." and result.attempts == 2
    assert len(fake.message_requests) == 2  # our loop retried, not the SDK's
    assert slept == [0.05]


async def test_retry_after_below_the_cap_is_honoured(fake, make_llm, now):
    fake.push(error(429, "slow down", headers={"retry-after": "30"}), text("Hello."))
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    result = await call(make_llm(max_retry_wait=60.0, sleep=sleep), now)
    assert result.attempts == 2 and slept == [30.0]


async def test_529_overloaded_then_success(fake, make_llm, now):
    fake.push(error(529, "overloaded"), error(529, "overloaded"), text("Hello."))
    result = await call(make_llm(max_retries=2), now)
    assert result.attempts == 3


async def test_500_exhausts_bounded_retries(fake, make_llm, now):
    fake.push(*[error(500, "boom")] * 5)
    with pytest.raises(LLMUnavailable) as info:
        await call(make_llm(max_retries=1), now)
    assert info.value.reason == "error"
    assert len(fake.message_requests) == 2


async def test_400_is_not_retried(fake, make_llm, now):
    fake.push(error(400, "bad request"), text("never"))
    with pytest.raises(LLMUnavailable):
        await call(make_llm(), now)
    assert len(fake.message_requests) == 1


async def test_timeout_is_retried_then_gives_up(fake, make_llm, now):
    fake.push(slow(1.0), slow(1.0))
    with pytest.raises(LLMUnavailable) as info:
        await call(make_llm(timeout=0.2, max_retries=1), now)
    # The reason is the client's timeout (not a finished slow answer), after one retry.
    assert "timeout" in str(info.value)
    assert len(fake.message_requests) == 2


async def test_no_key_sends_nothing(fake, make_llm, now):
    llm = make_llm(api_key=None)
    assert not llm.enabled
    with pytest.raises(LLMUnavailable) as info:
        await call(llm, now)
    assert info.value.reason == "no-key"
    assert fake.requests == []


async def test_spent_budget_sends_nothing(fake, make_llm, store, now):
    await store.llm.record(
        LLMOutput(
            task="narrative",
            prompt_name="narrative",
            prompt_hash="x",
            model="claude-sonnet-4-6",
            content="...",
            created_at=now - timedelta(hours=1),
            cost_usd=1.0,
        )
    )
    with pytest.raises(LLMUnavailable) as info:
        await call(make_llm(daily_budget_usd=1.0), now)
    assert info.value.reason == "budget"
    assert fake.requests == []
    # yesterday's spend does not count against today
    fake.push(text("Hello."))
    await call(make_llm(daily_budget_usd=1.0), now + timedelta(days=1))
    assert len(fake.message_requests) == 1


async def test_zero_budget_disables(fake, make_llm, now):
    with pytest.raises(LLMUnavailable):
        await call(make_llm(daily_budget_usd=0), now)
    assert fake.requests == []


def test_price_table_and_conservative_default():
    assert price_for("claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert price_for("claude-sonnet-4-6") == (3.0, 15.0)
    assert price_for("claude-haiku-4-5") == (1.0, 5.0)
    assert price_for("some-new-model") == DEFAULT_PRICE
    assert cost_usd("claude-sonnet-4-6", 1_000_000, 1_000_000) == pytest.approx(18.0)


def test_from_settings_reads_key_and_tunables(store: Store):
    settings = Settings(
        _env_file=None,
        anthropic_api_key="sk-abc",
        anthropic_base_url="http://127.0.0.1:9",
        runscribe_model="claude-haiku-4-5",
        runscribe_llm_timeout=3,
        runscribe_llm_max_retries=1,
        runscribe_llm_daily_budget_usd=2,
    )
    llm = LLMClient.from_settings(settings, store)
    assert llm.enabled and llm.model == "claude-haiku-4-5"
    assert (llm.timeout, llm.max_retries, llm.daily_budget_usd) == (3, 1, 2)
    assert "sk-abc" not in repr(llm.__dict__.get("_logged"))


async def test_usage_report_sums_today_and_month(store: Store, now: datetime):
    def row(task: str, cost: float, at: datetime, fallback: bool = False) -> LLMOutput:
        return LLMOutput(
            task=task,
            prompt_name=task,
            prompt_hash="h",
            model="claude-sonnet-4-6",
            content="",
            created_at=at,
            input_tokens=100,
            output_tokens=10,
            cost_usd=cost,
            fallback=fallback,
        )

    for output in (
        row("enrich", 0.01, now),
        row("enrich", 0.02, now - timedelta(hours=1)),
        row("narrative", 0.05, now),
        row("narrative", 0.0, now, fallback=True),
        row("digest", 0.10, now - timedelta(days=1)),  # earlier this month
        row("digest", 9.00, now - timedelta(days=40)),  # last month
    ):
        await store.llm.record(output)
    report = await usage_report(store, now, daily_budget_usd=1.0)
    assert report["today"]["by_task"]["enrich"]["calls"] == 2
    assert report["today"]["by_task"]["enrich"]["cost_usd"] == pytest.approx(0.03)
    assert report["today"]["total"]["cost_usd"] == pytest.approx(0.08)
    assert report["month"]["total"]["cost_usd"] == pytest.approx(0.18)
    assert "digest" not in report["today"]["by_task"]
    assert report["budget_left_today_usd"] == pytest.approx(0.92)
    table = format_usage(report)
    assert "enrich" in table and "$0.08" in table and "Daily budget $1.00" in table


async def test_fallback_is_logged_once_without_the_key(make_llm, now, caplog):
    caplog.set_level(logging.INFO, logger="bot.llm.client")
    llm = make_llm(api_key=None)
    for _ in range(3):
        try:
            await call(llm, now)
        except LLMUnavailable as exc:
            llm.note_fallback(exc, "enrich", now)
    lines = [r for r in caplog.records if r.name == "bot.llm.client"]
    assert len(lines) == 1
    assert "sk-" not in caplog.text


async def test_fake_server_rejects_missing_credentials(fake: FakeAnthropic):
    import httpx

    async with httpx.AsyncClient() as client:
        response = await client.post(
            fake.base_url + "/v1/messages",
            json={"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]},
            headers={"anthropic-version": "2023-06-01"},
        )
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
