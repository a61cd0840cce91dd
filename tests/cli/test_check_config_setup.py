"""`check-config` warns before the setup misleads (issue 41): a repository alone tracks no
thread, and the database is checked the way `run` opens it. In-process: the exit code and the
lines are what a person sees; no subprocess is needed to read them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot import cli

RUN = '[[runs]]\nslug = "hero"\nname = "Hero"\ngithub_repo = "lab/model"\n'


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("RUNSCRIBE_", "DISCORD_", "GITHUB_", "WANDB_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RUNSCRIBE_CONFIG", str(tmp_path / "runscribe.toml"))
    monkeypatch.setenv("RUNSCRIBE_DB", str(tmp_path / "runscribe.db"))
    return tmp_path


def test_a_repository_alone_is_flagged(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "runscribe.toml").write_text(RUN)
    assert cli.main(["check-config"]) == 0
    out = capsys.readouterr().out
    assert "github_repo lab/model alone tracks no thread: add github_issues" in out
    (workdir / "runscribe.toml").write_text(RUN + "github_labels = ['hero-run']\n")
    assert cli.main(["check-config"]) == 0
    assert "tracks no thread" not in capsys.readouterr().out


def test_a_database_that_is_not_sqlite_is_refused_as_run_would(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "runscribe.toml").write_text(RUN + "github_issues = [1]\n")
    (workdir / "runscribe.db").write_text(RUN)  # a TOML file given as RUNSCRIBE_DB
    assert cli.main(["check-config"]) == 2
    err = capsys.readouterr().err
    assert "is not a SQLite database" in err
    assert "writable" not in err


def test_a_database_newer_than_the_code_is_refused(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    (workdir / "runscribe.toml").write_text(RUN + "github_issues = [1]\n")
    conn = sqlite3.connect(workdir / "runscribe.db")
    conn.execute("PRAGMA user_version = 9999")
    conn.close()
    assert cli.main(["check-config"]) == 2
    assert "has schema version 9999" in capsys.readouterr().err
