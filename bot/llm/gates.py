"""Checks on model text beyond its numbers: is it an answer to the task at all?

A reply can be perfectly grounded and still be no narrative: a fake or a confused model that
echoes the request ("Fake reply to: Write the status narrative…"), a reply about nothing in
particular ("Training is running."), a wall of text past its length, or an `/ask` answer that
cites nothing and does not say the history is silent. These gates reject such replies; the
caller then falls back (the template, the search results) exactly as for a grounding failure.

- `echoes_request`: the reply repeats the instructions (any run of `ECHO_WORDS` consecutive
  words of the system prompt or the task's prompt file), names the fence tag, or opens by
  quoting the request ("Fake reply to:", "You asked me to…").
- `about_the_run`: the reply names the run (a distinctive word of its name, or its slug) or at
  least `MIN_FACTS` distinct facts the model was given (references, identifiers, people, dates,
  numbers, links).
- `length_problem`: within the task's word budget (with `WORD_SLACK` for a model's count) and
  its character cap, and at least `MIN_WORDS` words.
- `says_history_is_silent`: the plain statement that the sources do not answer the question.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.llm.grounding import FactIndex, extract
from bot.llm.safety import FENCE_TAG

ECHO_WORDS = 7
MIN_FACTS = 2
MIN_WORDS = 6
WORD_SLACK = 1.25

_WORD = re.compile(r"[a-z0-9']+")
_PREAMBLE = re.compile(
    r"^\W*(?:fake\s+reply|reply\s+to|echo|you\s+asked\s+(?:me\s+)?to|as\s+requested|here\s+is\s+"
    r"(?:the|a|your)\s+(?:status\s+)?(?:narrative|digest|summary|answer)|request\s*:|prompt\s*:"
    r"|user\s*:|assistant\s*:|system\s*:)",
    re.IGNORECASE,
)
_SILENT = re.compile(
    r"\b(?:(?:the\s+)?(?:history|sources?|records?|events?|messages?|threads?|data|stored\s+\w+"
    r"|timeline|discussion)\s+(?:here\s+|given\s+|available\s+|provided\s+|I\s+have\s+)?"
    r"(?:do(?:es)?\s*n[o']?t|don't|doesn't|never|say\s+nothing|contain\s+nothing)"
    r"(?:\s+\w+){0,3}?\s+(?:say|answer|mention|cover|show|record|contain|tell|explain|address"
    r"|include|discuss|state|give)"
    r"|(?:nothing|no\s+(?:source|event|record|message|thread|entry|mention))s?\s+(?:in\s+the\s+"
    r"(?:history|sources|records|timeline)\s+)?(?:says?|answers?|mentions?|covers?|explains?"
    r"|records?|addresses)"
    r"|(?:nothing|no\s+answer)\s+(?:about\s+(?:this|that)\s+)?in\s+the\s+(?:history|sources"
    r"|records|timeline)"
    r"|(?:I\s+)?(?:could\s*n[o']?t|can\s*n[o']?t|cannot|did\s*n[o']?t)\s+find\s+(?:anything|any"
    r"|an?\s+(?:answer|record|source|mention))"
    r"|(?:there\s+is|there's|I\s+see|I\s+found)\s+no\s+(?:record|mention|answer|source|event"
    r"|information|discussion)"
    r"|(?:is|are|was|were)\s+not\s+(?:in|answered\s+(?:by|in))\s+the\s+(?:history|sources"
    r"|records|timeline))\b",
    re.IGNORECASE,
)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _shingles(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def instruction_shingles(*texts: str) -> frozenset[tuple[str, ...]]:
    """The runs of `ECHO_WORDS` words of the instructions (placeholders dropped)."""
    found: set[tuple[str, ...]] = set()
    for text in texts:
        found |= _shingles(_words(re.sub(r"\$\w+", " ", text)), ECHO_WORDS)
    return frozenset(found)


def echoes_request(text: str, instructions: frozenset[tuple[str, ...]]) -> str | None:
    """Why the reply reads as an echo of the request, or None."""
    if _PREAMBLE.match(text):
        return "the reply quotes the request instead of doing the task"
    if FENCE_TAG in text.lower():
        return "the reply repeats the request's data fences instead of doing the task"
    if _shingles(_words(text), ECHO_WORDS) & instructions:
        return "the reply repeats the instructions instead of doing the task"
    return None


def about_the_run(text: str, index: FactIndex, names: Iterable[str]) -> bool:
    """The reply names the run (or a person of it: `names`), or at least `MIN_FACTS` facts it
    was given."""
    for name in names:
        if name and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE):
            return True
    found = extract(text)
    facts: set[str] = set()
    facts.update(r for r in found.refs if r in index.refs)
    facts.update(i for i in found.idents if index.ident_ok(i))
    facts.update(u for u in found.urls if u in index.urls)
    facts.update(f"{m}-{d}" for _, _, m, d in found.dates if (m, d) in index.days)
    facts.update(n.raw for n in found.numbers if index.number_ok(n))
    return len(facts) >= MIN_FACTS


def length_problem(text: str, *, max_words: int, max_chars: int) -> str | None:
    count = len(text.split())
    if count < MIN_WORDS:
        return f"the reply is {count} words: too short to do the task"
    if count > max_words * WORD_SLACK:
        return f"the reply is {count} words: keep it within {max_words}"
    if len(text) > max_chars:
        return f"the reply is {len(text)} characters: keep it within {max_chars}"
    return None


def says_history_is_silent(text: str) -> bool:
    """The reply says plainly that the history does not answer the question."""
    return bool(_SILENT.search(text))


def distinctive_names(run_name: str, slug: str) -> list[str]:
    """Words that name the run: its slug and the words of its name that are not generic."""
    generic = {"run", "the", "a", "an", "model", "training", "moe", "dense", "of", "and"}
    names = [slug]
    names += [w for w in _words(run_name) if w not in generic and not w.isdigit() and len(w) > 2]
    return names


__all__ = [
    "about_the_run",
    "distinctive_names",
    "echoes_request",
    "instruction_shingles",
    "length_problem",
    "says_history_is_silent",
]
