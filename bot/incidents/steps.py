"""Failure isolation for the incident engine's rounds: each step of a run's round runs in a
savepoint (`Steps`), and what failed is logged once per cause and recorded in the store's health
(`Failures`, `record_health`), so one broken detector, incident or post never blinds the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from datetime import datetime
from typing import Any

from bot.models import DETECTION
from bot.store import Store
from bot.store.db import TransactionLost

log = logging.getLogger("bot.incidents.engine")  # the engine's log: what operators filter on


class Failures:
    """What failed in one run's round. Each cause (what failed, and how) is logged once with
    its traceback, not every round, until a clean round (`logged`, kept by the engine)."""

    def __init__(self, slug: str, logged: dict[str, int]):
        self.slug = slug
        self.logged = logged
        self.said: list[str] = []

    def add(self, what: str, exc: BaseException) -> None:
        text = f"{what} failed: {type(exc).__name__}: {exc}"[:300]
        self.said.append(text)
        if text in self.logged:
            self.logged[text] += 1
            log.debug("incident detection for run %s: %s (again)", self.slug, text)
            return
        self.logged[text] = 1
        log.error("incident detection for run %s: %s", self.slug, text, exc_info=exc)

    def text(self) -> str:
        return "; ".join(dict.fromkeys(self.said))


class Steps:
    """Runs each step of a round in a savepoint of the round's transaction: a step that raises
    is undone and recorded, and the round goes on."""

    def __init__(self, store: Store, failures: Failures):
        self.store = store
        self.failures = failures

    async def run(self, what: str, step: Coroutine[Any, Any, None]) -> bool:
        try:
            async with self.store.db.savepoint():
                await step
        except (asyncio.CancelledError, TransactionLost):
            raise  # the round as a whole is over
        except Exception as exc:
            self.failures.add(what, exc)
            return False
        return True


async def record_health(store: Store, slug: str, now: datetime, failures: Failures) -> None:
    """Say in the store whether the run's round went through (`/healthz` reads it): failing
    with what failed, ok again after a clean round. Written only on a change of state."""
    try:
        row = await store.health.get(DETECTION, slug)
        if failures.said:
            await store.health.record_failure(DETECTION, slug, now, failures.text(), None)
        elif row is not None and row.consecutive_failures:
            await store.health.record_success(DETECTION, slug, now)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        failures.add("recording detection health", exc)
    if not failures.said and failures.logged:
        log.info("incident detection for run %s works again", slug)
        failures.logged.clear()
