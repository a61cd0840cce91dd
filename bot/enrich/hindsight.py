"""An issue read again once its thread has spoken.

A question is the first report: "Is an 'Xid 48' on bry-gpu-088 something to worry about?" or
"Why are there two step_431000 checkpoint directories?" asks, and the rules rightly do not call
a question a live report. When a reply in the same thread within hours is about an incident
("At 02:16 node tn-g0931 went down while step_431000 was being written"), the question was that
incident's first report: the timeline marks it 🚨 with the `incident` tag.

In chat the same holds within half an hour: "wren's dead?" is the first word of the incident
the next messages of its channel tell.

An alert is dismissed: an alerting bot's issue ("[FIRING:1] KilnJobNotRunning") reads as a live
report, and its reply says otherwise ("not an incident: the planned decay-start stop", "false
alarm, the exporter restarted"): the timeline drops the 🚨 and shows the issue's topic. In chat,
the channel's next message within minutes is the reply ("ignore, that's the planned drain").
A live report's channel follows it up: a message within the hour that names what it named (a
machine, a step) or answers it ("on it", "restarting from 41k") is about its incident. And an
alert is confirmed: a warning the rules leave unmarked ("StepTimeHigh (severity=warning)")
is marked, with its answer, when the channel's next message, another writer's, says it is real
("real, and not the save pause this time: one straggler").

Either way only the timeline's mark and tag change, never an alert. Only an issue whose own
words hint at a failure is marked (incident signals the rules heard but did not count, the
live-report scorer leaning towards a report, or a title asking about the run now), never one
the rules rule out (a change, a template, a test's or an experiment's thread), so a run log, a
proposal or a spec whose thread later hosts an incident stays what it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from typing import Final

from bot.core.months import month_number
from bot.enrich.context import ThreadContext
from bot.enrich.incident_posts import confirms, dismisses, disowns
from bot.enrich.incidents import (
    ALL_FINE,
    HISTORY,
    MONTHS,
    alert_page,
    names_another_workload,
    signals_heard,
)
from bot.enrich.learned import features, load_model
from bot.enrich.markdown import clean_line, parse_post, relayed_words
from bot.enrich.rules import names_the_run, not_the_runs
from bot.models import Event

#: How soon after the issue a reply must speak for the issue to be read again.
HINDSIGHT: Final = timedelta(hours=12)
#: How soon after a chat message the same channel must tell an incident for the message to be
#: its first word ("wren's dead?" … "yes, NCCL timeout on r12, restarting from 81k").
CHAT_HINDSIGHT: Final = timedelta(minutes=30)
#: How soon the next message of a channel must dismiss a marked one to be its reply.
CHAT_DISMISSAL: Final = timedelta(minutes=15)
#: The scorer's leaning that counts as a hint: well below its bar for a report by itself.
HINT: Final = 0.15
#: A title that asks about the run as it is: "Is the run paused?", "Why are there two …?".
_ASKS = re.compile(
    r"^\W*(?:is|are|was|were|should|shouldn't|why|did|does|do|has|have|can|could|what|how"
    r"|anyone|any\s+idea)\b[^\n?]*\?",
    re.IGNORECASE,
)
_A_MONTH = re.compile(rf"\b{MONTHS}\b", re.IGNORECASE)
#: A question about a day or a stretch gone by: "what happened in …", "what was the flat
#: stretch around 20 Feb?", "the flat bit around 02-20".
_OF_THE_PAST = re.compile(
    rf"\bwhat\s+(?:happened|was|were|caused)\b|\b\d{{1,2}}\s*{MONTHS}\b|\b{MONTHS}\s+\d{{1,2}}\b"
    r"|\b(?:around|on|since)\s+\d{1,2}[-/]\d{1,2}\b",
    re.IGNORECASE,
)


#: A day named by its month: "the gap around Sep 12", "on 3 October".
_DAY_NAMED = re.compile(
    rf"\b(?P<m1>{MONTHS})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\b"
    rf"|\b(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s*(?P<m2>{MONTHS})\b",
    re.IGNORECASE,
)
#: How long before its post a named day must be to be one gone by (a report opened after
#: midnight tells of the evening before).
DAYS_GONE: Final = 2
#: A post that says the run is well: "handoff says nothing pending", "main looks fine from here".
_WELL = re.compile(
    r"\bnothing\s+(?:pending|to\s+report|going\s+on)\b"
    r"|\b(?:main|the\s+run|training|everything|it)\s+(?:looks?|seems?)\s+(?:fine|ok|okay|good|healthy"
    r"|normal)\b|\ball\s+(?:quiet|green)\b",
    re.IGNORECASE,
)


def names_a_day_gone(text: str, at: datetime) -> bool:
    """The text names a day at least `DAYS_GONE` before `at` ("what's the gap around Sep 12?"
    asked on the 20th): it asks about the past, whatever its tense."""
    for m in _DAY_NAMED.finditer(text):
        month = month_number(m.group("m1") or m.group("m2"))
        day = int(m.group("d1") or m.group("d2"))
        year = at.year if (month, day) <= (at.month, at.day) else at.year - 1
        try:
            named = date(year, month, day)
        except ValueError:
            continue  # "Feb 30": not a day
        if (at.date() - named).days >= DAYS_GONE:
            return True
    return False


#: A link to the run's instruments: a dashboard, a W&B run or panel, the scheduler's queue.
_PANEL_LINK = re.compile(
    r"https?://(?=\S*(?:grafana|wandb\.ai|/d/|dashboard|prometheus|kibana|datadog|slurm|/queue"
    r"|/job/))[^\s<>)\]]+",
    re.IGNORECASE,
)
#: At most this many words beside such a link make it a pointer ("uhh <link>", "save? <link>").
POINTER_WORDS: Final = 5


def points_at_a_panel(message: Event) -> bool:
    """A chat message that is a link to the run's dashboards with a word or two: it points at
    something the writer saw there."""
    if message.kind != "message" or not _PANEL_LINK.search((message.body or "")[:2000]):
        return False
    said = parse_post(message.body or "", message.source).prose.split()
    return 0 < len(said) <= POINTER_WORDS  # a bare link says nothing: it stays hidden


#: An alarm said before its words, its next bubble telling what: "uh oh", "oh no", "welp".
_ALARM_SAID = re.compile(
    r"^\W*(?:uh+[\s-]*oh+|oh+\s+no+|welp|oh\s+(?:shit|crap|god)|wtf|f+u+c+k+)\W*$", re.IGNORECASE
)
#: How soon the same writer's next bubble must tell the incident for its alarm to be its first.
BUBBLE: Final = timedelta(minutes=3)


def alarm_said(message: Event) -> bool:
    """A chat message that is only an alarm, before the words: "uh oh"."""
    return message.kind == "message" and bool(_ALARM_SAID.match(message.body or ""))


def may_be_first_word(message: Event, shown: bool) -> bool:
    """A chat message the chat pass may mark: one the timeline shows, a pointer at the run's
    panels or a bare alarm ("uh oh") it hides as too short to show by itself."""
    return shown or points_at_a_panel(message) or alarm_said(message)


def asks_about_now(title: str) -> bool:
    """The title is a question about the run as it is, not about a past incident ("What
    happened in the December outage?")."""
    title = clean_line(title)
    return bool(_ASKS.match(title)) and not HISTORY.search(title) and not _A_MONTH.search(title)


def hints_at_incident(post: Event) -> bool:
    """The post's words hint at a failure of the run now, though the rules did not call it one
    (never one about a past incident: "what happened in the november outages?")."""
    doc = parse_post(post.body or "", post.source)
    if post.source == "discord":
        doc = relayed_words(doc)
    title = post.title if post.kind in ("issue", "pull") else None
    head = doc.prose[:300]
    if not_the_runs(doc, title, ThreadContext.of(post)) or HISTORY.search(head):
        return False
    if alert_page(doc.prose) == "noise":
        return False  # a warning between pages is nobody's first word ("GPU temperature 87C")
    if _WELL.search(head) or names_a_day_gone(f"{title or ''}\n{head}", post.at):
        return False  # the run is well, or the post asks about a day gone by
    if post.kind == "message" and (_OF_THE_PAST.search(head) or names_another_workload(head)):
        return False  # in chat, a dated question looks back; an issue dates what it reports
    if title and asks_about_now(title):
        return True
    if points_at_a_panel(post):
        return True
    if signals_heard(f"{clean_line(title)}\n{doc.prose}" if title else doc.prose):
        return True
    if not names_the_run(f"{title or ''}\n{doc.prose}"):
        return False  # the scorer leans towards any question ("anyone grabbing lunch?")
    return load_model().probability(features(doc, title, post.kind, post.source)) >= HINT


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


def dismissed_first(
    issue: Event,
    replies: Sequence[Event],
    marked: Callable[[Event], bool],
    live: Callable[[Event], bool],
) -> bool:
    """Whether the first judgement of `issue` (read as an incident) among its replies soon after
    it dismisses it ("noise, closing"), no reply reports an incident ``live``, and none after
    the dismissal is ``marked`` in words of its own that hint at a failure ("the restart loaded
    the 211k checkpoint"): a reply marked only for its thread ("yep, PR coming") follows the
    thread's title, not the incident."""
    judged = sorted((r for r in replies if _replies_to(issue, r)), key=lambda r: r.at)
    if any(live(r) for r in judged):
        return False
    for n, reply in enumerate(judged):
        if dismissed_in_hindsight(issue, reply):
            return not any(marked(r) and hints_at_incident(r) for r in judged[n + 1 :])
        if marked(reply):
            return False
    return False


def _later_in_channel(message: Event, later: Event, window: timedelta) -> bool:
    """Two chat messages of one channel, `later` after `message` within `window`."""
    return (
        message.kind == "message"
        and later.kind == "message"
        and message.source == later.source
        and message.thread == later.thread
        and timedelta(0) < later.at - message.at <= window
    )


def dismissed_in_chat(message: Event, reply: Event) -> bool:
    """Whether chat `reply`, the next message of `message`'s channel, dismisses what `message`
    (read as an incident) said: "ignore, that's the planned drain", "flaky exporter again"."""
    return _later_in_channel(message, reply, CHAT_DISMISSAL) and dismisses(
        relayed_words(parse_post(reply.body or "", reply.source)).prose
    )


#: A W&B alert as its integrations and relays post it: "W&B Alert: loss is NaN in run …",
#: "🔔 **W&B Alert · godwit-240b-s2 · train/loss > 1.95 for 200 steps**".
_WANDB_ALERT = re.compile(r"^[^\w\n]*(?:w&b|wandb|weights\s*&\s*biases)\s+alert\b", re.I | re.M)


def confirmed_in_chat(message: Event, reply: Event) -> bool:
    """Whether chat `reply`, the next message of `message`'s channel, another writer's, within
    `CHAT_HINDSIGHT`, says the alert `message` relays is real ("real, and not the save pause
    this time: one straggler"): a warning the rules leave unmarked was then an incident's first
    report, and the answer is about that incident."""
    if not _later_in_channel(message, reply, CHAT_HINDSIGHT) or reply.author == message.author:
        return False
    alert = relayed_words(parse_post(message.body or "", message.source)).prose
    answer = relayed_words(parse_post(reply.body or "", reply.source)).prose
    return (alert_page(alert) is not None or _WANDB_ALERT.search(alert) is not None) and confirms(
        answer
    )


#: How long after a live report in chat its channel's messages may follow it up.
FOLLOW_UP: Final = timedelta(minutes=60)
#: What ties a later message to the report: a machine's name ("r12n4", "gpu-077"), a step
#: ("41,220", "88k").
_SALIENT = re.compile(
    r"\b(?:[a-z]+-?\d+[a-z]*\d*[\w-]*|\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?k)\b", re.IGNORECASE
)
#: A responder's first words: "ack", "on it", "restarting from 41k", "draining r12".
_RESPONDS = re.compile(
    r"^\W*(?:ack|on\s+it|looking|restart\w*|relaunch\w*|drain\w*|cordon\w*|resum\w*|back\s+up"
    r"|root\s+cause|fixed|rolled\s+back|swapp\w*|excluded?|confirmed|same|yep|yeah|found\s+it"
    r"|it'?s\s+(?:the|a|an)\b)",
    re.IGNORECASE,
)


def follows_up(report: Event, later: Event) -> bool:
    """Whether chat `later`, in `report`'s channel within `FOLLOW_UP` after a live report, is
    about its incident: it names what the report named (a machine, a step) or answers it as a
    responder does ("on it", "restarting from 41k"), and neither dismisses nor disowns it nor
    calls all well nor names another workload."""
    if not _later_in_channel(report, later, FOLLOW_UP):
        return False
    said = relayed_words(parse_post(later.body or "", later.source)).prose
    if not said or dismisses(said) or disowns(said) or ALL_FINE.search(said):
        return False  # "false alarm", "not main", "main is fine"
    if names_another_workload(said):
        return False  # "the eval box OOMed too"
    if _RESPONDS.match(said):
        return True
    named = {t.lower() for t in _SALIENT.findall(report.body or "")}
    return bool(named & {t.lower() for t in _SALIENT.findall(later.body or "")})


def said_first(message: Event, later: Event) -> bool:
    """Whether chat `message`, not itself about an incident, is the first word of the incident
    `later` (about one) tells in the same channel soon after."""
    if alarm_said(message):  # "uh oh", then its writer's next bubble: "loss nan at 233,412"
        return _later_in_channel(message, later, BUBBLE) and later.author == message.author
    return _later_in_channel(message, later, CHAT_HINDSIGHT) and hints_at_incident(message)
