"""An edit that cannot succeed never holds up the channel, through the real
discord.py client against the fake Discord: a 404 Unknown Message on an edit ends that outbox
item at its first try, a 403 holds it in its own lane (access may come back: issue 35), and
either way the alert queued behind it is posted; an edit waiting out server errors does not
hold the alert either."""

from __future__ import annotations

import pytest

from bot.models import OutboxItem
from bot.outbox.payload import make_payload
from bot.store import Store
from tests.bot.conftest import Seed, StartBot
from tests.fakes.discord import FakeDiscord
from tests.waiting import until


async def queue(store: Store, channel: int, key: str, payload: dict[str, object]) -> int:
    kind = "edit" if payload.get("edit_of") else "alert"
    item = OutboxItem(channel_id=channel, kind=kind, payload=payload, dedup_key=key)
    item_id = await store.outbox.enqueue(item)
    assert item_id is not None
    return item_id


async def settled(store: Store, item_id: int, status: str) -> OutboxItem:
    async def reached() -> OutboxItem | None:
        item = await store.outbox.get(item_id)
        return item if item is not None and item.status == status else None

    return await until(reached, f"outbox item {item_id} {status}")


def patches(fake: FakeDiscord, channel: int, message_id: str) -> int:
    path = f"/channels/{channel}/messages/{message_id}"
    return sum(r.method == "PATCH" and r.path == path for r in fake.requests)


@pytest.mark.parametrize("failure", ["deleted", "forbidden"])
async def test_an_edit_that_cannot_succeed_ends_at_once_and_the_alert_behind_it_goes(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, failure: str
) -> None:
    alerts = int(seed.config["alerts_channel"])
    await start_bot()
    head = await queue(seeded_store, alerts, "head", make_payload("Node lost at step 117,600"))
    posted = await settled(seeded_store, head, "sent")
    assert posted.message_id is not None
    if failure == "deleted":
        fake.remove_message(alerts, posted.message_id)  # a person deleted the alert
    else:
        fake.inject("PATCH", rf"/messages/{posted.message_id}$", 403, count=10)
    edit = await queue(
        seeded_store, alerts, "edit", make_payload("Node lost — resolved", edit_of=head)
    )
    alert = await queue(seeded_store, alerts, "next", make_payload("Loss is NaN at 117,650"))
    await settled(seeded_store, alert, "sent")
    if failure == "deleted":
        ended = await settled(seeded_store, edit, "failed")
        assert ended.attempts == 1  # one try, not six spread over a minute
    else:

        async def refused() -> OutboxItem | None:
            item = await seeded_store.outbox.get(edit)
            return item if item is not None and item.attempts >= 1 else None

        held = await until(refused, "the edit's first try")
        assert held.status == "queued"  # refused: held in its own lane, not dropped
        assert held.last_error is not None and held.last_error.startswith("refused: 403")
    assert patches(fake, alerts, posted.message_id) >= 1
    texts = [str(m["content"]).split("\u2063")[0] for m in fake.posted(alerts)]
    assert "Loss is NaN at 117,650" in texts


async def test_an_edit_waiting_out_server_errors_does_not_hold_the_alert_behind_it(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts = int(seed.config["alerts_channel"])
    await start_bot(outbox_backoff=30.0)  # the edit's next try is far away
    head = await queue(seeded_store, alerts, "head", make_payload("Node lost at step 117,600"))
    posted = await settled(seeded_store, head, "sent")
    fake.inject("PATCH", rf"/messages/{posted.message_id}$", 503, count=100)
    edit = await queue(
        seeded_store, alerts, "edit", make_payload("Node lost — resolved", edit_of=head)
    )

    async def tried() -> OutboxItem | None:
        item = await seeded_store.outbox.get(edit)
        return item if item is not None and item.attempts >= 1 else None

    await until(tried, "the edit's first try")
    alert = await queue(seeded_store, alerts, "next", make_payload("Loss is NaN at 117,650"))
    await settled(seeded_store, alert, "sent")
    waiting = await seeded_store.outbox.get(edit)
    assert waiting is not None and waiting.status == "queued"  # still backing off, alone
