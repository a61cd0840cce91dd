"""Shared fixtures: a real SQLite store on disk, and a fixed clock. As in `runscribe` itself
(`cli._load_config`), the detectors are registered before any runs file is read: they declare
the thresholds `[runs.alerts]` is judged against, whatever order the tests run in."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import bot.incidents.detectors  # noqa: F401  (declares the detectors' thresholds)
from bot.store import Database, Store

# The suite starts many Python processes (xdist workers, the real `runscribe` in end-to-end
# tests): let them reuse compiled bytecode even where the environment says not to write it, so
# each does not compile `bot/` and rewrite the test modules again.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


#: Modules with one long piece each (the rules over the whole corpus, the models' refits):
#: handed out first, so the other workers take the many short tests meanwhile and none waits
#: for another at the end.
_LONG_FIRST = (
    "tests/enrich/test_signal_corpus.py",
    "tests/enrich/test_tag_gate.py",
    "tests/enrich/test_learned.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(_LONG_FIRST))  # stable otherwise


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "runscribe.db"


@pytest.fixture(scope="session")
def empty_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with every migration applied and nothing in it, built once per session."""
    path = tmp_path_factory.mktemp("empty") / "empty.db"

    async def build() -> None:
        async with Database.open(path):
            pass

    asyncio.run(build())
    return path


@pytest.fixture
async def store(db_path: Path, empty_database: Path) -> AsyncIterator[Store]:
    """A new store, as `Database.open` creates one: a copy of `empty_database` (the migrations
    run once per session, not once per test)."""
    shutil.copy(empty_database, db_path)
    async with Database.open(db_path) as db:
        yield Store(db)


@pytest.fixture
def now() -> datetime:
    return datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
