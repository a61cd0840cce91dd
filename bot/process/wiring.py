"""The composition root's building blocks: open the store, the HTTP and W&B clients, the LLM and
the incident engine for a configuration, and return them as one complete `Runtime`. This is the
one module that knows which optional pieces exist (and the only one that binds the LLM writers
to the services that call them); the CLI and the bot ask it rather than importing them."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from bot.config.settings import RunConfig, RunsFile, Settings
from bot.core.heap import freeze_long_lived
from bot.models import SOURCE_SPECS, LLMOutput, SourceSpec
from bot.narrative.facts import DigestFacts, NarrativeFacts
from bot.outputs.digests import DigestComposer
from bot.process.pipeline import Detector, Enricher
from bot.process.runtime import Parts, Runtime, record_runs
from bot.services.narrative import NarrativeWriter
from bot.sources.base import BuildSources, Source
from bot.store import Database, Store, StoreError
from bot.store.db import write_problem

if TYPE_CHECKING:
    import httpx

    from bot.ask.service import AnswerWriter
    from bot.incidents.writeup import WriteupPen
    from bot.llm.client import LLMClient

log = logging.getLogger(__name__)
T = TypeVar("T")


def _user_agent() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"runscribe/{version('runscribe')}"
    except PackageNotFoundError:
        return "runscribe/dev"


# Read-only connections the bot's commands read through (`Store.reader`); the writer connection
# is left to ingest, enrichment and detection.
COMMAND_READERS = 2


@asynccontextmanager
async def open_store(settings: Settings, *, readers: int = 0) -> AsyncIterator[Store]:
    """The store of a process that writes (the bot, `poll`): a database it cannot write is one
    clear StoreError before anything starts, not a traceback at the first write."""
    problem = await asyncio.to_thread(write_problem, settings.runscribe_db)
    if problem is not None:
        raise StoreError(problem)
    async with Database.open(
        settings.runscribe_db, readers=readers, busy_timeout=settings.runscribe_db_busy_timeout
    ) as db:
        yield Store(db)


class LiveSources:
    """Builds the live sources for a runs file, as often as it is reloaded: each registered
    source with a builder (`SourceSpec.build`, imported on first need) gets the runs that use
    it (`SourceSpec.configured`). The clients they share (one httpx client, a source's own, see
    `LiveContext`) are opened on first need and closed with this object, so a rebuild never
    tears down a client a running poll still uses."""

    def __init__(self, store: Store, settings: Settings, stack: AsyncExitStack):
        self.store = store
        self.settings = settings
        self._stack = stack
        self._http: httpx.AsyncClient | None = None
        self._shared: dict[str, Any] = {}

    async def build(self, runs: Sequence[RunConfig]) -> tuple[Source, ...]:
        sources: list[Source] = []
        for spec in SOURCE_SPECS.built():
            used = [run for run in runs if spec.configured(run)]
            if used:
                sources += await builder(spec)(self, used)
        return tuple(sources)

    async def http_client(self) -> httpx.AsyncClient:
        import httpx

        if self._http is None:
            self._http = await self._stack.enter_async_context(
                httpx.AsyncClient(
                    timeout=httpx.Timeout(30.0, connect=10.0),
                    headers={"User-Agent": _user_agent()},
                    follow_redirects=True,
                )
            )
        return self._http

    async def shared(self, name: str, open: Callable[[], AbstractAsyncContextManager[T]]) -> T:
        if name not in self._shared:
            self._shared[name] = await self._stack.enter_async_context(open())
        return cast(T, self._shared[name])


def builder(spec: SourceSpec) -> BuildSources:
    """A registration's builder, imported (`module:function`)."""
    assert spec.build is not None
    module, _, function = spec.build.partition(":")
    return cast(BuildSources, getattr(importlib.import_module(module), function))


def builder_modules() -> tuple[str, ...]:
    """The modules of every registered builder (imported ahead by `open_runtime`)."""
    return tuple(spec.build.partition(":")[0] for spec in SOURCE_SPECS.built() if spec.build)


def llm_configured(settings: Settings) -> bool:
    """An Anthropic key is set (without one, no LLM client exists and the SDK is never
    imported: ~45 MB of the process's memory)."""
    key = settings.anthropic_api_key
    return key is not None and bool(key.get_secret_value())


def open_llm(store: Store, settings: Settings) -> AbstractAsyncContextManager[LLMClient | None]:
    """The LLM client when a key is configured, else None (template text everywhere)."""
    if not llm_configured(settings):
        return nullcontext(None)
    from bot.llm.client import LLMClient

    return LLMClient.from_settings(settings, store, enrich_model=settings.runscribe_enrich_model)


def llm_enricher(llm: LLMClient | None, runs: Sequence[RunConfig]) -> Enricher | None:
    """Batched LLM enrichment when a key is configured; None leaves the rules to do it."""
    if llm is None:
        return None
    from bot.llm.enrich import LLMEnricher

    return LLMEnricher(llm, run_names={r.slug: r.name for r in runs})


def writeup_pen(llm: LLMClient | None) -> WriteupPen | None:
    """The model's write-ups when a key is configured; None leaves the template's."""
    if llm is None:
        return None
    from bot.llm.writeup import ModelPen

    return ModelPen(llm)


def incident_detector(runs: Sequence[RunConfig], pen: WriteupPen | None = None) -> Detector:
    """The incident engine (the pipeline's Detector); with a `pen`, its write-ups are the
    model's."""
    from bot.incidents.engine import IncidentEngine
    from bot.posts.incidents import IncidentPosts

    return IncidentEngine(IncidentPosts(), pen=pen)


async def with_ops_log(
    detector: Detector,
    runs: Sequence[RunConfig],
    settings: Settings,
    live: LiveSources,
    pen: WriteupPen | None = None,
) -> Detector:
    """Detection followed by the ops logs, when a run names one (`github_ops_issue`) and a
    GitHub token is set (`check-config` says why not otherwise)."""
    from bot.outputs.opslog import OpsLogDetector, OpsLogWriter

    token = settings.github_token
    if token is None or not any(r.github_ops_issue and r.github_repo for r in runs):
        return detector
    client = await live.http_client()
    return OpsLogDetector(detector, OpsLogWriter(client, settings.github_api_url, token), pen)


def narrative_writer(store: Store, llm: LLMClient | None) -> NarrativeWriter:
    """The LLM's grounded narrative writer (the template when there is no key)."""
    from bot.llm.narrative import write_narrative

    async def write(facts: NarrativeFacts, now: datetime) -> LLMOutput:
        return await write_narrative(store, llm, facts, now)

    return write


def answer_writer(
    store: Store, llm: LLMClient | None, *, model: str | None = None
) -> AnswerWriter | None:
    """`/ask`'s grounded LLM answers when a key is configured; None leaves the matches."""
    if llm is None:
        return None
    from bot.llm.ask import GroundedAnswers
    from bot.services.narrative import ask_facts

    return GroundedAnswers(store, llm, facts=ask_facts, model=model)


def digest_composer(store: Store, llm: LLMClient | None) -> DigestComposer:
    """The digest's text by the LLM when one is configured and its text passes the grounding
    check; otherwise the template stays (`facts.by` says which). Never raises for an LLM
    problem."""

    async def compose(facts: DigestFacts) -> str | None:
        if llm is None or facts.quiet:
            return facts.text
        from bot.llm.digest import write_digest

        output = await write_digest(store, llm, facts, facts.end)
        facts.by = "template" if output.fallback else "llm"
        return output.content

    return compose


# Imported lazily by the functions above, all of them needed by `open_runtime` (with the
# sources' builders, `builder_modules`).
RUNTIME_MODULES = (
    "httpx",
    # httpx's async backend: anyio loads it lazily, at the first request (~35 ms on the loop)
    "httpcore._backends.anyio",
    "anyio.lowlevel",
    "anyio._backends._asyncio",
    "bot.incidents.engine",
    "bot.llm.client",
    "bot.llm.narrative",
    "bot.llm.digest",
    "bot.llm.enrich",
    "bot.llm.writeup",
)


def _import_all(modules: Sequence[str]) -> None:
    for name in modules:
        importlib.import_module(name)


@asynccontextmanager
async def open_runtime(
    settings: Settings, runs: RunsFile, *, readers: int = 0
) -> AsyncIterator[Runtime]:
    """Everything a polling process needs, opened and closed together (`readers`: read-only
    connections for commands, see `COMMAND_READERS`)."""
    # The modules a long-running process needs but one-shot commands do not (anthropic alone is
    # 1.5 s of CPU to import): imported in a worker thread, so whatever else already runs on
    # this loop (a bot, a web server) is never held up by the import.
    modules = RUNTIME_MODULES + builder_modules()
    modules += ("anthropic",) if llm_configured(settings) else ()
    await asyncio.to_thread(_import_all, modules)
    freeze_long_lived()
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(settings, readers=readers))
        await record_runs(store, runs)
        llm = await stack.enter_async_context(open_llm(store, settings))
        live = LiveSources(store, settings, stack)
        pen = writeup_pen(llm)

        async def parts(new: RunsFile) -> Parts:
            detector = incident_detector(new.runs, pen)
            return Parts(
                sources=await live.build(new.runs),
                enricher=llm_enricher(llm, new.runs),
                detector=await with_ops_log(detector, new.runs, settings, live, pen),
            )

        first = await parts(runs)
        yield Runtime(
            settings=settings,
            runs=runs,
            store=store,
            sources=first.sources,
            enricher=first.enricher,
            detector=first.detector,
            llm=llm,
            narrator=narrative_writer(store, llm),
            digest_composer=digest_composer(store, llm),
            answers=answer_writer(store, llm, model=settings.runscribe_enrich_model),
            pen=pen,
            rebuild=parts,
        )


async def usage_text(store: Store, settings: Settings, now: datetime, *, as_json: bool) -> str:
    from bot.llm.client import format_usage, usage_report

    report: dict[str, Any] = await usage_report(
        store, now, daily_budget_usd=settings.runscribe_llm_daily_budget_usd
    )
    return json.dumps(report, indent=2, default=str) if as_json else format_usage(report)
