"""Acceptance: no duplicate however long the channel: the delivery-marker
check starts from an anchor that is always recent (the last message the bot saw in the channel)
and reads until the messages are newer than the try that may have posted, not a page count.

- the previous process recorded its anchor, posted, and died before marking; 6,000 messages
  arrived between the anchor and the post (the old check gave up after 50 pages): no duplicate;
- the anchor of a new post is the last message the gateway delivered in that channel, not the
  bot's own last post there.
"""

from __future__ import annotations

import pytest

from bot.outbox.payload import make_payload, parse_payload
from bot.outbox.transport import render_item
from bot.store import Store
from tests.bot.conftest import Seed, StartBot
from tests.e2e.test_acceptance_chaos import queue, until_sent
from tests.fakes.discord import FakeDiscord
from tests.waiting import PATIENCE, until

pytestmark = pytest.mark.timeout(600)


async def test_crash_between_send_and_mark_after_6000_messages_posts_once(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts = int(seed.config["alerts_channel"])
    fake.honor_nonce = False  # the history marker alone must find it
    text = "Loss is NaN at step 117,600 (a very busy channel)"
    item_id = await queue(seeded_store, alerts, "anchor:6000", text)
    channel = fake.messages.setdefault(alerts, [])
    before = fake.message(alerts, "the last message before the send", author_id=42)
    channel.append(before)
    await seeded_store.outbox.set_anchor(item_id, int(before["id"]))
    channel.extend(fake.message(alerts, f"chatter {n}", author_id=42) for n in range(6000))
    [message] = render_item(item_id, "anchor:6000", parse_payload(make_payload(text)))
    assert message.content is not None
    posted = fake.message(alerts, message.content)
    channel.append(posted)
    channel.extend(fake.message(alerts, f"after {n}", author_id=42) for n in range(50))
    await start_bot()
    await until_sent(seeded_store, item_id, within=PATIENCE)
    item = await seeded_store.outbox.get(item_id)
    assert item is not None and item.message_id == posted["id"]
    assert sum(text in str(m["content"]) for m in fake.posted(alerts)) == 1


async def test_the_anchor_is_the_last_message_the_bot_saw_in_the_channel(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts = int(seed.config["alerts_channel"])
    bot = await start_bot()
    first = await queue(seeded_store, alerts, "anchor:first", "first alert")
    await until_sent(seeded_store, first, within=PATIENCE)
    said = [await fake.say(alerts, f"ack {n}", author_id=42, author_name="ada") for n in range(3)]
    last = int(said[-1]["id"])
    await until(lambda: bot.poster._newest.get(alerts) == last, "the gateway's message seen")
    second = await queue(seeded_store, alerts, "anchor:second", "second alert")
    await until_sent(seeded_store, second, within=PATIENCE)
    item = await seeded_store.outbox.get(second)
    first_item = await seeded_store.outbox.get(first)
    assert item is not None and first_item is not None and first_item.message_id is not None
    assert item.anchor_id == last  # not the bot's own last post there
    assert item.anchor_id > int(first_item.message_id)
