"""SQLite storage: `Database` (connection, migrations) and `Store` (repositories)."""

from bot.store.db import Database, StoreError
from bot.store.repos import Store, UpsertResult

__all__ = ["Database", "Store", "StoreError", "UpsertResult"]
