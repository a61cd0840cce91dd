"""Nothing posted while the bot is away is lost: after a restart, an invalidated session or a
resume, watched channels and their active threads are read back from Discord's history (through
the fake Discord, which pages like Discord) and stored like live messages, edits included."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from typing import Any, cast

import discord
import pytest

from bot.app import RunscribeBot
from bot.core.timeutil import utcnow
from bot.models import Event
from bot.sources.chat import PAGE, ReadBackGaps, snowflake_at
from bot.store import Store
from cogs.watch import Watch
from tests.bot.conftest import Seed, StartBot
from tests.fakes.discord import FakeDiscord, snowflake
from tests.waiting import PATIENCE


def watched(seed: Seed) -> tuple[int, int]:
    first, second = seed.config["watch_channels"]
    return int(first), int(second)


async def stored(
    store: Store, messages: list[dict[str, Any]], within: float = PATIENCE, **expect: Any
) -> list[Event]:
    """The stored events of `messages`, once every one is there (and matches `expect`)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        found = [
            await store.events.get_by_external("aurora", "discord", f"msg:{m['id']}")
            for m in messages
        ]
        if all(e is not None and all(getattr(e, k) == v for k, v in expect.items()) for e in found):
            return [e for e in found if e is not None]
        if asyncio.get_running_loop().time() > deadline:
            missing = [m["content"] for m, e in zip(messages, found, strict=True) if e is None]
            raise AssertionError(f"not stored in time: {missing}")
        await asyncio.sleep(0.02)


def watch_cog(bot: RunscribeBot) -> Watch:
    cog = bot.get_cog("Watch")  # load_extension runs a fresh module: no isinstance
    assert cog is not None
    return cast(Watch, cog)


async def caught_up(bot: RunscribeBot, count: int = 1, within: float = PATIENCE) -> Watch:
    """Once `count` read-backs (READY, RESUMED) have finished and none is running."""
    watch = watch_cog(bot)
    deadline = asyncio.get_running_loop().time() + within
    while watch.read_backs < count or watch.reading_back:
        assert asyncio.get_running_loop().time() < deadline, "no read-back finished in time"
        await asyncio.sleep(0.01)
    return watch


def history_requests(fake: FakeDiscord, channel_id: int) -> list[dict[str, str]]:
    return [
        r.query
        for r in fake.requests
        if r.method == "GET" and r.path == f"/channels/{channel_id}/messages"
    ]


async def test_fake_history_pages_like_discord(
    start_bot: StartBot, fake: FakeDiscord, seed: Seed
) -> None:
    """discord.py's own history() against the fake: `after` pages forward from the first
    (newest) id of each descending page, `before` backward from the last."""
    bot = await start_bot()
    channel_id = int(seed.config["alerts_channel"])  # not watched: no read-back touches it
    posted = [await fake.say(channel_id, f"m{n}", gateway=False) for n in range(230)]
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    start = discord.Object(int(posted[9]["id"]))
    forward = [m.content async for m in channel.history(limit=None, after=start)]
    assert forward == [f"m{n}" for n in range(10, 230)]
    pages = history_requests(fake, channel_id)[-3:]
    assert [p.get("after") for p in pages] == [
        posted[9]["id"], posted[109]["id"], posted[209]["id"]
    ]  # fmt: skip
    backward = [m.content async for m in channel.history(limit=150)]
    assert backward == [f"m{n}" for n in range(229, 79, -1)]
    before = [m.content async for m in channel.history(limit=5, before=start)]
    assert before == ["m8", "m7", "m6", "m5", "m4"]
    raw = await bot.http.logs_from(channel_id, 3, after=posted[0]["id"])
    assert [m["content"] for m in raw] == ["m3", "m2", "m1"]  # the oldest three, newest first


async def test_messages_and_edits_made_while_stopped_are_stored_after_start(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    general, oncall = watched(seed)
    bot = await start_bot()
    before = await fake.say(oncall, "node r07 is draining")
    [event] = await stored(seeded_store, [before])
    await bot.close()

    away = [
        await fake.say(oncall, "r07 back, resuming from step 118,000"),
        await fake.say(general, "eval suite finished: MMLU 61.2"),
        await fake.say(oncall, "build green", author_id=43, author_name="ci", bot=True),
    ]
    thread = fake.add_thread(snowflake(), oncall, "r07-postmortem")
    in_thread = await fake.say(int(thread["id"]), "root cause: a flaky PSU")
    await fake.edit(oncall, before["id"], "node r07 is draining (PSU swap)")

    await start_bot()
    missed = [away[0], away[1], in_thread]
    events = await stored(seeded_store, missed)
    assert [e.body for e in events] == [m["content"] for m in missed]
    assert events[2].ref == "#infra-oncall › r07-postmortem"
    assert events[2].thread == f"discord:{thread['id']}"
    [edited] = await stored(seeded_store, [before], body="node r07 is draining (PSU swap)")
    assert edited.id == event.id and edited.updated_at is not None
    assert (
        await seeded_store.events.get_by_external("aurora", "discord", f"msg:{away[2]['id']}")
        is None
    )

    record = await fake.slash(
        "timeline",
        [
            {"name": "days", "type": 4, "value": 1},
            {"name": "source", "type": 3, "value": "discord"},
        ],
    )
    await asyncio.wait_for(record.callback, PATIENCE)
    await fake.wait_for(lambda: record.followups or record.original)
    message = record.followups[0] if record.followups else record.original
    assert message is not None
    text = json.dumps(message["embeds"], ensure_ascii=False)
    assert "MMLU 61.2" in text and "flaky PSU" in text


async def test_restart_while_messages_keep_arriving_loses_none(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    _, oncall = watched(seed)
    bot = await start_bot()
    said: list[dict[str, Any]] = []
    stop = asyncio.Event()

    async def chatter() -> None:
        n = 0
        while not stop.is_set():
            said.append(await fake.say(oncall, f"status line {n}"))
            n += 1
            await asyncio.sleep(0.01)

    talking = asyncio.create_task(chatter())
    await fake.wait_for(lambda: len(said) >= 5)
    await bot.close()
    await fake.wait_for(lambda: len(said) >= 15)
    await start_bot()
    await fake.wait_for(lambda: len(said) >= 30)
    stop.set()
    await talking
    events = await stored(seeded_store, said)
    assert len({e.id for e in events}) == len(said)
    assert [e.body for e in events] == [m["content"] for m in said]


async def test_invalidated_session_then_ready_reads_back(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    general, _ = watched(seed)
    bot = await start_bot()

    async def identify_at_once(shard_id: int | None, *, initial: bool = False) -> None:
        pass  # discord.py waits 5 s before a re-IDENTIFY (Discord's identify limit)

    bot.before_identify_hook = identify_at_once  # type: ignore[method-assign]
    await caught_up(bot)
    fake.session_id = "expired"  # the RESUME is refused with op 9: a new IDENTIFY follows
    await fake.drop_websocket()
    lost = await fake.say(general, "posted between the drop and the new session")
    await stored(seeded_store, [lost])
    assert len(fake.identifies) == 2


async def test_resumed_reads_back_what_the_gateway_never_delivered(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    general, _ = watched(seed)
    bot = await start_bot()
    await caught_up(bot)
    never = await fake.say(general, "this event was never dispatched", gateway=False)
    await fake.drop_websocket()
    await stored(seeded_store, [never])
    assert len(fake.resumes) == 1 and len(fake.identifies) == 1


async def test_read_back_reads_until_it_meets_stored_history_not_a_fixed_count(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    """600 messages while the bot was down (a fixed 500-message cap once lost the rest): all
    are read back, newest first, in six pages; nothing older than a day."""
    general, oncall = watched(seed)
    day_old = snowflake_at(utcnow() - timedelta(hours=25)) + 7
    old = fake.message(general, "from yesterday", author_id=42, message_id=day_old)
    fake.messages.setdefault(general, []).append(old)
    flood = [await fake.say(oncall, f"flood {n}", gateway=False) for n in range(600)]
    bot = await start_bot()
    await caught_up(bot)
    events = await stored(seeded_store, flood)
    assert [e.body for e in events] == [f"flood {n}" for n in range(600)]
    assert await seeded_store.events.get_by_external("aurora", "discord", f"msg:{day_old}") is None
    # six pages newest first, one more that meets what was stored, one for edits
    assert len(history_requests(fake, oncall)) <= 600 // PAGE + 2


async def test_a_read_back_over_its_budget_resumes_where_it_stopped(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    _, oncall = watched(seed)
    bot = await start_bot()
    watch = await caught_up(bot)
    watch.page_budget = 2  # two pages (200 messages) per channel and read-back
    flood = [await fake.say(oncall, f"backlog {n}", gateway=False) for n in range(450)]
    reads = watch.read_backs
    await watch.catch_up("test")
    if watch.read_backs == reads + 1 and not watch.reading_back:  # no RESUMED read-back of a
        missing = await seeded_store.events.get_by_external(  # loaded machine joined in
            "aurora", "discord", f"msg:{flood[249]['id']}"
        )
        assert missing is None  # the budget stopped it; the gap is stored
        assert await ReadBackGaps(seeded_store).load(oncall)
    newest = await stored(seeded_store, flood[-200:])  # newest first: the latest are in
    assert len(newest) == 200
    later = await fake.say(oncall, "said after the first read-back", gateway=False)
    # Each read-back: what is newer first (one page, it meets stored history), then the stored
    # gap with the page left: 100 more of the backlog each time. Three more finish it (a
    # trigger that finds another read-back of the channel waiting is dropped: keep asking).
    for _ in range(12):
        await watch.catch_up("test")
        if not await ReadBackGaps(seeded_store).load(oncall):
            break
    assert not await ReadBackGaps(seeded_store).load(oncall)
    events = await stored(seeded_store, [*flood, later])
    assert len({e.id for e in events}) == 451


async def test_unreadable_channel_and_429s_do_not_stop_the_others(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    caplog: pytest.LogCaptureFixture,
) -> None:
    general, oncall = watched(seed)
    fake.inject("GET", rf"^/channels/{general}/messages$", 403, count=10)
    fake.inject("GET", rf"^/channels/{oncall}/messages$", 429, count=2, retry_after=0.01)
    missed = await fake.say(oncall, "still here", gateway=False)
    with caplog.at_level(logging.WARNING, logger="cogs.watch"):
        bot = await start_bot()
        await stored(seeded_store, [missed])
        await caught_up(bot)
    assert any("Read Message History" in r.getMessage() for r in caplog.records)


async def test_concurrent_read_backs_of_one_channel_never_overlap(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    _, oncall = watched(seed)
    bot = await start_bot()
    watch = await caught_up(bot)
    path = f"/channels/{oncall}/messages"
    fake.max_in_flight.pop(path, None)
    fake.inject("GET", f"^{path}$", 0, count=1, hang=0.3)  # the first sweep is slow
    missed = await fake.say(oncall, "read back once", gateway=False)
    results = await asyncio.gather(*(watch.catch_up(f"trigger {n}") for n in range(4)))
    [event] = await stored(seeded_store, [missed])
    assert event.body == "read back once" and sum(results) == 1
    assert fake.max_in_flight[path] == 1
    # one sweep ran, one waited and ran after it, two were dropped: at most two sweeps' requests
    assert len(history_requests(fake, oncall)) <= 2 * 2 + 2
