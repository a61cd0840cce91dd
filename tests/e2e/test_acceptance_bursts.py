"""Acceptance: one retry policy for posts, never two stacked. discord.py
retries a 500/502/504/524 five times with its own waits (1, 3, 5, 7, 9 s) before it raises; the
poster then tries again at its next drain with no backoff of its own. Statuses discord.py does
not retry (503) get the poster's backoff instead.

discord.py's waits are real seconds; here its module's `asyncio.sleep` is made instant so the
test counts requests and reads the poster's schedule on an injected clock, instead of waiting
25 s per burst."""

from __future__ import annotations

import asyncio
import types
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import discord.http
import pytest

from bot.core.timeutil import utcnow
from bot.store import Store
from tests.bot.conftest import Seed, StartBot
from tests.e2e.test_acceptance_chaos import queue, until_sent, visible
from tests.fakes.discord import FakeDiscord

pytestmark = pytest.mark.timeout(600)


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def instant_discord_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """discord.py's own retry waits, recorded and skipped."""
    waited: list[float] = []

    async def sleep(seconds: float, result: Any = None) -> Any:
        waited.append(seconds)
        await asyncio.sleep(0)
        return result

    shim = types.SimpleNamespace(**{k: getattr(asyncio, k) for k in dir(asyncio) if k[:2] != "__"})
    shim.sleep = sleep
    monkeypatch.setattr(discord.http, "asyncio", shim)
    return waited


def posts(fake: FakeDiscord, channel: int) -> list[int]:
    path = f"/channels/{channel}/messages"
    return [r.status for r in fake.requests if r.method == "POST" and r.path == path]


@dataclass
class Burst:
    bot: Any
    clock: Clock
    alerts: int  # the channel whose posts fail
    item_id: int  # the queued post


async def burst(
    start_bot: StartBot,
    fake: FakeDiscord,
    store: Store,
    seed: Seed,
    status: int,
    count: int,
    text: str,
    **bot_options: Any,
) -> Burst:
    """`count` answers of `status` to the next posts in the alerts channel, one post of `text`
    queued there, and the bot started on an injected clock with its loops off."""
    alerts = int(seed.config["alerts_channel"])
    fake.inject("POST", rf"^/channels/{alerts}/messages$", status, count=count)
    item_id = await queue(store, alerts, f"burst:{status}", text)
    clock = Clock()
    bot = await start_bot(clock=clock, run_loops=False, **bot_options)
    return Burst(bot, clock, alerts, item_id)


async def test_seventy_500s_are_retried_by_discord_py_alone(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    instant_discord_waits: list[float],
) -> None:
    b = await burst(
        start_bot, fake, seeded_store, seed, 500, 70, "Node r12n4 lost during the burst"
    )
    bot, clock, alerts, item_id = b.bot, b.clock, b.alerts, b.item_id
    drains = 0
    while True:
        report: Any = await bot.drain_outbox()
        drains += 1
        if report.sent:
            break
        item = await seeded_store.outbox.get(item_id)
        assert item is not None and item.not_before is not None
        assert item.not_before == clock.now  # no backoff of the poster's on top of discord.py's
        assert drains < 20
    # Each drain: discord.py's five tries (its waits 1, 3, 5, 7, 9 s); 14 drains for 70 errors.
    assert drains == 15
    assert posts(fake, alerts) == [500] * 70 + [200]
    assert [w for w in instant_discord_waits if w > 0] == [1, 3, 5, 7, 9] * 14
    await until_sent(seeded_store, item_id)
    assert [visible(m) for m in fake.posted(alerts)] == ["Node r12n4 lost during the burst"]


async def test_a_503_discord_py_does_not_retry_gets_the_posters_backoff(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    instant_discord_waits: list[float],
) -> None:
    b = await burst(
        start_bot, fake, seeded_store, seed, 503, 1, "Throughput down 40 %", outbox_backoff=2.0
    )
    bot, clock, alerts, item_id = b.bot, b.clock, b.alerts, b.item_id
    report: Any = await bot.drain_outbox()
    assert not report.sent and posts(fake, alerts) == [503]  # one request: no discord.py retry
    item = await seeded_store.outbox.get(item_id)
    assert item is not None and item.not_before is not None
    assert (item.not_before - clock.now).total_seconds() == 2.0  # the poster's own backoff
    clock.now = item.not_before
    report = await bot.drain_outbox()
    assert report.sent == [item_id] and not [w for w in instant_discord_waits if w > 0]
