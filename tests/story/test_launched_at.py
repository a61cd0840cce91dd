"""`launched_at` written as a date is a date in the run's time zone, through the real runs-file
loader, the store and the card's formatter."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config.runsfile import load_runs_file
from bot.models import RunInfo
from bot.render.cards import status_card
from bot.render.terminal import local_formatter
from bot.services.narrative import Narrative
from bot.services.status import build_status
from bot.store import Store

RUNS = """
[[runs]]
slug = "hero"
name = "Hero"
wandb_runs = ["lab/proj/hero-1"]
total_steps = 1000
launched_at = {launched}
timezone = "{zone}"
"""


@pytest.mark.parametrize(
    ("zone", "launched", "utc"),
    [
        ("America/New_York", "2026-08-20", datetime(2026, 8, 20, 4, tzinfo=UTC)),
        ("America/Los_Angeles", '"2026-08-20"', datetime(2026, 8, 20, 7, tzinfo=UTC)),
        ("Asia/Tokyo", "2026-08-20", datetime(2026, 8, 19, 15, tzinfo=UTC)),
        ("America/New_York", "2026-08-20T09:30:00", datetime(2026, 8, 20, 13, 30, tzinfo=UTC)),
        ("America/New_York", "2026-08-20T09:30:00Z", datetime(2026, 8, 20, 9, 30, tzinfo=UTC)),
    ],
)
async def test_a_launch_date_is_the_runs_own_calendar_date(
    tmp_path: Path, store: Store, zone: str, launched: str, utc: datetime
) -> None:
    path = tmp_path / "runs.toml"
    path.write_text(RUNS.format(launched=launched, zone=zone))
    [run] = load_runs_file(path).runs
    assert run.launched_at == utc
    await store.runs.upsert(RunInfo.from_config(run))
    now = datetime(2026, 9, 2, 12, tzinfo=UTC)
    report = await build_status(store, "hero", now)
    assert report.launched_at == utc
    card = status_card(report, Narrative("", now, "template"), local_formatter(zone, now))
    [schedule] = [f.value for f in card.fields if f.name == "Schedule"]
    assert "launched Aug 20, 2026" in schedule
