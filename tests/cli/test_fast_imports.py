"""One-shot read commands stay fast: `status`, `timeline`, `digest --json` (no LLM key) and
`check-config` never import the LLM SDK, the W&B SDK, matplotlib or discord.py (importing
anthropic alone took 1.5 s). Each runs in a fresh interpreter that reports what it loaded."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.models import Event, MetricPoint, RunInfo
from bot.store import Database, Store
from tests.cli.test_check_config import GOOD

HEAVY = ("anthropic", "wandb", "matplotlib", "discord")
PROBE = f"""
import json, sys
from bot.cli import main
code = main(sys.argv[1:])
heavy = [m for m in {HEAVY!r} if m in sys.modules]
print(json.dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fastcli")
    (root / "runscribe.toml").write_text(GOOD)
    now = datetime.now(UTC)

    async def build() -> None:
        async with Database.open(root / "runscribe.db") as db:
            store = Store(db)
            await store.runs.upsert(RunInfo(slug="hero", name="Hero 535B", total_steps=390251))
            await store.metrics.add_points(
                "hero",
                [
                    MetricPoint("lab/proj/hero-1", i * 100, now - timedelta(hours=10 - i), loss=3.0)
                    for i in range(10)
                ],
            )
            await store.events.upsert_many(
                [
                    Event(
                        run_slug="hero",
                        source="github",
                        external_id=f"c:{i}",
                        kind="comment",
                        at=now - timedelta(hours=i),
                        author="ada",
                        body="checkpoint restored",
                    )
                    for i in range(5)
                ]
            )

    asyncio.run(build())
    return root


def clean_env(workdir: Path, **extra: str) -> dict[str, str]:
    """This environment without any of the bot's settings, pointed at `workdir`'s files."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RUNSCRIBE_", "DISCORD_", "ANTHROPIC_", "WANDB_", "GITHUB_"))
    }
    env.update(
        RUNSCRIBE_DB=str(workdir / "runscribe.db"),
        RUNSCRIBE_CONFIG=str(workdir / "runscribe.toml"),
        **extra,
    )
    return env


@pytest.mark.parametrize(
    "args",
    [["status"], ["status", "--json"], ["timeline"], ["digest", "--json"], ["check-config"]],
    ids=" ".join,
)
def test_read_commands_import_no_heavy_sdk(workdir: Path, args: list[str]) -> None:
    env = clean_env(workdir)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    assert done.stdout.strip()  # it printed its answer
    assert report["heavy"] == []


def test_the_probe_sees_an_import(workdir: Path) -> None:
    """The check can fail: a command that does load one of them is reported."""
    done = subprocess.run(
        [sys.executable, "-c", "import matplotlib\n" + PROBE, "check-config"],
        cwd=workdir,
        env={**os.environ, "RUNSCRIBE_CONFIG": str(workdir / "runscribe.toml")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(done.stderr.strip().splitlines()[-1])["heavy"] == ["matplotlib"]


RUNTIME_PROBE = """
import asyncio, json, sys
from pathlib import Path
from bot.config.settings import Settings
from bot.config.runsfile import load_runs_file
from bot.process.wiring import open_runtime

async def main():
    async with open_runtime(Settings(), load_runs_file(Path("runscribe.toml"))) as runtime:
        llm = runtime.llm is not None
    print(json.dumps({"llm": llm, "anthropic": "anthropic" in sys.modules,
                      "matplotlib": "matplotlib" in sys.modules}), file=sys.stderr)

asyncio.run(main())
"""


@pytest.mark.parametrize("key", [None, "sk-test"], ids=["no key", "a key"])
def test_the_long_running_process_loads_the_llm_sdk_only_with_a_key(
    workdir: Path, key: str | None
) -> None:
    """`runscribe run` without an Anthropic key never imports its SDK (~45 MB of memory that a
    process never gives back); with one it does. Neither imports matplotlib (charts are drawn in
    a child process, `bot.render.drawer`)."""
    env = clean_env(workdir, ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    if key:
        env["ANTHROPIC_API_KEY"] = key
    done = subprocess.run(
        [sys.executable, "-c", RUNTIME_PROBE],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"llm": bool(key), "anthropic": bool(key), "matplotlib": False}
