"""An issue read again once its thread has spoken.

A question is the first report: "Is an 'Xid 48' on bry-gpu-088 something to worry about?" or
"Why are there two step_431000 checkpoint directories?" asks, and the rules rightly do not call
a question a live report. When a reply in the same thread within hours is about an incident
("At 02:16 node tn-g0931 went down while step_431000 was being written"), the question was that
incident's first report: the timeline marks it 🚨 with the `incident` tag.

An alert is dismissed: an alerting bot's issue ("[FIRING:1] KilnJobNotRunning") reads as a live
report, and its reply says otherwise ("not an incident: the planned decay-start stop", "false
alarm, the exporter restarted"): the timeline drops the 🚨 and shows the issue's topic.

Either way only the timeline's mark and tag change, never an alert. Only an issue whose own
words hint at a failure is marked (incident signals the rules heard but did not count, the
live-report scorer leaning towards a report, or a title asking about the run now), never one
the rules rule out (a change, a template, a test's or an experiment's thread), so a run log, a
proposal or a spec whose thread later hosts an incident stays what it is.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Final

from bot.enrich.context import ThreadContext
from bot.enrich.incident_posts import dismisses
from bot.enrich.incidents import HISTORY, MONTHS, signals_heard
from bot.enrich.learned import features, load_model
from bot.enrich.markdown import clean_line, parse_post
from bot.enrich.rules import not_the_runs
from bot.models import Event

#: How soon after the issue a reply must speak for the issue to be read again.
HINDSIGHT: Final = timedelta(hours=12)
#: The scorer's leaning that counts as a hint: well below its bar for a report by itself.
HINT: Final = 0.15
#: A title that asks about the run as it is: "Is the run paused?", "Why are there two …?".
_ASKS = re.compile(
    r"^\W*(?:is|are|was|were|should|shouldn't|why|did|does|do|has|have|can|could|what|how"
    r"|anyone|any\s+idea)\b[^\n?]*\?",
    re.IGNORECASE,
)
_A_MONTH = re.compile(rf"\b{MONTHS}\b", re.IGNORECASE)


def asks_about_now(title: str) -> bool:
    """The title is a question about the run as it is, not about a past incident ("What
    happened in the December outage?")."""
    title = clean_line(title)
    return bool(_ASKS.match(title)) and not HISTORY.search(title) and not _A_MONTH.search(title)


def hints_at_incident(issue: Event) -> bool:
    """The issue's words hint at a failure of the run, though the rules did not call it one."""
    doc = parse_post(issue.body or "", issue.source)
    if not_the_runs(doc, issue.title, ThreadContext.of(issue)):
        return False
    title = issue.title or ""
    if asks_about_now(title):
        return True
    if signals_heard(f"{clean_line(title)}\n{doc.prose}" if title else doc.prose):
        return True
    names = features(doc, issue.title, issue.kind, issue.source)
    return load_model().probability(names) >= HINT


def _replies_to(issue: Event, reply: Event) -> bool:
    """A GitHub issue and a comment of its thread, soon after it."""
    return (
        issue.source == "github"
        and issue.kind == "issue"
        and reply.kind == "comment"
        and reply.thread == issue.thread
        and timedelta(0) <= reply.at - issue.at <= HINDSIGHT
    )


def reported_in_hindsight(issue: Event, reply: Event) -> bool:
    """Whether `issue`, not itself about an incident, is the first report of the incident its
    `reply` (about one) tells."""
    return _replies_to(issue, reply) and hints_at_incident(issue)


def dismissed_in_hindsight(issue: Event, reply: Event) -> bool:
    """Whether `reply` dismisses what `issue`, read as an incident, reported: "false alarm",
    "not an incident: the planned stop", "not kiln: arm 4 of the ablation"."""
    return _replies_to(issue, reply) and dismisses(parse_post(reply.body or "", "github").prose)
