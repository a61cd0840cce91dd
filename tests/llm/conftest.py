"""Fixtures for the LLM layer: a local fake Anthropic server, a client pointed at it with tiny
retry waits, a tracked run and event factories. The shared `store` and `now` come from
tests/conftest.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from bot.llm.client import LLMClient
from bot.models import Event, RunInfo
from bot.store import Store
from tests.fakes.anthropic import FakeAnthropic

MODEL = "claude-sonnet-4-6"


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def make_llm(fake: FakeAnthropic, store: Store) -> AsyncIterator[Callable[..., LLMClient]]:
    clients: list[LLMClient] = []

    def build(**overrides: Any) -> LLMClient:
        kwargs: dict[str, Any] = {
            "api_key": "sk-test-not-a-secret",
            "base_url": fake.base_url,
            "model": MODEL,
            "timeout": 2.0,
            "max_retries": 2,
            "daily_budget_usd": 5.0,
            "max_retry_wait": 0.05,
        }
        kwargs.update(overrides)
        client = LLMClient(store, **kwargs)
        clients.append(client)
        return client

    yield build
    for client in clients:
        await client.aclose()


@pytest.fixture
async def run(store: Store) -> RunInfo:
    info = RunInfo(slug="hero", name="Hero 70B", total_steps=100_000, timezone="UTC")
    await store.runs.upsert(info)
    return info


def make_event(n: int, at: datetime, **kw: Any) -> Event:
    fields: dict[str, Any] = {
        "run_slug": "hero",
        "source": "github",
        "external_id": f"comment:{n}",
        "kind": "comment",
        "at": at,
        "author": f"user{n % 3}",
        "ref": "#8818",
        "url": f"https://github.com/acme/llm/issues/8818#issuecomment-{n}",
        "body": f"Comment {n}: the attention gate norm keeps growing in the early layers.",
        "thread": "github:acme/llm#8818",
    }
    fields.update(kw)
    return Event(**fields)


@pytest.fixture
def events_at(now: datetime) -> Callable[[int], list[Event]]:
    def build(count: int) -> list[Event]:
        return [make_event(n, now - timedelta(minutes=count - n)) for n in range(1, count + 1)]

    return build
