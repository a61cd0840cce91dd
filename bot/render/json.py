"""The fixed JSON shapes (README: Commands) of `status --json` and `timeline --json`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.analysis.progress import Progress
from bot.incidents.service import public_kind
from bot.models import Incident, IncidentAction, ReportedCause, Restart
from bot.narrative.entries import TimelineEntry
from bot.narrative.facts import DigestFacts
from bot.render.cards import restart_text
from bot.services.narrative import Narrative
from bot.services.status import SourceStatus, StatusReport


def iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def reported_by_json(cause: ReportedCause | None) -> dict[str, Any] | None:
    """Who wrote the reported cause, where and when (null without one)."""
    if cause is None:
        return None
    return {"author": cause.author, "source": cause.source, "at": iso(cause.at), "url": cause.url}


def action_json(action: IncidentAction | None) -> dict[str, Any] | None:
    """Who acted on an incident, when, what they said they did, and where (null if nobody)."""
    if action is None:
        return None
    return {
        "who": action.who,
        "at": iso(action.at),
        "text": action.text,
        "source": action.source,
        "url": action.url,
    }


def status_json(report: StatusReport, narrative: Narrative) -> dict[str, Any]:
    p = report.progress
    restart = report.last_restart
    cause = report.restart_cause
    return {
        "run": report.run.name,
        "slug": report.slug,
        "state": report.state,
        "health": report.health,
        "monitor_stale": report.monitor_stale,
        "progress": _progress_json(p),
        "launched_at": iso(report.launched_at),
        "projected_end": iso(p.projected_end),
        # how far either side of it the end plausibly lies, in days (None: unknown)
        "projected_end_margin_days": (
            round(report.projected_margin.total_seconds() / 86400, 1)
            if report.projected_margin is not None and p.projected_end is not None
            else None
        ),
        "training_pace_per_hour": p.pace,
        "last_restart_at": iso(restart.at if restart else None),
        "last_restart": _restart_json(restart, cause) if restart else None,
        "heartbeat_at": iso(report.heartbeat_at),
        "last_point_at": iso(p.last_point_at),
        "loss": p.loss,
        "open_incidents": [_open_incident_json(i) for i in report.open_incidents],
        "incident_stats": {
            "total": report.incidents_total,
            "self_healed": report.incidents_self_healed,
            "open": len(report.open_incidents),
        },
        "freshness": {source: iso(at) for source, at in report.freshness.items()},
        "sources": {
            source: _source_json(status) if status is not None else None
            for source, status in report.sources.items()
        },
        "narrative": narrative.text,
        "narrative_at": iso(narrative.at),
        "narrative_by": narrative.by,
        "links": report.links,
        "forecasts": [view.as_json() for view in report.forecasts],
        "goodput": report.goodput.to_json() if report.goodput is not None else None,
        "generated_at": iso(report.now),
    }


def _progress_json(p: Progress) -> dict[str, Any]:
    return {
        "percent": p.percent,
        "step": p.step,
        "total_steps": p.total_steps,
        "tokens": p.tokens,
        "target_tokens": p.target_tokens,
        "steps_per_hour": p.steps_per_hour,
        "tokens_per_hour": p.tokens_per_hour,
        "finished": p.finished,
    }


def _restart_json(restart: Restart, cause: ReportedCause | None) -> dict[str, Any]:
    return {
        "at": iso(restart.at),
        "description": restart_text(restart),
        "kind": restart.kind,
        "from_step": restart.from_step,
        "to_step": restart.to_step,
        "runs": list(restart.runs),
        "down_seconds": (
            restart.down_for.total_seconds() if restart.down_for is not None else None
        ),
        "recomputed_steps": restart.recomputed_steps,
        "checkpoint_step": restart.checkpoint_step,
        "stopped_at": iso(restart.stopped_at),
        "resumed_at": iso(restart.resumed_at),
        "cause": restart.cause,
        # why it restarted in the words of a person or the ops log (text), or null
        "reported_cause": cause.text if cause else None,
        "reported_by": reported_by_json(cause),
    }


def _open_incident_json(i: Incident) -> dict[str, Any]:
    return {
        "id": i.id,
        "kind": public_kind(i),
        "title": i.title,
        "severity": i.severity,
        "status": i.status,
        "started_at": iso(i.started_at),
        # what a person wrote about it while it was open (text), or null
        "reported_cause": i.details.reported_cause.text if i.details.reported_cause else None,
        "reported_by": reported_by_json(i.details.reported_cause),
        # a person's action on it (requeue, drain, restart…), or null
        "action": action_json(i.details.action),
        # reopened: its condition came back within the run's reopen_minutes of a resolution
        "reopens": i.details.reopens,
        "reopened": [
            {"resolved_at": iso(o.until), "reopened_at": iso(o.reopened_at)}
            for o in i.details.outages
        ],
    }


def _source_json(status: SourceStatus) -> dict[str, Any]:
    return {
        "ok": status.ok,
        "error": status.error,
        "failing_since": iso(status.failing_since),
        "last_success_at": iso(status.last_success_at),
        "connected": status.connected,  # chat: the gateway; null when not known
        "last_message_at": iso(status.last_message_at),
    }


def timeline_json(entries: list[TimelineEntry]) -> list[dict[str, Any]]:
    return [entry.as_json() for entry in entries]


def digest_json(facts: DigestFacts) -> dict[str, Any]:
    return {
        "run": facts.run_name,
        "slug": facts.run_slug,
        "start": iso(facts.start),
        "end": iso(facts.end),
        "quiet": facts.quiet,
        "step": facts.step,
        "steps_gained": facts.steps_gained,
        "restarts": len(facts.restarts_in_window),
        "incidents_opened": facts.incidents_opened,
        "incidents_resolved": facts.incidents_resolved,
        "drifts_opened": facts.drifts_opened,
        "drifts_resolved": facts.drifts_resolved,
        "incidents_open": facts.incidents_open,
        "counts": facts.counts_by_tag,
        "entries": [entry.as_json() for entry in facts.entries],
        "text": facts.text,
        "by": facts.by,
    }
