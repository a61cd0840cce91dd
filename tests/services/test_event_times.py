"""Old news is history, on a real store: a crash W&B recorded three days
before Runscribe first looked is dated then (`bot.sources.wandb_state.state_changed_at`, tested in
`tests/sources/test_wandb.py`), so it is not a "Latest" line, not in the last 24 hours' digest,
and the narrative no longer says "No incident in the past week" beside it."""

from __future__ import annotations

from bot.services.digest import build_digest
from bot.services.narrative import current_narrative
from bot.services.status import build_status
from bot.store import Store
from tests.services.test_plain_status import add_events, wandb_state
from tests.services.test_status import NOW, seed


async def test_a_crash_from_three_days_ago_is_history_not_news(store: Store) -> None:
    await seed(store, hours=96)
    old_crash = wandb_state("old", 72, None, "crashed")
    await add_events(store, [old_crash])

    narrative = await current_narrative(store, await build_status(store, "hero", NOW))
    assert "No incident in the past week" not in narrative.text
    assert "Latest:" not in narrative.text, narrative.text  # nothing happened in the last day
    assert "the latest failure, 3 days ago: W&B run hero-1 is crashed." in narrative.text

    digest = await build_digest(store, "hero", NOW)
    assert digest.entries == [] and digest.events_in_window == 0
    assert "crashed" not in digest.text

    # The same crash inside the window is news, and the week's claim goes on being honest.
    recent = wandb_state("recent", 2, "running", "crashed")
    await add_events(store, [recent])
    digest = await build_digest(store, "hero", NOW)
    assert [e.summary for e in digest.entries] == [recent.summary]
    narrative = await current_narrative(store, await build_status(store, "hero", NOW))
    assert "Latest:\n• W&B (hero-1): W&B run hero-1 went from running to crashed" in narrative.text


async def test_a_quiet_week_is_still_said(store: Store) -> None:
    await seed(store)
    await add_events(store, [wandb_state("boot", 30, None, "running")])
    narrative = await current_narrative(store, await build_status(store, "hero", NOW))
    assert "No incident in the past week." in narrative.text
    assert "Latest:" not in narrative.text  # a routine line from yesterday is no news
