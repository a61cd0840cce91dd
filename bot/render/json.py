"""The JSON shapes DESIGN.md fixes for `status --json` and `timeline --json`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.services.digest import DigestFacts
from bot.services.status import StatusReport
from bot.services.timeline import TimelineEntry


def iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def status_json(report: StatusReport) -> dict[str, Any]:
    p = report.progress
    restart = report.last_restart
    return {
        "run": report.run.name,
        "slug": report.slug,
        "state": report.state,
        "health": report.health,
        "monitor_stale": report.monitor_stale,
        "progress": {
            "percent": p.percent,
            "step": p.step,
            "total_steps": p.total_steps,
            "tokens": p.tokens,
            "target_tokens": p.target_tokens,
            "steps_per_hour": p.steps_per_hour,
            "tokens_per_hour": p.tokens_per_hour,
            "finished": p.finished,
        },
        "launched_at": iso(report.launched_at),
        "projected_end": iso(p.projected_end),
        "last_restart_at": iso(restart.at if restart else None),
        "last_restart": (
            {
                "at": iso(restart.at),
                "description": restart.description,
                "from_step": restart.from_step,
                "to_step": restart.to_step,
            }
            if restart
            else None
        ),
        "heartbeat_at": iso(report.heartbeat_at),
        "last_point_at": iso(p.last_point_at),
        "loss": p.loss,
        "open_incidents": [
            {
                "id": i.id,
                "kind": i.kind,
                "title": i.title,
                "severity": i.severity,
                "status": i.status,
                "started_at": iso(i.started_at),
            }
            for i in report.open_incidents
        ],
        "incident_stats": {
            "total": report.incidents_total,
            "self_healed": report.incidents_self_healed,
            "open": len(report.open_incidents),
        },
        "freshness": {source: iso(at) for source, at in report.freshness.items()},
        "narrative": report.narrative,
        "narrative_at": iso(report.narrative_at),
        "narrative_by": report.narrative_by,
        "links": report.links,
        "forecasts": [view.as_json() for view in report.forecasts],
        "generated_at": iso(report.now),
    }


def timeline_json(entries: list[TimelineEntry]) -> list[dict[str, Any]]:
    return [entry.as_json() for entry in entries]


def digest_json(facts: DigestFacts) -> dict[str, Any]:
    return {
        "run": facts.run.name,
        "slug": facts.run.slug,
        "start": iso(facts.start),
        "end": iso(facts.end),
        "quiet": facts.quiet,
        "step": facts.progress.step,
        "steps_gained": facts.steps_gained,
        "restarts": len(facts.restarts),
        "incidents_opened": len(facts.incidents_opened),
        "incidents_resolved": len(facts.incidents_resolved),
        "drifts_opened": [i.title for i in facts.incidents_opened if i.kind == "drift"],
        "drifts_resolved": [i.title for i in facts.incidents_resolved if i.kind == "drift"],
        "incidents_open": len(facts.incidents_open),
        "counts": facts.counts,
        "entries": [entry.as_json() for entry in facts.entries],
        "text": facts.text,
        "by": facts.by,
    }
