"""A run is named the same way on every surface: `--run AURORA` finds `aurora` in the CLI as
the `run` option does in Discord (one resolver, `bot.services.runs.pick_run`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot import cli
from bot.config.runsfile import RunConfig
from bot.core.errors import UserFacingError
from bot.models import RunInfo
from bot.services.runs import UnknownRun, pick_run
from bot.store import Database, Store
from tests.cli.test_ask_cli import use_database

WORDS = {"none": "no runs", "several": "pick one of {slugs}"}


def test_a_name_matches_whatever_its_case_and_spaces() -> None:
    assert pick_run(["aurora", "hero"], "AURORA", **WORDS) == "aurora"
    assert pick_run(["aurora", "hero"], "  Hero ", **WORDS) == "hero"
    assert pick_run(["aurora"], None, **WORDS) == "aurora"
    assert pick_run(["aurora"], "", **WORDS) == "aurora"


def test_an_unknown_or_missing_name_says_so_in_the_surfaces_words() -> None:
    with pytest.raises(UnknownRun, match=r"unknown run 'Nope'; known runs: aurora, hero"):
        pick_run(["aurora", "hero"], "Nope", **WORDS)
    with pytest.raises(UserFacingError, match=r"^pick one of aurora, hero$"):
        pick_run(["aurora", "hero"], None, **WORDS)
    with pytest.raises(UserFacingError, match=r"^no runs$"):
        pick_run([], None, **WORDS)


@pytest.fixture
def two_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.db"

    async def build() -> None:
        async with Database.open(path) as db:
            store = Store(db)
            for slug in ("aurora", "hero"):
                config = RunConfig(slug=slug, name=slug.title(), github_repo="lab/model")
                await store.runs.upsert(RunInfo.from_config(config))

    asyncio.run(build())
    return use_database(path, tmp_path, monkeypatch)


def test_cli_run_names_ignore_case(two_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["status", "--run", "AURORA", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slug"] == "aurora"
    assert cli.main(["timeline", "--run", "Hero", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert cli.main(["status"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "runscribe: several runs recorded; pick one with --run (aurora, hero) "
        "or set default_run in the runs file\n"
    )


def test_cli_takes_the_runs_files_default_run(
    two_runs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`runscribe status` with no --run shows the runs file's `default_run` (read from
    RUNSCRIBE_CONFIG, or ./runscribe.toml); --run still wins."""
    (tmp_path / "runscribe.toml").write_text('default_run = "hero"\n[[runs]]\nslug = "hero"\n')
    assert cli.main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slug"] == "hero"
    assert cli.main(["status", "--run", "aurora", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slug"] == "aurora"
    elsewhere = tmp_path / "conf" / "runs.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text('default_run = "aurora"\n')
    monkeypatch.setenv("RUNSCRIBE_CONFIG", str(elsewhere))
    assert cli.main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slug"] == "aurora"
