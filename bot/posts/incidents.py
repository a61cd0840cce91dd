"""What incident posts say: the alert (head) card, its edits, thread updates and the resolution.
`IncidentPosts` is the incident engine's `IncidentWords`: the engine decides what is said and
when, this module words it as outbox payloads. Numbers and times come from the incident record;
every text is clipped to Discord's limits and times are neutral stamps (`bot.render.stamps`)
that the edge renders for its reader (Discord: each reader's own local time)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from bot.core.limits import (
    DESCRIPTION_LIMIT,
    FIELD_NAME_LIMIT,
    FIELD_VALUE_LIMIT,
    POST_TEXT_LIMIT,
    THREAD_NAME_LIMIT,
    TITLE_LIMIT,
)
from bot.core.mentions import body, inert, link_spans, plain, unlinked
from bot.core.timeutil import humanize_duration, resolve_zone
from bot.incidents.detectors import ALERT_PREFIX, CRASH, condition_words, incident_kind_words
from bot.incidents.writeup import Outage, Prose, Writeup, outages_of
from bot.models import Event, Incident, IncidentSignal, ReportedCause
from bot.narrative.words import credit, severity_words
from bot.outbox.payload import ButtonPayload, make_payload
from bot.posts.writeup import writeup_payload
from bot.render.cards import Card, CardField, Color, clip
from bot.render.stamps import stamp

SIGNALS_SHOWN = 12
_COLORS: dict[str, Color] = {"critical": "bad", "warning": "warning", "info": "stale"}
_ICONS = {"critical": "🔴", "warning": "🟠", "info": "🔵"}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def duration(incident: Incident, now: datetime) -> str:
    end = incident.resolved_at or now
    return humanize_duration(end - incident.started_at)


# --- text that must not be cut inside a link -----------------------------------------------------


def clip_text(text: str, limit: int) -> str:
    """`clip`, but never inside a Markdown link or a URL: a cut that would fall in one moves to
    just before it."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = limit - 1
    spans = list(link_spans(text))
    while inside := [start for start, end in spans if start < cut < end]:
        cut = min(inside)  # before the link (and before any link around that one)
    head = text[:cut]
    space = head.rfind(" ")
    if cut == limit - 1 and space > limit * 0.6:
        head = head[:space]
    return head.rstrip() + "…"


def lines_within(lines: list[str], limit: int, more: str = "… and {n} more") -> str:
    """Whole lines, as many as fit in `limit` characters, and a note of how many were left
    out: a list is never cut in the middle of a line (or of a link)."""
    kept: list[str] = []
    size = 0
    for index, line in enumerate(lines):
        rest = len(lines) - index - 1
        note = len(more.format(n=len(lines))) + 1 if rest else 0
        if size + len(line) + (1 if kept else 0) + note > limit:
            break
        kept.append(line)
        size += len(line) + (1 if len(kept) > 1 else 0)
    left = len(lines) - len(kept)
    if left:
        kept.append(more.format(n=left))
    return "\n".join(kept)


# --- what the incident says about itself ----------------------------------------------------------


def downtime(incident: Incident) -> str | None:
    """The one downtime figure of a resolved incident, with its meaning: for a crash the
    trainer came back from, 'down 2 h 32 min: last step before the crash → first step after the
    restore'; otherwise how long the condition lasted, 'lasted 12 min: first seen → cleared'."""
    if incident.resolved_at is None:
        return None
    outages = outages_of(incident)
    if len(outages) > 1:  # reopened: its outages summed, the healthy stretches between left out
        took = humanize_duration(sum((_lasted(o) for o in outages), timedelta()))
        return f"down {took} over {len(outages)} outages"
    crash = incident.details.members.get(CRASH)
    down = crash.restart.down_for if crash is not None and crash.restart is not None else None
    if down is not None:
        took = humanize_duration(down)
        return f"down {took}: last step before the crash → first step after the restore"
    took = humanize_duration(incident.resolved_at - incident.started_at)
    return f"lasted {took}: first seen → cleared"


def _lasted(outage: Outage) -> timedelta:
    if outage.down is not None:
        return outage.down
    return (outage.until or outage.since) - outage.since


def local_time(at: datetime, zone: str) -> str:
    """'14:02 EDT': a clock time in the run's zone."""
    local = at.astimezone(resolve_zone(zone))
    return f"{local:%H:%M} {local.tzname() or zone}"


def reopened_line(incident: Incident, zone: str) -> str:
    """'W&B run hero-b crashed at step 3,000 again, 6 min after it resolved at 14:02 EDT'."""
    before = incident.details.outages[-1]
    gap = humanize_duration(before.reopened_at - before.until)
    return (
        f"{unlinked(incident.title)} again, {gap} after it resolved at "
        f"{local_time(before.until, zone)}"
    )


def reopened_content(incident: Incident, run_name: str, zone: str, thread_id: int | None) -> str:
    """The channel's short alert that an incident reopened, linking its thread (which starts
    with the alert above it)."""
    text = f"🔁 **Incident #{incident.id} reopened** — {run_name}: {reopened_line(incident, zone)}."
    if thread_id is not None:
        text += f" Thread: <#{thread_id}>"
    return clip_text(text, POST_TEXT_LIMIT)


def reopened_update_text(incident: Incident, zone: str) -> str:
    """The thread's post when the incident reopens."""
    count = incident.details.reopens
    times = "once" if count == 1 else f"{count} times"
    return clip_text(
        f"🔁 Reopened {stamp(incident.outage_since, 'time')}: {reopened_line(incident, zone)} "
        f"(reopened {times}; outage {count + 1} of this incident).",
        POST_TEXT_LIMIT,
    )


def cause_line(cause: ReportedCause, limit: int = 700) -> str:
    """'**Reported cause** (dana, [Discord #hero-run](…) at 12:04): Hero is down: …'"""
    where = f"[{cause.source}]({cause.url})" if cause.url else cause.source
    who = f"{inert(plain(cause.author))}, {where}" if cause.author else where
    head = f"**Reported cause** ({who} at {stamp(cause.at, 'time')}): "
    return head + body(plain(clip_text(cause.text, max(40, limit - len(head)))))


def status_line(incident: Incident) -> str:
    details = incident.details
    acked = f"acknowledged by {unlinked(incident.acked_by)}" if incident.acked_by else ""
    again = " again" if details.reopens else ""
    if incident.status == "resolved":
        assert incident.resolved_at is not None
        done = f"✅ Resolved{again} {stamp(incident.resolved_at)} · {downtime(incident)}"
        return f"{done} · {acked}" if acked else done
    since = incident.outage_since
    parts = [("🚨 Firing" if incident.status == "firing" else "⏳ Pending") + again]
    parts[0] += f" since {stamp(since)} ({stamp(since, 'relative')})"
    if details.reopens:
        times = "once" if details.reopens == 1 else f"{details.reopens} times"
        before = details.outages[-1]
        parts.append(f"🔁 reopened {times}: resolved {stamp(before.until)} before")
    if details.clear_since:
        parts.append("condition cleared, confirming")
    if details.flaps:
        parts.append(f"flapped {details.flaps}×")
    if acked:
        when = f" {stamp(incident.acked_at, 'relative')}" if incident.acked_at else ""
        parts.append(f"{acked}{when}")
    return " · ".join(parts)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 21st…"""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def recurrence_line(incident: Incident) -> str | None:
    """'Seen before on this run: the 3rd time (crash); the previous one, incident #12,
    resolved <time>.'"""
    again = incident.details.recurrence
    if again is None:
        return None
    words = incident_kind_words(incident.kind)
    return (
        f"Seen before on this run: the {ordinal(again.count)} time ({words}); the previous "
        f"one, incident #{again.previous_id}, resolved {stamp(again.previous_resolved_at)}."
    )


def _signal_line(signal: IncidentSignal) -> str:
    label = f"[{signal.source}]({signal.url})" if signal.url else signal.source
    return f"• {stamp(signal.at, 'time')} {label}: {body(plain(clip_text(signal.text, 160)))}"


def shown_signals(incident: Incident) -> list[IncidentSignal]:
    """Each message once: the reported cause is shown on its own, and a message seen twice (an
    edit, a GitHub item and its mirror) is listed once."""
    cause = incident.details.reported_cause
    seen: set[tuple[str, str]] = set()
    shown = []
    for signal in incident.details.signals:
        if cause is not None and cause.event_id is not None and signal.event_id == cause.event_id:
            continue
        key = (signal.url or signal.source, " ".join(signal.text.split()).lower())
        if key in seen:
            continue
        seen.add(key)
        shown.append(signal)
    return shown


def _bare(text: str) -> str:
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c.isspace()).split())


def cause_told(incident: Incident) -> bool:
    """Whether the incident's cause is said elsewhere in its alert: a crash's cause restates its
    title (the run, the last step) and the status line (when), and a report's cause is the
    reported cause, quoted on its own line."""
    cause = _bare(incident.cause or "")
    if not cause or incident.fingerprint == CRASH:
        return True
    reported = incident.details.reported_cause
    said = _bare(reported.text) if reported is not None else ""
    return bool(said) and (cause in said or said in cause)


def head_card(incident: Incident, run_name: str, links: dict[str, str]) -> Card:
    """The alert message, edited in place as the incident evolves. Each fact once: the headline
    is the message's text (`alert_content`), so the card's title is the run alone."""
    severity = incident.severity if incident.severity in _COLORS else "warning"
    icon = _ICONS[severity]
    done = incident.status == "resolved"
    title = f"{'✅' if done else icon} {run_name}"
    lines = [status_line(incident)]
    again = recurrence_line(incident)
    if again is not None:
        lines.append(again)
    if incident.cause and not cause_told(incident):
        lines += ["", body(clip_text(incident.cause, 1500))]
    cause = incident.details.reported_cause
    if cause is not None:
        lines += ["", cause_line(cause)]
    if done and incident.resolution:
        lines += ["", f"**Resolution:** {body(clip_text(incident.resolution, 800))}"]
    card = Card(
        title=clip(title, TITLE_LIMIT),
        description=clip_text("\n".join(lines), DESCRIPTION_LIMIT),
        color="ok" if done else _COLORS[severity],
        url=next(iter(links.values()), None),
    )
    signals = shown_signals(incident)
    if signals:
        shown = [_signal_line(s) for s in signals[-SIGNALS_SHOWN:]]
        earlier = len(signals) - len(shown)
        value = lines_within(shown, FIELD_VALUE_LIMIT - (30 if earlier else 0))
        if earlier:
            value += f"\n… and {earlier} earlier"
        card.fields.append(CardField("Signals", value))
    if links:
        items = [f"[{label}]({url})" for label, url in list(links.items())[:6]]
        card.fields.append(CardField("Links", lines_within(items, FIELD_VALUE_LIMIT)))
    silenced = incident.details.silenced_by
    footer = (
        f"Incident #{incident.id} · {condition_words(incident.fingerprint)} · "
        f"{severity_words(incident.severity)}"
    )
    if silenced:
        footer += f" · silenced (#{silenced})"
    card.footer = footer
    return card


def alert_content(incident: Incident, run_name: str) -> str:
    """The alert message's text (what previews and notifications show): edited with the card,
    so a resolved incident never reads 🔴 anywhere."""
    again = " again" if incident.details.reopens else ""
    if incident.status == "resolved":
        text = (
            f"✅ **Resolved{again}** · Incident #{incident.id} — {run_name}: "
            f"{unlinked(incident.title)}"
        )
    else:
        icon = "🔁" if incident.details.reopens else _ICONS.get(incident.severity, "🟠")
        reopened = " reopened" if incident.details.reopens else ""
        text = (
            f"{icon} **Incident #{incident.id}{reopened}** — {run_name}: {unlinked(incident.title)}"
        )
    return clip(text, POST_TEXT_LIMIT)


def thread_name(incident: Incident) -> str:
    name = plain(f"Incident #{incident.id}: {incident.title}").replace("](", "] (")
    return clip(name, THREAD_NAME_LIMIT)


def event_update(event: Event) -> str:
    """A thread post for a new related event: a GitHub comment, a Discord report, a W&B state."""
    who = f"**{inert(plain(credit(event.author, event.source)))}**"
    ref = event.ref or ""
    if ref and event.url:
        ref = f"[{ref}]({event.url})"
    text = event.summary or event.title or event.body
    line = f"{stamp(event.at, 'time')} {who} {ref} — {body(clip_text(text or '', 600))}"
    return clip_text(line.replace("  ", " "), POST_TEXT_LIMIT)


def cause_update(cause: ReportedCause) -> str:
    """The thread post when a person's report becomes the incident's reported cause."""
    return clip_text(cause_line(cause, POST_TEXT_LIMIT), POST_TEXT_LIMIT)


def member_update(title: str, at: datetime) -> str:
    return clip_text(f"{stamp(at, 'time')} also: {unlinked(title)}", POST_TEXT_LIMIT)


ALERTS_SHOWN = 5  # alerts a summary names; the rest are counted


def alert_summary_text(incident: Incident) -> str | None:
    """The thread's one post about the incident's Alertmanager alerts, edited as they change: how
    many, how many still fire, the first few, and the alerts Alertmanager left out of its
    notification (`truncatedAlerts`). None while the head alone says it (a single alert of its
    own incident)."""
    alerts = sorted(
        ((fp, m) for fp, m in incident.details.members.items() if fp.startswith(ALERT_PREFIX)),
        key=lambda kv: (kv[1].until is not None, kv[1].since, kv[0]),
    )
    if not alerts:
        return None
    truncated = max(_count(m.facts.get("truncated")) for _, m in alerts)
    if len(alerts) == 1 and not truncated and alerts[0][0] == incident.fingerprint:
        return None
    firing = sum(1 for _, m in alerts if m.until is None)
    resolved = len(alerts) - firing
    head = f"**Alertmanager alerts: {len(alerts)}** ({firing} firing, {resolved} resolved)"
    if truncated:
        head += f", and {truncated} more not sent by Alertmanager"
    lines = []
    for _, member in alerts[:ALERTS_SHOWN]:
        title = unlinked(clip_text(member.title, 160))
        if member.until is None:
            lines.append(f"• 🔥 {title} — firing since {stamp(member.since, 'time')}")
        else:
            lines.append(f"• ✅ {title} — resolved {stamp(member.until, 'time')}")
    if len(alerts) > ALERTS_SHOWN:
        lines.append(f"… and {len(alerts) - ALERTS_SHOWN} more")
    changed = max(max(m.since, m.until or m.since) for _, m in alerts)
    lines.append(f"Last change {stamp(changed, 'time')}.")
    return clip_text("\n".join([head, *lines]), POST_TEXT_LIMIT)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def reminder_content(incident: Incident, now: datetime) -> str:
    return clip(
        f"⏰ Still firing after {duration(incident, now)}: {unlinked(incident.title)} "
        "(not acknowledged).",
        POST_TEXT_LIMIT,
    )


def resolved_content(incident: Incident, run_name: str) -> str:
    """The one resolution message in the channel: what, how long it was down (with what that
    figure measures), what brought it back."""
    assert incident.resolved_at is not None
    again = " again" if incident.details.reopens else ""
    lines = [
        f"✅ **Resolved{again}** incident #{incident.id} — {run_name}: {unlinked(incident.title)}"
    ]
    said = (downtime(incident) or "").capitalize() + "."
    if incident.resolution:
        said += " " + body(clip_text(incident.resolution, 800))
    lines.append(said)
    if incident.acked_by:
        lines.append(f"Acknowledged by {unlinked(incident.acked_by)}.")
    return clip_text("\n".join(lines), POST_TEXT_LIMIT)


def closing_line(incident: Incident) -> str:
    """The thread's last post before it is archived."""
    assert incident.resolved_at is not None
    again = " again" if incident.details.reopens else ""
    return f"✅ Resolved{again} {stamp(incident.resolved_at, 'time')}; closing this thread."


def reopened_history(incident: Incident) -> str | None:
    """'🔁 reopened 2×: resolved <t> → back <t>; resolved <t> → back <t>' (None: never)."""
    outages = incident.details.outages
    if not outages:
        return None
    spans = "; ".join(
        f"resolved {stamp(o.until)} → back {stamp(o.reopened_at, 'time')}" for o in outages
    )
    return f"🔁 reopened {len(outages)}×: {spans}"


ACK_CUSTOM_ID = "runscribe:incident-ack:{id}"


def ack_button(incident_id: int) -> ButtonPayload:
    """The Acknowledge button a poster may attach to the alert (custom_id carries the id, so the
    bot's persistent handler works across restarts)."""
    return {"custom_id": ACK_CUSTOM_ID.format(id=incident_id), "label": "Acknowledge"}


def listing_card(views: list[Any], run_name: str, *, open_only: bool, now: datetime) -> Card:
    """`/incidents`: one field per incident: when (Discord timestamps), how long, the cause,
    the reported cause, the resolution, who acknowledged it, and labelled links."""
    scope = "Open incidents" if open_only else "Incidents"
    card = Card(title=clip(f"{scope} — {run_name}", TITLE_LIMIT), color="info")
    if not views:
        card.description = "None." if open_only else "No incident recorded."
        return card
    for view in views[:10]:
        incident: Incident = view.incident
        icon = "✅" if not view.open else _ICONS.get(incident.severity, "🟠")
        if view.ended_at is not None:
            when = f"{stamp(view.started_at)} → {stamp(view.ended_at)} · {downtime(incident)}"
        else:
            when = (
                f"since {stamp(view.started_at)} ({stamp(view.started_at, 'relative')}), "
                f"ongoing for {humanize_duration(now - view.started_at)}"
            )
        lines = [when, body(clip_text(view.cause, 300))]
        reopened = reopened_history(incident)
        if reopened:
            lines.append(reopened)
        cause = incident.details.reported_cause
        if cause is not None:
            lines.append(cause_line(cause, 320))
        if view.resolution:
            lines.append(f"→ {body(clip_text(view.resolution, 250))}")
        extra = []
        if incident.acked_by:
            when_acked = f" {stamp(incident.acked_at, 'relative')}" if incident.acked_at else ""
            extra.append(f"acknowledged by {unlinked(incident.acked_by)}{when_acked}")
        if view.silenced:
            extra.append("silenced")
        extra += [f"[{label}]({url})" for label, url in view.links[:3]]
        if extra:
            lines.append(" · ".join(extra))
        name = f"{icon} #{incident.id} {unlinked(incident.title)}"
        value = lines_within(lines, FIELD_VALUE_LIMIT, "…")
        card.fields.append(CardField(clip(name, FIELD_NAME_LIMIT), value))
    if len(views) > 10:
        card.footer = f"showing 10 of {len(views)}"
    return card


class IncidentPosts:
    """The incident engine's wording (`bot.incidents.engine.IncidentWords`): each post as an
    outbox payload, the head card with the hash that tells the engine whether it changed."""

    def head_hash(self, incident: Incident, run_name: str, links: dict[str, str]) -> str:
        return digest(asdict(head_card(incident, run_name, links)))

    def alert(
        self, incident: Incident, run_name: str, links: dict[str, str], *, ping_role: int | None
    ) -> tuple[dict[str, Any], str]:
        assert incident.id is not None
        card = head_card(incident, run_name, links)
        body = make_payload(
            alert_content(incident, run_name),
            card,
            thread_name=thread_name(incident),
            # the Acknowledge button, for a poster that renders buttons; none once resolved
            buttons=[] if incident.status == "resolved" else [ack_button(incident.id)],
            ping_role=ping_role,
        )
        return body, digest(asdict(card))

    def edit(
        self, incident: Incident, run_name: str, links: dict[str, str], *, edit_of: int
    ) -> dict[str, Any]:
        assert incident.id is not None
        buttons: list[ButtonPayload] | None = None  # kept as they are
        if incident.status == "resolved":
            buttons = []  # resolved: the Acknowledge button goes
        elif incident.details.reopens and not incident.acked_by:
            buttons = [ack_button(incident.id)]  # reopened: it comes back
        return make_payload(
            alert_content(incident, run_name),
            head_card(incident, run_name, links),
            edit_of=edit_of,
            buttons=buttons,
        )

    def update(self, text: str, *, archive_thread: bool) -> dict[str, Any]:
        return make_payload(text, archive_thread=archive_thread)

    def closing(self, incident: Incident) -> dict[str, Any]:
        return make_payload(closing_line(incident), thread_only=True, archive_thread=True)

    def resolved(self, incident: Incident, run_name: str) -> dict[str, Any]:
        return make_payload(resolved_content(incident, run_name))

    def reminder(self, incident: Incident, now: datetime) -> dict[str, Any]:
        return make_payload(reminder_content(incident, now))

    def reopened(
        self,
        incident: Incident,
        run_name: str,
        zone: str,
        *,
        thread_id: int | None,
        ping_role: int | None,
    ) -> dict[str, Any]:
        return make_payload(
            reopened_content(incident, run_name, zone, thread_id), ping_role=ping_role
        )

    def reopened_update(self, incident: Incident, zone: str) -> dict[str, Any]:
        return make_payload(reopened_update_text(incident, zone))

    def member_update(self, title: str, at: datetime) -> str:
        return member_update(title, at)

    def alert_summary(
        self, incident: Incident, *, edit_of: int | None, archive_thread: bool
    ) -> dict[str, Any] | None:
        text = alert_summary_text(incident)
        if text is None:
            return None
        if edit_of is not None:
            return make_payload(text, edit_of=edit_of)
        return make_payload(text, archive_thread=archive_thread)

    def cause_update(self, cause: ReportedCause) -> str:
        return cause_update(cause)

    def event_update(self, event: Event) -> str:
        return event_update(event)

    def writeup(
        self,
        writeup: Writeup,
        *,
        edit_of: int | None,
        archive_thread: bool,
        prose: Prose | None = None,
    ) -> dict[str, Any]:
        return writeup_payload(writeup, edit_of=edit_of, archive_thread=archive_thread, prose=prose)
