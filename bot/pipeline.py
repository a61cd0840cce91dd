"""The data flow in one place: sources → store → enrich → detect incidents → outbox.

`run_cycle` is what `runscribe poll --once` does and what the bot's poll loop does each interval.
Enrichment and detection are plug-ins so the LLM and the incident engine stay optional."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from bot.enrich.rules import Enrichment, enrich_text
from bot.models import Event
from bot.sources.base import Source
from bot.sources.poller import CycleReport, poll_once
from bot.store import Store

log = logging.getLogger(__name__)


class Enricher(Protocol):
    """Turns events into enrichments. Must not raise for a bad event: fall back instead."""

    name: str

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        """Map event id → (enrichment, enriched_by label)."""
        ...


class RulesEnricher:
    """The deterministic path every install has."""

    name = "rules"

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        out: dict[int, tuple[Enrichment, str]] = {}
        for event in events:
            if event.id is None:
                continue
            out[event.id] = (rules_enrichment(event), "rules")
        return out


def rules_enrichment(event: Event) -> Enrichment:
    return enrich_text(title=event.title, body=event.body, kind=event.kind, source=event.source)


class Detector(Protocol):
    async def detect(self, store: Store, now: datetime) -> int:
        """Evaluate incident rules, queue alerts in the outbox; return the number queued."""
        ...


async def enrich_pending(
    store: Store, enricher: Enricher | None = None, *, batch: int = 200, run_slug: str | None = None
) -> int:
    """Enrich every event that is new or edited since it was last enriched. Returns how many."""
    enricher = enricher or RulesEnricher()
    done = 0
    while True:
        pending = await store.events.pending_enrichment(run_slug, limit=batch)
        if not pending:
            return done
        results = await enricher.enrich(pending)
        wrote = 0
        async with store.transaction():
            for event in pending:
                if event.id is None:
                    continue
                enrichment, label = results.get(event.id) or (rules_enrichment(event), "rules")
                stored = await store.events.set_enrichment(
                    event,
                    summary=enrichment.summary,
                    tag=enrichment.tag,
                    incident=enrichment.incident,
                    severity=enrichment.severity,
                    newsworthy=enrichment.newsworthy,
                    enriched_by=label,
                )
                wrote += int(stored)
        done += wrote
        if wrote == 0:  # everything changed under us; try again next cycle
            return done


@dataclass(slots=True)
class CycleSummary:
    poll: CycleReport
    enriched: int = 0
    alerts_queued: int = 0
    errors: list[str] = field(default_factory=list)


async def run_cycle(
    store: Store,
    sources: Sequence[Source],
    now: datetime,
    *,
    enricher: Enricher | None = None,
    detector: Detector | None = None,
) -> CycleSummary:
    summary = CycleSummary(poll=await poll_once(store, sources, now))
    try:
        summary.enriched = await enrich_pending(store, enricher)
    except Exception as exc:
        log.exception("enrichment failed; events stay queued for the next cycle")
        summary.errors.append(f"enrich: {exc}")
    if detector is not None:
        try:
            summary.alerts_queued = await detector.detect(store, now)
        except Exception as exc:
            log.exception("incident detection failed")
            summary.errors.append(f"detect: {exc}")
    return summary
