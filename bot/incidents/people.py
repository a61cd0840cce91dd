"""What people said about an incident: the reported cause (the sentences of the first incident
report a person wrote in a watched channel or a tracked thread while it was open; a chat burst's
report is its member message, never the whole conversation) and whether someone reported
acting on it (a requeue, a restart, a drain…), which decides whether a recovery counts as "on its
own". Pure: the engine reads the posts and keeps the answers in the incident's details."""

from __future__ import annotations

import re
from datetime import timedelta

from bot.enrich.reports import fault_excerpt, substance
from bot.incidents.detectors import where
from bot.models import REPORT_SOURCES, Event, Incident, ReportedCause

#: People's posts this long before an incident started, or after it resolved, can still report
#: acting on it ("draining r12n4" just before the crash; "requeued it" written once it is back).
ACTING_LEAD = timedelta(minutes=30)
ACTING_LAG = timedelta(minutes=30)
CAUSE_LIMIT = 300

# Someone did something to the job or its nodes: the words operators use for it.
_ACTING = re.compile(
    r"\b(re-?queu\w*|restart\w*|re-?launch\w*|re-?submit\w*|re-?schedul\w*|drain\w*|cordon\w*|"
    r"reboot\w*|swap(?:s|ped|ping)?\b|failed it over|fail(?:ing)? it over|"
    r"kill(?:ed|ing)? (?:it|the job|the run)|resuming|rolled back|rolling back|"
    r"moved (?:it|the job|the run) to|moving (?:it|the job|the run) to)",
    re.IGNORECASE,
)
# …unless the post says nobody did: the machine recovered by itself.
_NOT_ACTING = re.compile(
    r"\b(on its own|by itself|automatic(?:ally)?|auto-?(?:requeu\w*|restart\w*|resum\w*)|"
    r"the scheduler|nobody|no one|no-one|didn't|did not|without (?:any|our|a) )",
    re.IGNORECASE,
)


def is_person(event: Event) -> bool:
    """A post by a person in a source people write in (not a bot's, not W&B's)."""
    return event.source in REPORT_SOURCES and not (event.author or "").endswith("[bot]")


def reports_acting(text: str) -> bool:
    """Whether a person's post says they (or a colleague) acted on the run: requeued,
    restarted, relaunched, drained… A post that says it recovered on its own does not count."""
    return bool(_ACTING.search(text)) and not _NOT_ACTING.search(text)


def cause_from(event: Event) -> ReportedCause:
    """The report itself: the sentences of the person's post that report the fault (greetings
    and chit-chat around them left out), linked to that post, with its author."""
    raw = event.body or event.summary or event.title or ""
    text = fault_excerpt(raw, CAUSE_LIMIT) or substance(raw, CAUSE_LIMIT)
    return ReportedCause(
        text=text,
        author=event.author,
        source=where(event),
        at=event.at,
        url=event.url,
        event_id=event.id,
    )


def attach_cause(incident: Incident, event: Event) -> bool:
    """Record `event` as the incident's reported cause if it is the first incident report by a
    person written while the incident was open. Returns whether it was recorded."""
    details = incident.details
    if details.reported_cause is not None or not event.incident or not is_person(event):
        return False
    if incident.resolved_at is not None and event.at > incident.resolved_at:
        return False  # written after it was over: a follow-up, not the cause
    details.reported_cause = cause_from(event)
    return True


def note_acting(incident: Incident, posts: list[Event]) -> None:
    """Record the first person among `posts` who reported acting on the incident."""
    details = incident.details
    if details.acted_by is not None:
        return
    for post in posts:
        text = " ".join(p for p in (post.title, post.body) if p) or post.summary or ""
        if is_person(post) and reports_acting(text):
            details.acted_by = post.author or where(post)
            return
