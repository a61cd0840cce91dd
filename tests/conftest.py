"""Shared fixtures: a real SQLite store on disk, and a fixed clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

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
