"""Shared fixtures: a real SQLite store on disk, and a fixed clock. As in `runscribe` itself
(`cli._load_config`), the detectors are registered before any runs file is read: they declare
the thresholds `[runs.alerts]` is judged against, whatever order the tests run in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import bot.incidents.detectors  # noqa: F401  (declares the detectors' thresholds)
from bot.store import Database, Store


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "runscribe.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    async with Database.open(db_path) as db:
        yield Store(db)


@pytest.fixture
def now() -> datetime:
    return datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
