"""`runscribe incident ID` prints a resolved incident's write-up as Markdown from the database
alone; an unknown incident is one line and exit 2."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from bot.store import Database, Store
from tests.cli.inprocess import run_main
from tests.incidents.test_writeup import crash_and_requeue

NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


def _fill(path: Path) -> int:
    async def fill() -> int:
        async with Database.open(path) as db:
            _, incident_id = await crash_and_requeue(Store(db), NOW)
            return incident_id

    return asyncio.run(fill())


def test_incident_prints_the_writeup_as_markdown(tmp_path: Path) -> None:
    db = tmp_path / "runscribe.db"
    incident_id = _fill(db)
    done = run_main(tmp_path, "incident", str(incident_id), env={"RUNSCRIBE_DB": str(db)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"## Write-up: incident \\#{incident_id}")
    assert "**Cost.** 9 min down (last step before the interruption → first step after); " in (
        done.stdout
    )
    assert "900 steps (900M tokens) recomputed, 9 min at 0.6 s a step" in done.stdout
    assert "bob wrote in [Discord \\#ops](https://discord.com/channels/1/2/1)" in done.stdout
    missing = run_main(tmp_path, "incident", "999", env={"RUNSCRIBE_DB": str(db)})
    assert missing.returncode == 2
    assert missing.stderr == "runscribe: No incident #999.\n" and missing.stdout == ""
