"""The poster against the fake Discord under faults: a crash followed by a busy channel, and a
long run of server errors that ends."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.core.timeutil import utcnow
from bot.models import OutboxItem
from bot.outbox.payload import make_payload, parse_payload
from bot.outbox.transport import render_item
from bot.store import Store
from tests.bot.conftest import Seed, StartBot
from tests.fakes.discord import FakeDiscord
from tests.waiting import until


async def queue(store: Store, channel: int, key: str, text: str) -> int:
    item = OutboxItem(channel_id=channel, kind="alert", payload=make_payload(text), dedup_key=key)
    item_id = await store.outbox.enqueue(item)
    assert item_id is not None
    return item_id


async def sent(store: Store, item_id: int) -> OutboxItem:
    async def done() -> OutboxItem | None:
        item = await store.outbox.get(item_id)
        return item if item is not None and item.status == "sent" else None

    return await until(done, f"outbox item {item_id} sent")


async def test_crash_then_150_newer_messages_causes_no_duplicate(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts = int(seed.config["alerts_channel"])
    fake.honor_nonce = False  # the history marker alone must find it
    text = "Loss is NaN at step 117,600"
    item_id = await queue(seeded_store, alerts, "busy-crash", text)
    channel = fake.messages.setdefault(alerts, [])
    before = fake.message(alerts, "earlier chatter", author_id=42, author_name="ada")
    channel.append(before)
    # The previous process recorded the anchor, posted, and died before marking the row ...
    await seeded_store.outbox.set_anchor(item_id, int(before["id"]))
    # (a burst of chatter landed between the anchor and the post: the marker is on page two)
    channel.extend(
        fake.message(alerts, f"burst {n}", author_id=42, author_name="ada") for n in range(120)
    )
    [message] = render_item(item_id, "busy-crash", parse_payload(make_payload(text)))
    assert message.content is not None
    posted = fake.message(alerts, message.content)
    channel.append(posted)
    # ... and 150 messages arrived before it came back: more than one page of history.
    channel.extend(
        fake.message(alerts, f"chatter {n}", author_id=42, author_name="ada") for n in range(150)
    )
    await start_bot()
    item = await sent(seeded_store, item_id)
    assert item.message_id == posted["id"]
    assert sum(text in str(m["content"]) for m in fake.posted(alerts)) == 1
    pages = [
        r for r in fake.requests
        if r.method == "GET" and r.path == f"/channels/{alerts}/messages" and "after" in r.query
    ]  # fmt: skip
    assert len(pages) >= 2  # paged with after=, like the real API


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


async def test_alert_arrives_within_one_capped_wait_after_a_5xx_outage(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts = int(seed.config["alerts_channel"])
    path = rf"^/channels/{alerts}/messages$"
    fake.inject("POST", path, 503, count=8)  # 503: discord.py gives up at once, the poster waits
    clock = Clock()
    item_id = await queue(seeded_store, alerts, "outage", "Node lost during the outage")
    await start_bot(clock=clock, outbox_backoff=2.0)
    for attempt in range(1, 9):  # the outage: each try fails and the wait grows to the cap

        async def tried(attempt: int = attempt) -> OutboxItem | None:
            item = await seeded_store.outbox.get(item_id)
            return item if item is not None and item.attempts >= attempt else None

        item = await until(tried, f"attempt {attempt}")
        assert item.not_before is not None
        wait = item.not_before - clock.now
        assert wait <= timedelta(seconds=30)
        clock.now += timedelta(seconds=30)  # one capped wait later, the next try is due
    await sent(seeded_store, item_id)
    assert [str(m["content"]).split("\u2063")[0] for m in fake.posted(alerts)] == [
        "Node lost during the outage"
    ]
