"""Acceptance: no chat lost to the store: the real bot on the fake Discord
and a real SQLite file that refuses writes, the two ways the chaos check makes it refuse them.

- the disk fills up (SQLite's own SQLITE_FULL, via `max_page_count` on the bot's connection):
  every message said meanwhile is stored, in order, once the store takes writes again;
- more arrive than memory keeps: the read-back after recovery fetches the rest from Discord;
- another process holds the write lock: the messages wait and are stored once it is released.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import cast

import pytest

from bot.models import Event
from bot.store import Store
from cogs.watch import Watch
from tests.bot.conftest import Seed, StartBot
from tests.bot.test_catch_up import caught_up, stored, watched
from tests.fakes.discord import FakeDiscord
from tests.waiting import until

pytestmark = pytest.mark.timeout(600)
SHORT_WAIT = 0.5  # seconds: the bot's busy timeout while another process holds the lock
LONG = "ECC errors on host 12, draining it. " * 80  # ~2.8 kB: every message needs new pages


async def fill_the_disk(store: Store) -> None:
    pages = (await store.db.fetchone("PRAGMA page_count"))[0]  # type: ignore[index]
    await store.db.conn.execute(f"PRAGMA max_page_count = {pages}")


async def free_the_disk(store: Store) -> None:
    await store.db.conn.execute("PRAGMA max_page_count = 4294967294")


async def test_a_full_disk_loses_no_chat(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    _, oncall = watched(seed)
    bot = await start_bot()
    watch = cast(Watch, bot.get_cog("Watch"))
    await caught_up(bot)
    await fill_the_disk(seeded_store)
    said = [await fake.say(oncall, f"{n}: {LONG}") for n in range(20)]

    async def refused_or_stored() -> bool:
        # (what still fitted in the last pages' slack is stored; the rest is refused)
        found = [
            await seeded_store.events.get_by_external("aurora", "discord", f"msg:{m['id']}")
            for m in said
        ]
        return len(watch.writer.unstored) + sum(e is not None for e in found) == 20

    await until(refused_or_stored, "the refused messages were not kept")
    assert len(watch.writer.unstored) >= 15  # the disk is full: all but the few that fitted
    await free_the_disk(seeded_store)
    events = await stored(seeded_store, said)
    assert [e.body[:3] for e in events] == [m["content"][:3] for m in said]
    assert not watch.writer.unstored


async def test_more_than_memory_keeps_is_read_back_once_the_store_recovers(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    _, oncall = watched(seed)
    bot = await start_bot()
    watch = cast(Watch, bot.get_cog("Watch"))
    await caught_up(bot)
    watch.writer.unstored_limit = 5
    await fill_the_disk(seeded_store)
    said = [await fake.say(oncall, f"{n}: {LONG}") for n in range(12)]
    await until(lambda: len(watch.writer.unstored) == 5, "the first five were not kept")
    reads = watch.read_backs
    await free_the_disk(seeded_store)
    events = await stored(seeded_store, said)  # the seven dropped ones come from the history
    assert len({e.id for e in events}) == 12
    assert watch.read_backs > reads


@pytest.mark.parametrize("busy_timeout", [SHORT_WAIT])  # each write waits this long for the lock
async def test_a_held_write_lock_loses_no_chat(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, db_file: Path
) -> None:
    _, oncall = watched(seed)
    bot = await start_bot()
    watch = cast(Watch, bot.get_cog("Watch"))
    await caught_up(bot)
    release, held = threading.Event(), threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(db_file, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        release.wait(60)
        conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    held.wait(10)
    try:
        said = [await fake.say(oncall, f"while locked {n}") for n in range(20)]
        await until(lambda: len(watch.writer.unstored) == 20, "the messages did not wait in memory")
    finally:
        release.set()
        thread.join(10)
    events = await stored(seeded_store, said)
    assert [e.body for e in events] == [f"while locked {n}" for n in range(20)]


def waiting_message_tasks() -> int:
    """discord.py's dispatch tasks for incoming messages that have not finished."""
    return sum(
        1 for t in asyncio.all_tasks() if t.get_name() == "discord.py: on_message" and not t.done()
    )


async def test_messages_during_a_slow_write_wait_in_one_list_not_a_task_each(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While one write is slow (here held until the test lets it go, the way a locked database
    holds it for the busy timeout), the messages after it join the next write: they are kept in
    the writer's bounded list and their dispatch tasks end, so a store slower than the chat costs a
    list, not a growing crowd of tasks. Then all are stored in order."""
    _, oncall = watched(seed)
    bot = await start_bot()
    watch = cast(Watch, bot.get_cog("Watch"))
    await caught_up(bot)
    go = asyncio.Event()
    real = watch.writer._write

    async def slow(events: list[Event]) -> int:
        await go.wait()
        return await real(events)

    monkeypatch.setattr(watch.writer, "_write", slow)
    try:
        first = await fake.say(oncall, "while slow 0")
        await until(lambda: watch.writer.writing, "the first write did not start")
        said = [first, *[await fake.say(oncall, f"while slow {n}") for n in range(1, 60)]]
        await until(lambda: watch.writer.joined == 59, "the later messages did not join")
        assert waiting_message_tasks() <= 1  # only the first, inside its write
    finally:
        go.set()
    events = await stored(seeded_store, said)
    assert [e.body for e in events] == [f"while slow {n}" for n in range(60)]
    assert not watch.writer.joined and not watch.writer.unstored


async def test_more_joining_a_slow_write_than_memory_keeps_is_read_back(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A slow write that succeeds in the end, with more messages joining it than the limit:
    the ones dropped from memory are read back from Discord once it is done."""
    _, oncall = watched(seed)
    bot = await start_bot()
    watch = cast(Watch, bot.get_cog("Watch"))
    await caught_up(bot)
    watch.writer.unstored_limit = 5
    go = asyncio.Event()
    real = watch.writer._write

    async def slow(events: list[Event]) -> int:
        await go.wait()
        return await real(events)

    monkeypatch.setattr(watch.writer, "_write", slow)
    reads = watch.read_backs
    try:
        first = await fake.say(oncall, "burst 0")
        await until(lambda: watch.writer.writing, "the first write did not start")
        said = [first, *[await fake.say(oncall, f"burst {n}") for n in range(1, 12)]]
        await until(lambda: watch.writer.joined == 5, "the limit did not hold")
    finally:
        go.set()
    events = await stored(seeded_store, said)  # the six dropped ones come from the history
    assert len({e.id for e in events}) == 12
    assert watch.read_backs > reads
