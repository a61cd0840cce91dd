"""SQLite storage: `Database` (connection, migrations) and `Store` (one repository per
aggregate: runs, events, metrics, snapshots, cursors and health, incidents, outbox, llm,
search)."""

from bot.store.db import Database, StoreError
from bot.store.events import UpsertResult
from bot.store.facade import Store

__all__ = ["Database", "Store", "StoreError", "UpsertResult"]
