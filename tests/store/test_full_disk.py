"""A full disk is "disk full" whichever way SQLite says it: SQLITE_FULL (tests/e2e/
test_acceptance_store.py writes a real database until it is full), or a "disk I/O error" (a
write of the WAL index or a sync that fails for want of space) when the database's disk has
less than LOW_SPACE free, measured on the real disk here with the bound moved above its free
space; the same error on a disk with room stays a plain I/O error."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from bot.store import errors
from bot.store.errors import describe_sqlite_error

SQLITE_IOERR_WRITE = 10 | (3 << 8)


def io_error() -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorcode = SQLITE_IOERR_WRITE
    return exc


def test_an_io_error_on_a_full_disk_says_disk_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data" / "runscribe.db"
    path.parent.mkdir()
    free = shutil.disk_usage(tmp_path).free
    monkeypatch.setattr(errors, "LOW_SPACE", free + 1)  # this disk now counts as full
    said = describe_sqlite_error(io_error(), path)
    assert said == f"disk full: cannot write the database {path} (free space on its disk)"


def test_an_io_error_on_a_disk_with_room_is_not_called_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(errors, "LOW_SPACE", 0)
    assert describe_sqlite_error(io_error(), tmp_path / "runscribe.db") is None
