"""The live status message (issue 26) through the real discord.py client against the fake
Discord: one message per run in its `status_channel`, the /status card with its chart, pinned
when the bot may pin, edited in place; gone → exactly one new one; two runs share a channel;
an event storm is bounded to about an edit a minute; 429s are waited out; nothing pings.

Time is the bot's injected clock, moved by the test; updates are asked for with
`bot.refresh_live()` (what the loop calls), so no test waits for a timer."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

import pytest

from bot.app import RunscribeBot
from bot.live import MIN_GAP
from bot.models import Incident, LiveMessage, MetricPoint
from bot.runtime import record_runs
from bot.settings import RunsFile, parse_runs
from bot.store import Store
from bot.timeutil import utcnow
from tests.bot.conftest import Seed, StartBot, with_config
from tests.fakes.discord import MANAGE_MESSAGES, FakeDiscord, Recorded

pytestmark = pytest.mark.timeout(90)

STATUS = 1213463398226931745  # the sample's alerts channel: the live message sits beside alerts


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def live_runs(runs: RunsFile, **changes: Any) -> RunsFile:
    return with_config(runs, status_channel=STATUS, **changes)


def live_posts(fake: FakeDiscord, channel: int = STATUS) -> list[dict[str, Any]]:
    return [m for m in fake.posted(channel) if "Live status" in str(m["content"])]


def requests(fake: FakeDiscord, method: str, path: str) -> list[Recorded]:
    return [r for r in fake.requests if r.method == method and r.path == path]


async def row(store: Store, slug: str, until: Any = None) -> LiveMessage:
    for _ in range(1500):
        found = await store.live.get(slug)
        if found is not None and found.message_id is not None and (until is None or until(found)):
            return found
        await asyncio.sleep(0.02)
    raise TimeoutError(f"no live message recorded for {slug}")


async def delivered(store: Store, slug: str) -> None:
    """Wait until no live update of the run is queued."""
    for _ in range(1500):
        if not await store.live.queued(slug):
            return
        await asyncio.sleep(0.02)
    raise TimeoutError("the live update stayed queued")


async def update(bot: RunscribeBot, slug: str) -> int:
    queued = await bot.refresh_live()
    assert slug in queued, queued
    await delivered(bot.store, slug)
    return queued[slug]


async def test_one_pinned_live_message_shows_the_status_card_and_is_edited_in_place(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    fake.bot_permissions |= MANAGE_MESSAGES
    clock = Clock()
    bot = await start_bot(runs_file=live_runs(runs), clock=clock)
    first = await row(seeded_store, seed.slug, lambda r: r.pinned)
    [message] = live_posts(fake)
    assert int(message["id"]) == first.message_id
    assert fake.pinned(STATUS) == [message]
    [embed] = message["embeds"]
    assert embed["title"].startswith("Aurora 310B-A17B MoE")
    assert "of 953,674" in embed["description"] and "%" in embed["description"]
    # the chart rides as an attachment the embed shows
    [chart] = message["attachments"]
    assert chart["filename"] == "chart.png" and fake.uploads[chart["id"]].startswith(b"\x89PNG")
    assert embed["image"]["url"] == chart["url"]
    assert first.attachment_id == int(chart["id"])
    # "updated … · next …" as Discord timestamps, the next one refresh minutes later
    content = str(message["content"])
    assert "updated <t:" in content and ":R> · next <t:" in content
    assert message["_allowed_mentions"] == {"parse": []}

    clock.advance(minutes=15)  # status_refresh_minutes (default)
    await update(bot, seed.slug)
    assert live_posts(fake) == [message]  # the same message, edited
    assert message["_edits"] == 1
    [patch] = requests(fake, "PATCH", f"/channels/{STATUS}/messages/{message['id']}")
    assert patch.files == []  # the chart did not change: not uploaded again, kept by id
    assert patch.json["attachments"] == [{"id": chart["id"]}]
    assert message["attachments"] == [chart] and message["embeds"][0]["image"]["url"] == chart["url"]
    assert patch.json["allowed_mentions"] == {"parse": []}

    # new points: the chart changed, so this edit uploads it (once)
    latest = await seeded_store.metrics.latest(seed.slug)
    assert latest is not None and latest.step is not None
    point = MetricPoint(
        wandb_run=latest.wandb_run, step=latest.step + 50, at=clock.now, loss=2.01,
        tokens=latest.tokens,
    )  # fmt: skip
    await seeded_store.metrics.add_points(seed.slug, [point])
    clock.advance(minutes=15)
    await update(bot, seed.slug)
    second = requests(fake, "PATCH", f"/channels/{STATUS}/messages/{message['id']}")[-1]
    assert [name for name, _ in second.files] == ["chart.png"]
    [new_chart] = message["attachments"]
    assert new_chart["id"] != chart["id"] and message["embeds"][0]["image"]["url"] == new_chart["url"]
    assert f"{latest.step + 50:,}" in message["embeds"][0]["description"]
    assert live_posts(fake) == [message] and len(fake.pinned(STATUS)) == 1
