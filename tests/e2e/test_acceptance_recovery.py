"""Recovery acceptance, the way the chaos check runs it: the
real Runtime polling the fake W&B through wandb-core, the real bot delivering to the fake
Discord, on a simulated clock that moves one minute per cycle (the bot's poll interval).

- W&B answers 503 for 10 minutes: the backoff never exceeds 2 minutes, the error says W&B is
  unreachable (never that the key is wrong), the alerts channel hears "Monitor blind" once after
  5 minutes, the first cycle after W&B is back polls it (the probe noticed), and "monitoring
  resumed" is said once.
- A restart polls at once, whatever backoff the previous process stored.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.incidents.detectors import MONITOR
from tests.e2e.deployment import (
    FIRST,
    MIN,
    SimClock,
    deployed,
    healthy_run,
    make_runs,
    make_settings,
    now_utc,
    rows,
    visible,
)
from tests.fakes.discord import FakeDiscord
from tests.fakes.wandb import FakeWandb

pytestmark = pytest.mark.timeout(600)


async def test_wandb_down_ten_minutes_blind_once_after_five_back_at_once(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    t0 = now_utc() - timedelta(minutes=40)
    healthy_run(wb, t0)
    clock = SimClock(t0)
    settings = make_settings(tmp_path, fake_discord, wb)
    async with deployed(settings, make_runs(), clock, fake_discord) as d:
        wb.append_rows(FIRST, rows(100, 1, t0))
        await d.cycle(t0 + MIN)

        wb.set_down(503)
        down_at = t0 + 2 * MIN
        notices: dict[int, int] = {}
        for minute in range(2, 12):  # down from +2 to +12 min; the trainer keeps logging
            at = t0 + minute * MIN
            wb.append_rows(FIRST, rows(99 + minute, 1, at - MIN))
            summary = await d.cycle(at, wandb_up=False)
            assert "wandb:hero" in summary.poll.failures or "wandb:hero" in summary.poll.skipped
            backoff = await d.store.health.get("wandb", "wandb:hero")
            assert backoff is not None and backoff.next_attempt_at is not None
            assert backoff.last_attempt_at is not None
            assert backoff.next_attempt_at - backoff.last_attempt_at <= 2 * MIN
            assert (
                backoff.last_error is not None and "is unreachable (HTTP 503)" in backoff.last_error
            )
            assert "API key" not in backoff.last_error
            notices[minute] = sum("Monitor blind" in visible(m) for m in d.channel())
        # Silent for the first 5 minutes of the outage, then one notice, never repeated.
        assert all(notices[m] == 0 for m in notices if t0 + m * MIN - down_at < 5 * MIN), notices
        assert all(notices[m] == 1 for m in notices if t0 + m * MIN - down_at >= 5 * MIN), notices

        # W&B answers again. The source is still inside its stored backoff: the probe sees W&B
        # is back and the very next cycle polls it.
        wb.set_down(None)
        back = t0 + timedelta(minutes=11, seconds=30)
        backoff = await d.store.health.get("wandb", "wandb:hero")
        assert backoff is not None and backoff.next_attempt_at is not None
        assert backoff.next_attempt_at > back  # failed at +10 min, next try due at +12
        summary = await d.cycle(back)
        assert summary.poll.probed == ["wandb:hero"], summary.poll
        for minute in (14, 15, 16):  # the clear holds for 2 min, then one "back" notice
            await d.cycle(t0 + minute * MIN)
        # Two posts in all: the notice (its head now edited to resolved) and the one "back".
        texts = [visible(m) for m in d.channel()]
        assert len(texts) == 2 and "Monitor blind" in texts[0], texts
        assert sum("monitoring resumed" in t for t in texts) == 1, texts
        incidents = await d.store.incidents.find("hero")
        assert [i.fingerprint for i in incidents] == [MONITOR]
        assert incidents[0].status == "resolved"


async def test_a_restart_polls_wandb_at_once_whatever_backoff_was_stored(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    t0 = now_utc() - timedelta(minutes=40)
    healthy_run(wb, t0)
    settings = make_settings(tmp_path, fake_discord, wb)
    async with deployed(settings, make_runs(), SimClock(t0), fake_discord) as d:
        wb.set_down(503)
        await d.cycle(t0 + MIN, wandb_up=False)
        await d.cycle(t0 + 2 * MIN, wandb_up=False)
        stored = await d.store.health.get("wandb", "wandb:hero")
        assert stored is not None and stored.next_attempt_at is not None
        assert stored.next_attempt_at > t0 + 2 * MIN + timedelta(seconds=30)
    wb.set_down(None)
    # The next process starts inside that backoff: its first poll goes to W&B all the same.
    async with deployed(settings, make_runs(), SimClock(t0 + 2 * MIN), fake_discord) as d:
        health = await d.store.health.get("wandb", "wandb:hero")
        assert health is not None and not health.failing, health
        assert health.last_success_at == t0 + 2 * MIN
