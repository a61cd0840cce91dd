"""Answer a question about a run from its stored history, with numbered citations.

`ask()` parses the question (BadQuestion for empty, over-long or unsearchable text), retrieves
the best matching events, then:

- with a writer (an `AnswerWriter`: the LLM's grounded answers, `bot.llm.ask.GroundedAnswers`,
  bound by `bot.process.wiring.answer_writer`): its answer, cached or written within `deadline`
  seconds when one is given;
- without one, or when the writer gives nothing (the model failed, is over budget or too slow):
  the best matches, each a one-line summary with its citation (`by = "search"`).

The two halves are also callable apart (`search`, then `write`), so Discord can show the
matches at once and replace them with the written answer when it arrives. Like the other
services, this one takes its writer and never imports the LLM.

Either way every `[n]` in the answer is a citation and every URL in it is a citation's URL, the
invariant `ask --json` promises."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from bot.ask.query import Query, parse_question
from bot.ask.retrieval import DEFAULT_LIMIT, Hit, retrieve
from bot.core.mentions import URL_RE, cap_length, defuse_mentions, normalise_url
from bot.models import Event
from bot.services.runs import UnknownRun
from bot.store import Store

log = logging.getLogger(__name__)

MAX_LIMIT = 20
LINE_CHARS = 200
_MARKER = re.compile(r"\[(\d+)\]")
_BRACKETED = re.compile(r"\[(\s*\d[\d\s,;\-–]*)\]")
NOTHING_FOUND = "Nothing in this run's stored history matches that question."


@dataclass(slots=True, frozen=True)
class Citation:
    n: int
    event: Event

    @property
    def summary(self) -> str:
        return one_line(self.event)

    def as_json(self) -> dict[str, object]:
        e = self.event
        return {
            "n": self.n,
            "at": e.at.isoformat().replace("+00:00", "Z"),
            "author": e.author,
            "source": e.source,
            "ref": e.ref,
            "url": e.url,
            "summary": self.summary,
        }


@dataclass(slots=True)
class Answer:
    question: str
    run: str  # the run's slug
    answer: str
    by: Literal["llm", "search"]
    citations: list[Citation] = field(default_factory=list)
    cached: bool = False

    def as_json(self) -> dict[str, object]:
        return {
            "question": self.question,
            "run": self.run,
            "answer": self.answer,
            "by": self.by,
            "citations": [c.as_json() for c in self.citations],
        }


def one_line(event: Event, limit: int = LINE_CHARS) -> str:
    """The event in one line: its summary, else its title, else the start of its text. Links are
    left out (only citation URLs may appear) and mentions cannot ping."""
    text = event.summary or event.title or event.body or ""
    text = URL_RE.sub("", defuse_mentions(text))
    text = _BRACKETED.sub(r"(\1)", text)  # "[3]" in someone's text is not our citation
    text = " ".join(text.split()) or "(no text)"
    return cap_length(text, limit)


def search_answer(query: Query, slug: str, hits: list[Hit]) -> Answer:
    if not hits:
        return Answer(query.question, slug, NOTHING_FOUND, "search")
    citations = [Citation(n, hit.event) for n, hit in enumerate(hits, 1)]
    lines = ["The closest matches in the run's history:"]
    lines += [f"[{c.n}] {c.summary}" for c in citations]
    return Answer(query.question, slug, "\n".join(lines), "search", citations)


@dataclass(slots=True, frozen=True)
class Searched:
    query: Query
    slug: str
    zone: str
    limit: int
    hits: list[Hit]
    answer: Answer  # the search answer

    @property
    def events(self) -> list[Event]:
        """The matches' events, best first: what a writer may cite."""
        return [hit.event for hit in self.hits]


class WrittenAnswer(Protocol):
    """A writer's answer: its text, citing `[n]` as `events[n - 1]`."""

    @property
    def answer(self) -> str: ...

    @property
    def events(self) -> list[Event]: ...

    @property
    def cached(self) -> bool: ...


class AnswerWriter(Protocol):
    """Writes the answer to a searched question from its matches (`searched.events`), within
    `deadline` seconds, or None when it cannot (the caller shows the matches)."""

    @property
    def enabled(self) -> bool: ...

    async def __call__(
        self, searched: Searched, now: datetime, deadline: float | None
    ) -> WrittenAnswer | None: ...


class AskService:
    """Holds what an answer needs: the store, the optional writer and its deadline."""

    def __init__(
        self,
        store: Store,
        writer: AnswerWriter | None = None,
        *,
        deadline: float | None = None,
    ):
        self.store = store
        self.writer = writer
        self.deadline = deadline

    @property
    def writes(self) -> bool:
        """Whether a written answer will be attempted (a key and a non-zero budget)."""
        return self.writer is not None and self.writer.enabled

    async def search(
        self, slug: str, question: str, now: datetime, *, limit: int = DEFAULT_LIMIT
    ) -> Searched:
        """The fast half, store only: the question parsed, the best matches, and the answer
        made of them (what is shown without an LLM)."""
        query = parse_question(question)
        run = await self.store.runs.get(slug)
        if run is None:
            raise UnknownRun(slug, [r.slug for r in await self.store.runs.all()])
        limit = max(1, min(limit, MAX_LIMIT))
        hits = await retrieve(self.store, slug, query, now, limit=limit, zone=run.timezone)
        return Searched(query, slug, run.timezone, limit, hits, search_answer(query, slug, hits))

    async def write(self, searched: Searched, now: datetime) -> Answer | None:
        """The slow half: the LLM's grounded answer (cached), or None when there is no model,
        nothing was found, or the model failed, was over budget or missed the deadline."""
        if not searched.hits or not self.writes:
            return None
        assert self.writer is not None
        written = await self.writer(searched, now, self.deadline)
        if written is None:
            return None
        return _llm(searched.query, searched.slug, written)

    async def ask(
        self, slug: str, question: str, now: datetime, *, limit: int = DEFAULT_LIMIT
    ) -> Answer:
        searched = await self.search(slug, question, now, limit=limit)
        return await self.write(searched, now) or searched.answer


def _llm(query: Query, slug: str, written: WrittenAnswer) -> Answer | None:
    """The written answer, if it keeps the promise: every [n] a citation, every URL a
    citation's. (The LLM's `finalise` already guarantees it; this is the last lock before
    output.)"""
    text, events = written.answer, written.events
    allowed = {normalise_url(e.url) for e in events if e.url}
    urls = {normalise_url(m.group(0)) for m in URL_RE.finditer(text)}
    numbers = {int(n) for n in _MARKER.findall(text)}
    if not urls <= allowed or not numbers <= set(range(1, len(events) + 1)):
        log.error("an LLM answer broke the citation rules after checking; showing search results")
        return None
    citations = [Citation(n, e) for n, e in enumerate(events, 1)]
    return Answer(query.question, slug, text, "llm", citations, cached=written.cached)


__all__ = [
    "MAX_LIMIT",
    "Answer",
    "AnswerWriter",
    "AskService",
    "Citation",
    "Searched",
    "WrittenAnswer",
    "one_line",
    "search_answer",
]
