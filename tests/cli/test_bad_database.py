"""A database path that cannot work (a file that is not SQLite, a directory, a path under a
file) gets one clear line and exit 2 from every command that opens the database, never a
traceback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.cli import EXIT_USAGE, main
from bot.store import Database, StoreError

RUNS = """
[[runs]]
slug = "hero"
name = "Hero 535B"
github_repo = "lab/model"
"""
COMMANDS = [
    ["status"],
    ["status", "--json"],
    ["timeline"],
    ["digest"],
    ["usage"],
    ["poll", "--once"],
    ["run"],
    ["demo", "--db", "{db}"],  # the demo never opens RUNSCRIBE_DB: only the one it is given
    ["page", "--out", "site"],
    ["web", "--port", "0"],
]


def not_sqlite(tmp: Path) -> tuple[Path, str]:
    path = tmp / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 100)
    return path, "is not a SQLite database"


def a_directory(tmp: Path) -> tuple[Path, str]:
    path = tmp / "data"
    path.mkdir()
    return path, "is a directory"


def under_a_file(tmp: Path) -> tuple[Path, str]:
    parent = tmp / "data"
    parent.write_text("a file where a folder should be")
    return parent / "deeper" / "runscribe.db", f"{parent} is a file, not a folder"


BAD_PATHS = [not_sqlite, a_directory, under_a_file]


@pytest.mark.parametrize("bad", BAD_PATHS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_gives_one_line_and_exit_2(
    command: list[str],
    bad: Callable[[Path], tuple[Path, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, reason = bad(tmp_path)
    runs = tmp_path / "runscribe.toml"
    runs.write_text(RUNS)
    for name in list(os.environ):
        if name.startswith(("RUNSCRIBE_", "DISCORD_", "GITHUB_", "WANDB_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RUNSCRIBE_DB", str(path))
    monkeypatch.setenv("RUNSCRIBE_CONFIG", str(runs))
    monkeypatch.setenv("DISCORD_TOKEN", "not-used")
    monkeypatch.chdir(tmp_path)

    assert main([part.replace("{db}", str(path)) for part in command]) == EXIT_USAGE
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("runscribe: ") and reason in lines[0]
    assert "Traceback" not in out + err


def test_a_real_process_prints_one_line(tmp_path: Path) -> None:
    path, _ = a_directory(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "timeline"],
        cwd=tmp_path,
        env={**env, "RUNSCRIBE_DB": str(path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "is a directory" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


async def test_the_store_says_why_it_cannot_open(tmp_path: Path) -> None:
    for bad in BAD_PATHS:
        folder = tmp_path / bad.__name__
        folder.mkdir()
        path, reason = bad(folder)
        with pytest.raises(StoreError, match=reason):
            async with Database.open(path):
                pass
    async with Database.open(tmp_path / "fine" / "runscribe.db") as db:
        assert await db.user_version() > 0


@pytest.fixture
def read_only_db(tmp_path: Path) -> Iterator[Path]:
    """A database file this process may read but not write: its mode for a user, and for root
    (whom modes do not stop) the immutable attribute as well, as a read-only mount would."""
    path = tmp_path / "runscribe.db"

    async def build() -> None:
        async with Database.open(path):
            pass

    asyncio.run(build())
    path.chmod(0o444)
    immutable = os.geteuid() == 0
    if immutable:
        subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield path
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o644)


WRITERS = [["poll", "--once"], ["run"], ["check-config"], ["demo", "--db", "{db}"]]


@pytest.mark.parametrize("command", WRITERS, ids=" ".join)
def test_a_read_only_database_is_one_line_and_exit_2(
    command: list[str],
    read_only_db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs = tmp_path / "runscribe.toml"
    runs.write_text(RUNS)
    for name in list(os.environ):
        if name.startswith(("RUNSCRIBE_", "DISCORD_", "GITHUB_", "WANDB_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RUNSCRIBE_DB", str(read_only_db))
    monkeypatch.setenv("RUNSCRIBE_CONFIG", str(runs))
    monkeypatch.setenv("DISCORD_TOKEN", "not-used")
    monkeypatch.chdir(tmp_path)
    before = read_only_db.read_bytes()

    assert main([part.replace("{db}", str(read_only_db)) for part in command]) == EXIT_USAGE
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("runscribe: ") and "is read-only for this user" in lines[0]
    assert str(read_only_db.name) in lines[0] and "Traceback" not in out + err
    assert read_only_db.read_bytes() == before


def test_a_read_only_database_still_answers_the_read_only_commands(read_only_db: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "timeline"],
        cwd=read_only_db.parent,
        env={**env, "RUNSCRIBE_DB": str(read_only_db)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    # An empty store: the one line that says so, not a complaint about writing.
    assert "read-only" not in result.stderr and "Traceback" not in result.stderr
