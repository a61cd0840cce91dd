"""`Store`: one repository per aggregate over one Database, handed to services by the
composition root."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import aiosqlite

from bot.store.cursors import CursorsRepo, HealthRepo
from bot.store.cycles import CyclesRepo
from bot.store.db import Database
from bot.store.delivery import DeliveryRepo
from bot.store.events_repo import EventsRepo
from bot.store.forecasts import ForecastStateRepo, SeriesRepo
from bot.store.hooks import HooksRepo
from bot.store.incidents import IncidentsRepo
from bot.store.live import LiveMessagesRepo
from bot.store.llm import LLMRepo
from bot.store.metrics import MetricsRepo
from bot.store.opslog import OpsCommentsRepo
from bot.store.outbox import OutboxRepo
from bot.store.runs import RunsRepo
from bot.store.search import SearchRepo
from bot.store.snapshots import SnapshotsRepo


class Store:
    """The repositories over one Database. Each write method is safe alone and joins an
    enclosing `store.transaction()` when there is one."""

    def __init__(self, db: Database, *, memo: dict[Any, Any] | None = None):
        self.db = db
        # Values services computed from the store, each kept with the data version it was
        # computed at (e.g. the incident statistics); shared with `reader`.
        self.memo: dict[Any, Any] = {} if memo is None else memo
        self._reader: Store | None = None
        self.runs = RunsRepo(db)
        self.events = EventsRepo(db)
        self.metrics = MetricsRepo(db)
        self.snapshots = SnapshotsRepo(db)
        self.cursors = CursorsRepo(db)
        self.health = HealthRepo(db)
        self.incidents = IncidentsRepo(db)
        self.outbox = OutboxRepo(db)
        self.delivery = DeliveryRepo(db)  # per channel: refusals, posts given up
        self.llm = LLMRepo(db)
        self.live = LiveMessagesRepo(db)  # live status messages (`status_channel`)
        self.search = SearchRepo(db)
        self.cycles = CyclesRepo(db)
        self.series = SeriesRepo(db)  # watched metrics ([[runs.forecasts]])
        self.forecasts = ForecastStateRepo(db)
        self.hooks = HooksRepo(db)  # pushed deliveries waiting for their source
        self.opslog = OpsCommentsRepo(db)  # write-ups on the runs' ops-log issues

    @property
    def reader(self) -> Store:
        """The same repositories over the read-only connections (`Database.read_only`): what
        commands read through, so they never wait for the poll cycle's writes."""
        if self._reader is None:
            reading = self.db.read_only()
            self._reader = self if reading is self.db else Store(reading, memo=self.memo)
        return self._reader

    def transaction(self) -> AbstractAsyncContextManager[aiosqlite.Connection]:
        return self.db.transaction()
