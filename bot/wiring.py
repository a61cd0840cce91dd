"""Attach live sources, the LLM and the incident engine to a Runtime. This is the one module
that knows which optional pieces exist; the CLI and the bot ask it rather than importing them."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from datetime import datetime
from typing import TYPE_CHECKING

from bot.pipeline import Detector, Enricher
from bot.services.digest import DigestFacts
from bot.settings import Settings
from bot.store import Store

if TYPE_CHECKING:
    from bot.runtime import Runtime

log = logging.getLogger(__name__)


async def attach(runtime: Runtime, stack: AsyncExitStack) -> None:
    """Filled in as the live sources, LLM and incident engine land."""
    return None


async def demo_plugins(store: Store, settings: Settings) -> tuple[Enricher | None, Detector | None]:
    """Enricher and detector for the offline demo (rules, no network)."""
    return None, None


async def compose_digest(store: Store, settings: Settings, facts: DigestFacts) -> None:
    """Replace the template text with the LLM's when one is configured (else keep it)."""
    return None


async def usage_text(store: Store, settings: Settings, now: datetime) -> str:
    return "No LLM usage recorded."
