"""A question is user input: it becomes a list of search terms, each a quoted FTS5 string, so
FTS5 syntax typed into a question (quotes, `NEAR`, `*`, `-`, `AND`/`OR`/`NOT`, parentheses,
column filters like `title:`) can neither raise an error nor change what is searched.

What a term is:

- a plain word, lowercased, unless it is a stopword ("why did we lower the gate" → lower, gate);
- a compound kept whole: `hero-12d8b6f0`, `train/loss`, `0.01`, `v4.2`. The index splits it
  into tokens and records which events hold a token, not where (FTS5 `detail=none`, migration
  0012), so the expression asks for every token of it; the retriever re-scores its candidates
  with the exact token sequence, so text holding the compound itself ranks first;
- a number with its other spellings: `54000`, `54,000` and `54k` find each other; `#8818` is the
  number 8818 (the index drops `#`, and the `ref` column holds it for every event of the thread);
- a pair of adjacent words ("weight decay") as a term as well, which (scored as a sequence by
  the retriever) ranks text that says exactly that above text that merely contains both words.

FTS5 applies its own tokenizer (unicode61 + porter) inside each quoted string, so stemming and
case folding agree with the index without being reimplemented here; each quoted string is one
token, since an index without positions refuses a phrase."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

from bot.core.errors import UserFacingError
from bot.core.mentions import INVISIBLE_CHARS
from bot.core.months import MONTH_NAMES, MONTH_NUMBERS, month_number

_UCD = unicodedata.ucd_3_2_0

MAX_QUESTION_CHARS = 2000
MAX_WORDS = 12
MAX_PAIRS = 6

STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each else ever every
    few for from further get got had has have having he her here hers him his how i if in into is
    it its itself just let me more most my no nor not of off on once only or other our ours out
    over own please same she should so some such tell than that the their theirs them then there
    these they this those through to too under until up us very was we were what whats when where
    which while who whom whose why will with would you your yours know anyone anybody someone
    something thing things still yet s t d ll m re ve""".split()  # noqa: SIM905 - prose list
)
# Words FTS5 would read as operators when bare. They are quoted like every term, so they are
# only ever searched for as words; these three carry no meaning in a question either.
_OPERATORS = frozenset({"and", "or", "not"})

_TOKEN = re.compile(
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,])"  # 54,000 or 1,234.5
    r"|\w+(?:[-./]\w+)*",  # words and compounds: hero-12d8b6f0, train/loss, 0.01
)
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f{INVISIBLE_CHARS}]")  # each one a word break
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+")
_SCALED = re.compile(r"(\d+)[kK]")


_MONTH = rf"(?P<mon>{MONTH_NAMES})\.?"
_DAY_PATTERNS = (
    re.compile(r"\b(?P<year>20\d\d)-(?P<mnum>\d\d)-(?P<day>\d\d)\b"),
    re.compile(
        rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<year>20\d\d)\b)?",
        re.IGNORECASE,
    ),
    re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b", re.IGNORECASE),
    re.compile(r"\bthe\s+(?P<day>\d{1,2})(?:st|nd|rd|th)\b", re.IGNORECASE),
)
_REF = re.compile(r"(?<![&#])#([A-Za-z0-9][\w-]*)")
_NAMED_ISSUE = re.compile(r"\b(?:issue|pr|pull(?:\s+request)?)\s+(\d+)\b", re.IGNORECASE)


def named_days(text: str) -> tuple[tuple[Day, ...], str]:
    """The days a question names, and the question with those dates blanked out (a date's
    words, "Sep" and "9", would otherwise be searched for as words and match any date)."""
    found: list[Day] = []
    rest = text
    for pattern in _DAY_PATTERNS[1:]:  # ISO dates stay searchable as one exact phrase too
        for match in pattern.finditer(rest):
            rest = rest[: match.start()] + " " * (match.end() - match.start()) + rest[match.end() :]
    for pattern in _DAY_PATTERNS:
        for match in pattern.finditer(text):
            groups = match.groupdict()
            day = int(groups["day"])
            if groups.get("mnum"):
                month: int | None = int(groups["mnum"])
            elif groups.get("mon"):
                month = month_number(groups["mon"])
            else:
                month = None
            year = int(groups["year"]) if groups.get("year") else None
            if 1 <= day <= 31 and (month is None or 1 <= month <= 12):
                candidate = Day(day, month, year)
                if candidate not in found and not any(
                    d.day == day and d.month is not None and month is None for d in found
                ):
                    found.append(candidate)
    return tuple(found[:4]), rest


def named_refs(text: str) -> tuple[str, ...]:
    refs = ["#" + m.group(1).lower() for m in _REF.finditer(text)]
    refs += ["#" + m.group(1) for m in _NAMED_ISSUE.finditer(text)]
    return tuple(dict.fromkeys(refs))[:4]


class BadQuestion(UserFacingError):
    """A question that cannot be searched; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class Term:
    """One search term: the word as read, and the spellings that count as it. Each spelling is
    text FTS5 tokenizes as a phrase; `expression` quotes them all."""

    text: str
    spellings: tuple[str, ...]
    pair: bool = False  # two adjacent words as one phrase

    @property
    def expression(self) -> str:
        quoted = [every_token(s) for s in self.spellings]
        return quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")"


@dataclass(frozen=True, slots=True)
class Day:
    """A calendar day the question names: `Sep 9` (no year), `2026-09-09`, `the 16th` (no
    month). Resolved against the run's time zone and the current date by the retriever."""

    day: int
    month: int | None = None
    year: int | None = None


@dataclass(frozen=True, slots=True)
class Query:
    question: str  # as asked (control characters removed)
    terms: tuple[Term, ...]
    refs: tuple[str, ...] = ()  # references the question names: "#845", "#hero-run"
    days: tuple[Day, ...] = ()

    @property
    def normalised(self) -> str:
        """What the question searches for, independent of case, punctuation and stopwords."""
        return " ".join(t.text for t in self.terms if not t.pair)

    @property
    def key(self) -> str:
        return hashlib.sha256(self.normalised.encode("utf-8")).hexdigest()[:16]


def quote(text: str) -> str:
    """An FTS5 string literal: always quoted, embedded quotes doubled."""
    return '"' + text.replace('"', '""') + '"'


def _token_char(ch: str) -> bool:
    # Letters and digits as Unicode 3.2 knew them: every one of them is a token character for
    # SQLite's unicode61 (Unicode 6.1) too, so no quoted piece can hold a separator and become a
    # phrase. A newer letter splits a piece here (it is then not found) but never fails the query.
    return _UCD.category(ch)[0] in "LN"


def fts_tokens(text: str) -> list[str]:
    """`text` split where the index's tokenizer splits it (or finer)."""
    out: list[str] = []
    current: list[str] = []
    for ch in text:
        if _token_char(ch):
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


def every_token(text: str) -> str:
    """An FTS5 expression matching events that hold every token of `text`: one quoted token, or
    several joined by AND (the index has no positions to match them as a phrase)."""
    quoted = [quote(p) for p in fts_tokens(text)]
    if not quoted:
        return '""'  # no token: matches nothing
    return quoted[0] if len(quoted) == 1 else "(" + " AND ".join(quoted) + ")"


def any_of(terms: list[Term] | tuple[Term, ...]) -> str:
    return " OR ".join(t.expression for t in terms)


def all_of(terms: list[Term] | tuple[Term, ...]) -> str:
    return " AND ".join(t.expression for t in terms)


def _spellings(token: str) -> tuple[str, ...]:
    """Other ways the same number is written: 54000 ↔ 54,000; 54k → 54000, 54,000. (`5m` is
    left alone: in chat it is minutes as often as millions.)"""
    if _GROUPED.fullmatch(token):
        plain = token.replace(",", "")
        return (token, plain)
    if token.isdigit() and len(token) >= 4 and not token.startswith("0"):
        return (token, f"{int(token):,}")
    scaled = _SCALED.fullmatch(token)
    if scaled:
        value = int(scaled.group(1)) * 1000
        return (token, str(value), f"{value:,}")
    return (token,)


def clean(question: str) -> str:
    text = unicodedata.normalize("NFKC", question)
    return " ".join(_CONTROL.sub(" ", text).split())


def parse_question(question: str) -> Query:
    """The terms to search for, or BadQuestion (empty, too long, nothing searchable)."""
    text = clean(question or "")
    if not text:
        raise BadQuestion("Ask a question, e.g. “why did we lower the learning rate?”.")
    if len(question) > MAX_QUESTION_CHARS:
        raise BadQuestion(
            f"That question is {len(question):,} characters long; keep it under "
            f"{MAX_QUESTION_CHARS:,}."
        )
    words: list[Term] = []
    pairs: list[Term] = []
    seen: set[frozenset[str]] = set()
    previous: tuple[str, int] | None = None  # the last plain word kept, and where it ended

    def add(into: list[Term], term: Term, cap: int) -> None:
        key = frozenset(term.spellings)
        if key not in seen and len(into) < cap:
            seen.add(key)
            into.append(term)

    days, searchable = named_days(text)
    for match in _TOKEN.finditer(searchable):
        raw = match.group(0)
        lower = raw.lower()
        if not any(ch.isalnum() for ch in raw):
            previous = None
        elif re.search(r"[-./,_]", raw) or any(ch.isdigit() for ch in raw):
            add(words, Term(lower, _spellings(lower)), MAX_WORDS)
            previous = None
        elif lower in STOPWORDS or lower in _OPERATORS or len(lower) < 2:
            previous = None
        else:
            add(words, Term(lower, (lower,)), MAX_WORDS)
            if previous is not None and searchable[previous[1] : match.start()] == " ":
                pair = f"{previous[0]} {lower}"
                add(pairs, Term(pair, (pair,), pair=True), MAX_PAIRS)
            previous = (lower, match.end())
    for day in days:  # "Sep 9" written in someone's text: the exact phrase, as one term
        if day.month is not None:
            month = next(name for name, number in MONTH_NUMBERS.items() if number == day.month)
            add(words, Term(f"{month} {day.day}", (f"{month} {day.day}",)), MAX_WORDS)
    if not words and not days:
        raise BadQuestion(
            "That question has nothing to search for; name what you are looking for, e.g. "
            "“what caused the restart on the 16th?”."
        )
    # Single words first (they decide what is found), then pairs (they sharpen the ranking).
    return Query(
        question=text,
        terms=tuple(words + pairs),
        refs=named_refs(text),
        days=days,
    )


__all__ = [
    "MAX_QUESTION_CHARS",
    "BadQuestion",
    "Day",
    "Query",
    "Term",
    "all_of",
    "any_of",
    "clean",
    "every_token",
    "fts_tokens",
    "parse_question",
    "quote",
]
