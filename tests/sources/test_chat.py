"""The platform-neutral half of the channel watch's read-back: how far back to read, what was
seen last, and the gate that keeps two read-backs of one channel apart."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.models import Event, RunInfo
from bot.sources.chat import (
    CATCH_UP_WINDOW,
    ChannelGate,
    catch_up_plan,
    last_seen,
    message_key,
    snowflake_at,
    thread_key,
)
from bot.store import Store


def test_snowflake_at_matches_discord_ids() -> None:
    # 175928847299117063 is Discord's documented example id: 2016-04-30 11:18:25.796 UTC
    assert snowflake_at(datetime(2016, 4, 30, 11, 18, 25, 796000, tzinfo=UTC)) >> 22 == (
        175928847299117063 >> 22
    )
    assert snowflake_at(datetime(2010, 1, 1, tzinfo=UTC)) == 0


def test_plan_reads_after_the_last_seen_message_within_a_day(now: datetime) -> None:
    floor = snowflake_at(now - CATCH_UP_WINDOW)
    recent = snowflake_at(now - timedelta(hours=2))
    assert catch_up_plan(recent, now).after == recent
    assert catch_up_plan(recent, now).recheck_through == recent
    stale = snowflake_at(now - timedelta(days=3))
    assert catch_up_plan(stale, now).after == floor  # down for days: the last day only
    assert catch_up_plan(None, now).after == floor
    assert catch_up_plan(None, now).recheck_through is None


def message(slug: str, channel: int, message_id: int, at: datetime) -> Event:
    return Event(
        run_slug=slug,
        source="discord",
        external_id=message_key(message_id),
        kind="message",
        at=at,
        body=f"message {message_id}",
        thread=thread_key(channel),
    )


async def test_last_seen_is_the_oldest_newest_across_runs(store: Store, now: datetime) -> None:
    for slug in ("hero", "side"):
        await store.runs.upsert(RunInfo(slug=slug, name=slug))
    assert await last_seen(store, ["hero"], 10) is None
    await store.events.upsert_many(
        [
            message("hero", 10, 1005, now - timedelta(minutes=5)),
            message("hero", 10, 1009, now - timedelta(minutes=1)),
            message("hero", 11, 2000, now),  # another channel
            message("side", 10, 1005, now - timedelta(minutes=5)),
        ]
    )
    await store.events.mark_deleted("hero", "discord", message_key(1009))
    assert await last_seen(store, ["hero"], 10) == 1009  # deleted, but seen
    assert await last_seen(store, ["hero", "side"], 10) == 1005  # side lacks 1009
    assert await last_seen(store, ["hero", "side"], 11) is None  # side has nothing there


async def test_gate_runs_one_per_channel_and_drops_a_second_waiter() -> None:
    gate = ChannelGate()
    release = asyncio.Event()
    running: list[int] = []
    overlap = 0

    async def sweep(name: int) -> int:
        nonlocal overlap
        overlap = max(overlap, len(running) + 1)
        running.append(name)
        await release.wait()
        running.remove(name)
        return name

    first = asyncio.create_task(gate.run(1, lambda: sweep(1)))
    other_channel = asyncio.create_task(gate.run(2, lambda: sweep(2)))
    await asyncio.sleep(0)
    second = asyncio.create_task(gate.run(1, lambda: sweep(3)))
    await asyncio.sleep(0)
    third = await gate.run(1, lambda: sweep(4))  # one is already waiting: dropped at once
    assert third is None and gate.busy(1)
    release.set()
    assert await asyncio.gather(first, other_channel, second) == [1, 2, 3]
    assert overlap == 2  # channels 1 and 2 together, never two sweeps of channel 1
    assert not gate.busy(1)
