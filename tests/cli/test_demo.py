"""The offline demo end to end, then the query commands on the database it leaves behind."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.models import RunInfo
from bot.process.demo import replay_into
from bot.sources.replay import load_sample
from bot.store import Database, Store
from tests.cli.inprocess import Done
from tests.cli.test_check_config import run_cli


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Done, Path]:
    """One `runscribe demo --db` for the module (the replay is the slow part): what it said,
    and the database it left. A test reads a copy of that database, never the file itself."""
    where = tmp_path_factory.mktemp("demo")
    return run_cli(where, "demo", "--db", str(where / "demo.db")), where / "demo.db"


def copy_database(source: Path, to: Path) -> None:
    src, dst = sqlite3.connect(source), sqlite3.connect(to)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def test_demo_then_status_and_timeline(tmp_path: Path, demo_run: tuple[Done, Path]) -> None:
    env = {"RUNSCRIBE_DB": str(tmp_path / "demo.db")}
    demo, left = demo_run
    assert demo.returncode == 0, demo.stderr
    copy_database(left, tmp_path / "demo.db")
    assert "Timeline" in demo.stdout and "Daily digest" in demo.stdout
    assert "Traceback" not in demo.stderr

    status = run_cli(tmp_path, "status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    for key in (
        "run",
        "slug",
        "state",
        "progress",
        "launched_at",
        "projected_end",
        "last_restart_at",
        "loss",
        "open_incidents",
        "freshness",
        "narrative",
        "links",
    ):
        assert key in data, key
    progress = data["progress"]
    for key in ("percent", "step", "total_steps", "tokens", "target_tokens"):
        assert key in progress, key
    assert progress["percent"] == round(progress["step"] / progress["total_steps"] * 100, 2)
    assert data["state"] == "running"
    assert set(data["freshness"]) >= {"wandb", "github", "discord"}
    assert data["last_restart_at"] is not None
    # The sample's crashes were detected, alerted and resolved during the replay.
    stats = data["incident_stats"]
    assert stats["total"] >= 3 and stats["open"] == 0
    assert 1 <= stats["self_healed"] <= stats["total"]
    # the card's fields say how many; the narrative says what happened, credited by name
    assert f"{stats['total']} incidents" not in data["narrative"]
    assert "Latest:\n• " in data["narrative"] and "Someone" not in data["narrative"]

    timeline = run_cli(tmp_path, "timeline", "--json", "--days", "30", env=env)
    assert timeline.returncode == 0, timeline.stderr
    entries = json.loads(timeline.stdout)
    assert entries, "the demo has three weeks of events"
    assert {"at", "author", "source", "ref", "url", "state", "summary", "tag", "incident"} <= set(
        entries[0]
    )
    assert [e["at"] for e in entries] == sorted((e["at"] for e in entries), reverse=True)
    assert {e["source"] for e in entries} >= {"github", "discord", "wandb"}
    assert all(len(e["summary"]) <= 200 for e in entries)

    tagged = run_cli(tmp_path, "timeline", "--json", "--days", "30", "--tag", "incident", env=env)
    assert tagged.returncode == 0
    assert all(e["tag"] == "incident" for e in json.loads(tagged.stdout))

    text = run_cli(tmp_path, "status", env=env)
    assert text.returncode == 0 and "step" in text.stdout

    listed = run_cli(tmp_path, "timeline", "--days", "30", "--tag", "incident", env=env)
    assert listed.returncode == 0, listed.stderr
    heading = listed.stdout.splitlines()[0]
    assert heading == f"{data['run']} — timeline, last 30 days (tag incident)"

    # The sample's incidents are history: nothing is left queued for a bot started later.
    conn = sqlite3.connect(tmp_path / "demo.db")
    try:
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status"))
    finally:
        conn.close()
    assert statuses.get("queued", 0) == 0
    assert statuses.get("failed", 0) >= stats["total"]  # every alert retired, never posted
    assert "never to be posted" in demo.stdout

    digest = run_cli(tmp_path, "digest", "--json", env=env)
    assert digest.returncode == 0, digest.stderr
    assert json.loads(digest.stdout)["slug"] == data["slug"]

    usage = run_cli(tmp_path, "usage", "--json", env=env)
    assert usage.returncode == 0, usage.stderr
    report = json.loads(usage.stdout)
    assert "today" in report and "month" in report  # no key: nothing spent, still a report


def test_package_data_is_installed(tmp_path: Path) -> None:
    """Run from outside the checkout: in CI (a non-editable install) this proves the prompts,
    migrations and sample ship inside the package, not just in the source tree."""
    code = (
        "from bot.llm.prompts import PROMPT_NAMES, load_prompt\n"
        "from bot.store.db import load_migrations\n"
        "from bot.sources.replay import load_sample\n"
        "assert all(load_prompt(n).text.strip() for n in PROMPT_NAMES)\n"
        "assert load_migrations()\n"
        "assert load_sample().events\n"
        "print('ok')\n"
    )
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_query_commands_fail_cleanly(tmp_path: Path, demo_run: tuple[Done, Path]) -> None:
    missing = run_cli(tmp_path, "status", env={"RUNSCRIBE_DB": str(tmp_path / "none.db")})
    assert missing.returncode == 2 and "no database" in missing.stderr
    env = {"RUNSCRIBE_DB": str(tmp_path / "demo.db")}
    demo, left = demo_run
    assert demo.returncode == 0, demo.stderr
    copy_database(left, tmp_path / "demo.db")
    unknown = run_cli(tmp_path, "status", "--run", "nope", env=env)
    assert unknown.returncode == 2 and "unknown run 'nope'" in unknown.stderr
    bad_days = run_cli(tmp_path, "timeline", "--days", "0", env=env)
    assert bad_days.returncode == 2 and "days" in bad_days.stderr
    bad_tag = run_cli(tmp_path, "timeline", "--tag", "gossip", env=env)
    assert bad_tag.returncode == 2
    for result in (missing, unknown, bad_days, bad_tag):
        assert "Traceback" not in result.stderr


def _table_dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in ("events", "metric_points", "run_snapshots", "runs")
        }
    finally:
        conn.close()


async def test_replaying_the_same_data_twice_changes_nothing(tmp_path: Path) -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    path = tmp_path / "twice.db"
    async with Database.open(path) as db:
        await replay_into(Store(db), load_sample(now))
    first = _table_dump(path)
    async with Database.open(path) as db:
        stats = await replay_into(Store(db), load_sample(now))
    second = _table_dump(path)
    assert stats.events == 0 and stats.points == 0
    # observed_at (snapshots) is bookkeeping; compare the rest.
    assert first["metric_points"] == second["metric_points"]
    assert len(first["events"]) == len(second["events"]) > 100
    assert first["events"] == second["events"]


def _a_database_of_real_runs(path: Path) -> bytes:
    async def build() -> None:
        async with Database.open(path) as db:
            await Store(db).runs.upsert(RunInfo(slug="hero", name="Our hero run"))

    asyncio.run(build())
    return path.read_bytes()


def test_the_demo_never_writes_into_the_configured_database(tmp_path: Path) -> None:
    """RUNSCRIBE_DB named in the environment and in .env (as a real deployment does): the demo
    runs on a temporary database and the real one is left byte for byte."""
    real = tmp_path / "runscribe.db"
    before = _a_database_of_real_runs(real)
    (tmp_path / ".env").write_text(f"RUNSCRIBE_DB={real}\n", encoding="utf-8")
    demo = run_cli(tmp_path, "demo", env={"RUNSCRIBE_DB": str(real)})
    assert demo.returncode == 0, demo.stderr
    assert "temporary database removed" in demo.stdout and "--db" in demo.stdout
    assert real.read_bytes() == before
    status = run_cli(tmp_path, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["slug"] == "hero"  # no sample run to choose between


def test_the_demo_refuses_a_database_that_holds_other_runs(tmp_path: Path) -> None:
    real = tmp_path / "runscribe.db"
    before = _a_database_of_real_runs(real)
    refused = run_cli(tmp_path, "demo", "--db", str(real))
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "holds other runs (hero)" in lines[0], refused.stderr
    assert real.read_bytes() == before  # not even migrated
