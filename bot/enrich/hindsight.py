"""An issue read again once its thread has spoken: the question that was the first report.

"Is an 'Xid 48' on bry-gpu-088 something to worry about?" or "Step counter went backwards on
the main run?" asks, and the rules rightly do not call a question a live report. When a reply
in the same thread within hours is about an incident ("yes: the 02:00 restart loaded 158k;
requeued from 159.5k"), the question was that incident's first report, and the timeline marks
it 🚨 with the `incident` tag. Never an alert: the reply that told it raised any there was.

Only an issue whose own words hint at a failure is marked so (incident signals the rules heard
but did not count, or the live-report scorer leaning towards a report), never one the rules
rule out (a change, a template, a test's or an experiment's thread), so a run log, a proposal
or a spec whose thread later hosts an incident stays what it is.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from bot.enrich.context import ThreadContext
from bot.enrich.incidents import signals_heard
from bot.enrich.learned import features, load_model
from bot.enrich.markdown import clean_line, parse_post
from bot.enrich.rules import not_the_runs
from bot.models import Event

#: How soon after the issue a reply must tell the incident for the issue to be its report.
HINDSIGHT: Final = timedelta(hours=12)
#: The scorer's leaning that counts as a hint: well below its bar for a report by itself.
HINT: Final = 0.15


def hints_at_incident(issue: Event) -> bool:
    """The issue's words hint at a failure of the run, though the rules did not call it one."""
    doc = parse_post(issue.body or "", issue.source)
    if not_the_runs(doc, issue.title, ThreadContext.of(issue)):
        return False
    title = issue.title or ""
    if signals_heard(f"{clean_line(title)}\n{doc.prose}" if title else doc.prose):
        return True
    names = features(doc, issue.title, issue.kind, issue.source)
    return load_model().probability(names) >= HINT


def reported_in_hindsight(issue: Event, reply: Event) -> bool:
    """Whether `issue`, not itself about an incident, is the first report of the incident its
    `reply` (about one) tells: a GitHub issue and a comment of its thread soon after it."""
    return (
        issue.source == "github"
        and issue.kind == "issue"
        and reply.kind == "comment"
        and reply.thread == issue.thread
        and timedelta(0) <= reply.at - issue.at <= HINDSIGHT
        and hints_at_incident(issue)
    )
