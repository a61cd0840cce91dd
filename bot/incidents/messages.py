"""What incident posts say: the alert (head) card, its edits, thread updates and the resolution.
Numbers and times come from the incident record; every text is clipped to Discord's limits and
times are neutral stamps (`bot.render.stamps`) that the edge renders for its reader (Discord:
each reader's own local time)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from bot.mentions import body, inert, plain, unlinked
from bot.models import Event, Incident, IncidentSignal
from bot.outbox.payload import make_payload
from bot.render.cards import (
    DESCRIPTION_LIMIT,
    FIELD_VALUE_LIMIT,
    TITLE_LIMIT,
    Card,
    CardField,
    Color,
    clip,
)
from bot.render.stamps import stamp
from bot.timeutil import humanize_delta

CONTENT_LIMIT = 1900
SIGNALS_SHOWN = 12
_COLORS: dict[str, Color] = {"critical": "bad", "warning": "warning", "info": "stale"}
_ICONS = {"critical": "🔴", "warning": "🟠", "info": "🔵"}


def payload(
    card: Card | None,
    content: str | None = None,
    *,
    thread_name: str | None = None,
    edit_of: int | None = None,
    thread_only: bool = False,
) -> dict[str, Any]:
    """The outbox payload, in the shape `bot.outbox.payload` defines."""
    return make_payload(
        content, card, thread_name=thread_name, edit_of=edit_of, thread_only=thread_only
    )


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def duration(incident: Incident, now: datetime) -> str:
    end = incident.resolved_at or now
    return humanize_delta(end - incident.started_at)


def status_line(incident: Incident) -> str:
    details = incident.details
    if incident.status == "resolved":
        assert incident.resolved_at is not None
        took = duration(incident, incident.resolved_at)
        return f"✅ Resolved {stamp(incident.resolved_at)} after {took}"
    parts = ["🚨 Firing" if incident.status == "firing" else "⏳ Pending"]
    parts[0] += f" since {stamp(incident.started_at)} ({stamp(incident.started_at, 'relative')})"
    if details.clear_since:
        parts.append("condition cleared, confirming")
    if details.flaps:
        parts.append(f"flapped {details.flaps}×")
    if incident.acked_by:
        when = f" {stamp(incident.acked_at, 'relative')}" if incident.acked_at else ""
        parts.append(f"acknowledged by {unlinked(incident.acked_by)}{when}")
    return " · ".join(parts)


def _signal_line(signal: IncidentSignal) -> str:
    text = body(plain(clip(signal.text, 160)))
    label = f"[{signal.source}]({signal.url})" if signal.url else signal.source
    return f"• {stamp(signal.at, 'time')} {label}: {text}"


def head_card(incident: Incident, run_name: str, links: dict[str, str]) -> Card:
    """The alert message, edited in place as the incident evolves."""
    severity = incident.severity if incident.severity in _COLORS else "warning"
    icon = _ICONS[severity]
    done = incident.status == "resolved"
    title = f"{'✅' if done else icon} {run_name}: {unlinked(incident.title)}"
    lines = [status_line(incident), "", body(clip(incident.cause or "", 1500))]
    if done and incident.resolution:
        lines += ["", f"**Resolution:** {body(clip(incident.resolution, 800))}"]
    card = Card(
        title=clip(title, TITLE_LIMIT),
        description=clip("\n".join(lines), DESCRIPTION_LIMIT),
        color="ok" if done else _COLORS[severity],
        url=next(iter(links.values()), None),
    )
    signals = incident.details.signals
    if signals:
        shown = [_signal_line(s) for s in signals[-SIGNALS_SHOWN:]]
        more = len(signals) - len(shown)
        value = "\n".join(shown) + (f"\n… and {more} earlier" if more > 0 else "")
        card.fields.append(CardField("Signals", clip(value, FIELD_VALUE_LIMIT)))
    if links:
        value = " · ".join(f"[{label}]({url})" for label, url in list(links.items())[:6])
        card.fields.append(CardField("Links", clip(value, FIELD_VALUE_LIMIT)))
    silenced = incident.details.silenced_by
    footer = f"incident #{incident.id} · {incident.fingerprint} · severity {incident.severity}"
    if silenced:
        footer += f" · silenced (#{silenced})"
    card.footer = footer
    return card


def alert_content(incident: Incident, run_name: str) -> str:
    return clip(f"{_ICONS.get(incident.severity, '🟠')} **Incident #{incident.id}** — "
                f"{run_name}: {unlinked(incident.title)}", CONTENT_LIMIT)  # fmt: skip


def thread_name(incident: Incident) -> str:
    # A thread name shows no markdown: no escapes, but nothing that reads as a link either.
    name = plain(f"Incident #{incident.id}: {incident.title}").replace("](", "] (")
    return clip(name.replace("<", "").replace(">", ""), 100)


def event_update(event: Event) -> str:
    """A thread post for a new related event: a GitHub comment, a Discord report, a W&B state."""
    who = f"**{inert(plain(event.author or event.source))}**"
    ref = event.ref or ""
    if ref and event.url:
        ref = f"[{ref}]({event.url})"
    text = event.summary or event.title or event.body
    line = f"{stamp(event.at, 'time')} {who} {ref} — {body(clip(text or '', 600))}"
    return clip(line.replace("  ", " "), CONTENT_LIMIT)


def member_update(title: str, at: datetime) -> str:
    return clip(f"{stamp(at, 'time')} also: {unlinked(title)}", CONTENT_LIMIT)


def reminder_content(incident: Incident, now: datetime) -> str:
    return clip(
        f"⏰ Still firing after {duration(incident, now)}: {unlinked(incident.title)} "
        "(not acknowledged).",
        CONTENT_LIMIT,
    )


def resolved_card(incident: Incident, run_name: str) -> Card:
    assert incident.resolved_at is not None
    lines = [
        body(clip(incident.resolution or "The condition cleared.", 1500)),
        "",
        # The incident's own span (from when it was detected); downtime measured from the last
        # training step, when known, is in the resolution text above.
        f"Open from {stamp(incident.started_at)} to {stamp(incident.resolved_at)} "
        f"({duration(incident, incident.resolved_at)}).",
    ]
    if incident.acked_by:
        lines.append(f"Acknowledged by {unlinked(incident.acked_by)}.")
    return Card(
        title=clip(f"✅ Resolved — {run_name}: {unlinked(incident.title)}", TITLE_LIMIT),
        description=clip("\n".join(lines), DESCRIPTION_LIMIT),
        color="ok",
        footer=f"incident #{incident.id} · {incident.fingerprint}",
    )


def resolved_content(incident: Incident) -> str:
    said = body(incident.resolution) if incident.resolution else unlinked(incident.title)
    return clip(f"✅ **Resolved** incident #{incident.id}: {said}", CONTENT_LIMIT)


ACK_CUSTOM_ID = "runscribe:incident-ack:{id}"


def ack_button(incident_id: int) -> dict[str, str]:
    """The Acknowledge button a poster may attach to the alert (custom_id carries the id, so the
    bot's persistent handler works across restarts)."""
    return {"custom_id": ACK_CUSTOM_ID.format(id=incident_id), "label": "Acknowledge"}


def listing_card(views: list[Any], run_name: str, *, open_only: bool, now: datetime) -> Card:
    """`/incidents`: one field per incident with start, end, duration and cause."""
    scope = "Open incidents" if open_only else "Incidents"
    card = Card(title=clip(f"{scope} — {run_name}", TITLE_LIMIT), color="info")
    if not views:
        card.description = "None." if open_only else "No incident recorded."
        return card
    for view in views[:10]:
        incident: Incident = view.incident
        icon = "✅" if not view.open else _ICONS.get(incident.severity, "🟠")
        when = f"{stamp(view.started_at)} → " + (
            f"{stamp(view.ended_at)} ({humanize_delta(view.ended_at - view.started_at)})"
            if view.ended_at
            else f"ongoing ({humanize_delta(now - view.started_at)})"
        )
        lines = [when, body(clip(view.cause, 300))]
        if view.resolution:
            lines.append(f"→ {body(clip(view.resolution, 250))}")
        extra = []
        if incident.acked_by:
            extra.append(f"acked by {unlinked(incident.acked_by)}")
        if view.silenced:
            extra.append("silenced")
        if view.links:
            extra.append(" ".join(f"[link]({u})" for u in view.links[:3]))
        if extra:
            lines.append(" · ".join(extra))
        name = f"{icon} #{incident.id} {unlinked(incident.title)}"
        card.fields.append(CardField(clip(name, 256), clip("\n".join(lines), FIELD_VALUE_LIMIT)))
    if len(views) > 10:
        card.footer = f"showing 10 of {len(views)}"
    return card
