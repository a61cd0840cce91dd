"""Acceptance: `/healthz` says 503 when posts cannot be delivered, and which
condition, through the real bot on the fake Discord and the real web server on the same
database. The web server's clock is moved past the bound (`DELIVERY_BOUND`) instead of waiting.

- every post refused (the fake answers 503): at once, the last try in the alerts channel
  failed; past the bound, the oldest queued post has waited too long too;
- the gateway refused (the fake's websocket answers 503 after a drop): the gateway is down;
- both recover: 200 again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiohttp
import pytest

from bot.core.timeutil import utcnow
from bot.services.delivery import DELIVERY_BOUND
from bot.store import Store
from bot.web.server import serve
from tests.bot.conftest import Seed, StartBot
from tests.e2e.test_acceptance_chaos import queue, until_sent
from tests.fakes.discord import FakeDiscord
from tests.waiting import PATIENCE, until

pytestmark = pytest.mark.timeout(600)
LATER = DELIVERY_BOUND + timedelta(seconds=1)


@dataclass
class Ahead:
    """The web server's clock: the wall clock plus `by` (the bound passes without waiting)."""

    by: timedelta = timedelta(0)

    def __call__(self) -> datetime:
        return utcnow() + self.by


@dataclass
class Health:
    url: str
    http: aiohttp.ClientSession
    clock: Ahead

    async def get(self) -> tuple[int, dict[str, Any]]:
        async with self.http.get(self.url) as response:
            return response.status, await response.json()


@pytest.fixture
async def health(seeded_store: Store) -> AsyncIterator[Health]:
    clock = Ahead()
    await seeded_store.cycles.record(utcnow(), utcnow(), 3600)  # the poll loop is not the topic
    async with (
        serve(seeded_store, "127.0.0.1", 0, poll_interval=3600, clock=clock) as (_site, port),
        aiohttp.ClientSession() as http,
    ):
        yield Health(f"http://127.0.0.1:{port}/healthz", http, clock)


def delivery_problems(body: dict[str, Any]) -> list[str]:
    return [p for p in body["problems"] if p.startswith("delivery:")]


async def test_posts_refused_make_healthz_503_and_say_so(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, health: Health
) -> None:
    alerts = int(seed.config["alerts_channel"])
    refused = fake.inject("POST", rf"^/channels/{alerts}/messages$", 503, count=10_000)
    item_id = await queue(seeded_store, alerts, "health:refused", "Node r12n4 lost")
    await start_bot()
    await fake.wait_for(
        lambda: any(r.status == 503 for r in fake.requests if r.method == "POST"), within=PATIENCE
    )
    status, body = await health.get()
    # at once: the last try to post in the alerts channel failed (issue 35)
    assert status == 503 and body["delivery"]["gateway"]["connected"], body
    [problem] = delivery_problems(body)
    assert f"posts to alerts channel {alerts} have failed" in problem, problem
    assert "503 injected failure" in problem, problem
    health.clock.by = LATER
    status, body = await health.get()
    assert status == 503, body
    [queued, channel] = delivery_problems(body)
    assert "oldest queued post (alert #" in queued and "HTTP 503" in queued, queued
    assert f"alerts channel {alerts}" in channel, channel
    assert body["delivery"]["queue"]["oldest_kind"] == "alert"

    refused.count = 0  # Discord takes posts again
    await until_sent(seeded_store, item_id, within=PATIENCE)
    status, body = await health.get()
    assert status == 200 and not delivery_problems(body), body


async def test_gateway_down_beyond_the_bound_is_503_and_back_is_200(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, health: Health
) -> None:
    await start_bot()
    health.clock.by = LATER
    status, body = await health.get()
    assert status == 200, body

    fake.gateway_refused = True
    await fake.drop_websocket()
    await until(lambda: _gateway_down(seeded_store), "gateway recorded down")
    status, body = await health.get()
    assert status == 503, body
    [problem] = delivery_problems(body)
    assert problem.startswith("delivery: Discord gateway down for "), problem
    assert body["delivery"]["gateway"]["connected"] is False

    fake.gateway_refused = False
    await fake.wait_connected(within=PATIENCE)
    await until(lambda: _gateway_up(seeded_store), "gateway recorded up")
    status, body = await health.get()
    assert status == 200 and not delivery_problems(body), body


async def _gateway_down(store: Store) -> bool:
    row = await store.health.get("delivery", "gateway:discord")
    return row is not None and row.failing


async def _gateway_up(store: Store) -> bool:
    row = await store.health.get("delivery", "gateway:discord")
    return row is not None and not row.failing
