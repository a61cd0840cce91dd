"""What a running process holds: settings, runs, the store, the sources, the enricher, the
incident detector and the writers. Built complete by `bot.process.wiring.open_runtime` (the one
module that knows which optional pieces exist); never mutated: reloading the runs file gives a new
Runtime. Nothing is created at import time."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from bot.config.settings import RunsFile, Settings
from bot.hooks.doorbell import Doorbell
from bot.models import RunInfo
from bot.process.pipeline import (
    Budget,
    CycleSummary,
    Detector,
    Enricher,
    Gather,
    enrich_step,
    of_family,
    poll_family,
    run_cycle,
)
from bot.sources.base import Source
from bot.sources.poller import CycleReport, PollSession
from bot.store import Store

if TYPE_CHECKING:
    from bot.ask.service import AnswerWriter
    from bot.incidents.writeup import WriteupPen
    from bot.llm.client import LLMClient
    from bot.outputs.digests import DigestComposer
    from bot.services.narrative import NarrativeWriter

log = logging.getLogger(__name__)


async def record_runs(store: Store, runs: RunsFile) -> None:
    for run in runs.runs:
        await store.runs.upsert(RunInfo.from_config(run))


@dataclass(frozen=True, slots=True)
class Parts:
    """The pieces that depend on the runs file, rebuilt when it is reloaded."""

    sources: tuple[Source, ...] = ()
    enricher: Enricher | None = None
    detector: Detector | None = None


# Builds the parts for a runs file (`bot.process.wiring` supplies it; it owns the clients they
# share).
PartsBuilder = Callable[[RunsFile], Awaitable[Parts]]


@dataclass(frozen=True, slots=True)
class Runtime:
    settings: Settings
    runs: RunsFile
    store: Store
    sources: tuple[Source, ...] = ()
    enricher: Enricher | None = None
    detector: Detector | None = None
    llm: LLMClient | None = None
    narrator: NarrativeWriter | None = None  # writes a narrative when one is due
    digest_composer: DigestComposer | None = None  # the digest's text beyond the template
    answers: AnswerWriter | None = None  # /ask's written answers beyond the matches
    pen: WriteupPen | None = None  # incident write-ups by the model (a key is set)
    rebuild: PartsBuilder | None = None
    # This process's view of each source's backoff (kept across reloads: same process).
    session: PollSession = field(default_factory=PollSession)
    # Rung by the push endpoints (`bot.hooks.routes`) when they stored something; kept across
    # reloads (`replace` carries it), so the web server and the loop share one.
    doorbell: Doorbell = field(default_factory=Doorbell)

    async def cycle(self, now: datetime) -> CycleSummary:
        """Poll, enrich, detect. (Narratives are refreshed by the caller's own schedule: the
        bot's narrative loop, or `runscribe poll` after each cycle.)"""
        started = time.monotonic()
        summary = await run_cycle(
            self.store,
            self.sources,
            now,
            enricher=self.enricher,
            detector=self.detector,
            session=self.session,
        )
        # The loop's heartbeat, for the status page's "updated … · next in …" and /healthz.
        summary.seconds = time.monotonic() - started
        finished = now + timedelta(seconds=summary.seconds)
        await self.store.cycles.record(now, finished, self.settings.runscribe_poll_interval)
        return summary

    async def poll(self, family: str, now: datetime) -> CycleSummary:
        """Poll one source family (`pipeline.WANDB` or `pipeline.THREADS`) and detect at once:
        the bot and `runscribe poll` run each family in its own loop, so a GitHub backfill never
        holds up a W&B crash alert."""
        started = time.monotonic()
        sources = of_family(self.sources, family)
        summary = await poll_family(
            self.store, sources, now, detector=self.detector, session=self.session
        )
        summary.seconds = time.monotonic() - started
        if sources:  # the heartbeat says a source was polled, not that a loop went round
            finished = now + timedelta(seconds=summary.seconds)
            await self.store.cycles.record(now, finished, self.settings.runscribe_poll_interval)
        return summary

    async def ingest_pushed(self, now: datetime, *, judge: bool = True) -> CycleSummary:
        """What the push endpoints stored: GitHub deliveries read into their sources (filtered
        to tracked threads as a poll filters them), then detection at once (an Alertmanager
        alert is an event already: it is judged now, and posted by the next outbox round) when
        `judge` (the doorbell rang), GitHub events were written or an alert's incident is open;
        a round with nothing pushed and no alert open costs two indexed reads.
        `summary.poll.results["hooks"].events` counts the GitHub events written."""
        from bot.hooks.ingest import ingest_github
        from bot.sources.base import PollResult

        started = time.monotonic()
        summary = CycleSummary(poll=CycleReport())
        written = await ingest_github(self.store, self.sources, now)
        summary.poll.results["hooks"] = PollResult(events=written)
        # An open alert incident is judged on every round too: nothing polls Alertmanager, so
        # its resolution (due once the clear has held) would otherwise wait for a W&B poll.
        judge = judge or bool(written) or await self.store.incidents.alerts_open()
        if self.detector is not None and judge:
            try:
                summary.alerts_queued += await self.detector.detect(self.store, now)
            except Exception as exc:
                log.exception("incident detection failed")
                summary.errors.append(f"detect: {exc}")
        summary.seconds = time.monotonic() - started
        return summary

    async def judge(self, now: datetime) -> CycleSummary:
        """Detection alone, at once: a person acknowledged an incident, so its alert's head
        (which names who) is brought up to date now, the same way whatever acknowledged it."""
        summary = CycleSummary(poll=CycleReport())
        if self.detector is not None:
            summary.alerts_queued += await self.detector.detect(self.store, now)
        return summary

    async def enrich(self, now: datetime) -> CycleSummary:
        """One bounded round of enrichment (`RUNSCRIBE_ENRICH_BUDGET` seconds; the rest resumes
        next round), gathered into batches while the LLM writes them (live batching)."""
        settings = self.settings
        gather = (
            Gather(
                window=timedelta(seconds=settings.runscribe_enrich_window),
                batch=settings.runscribe_enrich_batch,
            )
            if self.enricher is not None
            else None
        )
        started = time.monotonic()
        summary = await enrich_step(
            self.store,
            now,
            enricher=self.enricher,
            detector=self.detector,
            budget=Budget(settings.runscribe_enrich_budget),
            gather=gather,
        )
        summary.seconds = time.monotonic() - started
        return summary

    async def refresh_narratives(self, now: datetime, slugs: Sequence[str] | None = None) -> int:
        """A new narrative for each run (or each of `slugs`) where one is due."""
        if self.narrator is None:
            return 0
        from bot.services.narrative import refresh_narratives

        wanted = [r.slug for r in self.runs.runs] if slugs is None else list(slugs)
        return await refresh_narratives(self.store, self.narrator, wanted, now)

    async def write_writeups(self, now: datetime) -> int:
        """The model's write-up of each recently resolved incident whose present facts have
        none stored yet (`WriteupPen.write`: stored, then posted by the next detection round).
        Its own loop: a slow model never holds an alert or a resolution."""
        if self.pen is None:
            return 0
        from bot.incidents.writeup import recent_writeups

        written = 0
        for writeup in await recent_writeups(self.store, now):
            if await self.pen.stored(self.store, writeup) is None:
                await self.pen.write(self.store, writeup, now)
                written += 1
        return written

    async def reload(self, runs: RunsFile) -> Runtime:
        """This runtime for a new runs file: its runs recorded, its sources, enricher and
        detector rebuilt (new repositories, labels and W&B runs take effect at once)."""
        await record_runs(self.store, runs)
        if self.rebuild is None:
            return replace(self, runs=runs)
        parts = await self.rebuild(runs)
        return replace(
            self,
            runs=runs,
            sources=parts.sources,
            enricher=parts.enricher,
            detector=parts.detector,
        )
