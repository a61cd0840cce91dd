"""The chat writer on a real SQLite file that refuses writes (a full disk, SQLite's own
SQLITE_FULL): nothing is lost, the order holds, a deletion reaches a message still in memory,
and what memory could not keep is asked back through a read-back. No Discord here: the cog's
side is `tests/e2e/test_acceptance_chat_store.py`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from bot.models import Event, RunInfo
from bot.sources.chat import message_key, thread_key
from bot.sources.chat_writer import ChatWriter
from bot.store import Store
from tests.waiting import until

T0 = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
LONG = "ECC errors on host 12, draining it. " * 250  # more than a page: new pages each


def said(n: int) -> Event:
    return Event(
        run_slug="hero",
        source="discord",
        external_id=message_key(1000 + n),
        kind="message",
        at=T0 + timedelta(seconds=n),
        body=f"{n}: {LONG}",
        thread=thread_key(10),
    )


async def fill_the_disk(store: Store) -> None:
    pages = (await store.db.fetchone("PRAGMA page_count"))[0]  # type: ignore[index]
    await store.db.conn.execute(f"PRAGMA max_page_count = {pages}")


async def free_the_disk(store: Store) -> None:
    await store.db.conn.execute("PRAGMA max_page_count = 4294967294")


async def stored(store: Store, count: int) -> list[Event]:
    found = [
        await store.events.get_by_external("hero", "discord", message_key(1000 + n))
        for n in range(count)
    ]
    return [event for event in found if event is not None]


@pytest.fixture
async def hero(store: Store) -> Store:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    return store


async def test_refused_writes_wait_in_order_and_are_stored_once_the_store_takes_them(
    hero: Store,
) -> None:
    asked: list[str] = []
    writer = ChatWriter(hero, lambda: T0, asked.append)
    await fill_the_disk(hero)
    for n in range(6):
        assert await writer.write([said(n)]) == 0
    assert [e.external_id for e in writer.unstored] == [message_key(1000 + n) for n in range(6)]
    assert await stored(hero, 6) == []
    await writer.delete(["hero"], {message_key(1002)})  # deleted while still in memory
    await free_the_disk(hero)
    await until(lambda: not writer.unstored, "the kept messages were not written")
    events = await stored(hero, 6)
    assert [e.body[:2] for e in events] == [f"{n}:" for n in range(6)]
    assert [e.deleted for e in events] == [False, False, True, False, False, False]
    assert asked == []  # memory kept them all: nothing to read back
    await writer.close()


async def test_more_than_memory_keeps_is_asked_back_once_the_store_recovers(
    hero: Store,
) -> None:
    asked: list[str] = []
    writer = ChatWriter(hero, lambda: T0, asked.append, limit=3)
    await fill_the_disk(hero)
    await writer.write([said(n) for n in range(5)])
    assert len(writer.unstored) == 3
    await free_the_disk(hero)
    await until(lambda: asked, "no read-back was asked for")
    assert asked == ["the store recovered"]
    assert len(await stored(hero, 5)) == 3  # the other two come from the read-back
    await writer.close()


async def test_events_during_a_slow_write_join_the_next_one_in_order(
    hero: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = ChatWriter(hero, lambda: T0, lambda why: None)
    go = asyncio.Event()
    real = writer._write

    async def slow(events: list[Event]) -> int:
        await go.wait()
        return await real(events)

    monkeypatch.setattr(writer, "_write", slow)
    first = asyncio.create_task(writer.write([said(0)], join=True))
    await until(lambda: writer.writing, "the first write did not start")
    for n in range(1, 5):
        assert await writer.write([said(n)], join=True) == 0  # returns at once: it joined
    assert writer.joined == 4
    go.set()
    assert await first == 1
    assert [e.body[:2] for e in await stored(hero, 5)] == [f"{n}:" for n in range(5)]
    assert writer.joined == 0 and not writer.unstored


async def test_closing_stops_the_retries(hero: Store) -> None:
    writer = ChatWriter(hero, lambda: T0, lambda why: None)
    await fill_the_disk(hero)
    await writer.write([said(0)])
    retry = writer._retry
    assert retry is not None and not retry.done()
    await writer.close()
    assert retry.cancelled()
    await writer.write([said(1)])  # refused again after closing: kept, no new retry started
    assert writer._retry is retry and len(writer.unstored) == 2
