"""The running bot collects cyclic garbage and gives free heap pages back to the OS on its own
loop (`bot.core.heap`)."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

import bot.core.heap
from bot.app import LoopIntervals
from tests.bot.conftest import StartBot
from tests.fakes.discord import FakeDiscord


async def test_the_bot_trims_the_heap_each_interval_off_the_event_loop(
    start_bot: StartBot, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def give_back() -> bool:
        threads.append(threading.get_ident())
        return True

    monkeypatch.setattr(bot.core.heap, "give_back_free_heap", give_back)
    every = LoopIntervals(poll=3600, outbox=0.05, digest=0.1, narrative=3600, heap=0.05)
    await start_bot(intervals=every)
    await fake.wait_for(lambda: len(threads) >= 3)  # its loop keeps going, round after round
    assert loop_thread not in threads  # a worker thread walks the heap, never the event loop


class Cycle:
    me: Cycle | None = None


async def test_the_heap_round_collects_cyclic_garbage_without_waiting_for_cpython(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    every = LoopIntervals(poll=3600, outbox=0.05, digest=0.1, narrative=3600, heap=0.05)
    await start_bot(intervals=every)
    gc.disable()  # CPython's own collections, which in the running bot rarely reach old cycles
    try:
        cycle = Cycle()
        cycle.me = cycle
        gone = weakref.ref(cycle)
        del cycle
        assert gone() is not None  # reference counting alone never frees a cycle
        await fake.wait_for(lambda: gone() is None)
    finally:
        gc.enable()


async def test_an_answered_command_wakes_the_heap_round_at_once(
    start_bot: StartBot, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a command's answer took (a page of entries, a chart) is given back when the last
    command is answered, not at the heap loop's next tick (here an hour away)."""
    rounds: list[int] = []

    def give_back() -> bool:
        rounds.append(1)
        return True

    monkeypatch.setattr(bot.core.heap, "give_back_free_heap", give_back)
    every = LoopIntervals(poll=3600, outbox=0.05, digest=0.1, narrative=3600, heap=3600)
    await start_bot(intervals=every)
    await fake.wait_for(lambda: len(rounds) >= 1)  # the loop's first round, at start
    before = len(rounds)
    record = await fake.slash("timeline", [{"name": "days", "type": 4, "value": 30}])
    await fake.wait_for(lambda: record.callback.done())
    await fake.wait_for(lambda: len(rounds) > before)
