"""Posts Discord refuses (issue 35), through the real discord.py client against the fake Discord
answering 403 `{"message": "Missing Permissions", "code": 50013}` in one channel: the alert is
held, not dropped, and posted exactly once when access returns (also across a restart), other
channels' posts go on meanwhile, /healthz fails while it is held; a post refused past its hold
is given up, logged, shown by /healthz and reported by the next post in its channel. Time is
driven through the bot's clock: no test waits out a backoff."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiohttp
import pytest

from bot.config.settings import RunsFile
from bot.core.timeutil import utcnow
from bot.models import OutboxItem
from bot.outbox.payload import make_payload
from bot.process.runtime import Runtime
from bot.store import Store
from bot.web.server import serve
from tests.bot.conftest import Seed, StartBot, fake_settings
from tests.fakes.discord import FakeDiscord
from tests.waiting import until

REFUSAL = "403 Missing Permissions (code 50013)"


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Health:
    http: aiohttp.ClientSession
    url: str

    async def get(self) -> tuple[int, list[str]]:
        async with self.http.get(self.url) as response:
            return response.status, list((await response.json())["problems"])

    async def reaches(self, status: int, *needles: str) -> list[str]:
        """The problems once /healthz answers `status` with a problem holding every needle
        (none: no problem at all). It reads committed rows, which may trail the poster's write
        by a moment."""

        async def check() -> list[str] | None:
            got, problems = await self.get()
            if got != status:
                return None
            if not needles:
                return ["ok"] if not problems else None
            return problems if any(all(n in p for n in needles) for p in problems) else None

        return await until(check, f"/healthz {status} {needles}")


@pytest.fixture
async def health(seeded_store: Store) -> AsyncIterator[Health]:
    """`/healthz` served from the bot's database, as `runscribe web` beside the bot would."""
    async with (
        serve(seeded_store, "127.0.0.1", 0, poll_interval=3600) as (_site, port),
        aiohttp.ClientSession() as http,
    ):
        yield Health(http, f"http://127.0.0.1:{port}/healthz")


async def queue(store: Store, channel: int, key: str, text: str, clock: Clock, **extra: Any) -> int:
    payload = make_payload(text, thread_name=extra.pop("thread_name", None))
    item = OutboxItem(
        channel_id=channel,
        kind=extra.pop("kind", "alert"),
        payload=payload,
        dedup_key=key,
        created_at=clock.now,
        **extra,
    )
    item_id = await store.outbox.enqueue(item)
    assert item_id is not None
    return item_id


async def reached(store: Store, item_id: int, status: str, attempts: int = 0) -> OutboxItem:
    async def check() -> OutboxItem | None:
        item = await store.outbox.get(item_id)
        ok = item is not None and item.status == status and item.attempts >= attempts
        return item if ok else None

    return await until(check, f"outbox item {item_id} {status} after {attempts} tries")


def texts(fake: FakeDiscord, channel: int) -> list[str]:
    return [str(m["content"]).split("\u2063")[0] for m in fake.posted(channel)]


def channels(seed: Seed) -> tuple[int, int]:
    return int(seed.config["alerts_channel"]), int(seed.config["digest_channel"])


async def test_a_refused_alert_waits_other_channels_go_on_and_it_posts_once_access_returns(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, health: Health
) -> None:
    alerts, other = channels(seed)
    fake.honor_nonce = False  # only the poster's own check may keep a copy from repeating
    fake.refuse(alerts)  # the bot's Send Messages permission was removed there
    clock = Clock()
    await start_bot(clock=clock)
    head = await queue(
        seeded_store, alerts, "head", "Node lost at step 117,600", clock, thread_name="Node lost"
    )
    update = await queue(
        seeded_store, alerts, "update", "r07 drained", clock, kind="update", reply_to=head
    )
    for tries in range(1, 13):  # two hours of refusals' worth of tries, far past six
        held = await reached(seeded_store, head, "queued", tries)
        assert held.last_error is not None and REFUSAL in held.last_error
        assert held.not_before is not None
        assert held.not_before - clock.now <= timedelta(seconds=60)  # tried every minute
        clock.now = held.not_before
    digest = await queue(seeded_store, other, "digest", "Daily digest", clock, kind="digest")
    await reached(seeded_store, digest, "sent")  # another channel is not held up
    await health.reaches(503, f"channel {alerts}", "held back", REFUSAL)
    assert texts(fake, alerts) == []
    waiting = await seeded_store.outbox.get(update)
    assert waiting is not None and waiting.status == "queued" and waiting.attempts == 0

    fake.allow(alerts)
    clock.now += timedelta(seconds=60)
    posted = await reached(seeded_store, head, "sent")
    replied = await reached(seeded_store, update, "sent")
    assert texts(fake, alerts) == ["Node lost at step 117,600"]  # once, first
    assert replied.posted_in == int(posted.message_id or 0)  # in the head's thread, after it
    assert texts(fake, int(posted.message_id or 0)) == ["r07 drained"]
    await health.reaches(200)


async def test_a_restart_while_refused_still_posts_the_alert_once(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, health: Health
) -> None:
    alerts, _ = channels(seed)
    fake.honor_nonce = False
    fake.refuse(alerts)
    clock = Clock()
    first = await start_bot(clock=clock)
    alert = await queue(seeded_store, alerts, "crash", "Run crashed at step 90,000", clock)
    for tries in range(1, 4):
        held = await reached(seeded_store, alert, "queued", tries)
        assert held.not_before is not None
        clock.now = held.not_before
    await first.close()  # the bot restarts during the refusal ...
    clock.now += timedelta(minutes=30)
    await health.reaches(503, f"channel {alerts}", "held back")
    fake.allow(alerts)  # ... and access returns while it is down
    await start_bot(clock=clock)
    await reached(seeded_store, alert, "sent")
    assert texts(fake, alerts) == ["Run crashed at step 90,000"]
    await health.reaches(200)


async def test_a_post_refused_past_its_hold_is_given_up_shown_and_reported_in_its_channel(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    runs: RunsFile,
    db_file: Any,
    health: Health,
    caplog: pytest.LogCaptureFixture,
) -> None:
    alerts, _ = channels(seed)
    fake.refuse(alerts)
    clock = Clock()
    settings = fake_settings(fake, db_file).model_copy(
        update={"runscribe_delivery_hold_hours": 1.0}
    )
    runtime = Runtime(settings=settings, runs=runs, store=seeded_store)
    await start_bot(clock=clock, runtime=runtime)
    queued_at = clock.now
    lost = await queue(seeded_store, alerts, "lost", "Loss is NaN at step 60,000", clock)
    held = await reached(seeded_store, lost, "queued", 1)
    with caplog.at_level(logging.ERROR, logger="bot.outbox.refusals"):
        clock.now += timedelta(hours=1, seconds=1)  # the hold is over, access still refused
        gone = await reached(seeded_store, lost, "failed")
        await health.reaches(503, f"1 post(s) to channel {alerts} were given up", REFUSAL)

        def logged() -> str | None:
            for r in caplog.records:
                if r.name == "bot.outbox.refusals" and r.levelno == logging.ERROR:
                    return r.getMessage()
            return None

        said = await until(logged, "the line that says it was given up")
    gone = await reached(seeded_store, lost, "failed")  # as committed
    assert gone.abandoned_at == clock.now and gone.attempts >= held.attempts
    assert f"channel {alerts}" in said and REFUSAL in said and clock.now.isoformat() in said

    fake.allow(alerts)
    later = await queue(seeded_store, alerts, "later", "Run resumed at step 60,100", clock)
    clock.now += timedelta(seconds=60)
    await reached(seeded_store, later, "sent")
    first, second = fake.posted(alerts)
    assert str(second["content"]).startswith("Run resumed at step 60,100")
    notice = str(first["content"])  # the first post through says what was missed
    assert notice.startswith("⚠️ 1 post queued at <t:") and REFUSAL in notice
    assert f"<t:{int(queued_at.timestamp())}:f>" in notice
    assert "Loss is NaN" not in "".join(texts(fake, alerts))  # given up: never posted late
    await health.reaches(200)
