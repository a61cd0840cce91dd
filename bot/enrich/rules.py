"""Deterministic (no-LLM) enrichment: a one-line summary, a tag, an incident flag and a
newsworthiness flag for one event's text.

This is what users without an API key get, and what the bot falls back to when the LLM is down,
so it has to hold up on real text. The work is split by concern:

* ``bot.enrich.text``      markdown → plain prose, sentences, summaries, mention neutralising;
* ``bot.enrich.incidents`` incident signals judged in their sentence (negations, hypotheticals);
* ``bot.enrich.tags``      weighted phrase scoring into ``bot.models.TAGS``.

``enrich_text`` parses a body once and feeds the same cleaned blocks to all three. Cost is
bounded by ``text.SCAN_LIMIT`` characters per body, whatever its size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from bot.enrich.incidents import find_incident
from bot.enrich.tags import best_tag, score_tags
from bot.enrich.text import (
    Document,
    clean_line,
    clean_text,
    compose_summary,
    is_chitchat,
    parse,
    strip_mentions,
    summarize,
    words,
)

__all__ = [
    "Enrichment",
    "classify_tag",
    "clean_text",
    "detect_incident",
    "enrich_text",
    "is_newsworthy",
    "strip_mentions",
    "summarize",
]

#: Kinds whose text describes a change, not the run's condition: "Fix OOM in loader" is a PR,
#: not an outage. Their tags are still scored (such a PR lands on "infra").
NO_INCIDENT_KINDS: Final = frozenset({"pull", "review"})
#: Kinds that are news by themselves (a new issue, a W&B state change, a restart, a note).
ALWAYS_NEWS_KINDS: Final = frozenset({"issue", "pull", "state", "restart", "note"})
#: Kinds whose title belongs to the event itself (for comments it is the thread's title).
TITLED_KINDS: Final = frozenset({"issue", "pull"})
#: Default tag for run-state events that mention no topic.
_STATE_KINDS: Final = frozenset({"state", "restart"})
_GIF_HOSTS: Final = ("tenor.com", "giphy.com", "gfycat.com")


@dataclass(frozen=True, slots=True)
class Enrichment:
    """What the rules say about one event's text."""

    summary: str  # one line, <= 200 characters, never empty
    tag: str  # one of bot.models.TAGS
    incident: bool
    severity: str | None  # "critical" | "warning" | None when not an incident
    incident_kind: str | None  # node-loss | hardware | oom | crash | hang | restore-failed | ...
    newsworthy: bool  # False for chit-chat ("thanks!", "+1", "lgtm", emoji-only)


def _incident(doc: Document, title: str | None) -> tuple[bool, str | None, str | None]:
    found = find_incident(doc.prose, clean_line(title) if title else "", doc.logs)
    if found is None:
        return False, None, None
    kind, severity = found
    return True, severity, kind


def detect_incident(text: str, title: str | None = None) -> tuple[bool, str | None, str | None]:
    """``(incident, severity, kind)`` for markdown ``text`` (and an issue title).

    Severity is "critical" when training stopped (crash, node loss, hardware, OOM, failed
    restore, storage outage) and "warning" for hangs, degraded running, single-task failures
    and incidents the text says have already recovered. ``(False, None, None)`` otherwise.
    """
    return _incident(parse(text), title)


def _tag(doc: Document, title: str | None, default: str = "other") -> str:
    return best_tag(score_tags(doc.prose, clean_line(title) if title else None), default)


def classify_tag(text: str, title: str | None = None) -> str:
    """One of ``bot.models.TAGS`` for markdown ``text``: "incident" when an incident is
    detected, else the best-scoring topic, else "other"."""
    doc = parse(text)
    if _incident(doc, title)[0]:
        return "incident"
    return _tag(doc, title)


def _newsworthy(doc: Document, body: str, kind: str, tag: str, incident: bool) -> bool:
    if incident or kind in ALWAYS_NEWS_KINDS:
        return True
    prose = doc.prose
    if not prose:
        if doc.had_code or doc.logs:
            return True  # a pasted log or config is worth a line
        lowered = body.lower()
        return "://" in lowered and not any(host in lowered for host in _GIF_HOSTS)
    if is_chitchat(prose):
        return False
    tokens = words(prose)
    # "same here", "oh wow": two words, no number, no topic
    return not (len(tokens) <= 2 and tag == "other" and not any(c.isdigit() for c in prose))


def is_newsworthy(body: str, kind: str = "message") -> bool:
    """False for chit-chat and acks ("thanks!", "+1", "lgtm", "👍", "lol"); True otherwise."""
    doc = parse(body)
    incident = kind not in NO_INCIDENT_KINDS and _incident(doc, None)[0]
    return _newsworthy(doc, body, kind, _tag(doc, None), incident)


def enrich_text(*, title: str | None, body: str, kind: str, source: str) -> Enrichment:
    """Summary, tag, incident flag and newsworthiness of one event, without an LLM.

    ``kind`` is the event kind (issue | pull | comment | review | message | conversation | state
    | restart | note) and ``source`` github | discord | wandb | system. Issues and pulls lean on
    their title; other kinds use it only when the body has nothing to say. Pulls and reviews are
    never incidents (they describe fixes); their incident words count towards "infra".
    """
    doc = parse(body or "")
    own_title = title if kind in TITLED_KINDS else None
    summary = compose_summary(doc, own_title)
    if own_title is None and title and summary == "(no text)":
        summary = compose_summary(doc, title)

    incident, severity, incident_kind = (
        (False, None, None) if kind in NO_INCIDENT_KINDS else _incident(doc, own_title)
    )
    default = "infra" if kind in _STATE_KINDS or source == "wandb" else "other"
    tag = "incident" if incident else _tag(doc, own_title, default)
    return Enrichment(
        summary=summary,
        tag=tag,
        incident=incident,
        severity=severity,
        incident_kind=incident_kind,
        newsworthy=_newsworthy(doc, body or "", kind, tag, incident),
    )
