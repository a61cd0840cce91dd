"""The bot's loop scheduler without Discord: the rounds it counts, when a digest may be composed
from them, when commands acknowledge first, and that its loops survive a failing round."""

from __future__ import annotations

import asyncio
import contextlib

from bot.process.scheduler import ANSWERED_AT_ONCE, ENRICH, HOOKS, LoopIntervals, LoopScheduler

FAMILIES = ("wandb", "threads")


def scheduler(**intervals: float) -> LoopScheduler:
    return LoopScheduler(LoopIntervals(**intervals), FAMILIES, running=lambda: True)


def test_enrichment_counts_only_after_each_family_finished_a_round() -> None:
    loops = scheduler()
    assert not loops.enriched_after(["wandb"])  # W&B has not finished a round
    loops.family_done("wandb")
    assert not loops.enriched_after(["wandb"])  # enrichment has not run after it
    loops.rounds[ENRICH] += 1
    assert loops.enriched_after(["wandb"])
    assert not loops.enriched_after(["wandb", "threads"])  # the threads never polled
    assert loops.enriched_after([])


def test_a_full_cycle_counts_a_round_of_every_loop() -> None:
    loops = scheduler()
    loops.family_done("wandb")
    assert loops.cycles == 0  # the threads and enrichment are behind
    loops.cycle_done()
    assert loops.cycles == 1 and loops.rounds["wandb"] == 2
    assert loops.enriched_after(["threads"])  # the cycle enriched after it polled


async def test_busy_while_a_loop_runs_or_too_many_commands_are_answered() -> None:
    loops = scheduler()
    assert not loops.busy(saturated=False)
    assert loops.busy(saturated=True)
    async with loops.all_locks():
        assert loops.busy(saturated=False) and loops.locks[HOOKS].locked()
    with contextlib.ExitStack() as answering:
        for _ in range(ANSWERED_AT_ONCE):
            answering.enter_context(loops.answering())
        assert not loops.busy(saturated=False)  # answered at once, no acknowledgement
        answering.enter_context(loops.answering())
        assert loops.busy(saturated=False)
    assert not loops.busy(saturated=False)


def test_a_round_that_queued_alerts_wakes_the_outbox_and_every_round_the_live_loop() -> None:
    class Report:
        alerts_queued = 1

    loops = scheduler()
    report = object()
    assert loops.delivered_soon(report) is report
    assert loops.live_due.is_set() and not loops.outbox_due.is_set()
    loops.delivered_soon(Report())
    assert loops.outbox_due.is_set()


async def test_a_spawned_loop_goes_on_after_a_failing_round_and_is_cancelled() -> None:
    loops = scheduler(max_backoff=0.01)
    rounds: list[int] = []
    done = asyncio.Event()

    async def body() -> None:
        rounds.append(len(rounds))
        if len(rounds) == 1:
            raise RuntimeError("the first round fails")
        done.set()

    loops.spawn("test", 0.001, body)
    await asyncio.wait_for(done.wait(), 10)
    assert len(rounds) >= 2
    await loops.cancel()
    assert loops.tasks == []
