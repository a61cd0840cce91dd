"""/ask's LLM answer: the retrieved events as numbered, fenced sources plus the run's computed
facts in; an answer citing sources as `[n]` out, checked in code before anyone sees it.

The check (`check_answer`): the reply does the task (it does not echo the request, it cites at
least one source or says plainly that the history does not answer, it fits its length:
`bot.llm.gates`); every `[n]` is one of the sources; every URL is a source's URL;
each sentence says only what the sources it cites (and the run's facts) say: its numbers, dates,
times, references, ids, names and words, the people it credits (`bot.llm.cited`, the one check
of cited prose, shared with the narrative and the digest); a sentence citing nothing is checked
against the run's facts alone, or says the history is silent.
A draft that fails is recorded as `ask.rejected` (it was paid for) and the model gets one retry
with the problems listed; a second failure, an outage, no key or a spent budget return None and the
caller shows the search results instead. Mentions are stripped from what passes
(`safety.sanitize_output`), so an `@everyone` never reaches Discord even before the
`allowed_mentions` lock.

Accepted answers are renumbered in order of first citation ([3] then [1] become [1] then [2])
and recorded as `ask` rows: content is JSON `{"answer", "event_ids"}` so a cached answer can be
served again with its citations; tokens and cost count against the daily budget and appear in
`runscribe usage`.

`GroundedAnswers` is `/ask`'s writer (`bot.ask.service.AnswerWriter`): a cached answer for the
same question and data version if there is one, else `write_answer` within the deadline. The
run's facts come from the `facts` it is given (`bot.services.narrative.ask_facts`, bound by
`bot.process.wiring.answer_writer`)."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from bot.core.mentions import defuse_mentions
from bot.llm.cited import CITE, CitedRequest, Source, check_sentences, citations_in
from bot.llm.client import LLMClient, LLMResult, LLMUnavailable
from bot.llm.gates import (
    echoes_request,
    instruction_shingles,
    length_problem,
    says_history_is_silent,
)
from bot.llm.grounded import render_facts
from bot.llm.grounding import GroundingReport
from bot.llm.people import known_people
from bot.llm.prompts import load_prompt, short_hash
from bot.llm.safety import URL_RE, fence, normalise_url, sanitize_output
from bot.models import Event
from bot.narrative.facts import NarrativeFacts
from bot.narrative.format import fmt_time
from bot.store import Store

log = logging.getLogger(__name__)

TASK = "ask"
ASK_MAX_WORDS = 180
ASK_MAX_CHARS = 1500
ASK_MAX_TOKENS = 700
SOURCE_CHARS = 700  # of each event's text shown to the model

_CITE = CITE  # one reading of `[n]` markers, shared with the narrative and digest


@dataclass(slots=True, frozen=True)
class Draft:
    answer: str
    event_ids: list[int]  # the cited events, in citation order: [1] is event_ids[0]


def source_text(event: Event) -> str:
    """What the model reads of one event: title, summary, then the start of the body."""
    parts = [event.title or "", event.summary or ""]
    body = " ".join((event.body or "").split())
    if body and body not in parts:
        parts.append(body)
    text = "\n".join(p for p in parts if p.strip())
    return text[:SOURCE_CHARS] + ("…" if len(text) > SOURCE_CHARS else "")


def render_source(n: int, event: Event, tz: str) -> str:
    return fence(
        source_text(event) or "(no text)",
        source=event.source,
        n=n,
        date=fmt_time(event.at, tz),  # with the time: a 'when' question gets one
        author=event.author,
        ref=event.ref,
        state=event.state,
        url=event.url,
    )


def render_sources(events: Sequence[Event], tz: str) -> str:
    return "\n".join(render_source(n, event, tz) for n, event in enumerate(events, 1))


def check_answer(
    text: str, sources: Sequence[Event], facts_text: str, tz: str, known: Iterable[str] = ()
) -> GroundingReport:
    """`known`: the run's people (`bot.llm.people.known_people`); a person the cited sources and
    the facts do not name, or credit with what the answer says, is a problem."""
    report = GroundingReport()
    if not text.strip():
        report.problems.append("the reply was empty")
        return report
    echo = echoes_request(text, _instructions())
    if echo is not None:
        report.problems.append(echo)
        return report
    cited = citations_in(text)
    if not cited and not says_history_is_silent(text):
        report.problems.append(
            "the answer cites no source: cite the sources it comes from as [n], or say plainly "
            "that the history does not answer the question"
        )
    long = length_problem(_CITE.sub(" ", text), max_words=ASK_MAX_WORDS, max_chars=ASK_MAX_CHARS)
    if long is not None and "too short" not in long:
        report.problems.append(long)
    for n in cited:
        if not 1 <= n <= len(sources):
            report.problems.append(
                f"[{n}] is not a source: cite only [1] to [{len(sources)}]"
                if sources
                else f"[{n}] is not a source: there are no sources"
            )
    # each sentence against the sources it cites and the run's facts (`bot.llm.cited`)
    request = CitedRequest(
        sources={n: Source(n, render_source(n, e, tz), e.url) for n, e in enumerate(sources, 1)},
        always=facts_text,
        known=(*known, *(e.author for e in sources if e.author)),
        request=_request_words(),
        uncited=facts_text,
        silent=says_history_is_silent,
    )
    report.problems.extend(
        p for p in check_sentences(text, request) if "which is not a source" not in p
    )
    # Links: only the sources' own URLs (the facts' run links are not citations).
    allowed = {normalise_url(e.url) for e in sources if e.url}
    for match in URL_RE.finditer(text):
        if normalise_url(match.group(0)) not in allowed:
            report.problems.append(
                f"the link {match.group(0)} is not in the facts (write links in full, exactly "
                "as given)"
            )
    return report


@functools.cache
def _request_words() -> str:
    return load_prompt("system").text + "\n" + load_prompt(TASK).text


@functools.cache
def _instructions() -> frozenset[tuple[str, ...]]:
    return instruction_shingles(load_prompt("system").text, load_prompt(TASK).text)


def finalise(text: str, sources: Sequence[Event]) -> Draft:
    """Renumber citations in order of first use, add any source whose URL the text shows, and
    sanitise (mentions, control characters, links to anything else, length)."""
    order = [n for n in citations_in(text) if 1 <= n <= len(sources)]
    by_url = {normalise_url(e.url): i + 1 for i, e in enumerate(sources) if e.url}
    for match in URL_RE.finditer(text):
        n = by_url.get(normalise_url(match.group(0)))
        if n is not None and n not in order:
            order.append(n)
    renumber = {old: new for new, old in enumerate(order, 1)}

    def replace(match: re.Match[str]) -> str:
        numbers = citations_in(match.group(0))
        return "".join(f"[{renumber[n]}]" for n in numbers if n in renumber)

    text = _CITE.sub(replace, text)
    cited = [sources[n - 1] for n in order]
    allowed = {e.url for e in cited if e.url}
    answer = sanitize_output(text, allowed_urls=allowed, limit=ASK_MAX_CHARS)
    return Draft(answer=answer, event_ids=[int(e.id or 0) for e in cited])


def prompt_hash() -> str:
    return short_hash(load_prompt("system").text, load_prompt(TASK).text)


def render_user(question: str, sources: Sequence[Event], facts_text: str, tz: str) -> str:
    return load_prompt(TASK).render(
        question=fence(question, source="user", kind="question"),
        facts=facts_text,
        sources=render_sources(sources, tz),
        max_words=ASK_MAX_WORDS,
    )


async def write_answer(
    store: Store,
    llm: LLMClient,
    question: str,
    sources: Sequence[Event],
    facts_text: str,
    *,
    tz: str,
    run_slug: str,
    now: datetime,
    cache_key: str | None = None,
    model: str | None = None,
) -> Draft | None:
    """Call, check, retry once with the problems, record. None means: show search results."""
    if not sources:
        return None
    system = load_prompt("system").render()
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": render_user(question, sources, facts_text, tz)}
    ]
    phash = prompt_hash()
    problems: list[str] = []
    known = await known_people(store, run_slug)
    try:
        for attempt in range(2):
            result = await llm.complete(
                system=system,
                messages=messages,
                max_tokens=ASK_MAX_TOKENS,
                now=now,
                model=model,
            )
            # Mentions are removed, not argued with: a ping is never a reason to fall back.
            reply = defuse_mentions(result.text)
            report = check_answer(reply, sources, facts_text, tz, known)
            if report.ok:
                draft = finalise(reply, sources)
                await store.llm.record(
                    _output(result, draft, phash, run_slug=run_slug, now=now, key=cache_key)
                )
                return draft
            problems = report.problems
            await store.llm.record(_rejected(result, report, phash, run_slug=run_slug, now=now))
            if attempt == 0:
                messages = _with_retry(messages, result, report)
    except LLMUnavailable as exc:
        llm.note_fallback(exc, TASK, now)
        return None
    log.warning(
        "LLM answer to a question failed the grounding check twice (%s); showing search results",
        "; ".join(problems[:5]),
    )
    return None


def _rejected(
    result: LLMResult, report: GroundingReport, phash: str, *, run_slug: str, now: datetime
) -> Any:
    """A reply the grounding check turned down, kept with the check's findings."""
    return result.output(
        task=f"{TASK}.rejected",
        prompt_name=TASK,
        prompt_hash=phash,
        content=result.text + "\n\n[grounding]\n" + report.feedback(),
        created_at=now,
        run_slug=run_slug,
    )


def _with_retry(
    messages: list[dict[str, Any]], result: LLMResult, report: GroundingReport
) -> list[dict[str, Any]]:
    """The conversation so far, the rejected reply, and the problems to fix."""
    return [
        *messages,
        {"role": "assistant", "content": result.text or "(empty)"},
        {
            "role": "user",
            "content": load_prompt("grounding_retry").render(problems=report.feedback()),
        },
    ]


def _output(
    result: LLMResult, draft: Draft, phash: str, *, run_slug: str, now: datetime, key: str | None
) -> Any:
    return result.output(
        task=TASK,
        prompt_name=TASK,
        prompt_hash=phash,
        content=json.dumps({"answer": draft.answer, "event_ids": draft.event_ids}),
        created_at=now,
        run_slug=run_slug,
        cache_key=key,
    )


def parse_cached(content: str) -> Draft | None:
    try:
        data = json.loads(content)
        return Draft(answer=str(data["answer"]), event_ids=[int(i) for i in data["event_ids"]])
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(slots=True, frozen=True)
class Written:
    """An accepted answer with its cited events, in citation order."""

    answer: str
    events: list[Event]
    cached: bool = False


class _Question(Protocol):
    @property
    def question(self) -> str: ...

    @property
    def key(self) -> str: ...


class _Searched(Protocol):
    """A searched question as the writer reads it (`bot.ask.service.Searched`)."""

    @property
    def query(self) -> _Question: ...

    @property
    def slug(self) -> str: ...

    @property
    def zone(self) -> str: ...

    @property
    def limit(self) -> int: ...

    @property
    def events(self) -> list[Event]: ...


# The run's computed facts an answer may state besides its sources.
AskFacts = Callable[[Store, str, datetime], Awaitable[NarrativeFacts]]


class GroundedAnswers:
    """`/ask`'s writer: the grounded answer from the matches, cached per question, limit,
    data version, facts and prompt."""

    def __init__(self, store: Store, llm: LLMClient, *, facts: AskFacts, model: str | None = None):
        self.store = store
        self.llm = llm
        self.facts = facts
        self.model = model

    @property
    def enabled(self) -> bool:
        return self.llm.enabled

    async def __call__(
        self, searched: _Searched, now: datetime, deadline: float | None
    ) -> Written | None:
        store, query, slug, sources = self.store, searched.query, searched.slug, searched.events
        limit = searched.limit
        version = await store.search.version(slug)
        facts = await self.facts(store, slug, now)
        key = f"ask:{slug}:{query.key}:{limit}:{version}:{facts.fingerprint()}:{prompt_hash()}"
        cached = await store.llm.by_cache_key(key)
        draft = parse_cached(cached.content) if cached else None
        if draft is not None:
            events = await store.search.events(draft.event_ids)
            if len(events) == len(draft.event_ids):
                return Written(draft.answer, events, cached=True)
        write = write_answer(
            store,
            self.llm,
            query.question,
            sources,
            render_facts(facts),
            tz=searched.zone,
            run_slug=slug,
            now=now,
            cache_key=key,
            model=self.model,
        )
        try:
            draft = await asyncio.wait_for(write, deadline)
        except TimeoutError:
            log.warning("LLM answer took over %.1f s; showing search results", deadline)
            return None
        if draft is None:
            return None
        by_id = {e.id: e for e in sources}
        return Written(draft.answer, [by_id[i] for i in draft.event_ids])


__all__ = [
    "TASK",
    "Draft",
    "GroundedAnswers",
    "Written",
    "check_answer",
    "citations_in",
    "finalise",
    "parse_cached",
    "prompt_hash",
    "render_sources",
    "write_answer",
]
