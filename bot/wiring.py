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


def _user_agent() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"runscribe/{version('runscribe')}"
    except PackageNotFoundError:
        return "runscribe/dev"


async def attach(runtime: Runtime, stack: AsyncExitStack) -> None:
    """Live sources (one shared httpx client for GitHub, one W&B client for every chain)."""
    import httpx

    from bot.sources.github import build_github_sources
    from bot.sources.wandb import open_wandb_sources

    runs = runtime.runs.runs
    settings = runtime.settings
    if any(run.github_repo for run in runs):
        client = await stack.enter_async_context(
            httpx.AsyncClient(
                timeout=httpx.Timeout(30.0, connect=10.0),
                headers={"User-Agent": _user_agent()},
                follow_redirects=True,
            )
        )
        runtime.sources += build_github_sources(runtime.store, client, settings, runs)
    runtime.sources += await stack.enter_async_context(
        open_wandb_sources(runtime.store, settings, runs)
    )


async def demo_plugins(store: Store, settings: Settings) -> tuple[Enricher | None, Detector | None]:
    """Enricher and detector for the offline demo (rules, no network)."""
    return None, None


async def compose_digest(store: Store, settings: Settings, facts: DigestFacts) -> None:
    """Replace the template text with the LLM's when one is configured (else keep it)."""
    return None


async def usage_text(store: Store, settings: Settings, now: datetime) -> str:
    return "No LLM usage recorded."
