"""The one place internal identifiers become the words people read.

Sources, run states and severities are identifiers inside Runscribe (`wandb`, `crashed`,
`critical`); cards, terminal text, narratives and digests name them through these functions, so
no identifier reaches a reader and a new one has one place to be worded: a source's label is its
registration's (`bot.models.SOURCE_SPECS`), a detector's condition and incident kind its own
(`bot.incidents.detectors.condition_words`, `incident_kind_words`). Unknown identifiers fall back
to a readable form of themselves, never to "Someone"."""

from __future__ import annotations

from bot.core.numbers import fmt_int
from bot.models import SOURCE_SPECS

#: How a run's state reads in a title ("Hero — running").
STATE_WORDS: dict[str, str] = {
    "running": "running",
    "pending": "waiting to start",
    "preempting": "being preempted",
    "preempted": "preempted",
    "crashed": "crashed",
    "failed": "failed",
    "killed": "stopped by hand",
    "stalled": "stalled (no new step)",
    "finished": "finished",
    "unknown": "state unknown",
}

SEVERITY_WORDS: dict[str, str] = {
    "critical": "critical",
    "warning": "needs a look",
    "info": "for information",
}


def _readable(identifier: str) -> str:
    return identifier.replace("_", " ").replace("-", " ").strip() or "unknown"


def source_name(source: str) -> str:
    """`wandb` → "W&B", `github` → "GitHub"."""
    return SOURCE_SPECS.label(source) or _readable(source)


def credit(author: str | None, source: str) -> str:
    """Who to credit for an entry: the person's name, else the source that produced it
    ("W&B" for the monitor's own events). Never "Someone"."""
    name = (author or "").strip()
    return name or source_name(source)


def state_words(state: str) -> str:
    return STATE_WORDS.get(state, _readable(state))


def severity_words(severity: str) -> str:
    return SEVERITY_WORDS.get(severity, _readable(severity))


_SMALL = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def count_words(n: int, noun: str, plural: str | None = None) -> str:
    """ "one post", "six people", "14 posts": small counts as words, as a reader says them."""
    said = _SMALL[n] if 0 <= n < len(_SMALL) else fmt_int(n)
    return f"{said} {noun if n == 1 else plural or noun + 's'}"


def names_list(names: list[str]) -> str:
    """ "Ada", "Ada and Bo", "Ada, Bo and Cy"."""
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
