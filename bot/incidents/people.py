"""What people said about an incident: the reported cause (the sentences of the first incident
report a person wrote in a watched channel or a tracked thread while it was open; a chat burst's
report is its member message, never the whole conversation) and whether someone reported
acting on it (a requeue, a restart, a drain…), which decides whether a recovery counts as "on its
own". An action is credited to the incident it acted on, and to one only (`credit_actions`): one
open when it was written, or one about to start that the post names (the same host, job or run).
Pure: the engine reads the posts and keeps the answers in the incident's details."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.core.timeutil import resolve_zone
from bot.enrich.reports import fault_excerpt, sentences, substance
from bot.enrich.summary import strip_filler, truncate
from bot.incidents.detectors import where
from bot.models import SOURCE_SPECS, Event, Incident, IncidentAction, ReportedCause

#: A post this long before an incident started can report acting on it when it names the same
#: host, job or run ("draining r12n4" just before r12n4's crash); one this long after it resolved
#: when no other incident was open then ("requeued it", written once it is back).
ACTING_LEAD = timedelta(minutes=30)
ACTING_LAG = timedelta(minutes=10)
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
    return event.source in SOURCE_SPECS.reports() and not (event.author or "").endswith("[bot]")


def reports_acting(text: str) -> bool:
    """Whether a person's post says they (or a colleague) acted on the run: requeued,
    restarted, relaunched, drained… A post that says it recovered on its own does not count."""
    return bool(_ACTING.search(text)) and not _NOT_ACTING.search(text)


def cause_from(event: Event) -> ReportedCause:
    """The report itself: the sentences of the person's post that report the fault (greetings
    and chit-chat around them left out), linked to that post, with its author."""
    raw = event.body or event.summary or event.title or ""
    text = fault_excerpt(raw, CAUSE_LIMIT, event.source) or substance(
        raw, CAUSE_LIMIT, event.source
    )
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
    if details.reported_cause is not None or not event.live_report or not is_person(event):
        return False
    if incident.resolved_at is not None and event.at > incident.resolved_at:
        return False  # written after it was over: a follow-up, not the cause
    details.reported_cause = cause_from(event)
    return True


ACTION_LIMIT = 200


def action_sentences(text: str, source: str = "discord") -> str | None:
    """The sentences of a post that say what was done ("drained host 12 and requeued"), or
    None when none does (or the post says it recovered on its own)."""
    if _NOT_ACTING.search(text):
        return None
    said = [strip_filler(s) or s for s in sentences(text, source) if _ACTING.search(s)]
    return truncate(" ".join(said), ACTION_LIMIT) if said else None


def post_text(post: Event) -> str:
    return " ".join(p for p in (post.title, post.body) if p) or post.summary or ""


def record_action(incident: Incident, post: Event) -> None:
    """`post` is the person's report of acting on `incident`: who, when, what they said."""
    text = post_text(post)
    who = post.author or where(post)
    incident.details.acted_by = who
    incident.details.action = IncidentAction(
        who=who,
        at=post.at,
        text=action_sentences(post.body or text, post.source)
        or " ".join(text.split())[:ACTION_LIMIT],
        source=where(post),
        url=post.url,
        event_id=post.id,
    )


def note_acting(incident: Incident, posts: list[Event]) -> None:
    """Record the first person among `posts` who reported acting on the incident: who, when,
    and the sentence saying what they did."""
    if incident.details.acted_by is not None:
        return
    for post in posts:
        if is_person(post) and reports_acting(post_text(post)):
            record_action(incident, post)
            return


# Things a post and an incident can both name: a host ("host 12", "gb-r14-n3", "node-17"), a job,
# a run ("hero-2").
_NAMED = re.compile(
    r"\b(?:host|node|job|run|rank|slice|pod|vm|machine)\s*#?\s*([a-z]*\d[\w.-]*)"
    r"|\b([a-z]+\d+[a-z]+\d+[\w-]*|[a-z][a-z0-9]*(?:-[a-z0-9]+)*-\d+[\w-]*)",
    re.IGNORECASE,
)


def named(text: str) -> set[str]:
    """The hosts, jobs and runs a text names, lower-cased ("host 12" → "12")."""
    return {(m.group(1) or m.group(2)).lower().rstrip(".-") for m in _NAMED.finditer(text)}


def incident_names(incident: Incident) -> set[str]:
    cause = incident.details.reported_cause
    parts = [incident.title, incident.cause or "", cause.text if cause is not None else ""]
    return named(" ".join(parts))


def acting_window(incident: Incident, now: datetime) -> tuple[datetime, datetime]:
    """The posts that may report acting on the incident: from `ACTING_LEAD` before it started
    (a reopened incident: its latest outage) to `ACTING_LAG` after it resolved (or `now`)."""
    end = now if incident.resolved_at is None else min(now, incident.resolved_at + ACTING_LAG)
    return incident.outage_since - ACTING_LEAD, end  # reopened: its latest outage's


def wants_action(incident: Incident, now: datetime) -> bool:
    """Whether the posts around the incident are still to be read for who acted on it."""
    details = incident.details
    if details.acted_by is not None or details.silent or not details.fired:
        return False
    checked = details.acted_checked_until
    return checked is None or checked < acting_window(incident, now)[1]


def _open_at(incident: Incident, at: datetime) -> bool:
    return incident.outage_since <= at and (
        incident.resolved_at is None or at <= incident.resolved_at
    )


def _fit(incident: Incident, post: Event, others: Sequence[Incident]) -> int | None:
    """How well `post` fits `incident` (higher is better), or None when it cannot be about it:
    written while it was open (better when it names the incident's host, job or run); before
    it started or after it resolved only within the window, and then only when it names the
    same thing (before) or when no other incident was open (after)."""
    start, end = acting_window(incident, post.at)
    if not start <= post.at <= end:
        return None
    names = named(post_text(post)) & incident_names(incident)
    if _open_at(incident, post.at):
        return 3 if names else 2
    if post.at < incident.outage_since:
        return 1 if names else None
    if names or not any(_open_at(o, post.at) for o in others if o is not incident):
        return 1
    return None


def credit_actions(
    incidents: Sequence[Incident], waiting: Sequence[Incident], posts: Sequence[Event]
) -> list[Incident]:
    """Credit each person's post that reports acting to the one incident it acted on (see
    `_fit`; on a tie the incident open longest), among the `waiting` incidents no one is yet
    credited for acting on, never a post already credited to another of `incidents`. Returns
    the incidents credited."""
    taken = {i.details.action.event_id for i in incidents if i.details.action is not None}
    taken |= {o.action.event_id for i in incidents for o in i.details.outages if o.action}
    credited: list[Incident] = []
    for post in posts:
        if post.id in taken or not (is_person(post) and reports_acting(post_text(post))):
            continue
        fits = [
            (fit, -i.started_at.timestamp(), n)
            for n, i in enumerate(waiting)
            if i.details.acted_by is None and (fit := _fit(i, post, incidents)) is not None
        ]
        if not fits:
            continue
        incident = waiting[max(fits)[2]]
        record_action(incident, post)
        taken.add(post.id)
        credited.append(incident)
    return credited


# "I drained…", "I've requeued…", "we rolled back…": the person's own words, told of them.
_FIRST_PERSON = (
    (re.compile(r"^(?:i've|i have)\s+", re.IGNORECASE), "{who} has "),
    (re.compile(r"^(?:i'm|i am)\s+", re.IGNORECASE), "{who} is "),
    (re.compile(r"^(?:we've|we have)\s+", re.IGNORECASE), "{who}'s team has "),
    (re.compile(r"^(?:we're|we are)\s+", re.IGNORECASE), "{who}'s team is "),
    (re.compile(r"^i\s+(?:just\s+)?", re.IGNORECASE), "{who} "),
    (re.compile(r"^we\s+(?:just\s+)?", re.IGNORECASE), "{who}'s team "),
)
_PAST_VERB = re.compile(r"^(?:just\s+)?([a-z-]+ed)\b", re.IGNORECASE)


_CLAUSE = re.compile(r"\s*(?:[,;]|\s[-–—])\s+")


def _acting_clauses(text: str) -> str:
    """The clauses of a sentence up to the first one saying what was done ("I drained host 12
    and requeued, resuming from the last checkpoint" → "I drained host 12 and requeued")."""
    clauses = _CLAUSE.split(text)
    first = next((i for i, c in enumerate(clauses) if _ACTING.search(c)), len(clauses) - 1)
    return ", ".join(clauses[: first + 1])


def action_line(action: IncidentAction, tz: str = "UTC") -> str:
    """'dave drained host 12 and requeued at 05:01 EDT': who did what, when, in the run's zone
    `tz`. A sentence that does not start with its doer is quoted: 'dana at 05:01 EDT:
    "Requeueing onto a spare."'"""
    text = _acting_clauses(action.text.strip().rstrip("."))
    when = f"{action.at.astimezone(resolve_zone(tz)):%H:%M %Z}"
    for pattern, lead in _FIRST_PERSON:
        if pattern.match(text):
            return f"{pattern.sub(lead.format(who=action.who), text, count=1)} at {when}"
    verb = _PAST_VERB.match(text)
    if verb and _ACTING.match(verb.group(1)):
        return f"{action.who} {text[verb.start(1) :]} at {when}"
    return f'{action.who} at {when}: "{text}"'


def credit_resolution(incident: Incident, tz: str = "UTC") -> bool:
    """Once resolved, the resolution says who acted and what they did, before what brought
    training back ("dave drained host 12 and requeued at 09:01 UTC. Training resumed from step
    61,000 …"). Said once; returns whether it changed."""
    details = incident.details
    action = details.action
    if incident.status != "resolved" or action is None or details.credited:
        return False
    line = action_line(action, tz)
    base = (incident.resolution or "").strip()
    incident.resolution = f"{line}. {base}" if base else f"{line}."
    details.credited = True
    return True
