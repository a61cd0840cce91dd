"""The live status message through the real discord.py client against the fake
Discord: one message per run in its `status_channel`, the /status card with its chart, pinned
when the bot may pin, edited in place; gone → exactly one new one; two runs share a channel;
an event storm is bounded to about an edit a minute; 429s are waited out; nothing pings.

Time is the bot's injected clock, moved by the test; updates are asked for with
`bot.outputs.live.refresh()` (what the loop calls), so no test waits for a timer."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from bot.app import RunscribeBot
from bot.config.settings import RunsFile, parse_runs
from bot.core.timeutil import utcnow
from bot.models import Incident, LiveMessage, MetricPoint
from bot.outputs.live import MIN_GAP
from bot.process.pipeline import WANDB
from bot.process.runtime import record_runs
from bot.render.chart import ChartCache
from bot.store import Store
from tests.bot.conftest import Seed, StartBot, with_config
from tests.bot.test_e2e import _toml
from tests.fakes.discord import MANAGE_MESSAGES, FakeDiscord, Recorded
from tests.waiting import until as wait_until

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
    async def recorded() -> LiveMessage | None:
        found = await store.live.get(slug)
        if found is not None and found.message_id is not None and (until is None or until(found)):
            return found
        return None

    return await wait_until(recorded, f"a live message recorded for {slug}")


@dataclass
class Live:
    bot: RunscribeBot
    clock: Clock
    first: LiveMessage  # the run's live message, once recorded


async def live_bot(
    start_bot: StartBot, runs: RunsFile, store: Store, slug: str, until: Any = None
) -> Live:
    """The bot started on a test clock with the run's live message in `STATUS`, once the
    message is recorded (and `until` holds for it)."""
    clock = Clock()
    bot = await start_bot(runs_file=live_runs(runs), clock=clock)
    return Live(bot, clock, await row(store, slug, until))


async def delivered(store: Store, slug: str) -> None:
    """Wait until no live update of the run is queued."""

    async def sent() -> bool:
        return not await store.live.queued(slug)

    await wait_until(sent, "the live update delivered")


async def live_items(store: Store, slug: str) -> int:
    row = await store.db.fetchone(
        "SELECT COUNT(*) FROM outbox WHERE kind = 'live' AND run_slug = ?", (slug,)
    )
    assert row is not None
    return int(row[0])


async def update(bot: RunscribeBot, slug: str) -> None:
    """One due update, queued (by this call or the loop, which also runs) and delivered."""
    await delivered(bot.store, slug)  # the previous one is done (its row is recorded first)
    before = await live_items(bot.store, slug)
    await bot.live.refresh()
    await delivered(bot.store, slug)
    assert await live_items(bot.store, slug) == before + 1


async def test_one_pinned_live_message_shows_the_status_card_and_is_edited_in_place(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    runs: RunsFile,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake.bot_permissions |= MANAGE_MESSAGES
    clock = Clock()
    # the chart cache's "at most one draw a minute" on the test's clock too
    monkeypatch.setattr(
        "bot.outputs.charting.ChartCache",
        functools.partial(ChartCache, clock=lambda: clock.now.timestamp()),
    )
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
    assert first.attachment_id == int(chart["id"]) and first.chart_digest is not None
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
    assert (
        message["attachments"] == [chart] and message["embeds"][0]["image"]["url"] == chart["url"]
    )
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
    assert (
        new_chart["id"] != chart["id"] and message["embeds"][0]["image"]["url"] == new_chart["url"]
    )
    assert f"{latest.step + 50:,}" in message["embeds"][0]["description"]
    assert live_posts(fake) == [message] and len(fake.pinned(STATUS)) == 1


async def test_a_deleted_live_message_is_posted_anew_exactly_once_and_pinned(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    fake.bot_permissions |= MANAGE_MESSAGES
    live = await live_bot(start_bot, runs, seeded_store, seed.slug, lambda r: r.pinned)
    bot, clock, first = live.bot, live.clock, live.first
    # A person deletes it while the bot watches: MESSAGE_DELETE, one new message at once.
    await fake.delete_message(STATUS, str(first.message_id))
    second = await row(seeded_store, seed.slug, lambda r: r.message_id != first.message_id)
    await row(seeded_store, seed.slug, lambda r: r.pinned)
    [message] = live_posts(fake)
    assert int(message["id"]) == second.message_id and fake.pinned(STATUS) == [message]

    # Deleted while the gateway missed it (the bot was away): the next edit's 404 posts anew.
    fake.remove_message(STATUS, str(second.message_id))
    clock.advance(minutes=15)
    await update(bot, seed.slug)
    third = await row(seeded_store, seed.slug)
    assert third.message_id not in (first.message_id, second.message_id)
    [message] = live_posts(fake)
    assert int(message["id"]) == third.message_id and fake.pinned(STATUS) == [message]
    gone = requests(fake, "PATCH", f"/channels/{STATUS}/messages/{second.message_id}")
    assert len(gone) == 1  # the 404 was not retried
    # and later updates edit the new one
    clock.advance(minutes=15)
    await update(bot, seed.slug)
    assert live_posts(fake) == [message] and message["_edits"] == 1


async def test_after_a_restart_the_same_message_is_edited(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    live = await live_bot(start_bot, runs, seeded_store, seed.slug)
    bot, clock, first = live.bot, live.clock, live.first
    await bot.close()
    clock.advance(minutes=2)  # down for two minutes: the new process updates it once it is up
    again = await start_bot(runs_file=live_runs(runs), clock=clock)
    [message] = live_posts(fake)
    await fake.wait_for(lambda: message.get("_edits") == 1)
    assert int(message["id"]) == first.message_id and live_posts(fake) == [message]
    await again.live.refresh()  # nothing more is due: no second edit at once
    await delivered(seeded_store, seed.slug)
    assert message["_edits"] == 1


async def test_two_runs_in_one_channel_get_one_message_each(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    base = runs.runs[0].model_dump(mode="json")
    hostile = "Aurora B ablation @everyone <@&42>"  # a name nobody should be pinged by
    other = {**base, "slug": "aurora-b", "name": hostile, "status_refresh_minutes": 5}
    both = parse_runs(
        {"runs": [{**base, "status_channel": STATUS}, {**other, "status_channel": STATUS}]}
    )
    await record_runs(seeded_store, both)
    clock = Clock()
    bot = await start_bot(runs_file=both, clock=clock)
    a = await row(seeded_store, seed.slug)
    b = await row(seeded_store, "aurora-b")
    assert a.message_id != b.message_id
    titles = sorted(m["embeds"][0]["title"].split(" — ")[0] for m in live_posts(fake))
    assert titles[0] == "Aurora 310B-A17B MoE" and titles[1].startswith("Aurora B ablation")
    clock.advance(minutes=5)  # only aurora-b refreshes every 5 minutes
    await update(bot, "aurora-b")
    await bot.live.refresh()
    await delivered(seeded_store, seed.slug)
    by_id = {int(m["id"]): m for m in live_posts(fake)}
    assert len(by_id) == 2
    assert by_id[b.message_id].get("_edits") == 1 and by_id[a.message_id].get("_edits") is None
    assert "Aurora B ablation" in by_id[b.message_id]["embeds"][0]["title"]
    assert "Aurora 310B" in by_id[a.message_id]["embeds"][0]["title"]
    for request in fake.requests:
        if request.method in ("POST", "PATCH") and f"/channels/{STATUS}/" in request.path:
            assert request.json["allowed_mentions"] == {"parse": []}
            text = json.dumps(request.json, ensure_ascii=False)
            assert "@everyone" not in text and "<@&42>" not in text


async def test_an_event_storm_is_bounded_to_about_one_edit_a_minute(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    live = await live_bot(start_bot, runs, seeded_store, seed.slug)
    bot, clock, first = live.bot, live.clock, live.first
    # Five minutes of storm: an incident opens or resolves every 5 seconds, each seen at once.
    opened: list[Incident] = []
    start = clock.now
    for tick in range(60):
        clock.advance(seconds=5)
        if tick % 2 == 0:
            incident = Incident(
                run_slug=seed.slug, fingerprint=f"storm-{tick}", kind="spike",
                title=f"Loss spike {tick}", status="firing", started_at=clock.now,
            )  # fmt: skip
            incident.id = await seeded_store.incidents.save(incident)
            opened.append(incident)
        elif opened:
            done = opened.pop(0)
            done.status, done.resolved_at = "resolved", clock.now
            await seeded_store.incidents.update(done)
        await bot.live.refresh()
        await delivered(seeded_store, seed.slug)
    path = f"/channels/{STATUS}/messages/{first.message_id}"
    edits = requests(fake, "PATCH", path)
    minutes = (clock.now - start) / MIN_GAP
    assert 3 <= len(edits) <= minutes + 1  # the changes do show, about once a minute
    assert len(live_posts(fake)) == 1


async def test_without_manage_messages_it_works_unpinned_and_says_so_once(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    runs: RunsFile,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    with caplog.at_level(logging.WARNING, logger="bot.outbox.poster"):
        bot = await start_bot(runs_file=live_runs(runs), clock=clock)
        first = await row(seeded_store, seed.slug, lambda r: r.pin_refused)
        for _ in range(2):
            clock.advance(minutes=15)
            await update(bot, seed.slug)
    [message] = live_posts(fake)
    assert message["_edits"] == 2 and fake.pinned(STATUS) == []
    assert not first.pinned
    refusals = [r for r in caplog.records if "stays unpinned" in r.getMessage()]
    assert len(refusals) == 1 and "Manage Messages" in refusals[0].getMessage()
    pins = [r for r in fake.requests if "/pins/" in r.path]
    assert len(pins) == 1  # asked once; a refused pin is not asked again by this process


async def test_429s_on_the_edit_are_waited_out_and_nothing_is_posted_twice(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    live = await live_bot(start_bot, runs, seeded_store, seed.slug)
    bot, clock, first = live.bot, live.clock, live.first
    path = f"/channels/{STATUS}/messages/{first.message_id}"
    # more 429s than discord.py's own five tries: the poster waits out the rest
    fake.inject("PATCH", f"^{path}$", 429, count=7, retry_after=0.01)
    clock.advance(minutes=15)
    await update(bot, seed.slug)
    [message] = live_posts(fake)
    assert message["_edits"] == 1
    statuses = [r.status for r in requests(fake, "PATCH", path)]
    assert statuses == [429] * 7 + [200]
    assert len(live_posts(fake)) == 1


MANAGE_GUILD = 0x20
MOVED = 1213463398226931999  # a new channel for the live message


async def admin(fake: FakeDiscord, subcommand: str) -> str:
    record = await fake.slash("admin", subcommand=subcommand, permissions=MANAGE_GUILD)
    body = await asyncio.wait_for(record.callback, 10)
    if body["type"] == 4:
        return str(body["data"]["content"])
    await fake.wait_for(lambda: record.followups, within=20)
    return str(record.followups[0]["content"])


async def test_admin_reposts_the_live_message_where_the_runs_file_now_says(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    runs: RunsFile,
    db_file: Any,
) -> None:
    fake.bot_permissions |= MANAGE_MESSAGES
    fake.add_channel(MOVED, "aurora-status")
    await start_bot(runs_file=live_runs(runs))
    first = await row(seeded_store, seed.slug, lambda r: r.pinned)
    config = {**seed.config, "status_channel": MOVED}
    (db_file.parent / "runscribe.toml").write_text(_toml(config))
    assert "Runs file reloaded: aurora." in await admin(fake, "reload")
    reply = await admin(fake, "live-status")
    assert f"on its way to <#{MOVED}>" in reply
    moved = await row(seeded_store, seed.slug, lambda r: r.channel_id == MOVED and r.pinned)
    assert live_posts(fake, STATUS) == [] and fake.pinned(STATUS) == []  # the old one is gone
    [message] = live_posts(fake, MOVED)
    assert int(message["id"]) == moved.message_id != first.message_id
    assert fake.pinned(MOVED) == [message]
    deleted = requests(fake, "DELETE", f"/channels/{STATUS}/messages/{first.message_id}")
    assert len(deleted) == 1
    # asked again: a fresh message at the bottom of the same channel, still only one
    await admin(fake, "live-status")
    again = await row(seeded_store, seed.slug, lambda r: r.message_id != moved.message_id)
    await row(seeded_store, seed.slug, lambda r: r.pinned)
    [message] = live_posts(fake, MOVED)
    assert int(message["id"]) == again.message_id and fake.pinned(MOVED) == [message]


async def test_a_crash_shows_on_the_live_message_after_the_round_that_saw_it(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    live = await live_bot(start_bot, runs, seeded_store, seed.slug)
    bot, clock, first = live.bot, live.clock, live.first
    [message] = live_posts(fake)
    assert "— running" in message["embeds"][0]["title"]
    # A minute later W&B says the newest run of the chain crashed; the W&B round that stored
    # it is all it takes (nobody calls the refresher): the round wakes the live loop.
    clock.advance(seconds=61)
    [*_, newest] = await seeded_store.snapshots.chain(seed.slug)
    newest.state, newest.observed_at = "crashed", clock.now
    await seeded_store.snapshots.upsert(seed.slug, newest)
    await bot.poll_family(WANDB)
    await fake.wait_for(lambda: message.get("_edits") == 1, within=30)
    assert "— crashed" in message["embeds"][0]["title"]
    assert live_posts(fake) == [message] and int(message["id"]) == first.message_id


async def test_the_live_message_shows_a_source_back_as_soon_as_it_answers(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    """W&B failed, and the message said so; a minute later W&B answers again (the poller
    records the success): the next live round edits the message at once, not at the
    15-minute refresh, and it no longer says W&B is failing."""
    live = await live_bot(start_bot, runs, seeded_store, seed.slug)
    bot, clock = live.bot, live.clock
    [message] = live_posts(fake)
    assert "failing" not in message["embeds"][0]["title"]
    clock.advance(seconds=61)
    await seeded_store.health.record_failure(
        "wandb", seed.slug, clock.now, "W&B answered 502", None
    )
    await update(bot, seed.slug)
    assert "W&B failing" in message["embeds"][0]["title"]
    clock.advance(seconds=61)
    await seeded_store.health.record_success("wandb", seed.slug, clock.now)  # W&B answers
    await update(bot, seed.slug)  # a live round: due at once
    assert "failing" not in message["embeds"][0]["title"], message["embeds"][0]["title"]
    assert live_posts(fake) == [message]
