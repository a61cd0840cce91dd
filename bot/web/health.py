"""What the bot records for /healthz (`bot.services.delivery`): the gateway's state, whether outbox
rounds fail, and the daily integrity check of the store. No Discord here: the bot's event handlers
and loops call it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta

from bot.config.runsfile import RunConfig
from bot.core.timeutil import utcnow
from bot.models import OutboxItem
from bot.outbox.payload import make_payload
from bot.services.delivery import (
    gateway_down,
    gateway_up,
    integrity_checked,
    outbox_failed,
    outbox_ok,
)
from bot.store import Store
from bot.store.integrity import quick_check

log = logging.getLogger(__name__)

STORE_CHECK_EVERY = timedelta(days=1)


class HealthRecorder:
    """Records into the store `store()` returns; `clock` paces the daily check."""

    def __init__(self, store: Callable[[], Store], clock: Callable[[], datetime]):
        self._store = store
        self._clock = clock
        self._outbox_failing = False  # the last outbox round raised (recorded for /healthz)
        # `runscribe run` checked the store at start; the bot again each day it runs.
        self._store_checked_at = clock()

    async def gateway_up(self) -> None:
        await gateway_up(self._store(), utcnow())

    async def gateway_down(self, why: str) -> None:
        await gateway_down(self._store(), utcnow(), why)

    async def outbox_round(self, drain: Callable[[], Awaitable[object]]) -> object:
        """One outbox round. A failing round (a damaged outbox table, a full disk) is recorded
        for /healthz and raised, so the loop logs it and backs off: alerts never stop silently."""
        try:
            report = await drain()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._outbox_failing = True
            await outbox_failed(self._store(), utcnow(), f"{type(exc).__name__}: {exc}"[:300])
            raise
        if self._outbox_failing:
            self._outbox_failing = False
            await outbox_ok(self._store(), utcnow())
        return report

    async def check_store(self, runs: Sequence[RunConfig], *, force: bool = False) -> list[str]:
        """The daily `PRAGMA quick_check`, on a read connection (never holding up writes). Damage
        is logged, shown by /healthz and queued once a day for every alerts channel of `runs`,
        so it never goes unnoticed while commands keep answering. The damage found, if any."""
        now = self._clock()
        if not force and now - self._store_checked_at < STORE_CHECK_EVERY:
            return []
        self._store_checked_at = now
        store = self._store()
        found = await quick_check(store.reader.db)
        await integrity_checked(store, utcnow(), found)
        if not found:
            return found
        log.error("the database %s is damaged: %s", store.db.path, found[0][:300])
        text = (
            f"⚠️ Runscribe's database is damaged: {found[0][:300]}. Alerts may stop: stop "
            "Runscribe, run `runscribe repair` (it keeps a copy of the damaged file), then start "
            "it again; or restore the database from a backup."
        )
        for channel in sorted({r.alerts_channel for r in runs if r.alerts_channel}):
            item = OutboxItem(
                channel_id=channel,
                kind="alert",
                payload=make_payload(text),
                dedup_key=f"store-damaged:{now:%Y-%m-%d}:{channel}",
            )
            try:
                await store.outbox.enqueue(item)
            except Exception as exc:  # the damage may be in the outbox itself: the log has it
                log.error("could not queue the damaged-database alert: %s", exc)
        return found
