"""The first minute after a restart: until this process has heard from W&B, the live status
message and `/status` show the state stored before the restart, marked so ("as of …, before
Runscribe restarted"), never "unknown" or "stale" because the bot was down; the first W&B round
of the new process replaces the mark.

The bot is started on a test clock hours after the seeded store's last W&B round, with no W&B
source of its own (so no W&B round happens unless the test records one)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.config.settings import RunsFile
from bot.outputs.live import MIN_GAP
from bot.store import Store
from tests.bot.conftest import Seed, StartBot
from tests.bot.test_cogs import final_message
from tests.bot.test_live_status import Clock, live_posts, live_runs, row, update
from tests.fakes.discord import FakeDiscord

RESTORED = "before Runscribe restarted"


def card_text(message: dict[str, Any]) -> str:
    [embed] = message["embeds"]
    fields = "\n".join(f"{f['name']}: {f['value']}" for f in embed["fields"])
    return f"{embed['title']}\n{embed['description']}\n{fields}"


def sources(message: dict[str, Any]) -> str:
    [embed] = message["embeds"]
    return next(f["value"] for f in embed["fields"] if f["name"] == "Sources")


async def test_after_a_restart_the_live_message_and_status_show_the_stored_state(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    clock = Clock()
    clock.now = seed.now + timedelta(hours=3)  # the bot was down for three hours
    bot = await start_bot(runs_file=live_runs(runs), clock=clock)
    await row(seeded_store, seed.slug)
    [message] = live_posts(fake)
    text = card_text(message)
    # the state W&B last told the previous process, as of then
    assert "Aurora 310B-A17B MoE — running" in message["embeds"][0]["title"]
    assert "step **117,569** of 953,674" in text
    assert f"W&B as of <t:{int(seed.now.timestamp())}:t>, {RESTORED}" in sources(message)
    for wrong in ("unknown", "not polled yet", "has not logged", "stale", "not been able"):
        assert wrong not in text, wrong

    record = await fake.slash("status")
    answer = card_text(await final_message(fake, record))
    assert RESTORED in answer and "unknown" not in answer and "stale" not in answer

    # The first W&B round of this process: the next update drops the mark.
    clock.advance(seconds=MIN_GAP.total_seconds() + 1)
    await seeded_store.health.record_success("wandb", seed.slug, clock.now)
    await update(bot, seed.slug)
    [edited] = live_posts(fake)
    assert RESTORED not in card_text(edited) and "W&B just now" in sources(edited)
