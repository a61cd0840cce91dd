"""Attach live sources, the LLM and the incident engine to a Runtime. This is the one module
that knows which optional pieces exist; the CLI and the bot ask it rather than importing them."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bot.pipeline import Detector
from bot.services.digest import DigestFacts
from bot.settings import RunConfig, Settings
from bot.store import Store

if TYPE_CHECKING:
    from bot.llm.client import LLMClient
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
        open_wandb_sources(
            runtime.store,
            settings,
            runs,
            state_dir=wandb_state_dir(settings),
        )
    )
    llm = await stack.enter_async_context(open_llm(runtime.store, settings))
    runtime.llm = llm
    if llm is not None:
        from bot.llm.enrich import LLMEnricher

        runtime.enricher = LLMEnricher(llm, run_names={r.slug: r.name for r in runs})
    runtime.detector = incident_detector(runs)


def wandb_state_dir(settings: Settings) -> Path:
    """wandb's own files (cache, config) live beside the database, never in $HOME."""
    return Path(settings.runscribe_db).resolve().parent / "wandb"


def open_llm(store: Store, settings: Settings) -> AbstractAsyncContextManager[LLMClient | None]:
    """The LLM client when a key is configured, else None (template text everywhere)."""
    if settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value():
        return nullcontext(None)
    from bot.llm.client import LLMClient

    return LLMClient.from_settings(settings, store, enrich_model=settings.runscribe_enrich_model)


def incident_detector(runs: Sequence[RunConfig]) -> Detector | None:
    """The incident engine, when it is installed (it is part of this package)."""
    try:
        from bot.incidents.engine import IncidentEngine
    except ImportError:  # pragma: no cover - only while the engine is being built
        return None
    return IncidentEngine()  # type: ignore[return-value]


async def refresh_narratives(
    store: Store, llm: LLMClient | None, slugs: Sequence[str], now: datetime
) -> int:
    """Write a new narrative for each run where one is due; returns how many were written."""
    from bot.llm.facts import build_narrative_facts
    from bot.llm.narrative import refresh_narrative_if_due

    written = 0
    for slug in slugs:
        output = await refresh_narrative_if_due(store, llm, build_narrative_facts, slug, now)
        written += output is not None
    return written


async def compose_digest(
    store: Store, settings: Settings, facts: DigestFacts, llm: LLMClient | None = None
) -> None:
    """Replace the template text with the LLM's when one is configured and its text passes the
    grounding check; otherwise the template stays. Never raises for an LLM problem."""
    if facts.prompt_facts is None or facts.quiet:
        return
    from bot.llm.digest import write_digest

    async with AsyncExitStack() as stack:
        if llm is None:
            llm = await stack.enter_async_context(open_llm(store, settings))
        if llm is None:
            return
        output = await write_digest(store, llm, facts.prompt_facts, facts.end)
    facts.text = output.content
    facts.by = "template" if output.fallback else "llm"


async def usage_text(store: Store, settings: Settings, now: datetime, *, as_json: bool) -> str:
    from bot.llm.client import format_usage, usage_report

    report = await usage_report(
        store, now, daily_budget_usd=settings.runscribe_llm_daily_budget_usd
    )
    return json.dumps(report, indent=2, default=str) if as_json else format_usage(report)
