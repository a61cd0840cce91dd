"""Incidents reported by people on GitHub or in chat (`report:<kind>:<thread>`)."""

from __future__ import annotations

from bot.incidents.detectors.base import (
    OUTAGE,
    REPORT_PREFIX,
    Detection,
    DetectorSpec,
    Finding,
    RunData,
    readable,
    where,
)
from bot.models import Event

KIND_LABELS = {
    "crash": "Crash",
    "node-loss": "Node loss",
    "preemption": "Preemption",
    "network": "Network fault",
    "outage": "Outage",
    "hardware": "Hardware fault",
    "oom": "Out-of-memory kill",
    "hang": "Hang",
    "restore-failed": "Failed restore",
    "checkpoint-failed": "Failed checkpoint save",
    "storage": "Storage outage",
    "reported": "Incident",
}


def report_kind(event: Event) -> str:
    """The incident kind a report states in its own words. The rules read it in its thread's
    context, where a follow-up that names no cause ("still waiting at the barrier after the
    restore") takes the thread's kind: in a thread about out-of-memory kills that would call a
    hang after a restore an OOM. A kind only the thread names is not this report's: it is then
    a report of no stated kind."""
    # Imported here: the rules compile ~150 patterns, which `/status` and the one-shot CLI
    # (they import this module for its fingerprints) should not pay for.
    from bot.enrich.rules import enrich_event, enrich_text

    kind = enrich_event(event).incident_kind
    if kind is None:
        return "reported"
    if event.kind == "conversation":
        return kind  # judged line by line already, each line in its own words
    own = enrich_text(
        title=event.title, body=event.body or "", kind=event.kind, source=event.source
    )
    return own.incident_kind or "reported"


def detect_reports(data: RunData) -> Detection:
    """One finding per (kind, thread): all new reports of the same kind in the same GitHub
    thread or Discord channel belong to one incident."""
    by_fp: dict[str, Finding] = {}
    for event in data.reports:
        kind = report_kind(event)
        fp = f"{REPORT_PREFIX}{kind}:{event.thread or event.source + ':' + event.external_id}"
        label = KIND_LABELS.get(kind, kind.replace("-", " ").capitalize())
        found = by_fp.get(fp)
        if found is None:
            who = f" by {event.author}" if event.author else ""
            found = by_fp[fp] = Finding(
                fingerprint=fp,
                kind=kind,
                severity=event.severity or "warning",
                title=f"{label} reported in {where(event)}{who}",
                cause=event.summary or (event.title or event.body)[:300],
                since=event.at,
                group=OUTAGE,
                thread=event.thread,
            )
        elif event.severity == "critical":
            found.severity = "critical"
        found.last_report_at = event.at
        if event.id is not None:
            found.event_ids.append(event.id)
    return Detection(list(by_fp.values()))


#: The reports detector's one registration (listed in `registry.DETECTORS`).
REPORTS_DETECTOR = DetectorSpec(
    REPORT_PREFIX,
    detect_reports,
    "people",
    hold=None,
    family=True,
    words="a person's report",
    detail=lambda rest: readable(rest.partition(":")[0]),
    kind="reported",
    kind_words="reported by a person",
    rank=7,
    description="every incident people report on GitHub or Discord",
)
