"""The runs repository: the run's configuration comes back typed, and one function orders the
W&B chain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config.settings import RunConfig, Thresholds, parse_runs
from bot.models import RunInfo, RunSnapshot
from bot.store import Store
from tests.waiting import PATIENCE

T0 = datetime(2026, 8, 20, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


def _config(**extra: object) -> RunConfig:
    table = {"slug": "hero", "name": "Hero", "wandb_runs": ["e/p/a", "e/p/b"], **extra}
    return parse_runs({"runs": [table]}).runs[0]


async def test_config_is_typed_on_read(store: Store) -> None:
    config = _config(alerts={"stall_minutes": 45}, alerts_channel=123456789, launched_at=T0)
    await store.runs.upsert(RunInfo.from_config(config))
    run = await store.runs.get("hero")
    assert run is not None
    assert isinstance(run.config, RunConfig)
    assert run.config == config
    assert run.config.alerts.value("stall_minutes") == 45
    assert (
        run.config.alerts.value("heartbeat_minutes")
        == Thresholds().value("heartbeat_minutes")
        == 15
    )
    assert run.config.launched_at == T0


async def test_invalid_stored_key_falls_back_to_its_default_only(store: Store) -> None:
    await store.runs.upsert(RunInfo.from_config(_config(alerts_channel=123456789)))
    record = json.loads((await store.db.fetchall("SELECT config FROM runs"))[0][0])
    record["config"]["alerts"] = {"stall_minutes": -1, "retired_key": 1}
    async with store.transaction() as conn:
        await conn.execute("UPDATE runs SET config = ?", (json.dumps(record),))
    run = await store.runs.get("hero")
    assert run is not None
    assert run.config.alerts == Thresholds()
    assert run.config.alerts_channel == 123456789
    assert run.config.wandb_runs == ["e/p/a", "e/p/b"]


async def test_a_config_stored_with_every_threshold_spelled_out_still_loads(store: Store) -> None:
    """Earlier versions stored all eight `[runs.alerts]` keys (defaults included); they load as
    the same values, and a key no detector declares any more is dropped, the rest kept."""
    await store.runs.upsert(RunInfo.from_config(_config()))
    record = json.loads((await store.db.fetchall("SELECT config FROM runs"))[0][0])
    record["config"]["alerts"] = {
        "heartbeat_minutes": 15,
        "stall_minutes": 45.0,
        "loss_spike_percent": 25,
        "loss_spike_points": 4,
        "throughput_drop_percent": 25,
        "throughput_minutes": 30,
        "pending_minutes": 5.0,
        "reminder_minutes": None,
        "retired_minutes": 3,
    }
    async with store.transaction() as conn:
        await conn.execute("UPDATE runs SET config = ?", (json.dumps(record),))
    run = await store.runs.get("hero")
    assert run is not None
    alerts = run.config.alerts
    assert alerts.value("stall_minutes") == 45 and alerts.value("loss_spike_points") == 4
    assert alerts.pending_minutes == 5 and alerts.reminder_minutes is None
    assert "retired_minutes" not in (alerts.model_extra or {})
    with pytest.raises(KeyError, match="retired_minutes"):
        alerts.value("retired_minutes")


FRESH_LOAD = """
import sys
from pathlib import Path
from bot.config.runsfile import ConfigError, load_runs_file
runs = load_runs_file(Path(sys.argv[1]))
try:
    load_runs_file(Path(sys.argv[2]))
except ConfigError as exc:
    refused = exc.problems
else:
    refused = []
print(runs.runs[0].alerts.value("stall_minutes"), "bot.incidents" in sys.modules)
print(refused)
"""


def test_a_runs_file_with_alerts_is_judged_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """Loaded through `bot.config.runsfile` alone, with no detector imported first, `[runs.alerts]`
    is judged as ever: a built-in threshold is read, a bad value refused with its path."""
    table = '[[runs]]\nslug = "hero"\nname = "Hero"\ngithub_repo = "lab/model"\n\n[runs.alerts]\n'
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(table + "stall_minutes = 30\n", encoding="utf-8")
    bad.write_text(table + "stall_minutes = -1\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", FRESH_LOAD, str(good), str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    value, refused = done.stdout.splitlines()
    assert value == "30.0 False"  # read, and no detector module was loaded to read it
    assert "runs[0].alerts.stall_minutes: Input should be greater than 0" in refused


async def test_run_recorded_by_hand_gets_defaults(store: Store) -> None:
    await store.runs.upsert(RunInfo(slug="bare", name="Bare", total_steps=1000))
    run = await store.runs.get("bare")
    assert run is not None
    assert run.config.total_steps == 1000
    assert run.config.alerts == Thresholds()
    assert run.wandb_chain() == []


def test_chain_lists_the_runs_file_then_runs_only_the_store_knows() -> None:
    run = RunInfo.from_config(_config())

    def snap(path: str) -> RunSnapshot:
        return RunSnapshot(path, None, "running", T0, None, None, T0)

    snapshots = [snap("e/p/fork"), snap("e/p/b"), snap("e/p/a"), snap("e/p/fork2")]
    assert run.wandb_chain() == ["e/p/a", "e/p/b"]
    assert run.wandb_chain(snapshots) == ["e/p/a", "e/p/b", "e/p/fork", "e/p/fork2"]
