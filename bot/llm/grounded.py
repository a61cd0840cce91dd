"""The grounded writer shared by the narrative and the digest.

Flow of `write_grounded`: render the prompt from facts → call → check each sentence against
the facts it cites (`bot.llm.cited.check_sentences`: its numbers, dates, ids, links, names,
people and words) → on failure, one retry in the same conversation with the problems listed →
on a second failure, the template. Rejected drafts are recorded as `<task>.rejected` rows (they
cost money and the usage report shows them); the final text, model or template, is recorded as
`<task>` with the prompt name and hash, model, tokens and cost, after `safety.sanitize_output`.
In the model's text each `[n]` becomes a link to its source (`cited.link_citations`); a fact
without a link (a computed number) loses its marker.

The facts reach the model as numbered sources (`numbered_facts`): trusted facts one per line
(`fact_lines`), then the recent activity and the open threads, fenced as data, numbered on. A
narrative need not name its run: citing the run's facts is being about it."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core.numbers import fmt_big, fmt_int, fmt_percent, fmt_value
from bot.core.timeutil import humanize_duration
from bot.llm.cited import (
    CitedRequest,
    Source,
    check_sentences,
    citations_in,
    link_citations,
    sentences,
    strip_citations,
)
from bot.llm.client import LLMClient, LLMResult, LLMUnavailable
from bot.llm.gates import (
    about_the_run,
    distinctive_names,
    echoes_request,
    instruction_shingles,
    length_problem,
)
from bot.llm.grounding import FactIndex, GroundingReport, check
from bot.llm.people import Given, check_people, given
from bot.llm.prompts import load_prompt, short_hash
from bot.llm.safety import fence, normalise_url, sanitize_output, urls_in
from bot.models import LLMOutput, Restart
from bot.narrative.discussions import Discussion
from bot.narrative.facts import DigestFacts, Highlight, IncidentFact, NarrativeFacts, OpenThread
from bot.narrative.format import fmt_date, fmt_projected, fmt_time, inline
from bot.narrative.templates import NARRATIVE_MAX_CHARS
from bot.store import Store

log = logging.getLogger(__name__)

NARRATIVE_MAX_TOKENS = 900
TEMPLATE_MODEL = "template"


def render_facts(facts: NarrativeFacts) -> str:
    """The trusted facts block, one fact per line."""
    return "\n".join(fact_lines(facts))


def fact_lines(facts: NarrativeFacts) -> list[str]:
    """The trusted facts, each a line that stands on its own (a citation names one)."""
    tz = facts.timezone
    lines = [f"run: {facts.run_name} (slug {facts.run_slug})", f"state: {facts.state}"]
    lines.append(f"time now: {fmt_time(facts.now, tz)} (every time here is in {tz})")
    if facts.wandb_run:
        lines.append(f"current W&B run: {inline(facts.wandb_run, 120)}")
    if facts.step is not None:
        line = f"progress: step {fmt_int(facts.step)}"
        if facts.total_steps:
            line += f" of {fmt_int(facts.total_steps)}"
        if facts.percent is not None:
            line += f" ({fmt_percent(facts.percent)} done)"
        lines.append(line)
    if facts.tokens is not None:
        line = f"tokens trained: {fmt_big(facts.tokens)}"
        if facts.target_tokens:
            line += f" of {fmt_big(facts.target_tokens)}"
        lines.append(line)
    if facts.launched_at:
        lines.append(f"launched: {fmt_date(facts.launched_at, tz)}")
    if facts.projected_end:
        when = fmt_projected(facts.projected_end, facts.projected_margin, tz, facts.now)
        lines.append(f"projected end: {when} (as precise as the pace allows)")
    if facts.loss is not None:
        lines.append(f"latest loss: {fmt_value(facts.loss)}")
    if facts.loss_vs_forecast:
        lines.append(f"loss against its predicted curve: {facts.loss_vs_forecast}")
    for line in facts.drifting:
        lines.append(f"metric off its forecast: {line}")
    if isinstance(facts, DigestFacts):
        lines.extend(_window_lines(facts))
    if facts.last_restart is not None:
        lines.append(
            "last restart: " + _restart_line(facts.last_restart, facts, facts.restart_incident)
        )
    lines.append(f"incidents: {len(facts.incidents) or 'none'}")
    lines.extend(_incident_line(incident, facts) for incident in facts.incidents)
    if facts.monitor_stale:
        lines.append(
            "monitor: Runscribe has not reached W&B recently, so these figures may be behind; "
            "this says nothing about the run itself"
        )
    if facts.incidents_total:
        lines.append(
            f"incidents over the whole run: {facts.incidents_total}; training recovered on its "
            f"own (no human report before it resumed) from {facts.self_healed} of them"
        )
    if facts.counts_by_tag:
        window = (
            "the window"
            if isinstance(facts, DigestFacts)
            else (f"the last {facts.counts_window.days} days")
        )
        counts = ", ".join(f"{tag} {n}" for tag, n in sorted(facts.counts_by_tag.items()))
        lines.append(f"events by tag in {window}: {counts}")
    for name, url in facts.links.items():
        lines.append(f"link: {inline(name, 60)} {url}")
    return lines


def _window_lines(facts: DigestFacts) -> list[str]:
    lines = [f"window: the last {facts.window_hours} hours"]
    gained = facts.steps_gained
    if gained is not None:
        lines.append(f"steps trained in the window: {fmt_int(gained)}")
    lines.append(f"events in the window: {facts.events_in_window}")
    lines.append(f"restarts in the window: {len(facts.restarts_in_window)}")
    for restart in facts.restarts_in_window:
        lines.append("restart in the window: " + _restart_line(restart, facts))
    return lines


def _incident_line(incident: IncidentFact, facts: NarrativeFacts) -> str:
    tz = facts.timezone
    line = f"incident, {incident.status}, {incident.severity}: {inline(incident.title, 120)}; "
    line += f"started {fmt_time(incident.started_at, tz)}"
    if incident.resolved_at:
        line += f", resolved {fmt_time(incident.resolved_at, tz)}"
        line += f", lasted {humanize_duration(incident.duration(facts.now))}"
    else:
        line += f", open for {humanize_duration(incident.duration(facts.now))}"
    if incident.cause:
        line += "; cause: " + fence(inline(incident.cause), source="system")
    if incident.reported_cause:
        line += "; a person reported: " + fence(
            inline(incident.reported_cause), source="report", author=incident.reported_by
        )
    return line


def _restart_line(
    restart: Restart, facts: NarrativeFacts, incident: IncidentFact | None = None
) -> str:
    line = fmt_time(restart.at, facts.timezone)
    if restart.to_step is not None:
        line += f", resumed from step {fmt_int(restart.to_step)}"
    if restart.from_step is not None:
        line += f" (had reached step {fmt_int(restart.from_step)})"
    if restart.down_for is not None:
        line += f", down for {humanize_duration(restart.down_for)}"
    line += f", {humanize_duration(facts.now - restart.at)} ago"
    cause = (incident.cause or incident.title) if incident is not None else restart.cause
    if cause:
        line += "; cause: " + fence(inline(cause), source="system")
    if incident is not None and incident.reported_cause:
        line += "; a person reported: " + fence(
            inline(incident.reported_cause), source="report", author=incident.reported_by
        )
    return line


def render_highlights(highlights: Sequence[Highlight], tz: str) -> str:
    return "\n".join(highlight_items(highlights, tz)) or "(none)"


def highlight_items(highlights: Sequence[Highlight], tz: str) -> list[str]:
    return [
        fence(
            inline(h.summary),
            source=h.source,
            date=fmt_date(h.at, tz),
            author=h.author,
            ref=h.ref,
            state=h.state,
            tag=h.tag,
            url=h.url,
        )
        for h in highlights
    ]


def render_open_threads(threads: Sequence[OpenThread], tz: str) -> str:
    return "\n".join(thread_items(threads, tz)) or "(none)"


def thread_items(
    threads: Sequence[OpenThread], tz: str, discussions: Sequence[Discussion] = ()
) -> list[str]:
    """Each open thread, and for one under discussion who drives it, who takes part and the
    last value changed in it (`bot.narrative.discussions`): what a model needs to say where a
    decision stands and whose it is."""
    by_ref = {d.ref: d for d in discussions}
    items = []
    for t in threads:
        d = by_ref.get(t.ref or "")
        change = d.change if d is not None else None
        items.append(
            fence(
                inline(t.title, 160),
                source=t.source,
                kind=t.kind,
                ref=t.ref,
                author=t.author,
                opened=fmt_date(t.opened_at, tz) if t.opened_at else None,
                driven_by=d.driver if d is not None else None,
                discussed_by=", ".join(d.people[:6]) if d is not None else None,
                changed=(
                    f"{change.before} to {change.after} ({fmt_date(change.at, tz)}"
                    + (f", by {change.author})" if change.author else ")")
                    if change is not None
                    else None
                ),
                url=t.url,
            )
        )
    return items


@dataclass(slots=True)
class NumberedFacts:
    """The request's facts as numbered sources (`[n]`), in three blocks: the computed facts,
    the recent activity and the open threads, numbered on from one block to the next."""

    facts: list[Source]
    highlights: list[Source]
    threads: list[Source]

    @property
    def sources(self) -> dict[int, Source]:
        return {s.n: s for s in [*self.facts, *self.highlights, *self.threads]}

    @staticmethod
    def block(items: Sequence[Source]) -> str:
        return "\n".join(f"[{s.n}] {s.text}" for s in items) or "(none)"


def run_link(facts: NarrativeFacts) -> str | None:
    """The run's own page among its links: the W&B one if any, else the first."""
    for name, url in facts.links.items():
        if "w&b" in name.lower() or "wandb" in url:
            return url
    return next(iter(facts.links.values()), None)


def numbered_facts(facts: NarrativeFacts) -> NumberedFacts:
    """Every fact the narrative or digest may cite, numbered; an event or thread carries its
    link, which the citation becomes."""
    lines = fact_lines(facts)
    tz = facts.timezone
    # a computed fact's source is the run's own page (its W&B report): where a reader sees it
    home = run_link(facts)
    first = [Source(n, line, home) for n, line in enumerate(lines, 1)]
    n = len(first)
    highs = [
        Source(n + i, text, h.url)
        for i, (text, h) in enumerate(
            zip(highlight_items(facts.highlights, tz), facts.highlights, strict=True), 1
        )
    ]
    n += len(highs)
    threads = [
        Source(n + i, text, t.url)
        for i, (text, t) in enumerate(
            zip(
                thread_items(facts.open_threads, tz, facts.discussions),
                facts.open_threads,
                strict=True,
            ),
            1,
        )
    ]
    return NumberedFacts(first, highs, threads)


@dataclass(slots=True)
class Rendered:
    """A prompt rendered from facts, plus what the output is checked against."""

    task: str
    prompt_name: str
    prompt_hash: str
    system: str
    user: str
    index: FactIndex
    max_chars: int
    max_tokens: int
    max_words: int = 0
    # what the reply is checked for beyond its numbers (`bot.llm.gates`): the instructions it
    # must not echo and the names (the run's, its people's) that show it is about this run
    instructions: frozenset[tuple[str, ...]] = frozenset()
    names: tuple[str, ...] = ()
    # the people the reply may name and what each is credited with (`bot.llm.people`)
    people: Given | None = None
    # the numbered sources each sentence cites and is checked against (`bot.llm.cited`)
    cited: CitedRequest | None = None


def card_numbers(facts: NarrativeFacts) -> list[tuple[str, float, float]]:
    """The numbers the status card shows as fields next to the narrative (progress, tokens, the
    last restart's steps, the loss), with the coarsest rounding that still restates each: the
    narrative must not repeat them. A loss written as a whole number is not a restatement."""
    shown: list[tuple[str, float | int | None, float]] = [
        ("current step", facts.step, math.inf),
        ("total number of steps", facts.total_steps, math.inf),
        ("tokens trained", facts.tokens, math.inf),
        ("target tokens", facts.target_tokens, math.inf),
        ("latest loss", facts.loss, 0.1),
        ("percent done", facts.percent, math.inf),
    ]
    if facts.last_restart is not None:
        shown.append(("step training resumed from", facts.last_restart.to_step, math.inf))
        shown.append(("last step before the restart", facts.last_restart.from_step, math.inf))
    return [(label, float(value), unit) for label, value, unit in shown if value]


def render_prompt(
    task: str,
    facts: NarrativeFacts,
    *,
    max_words: int,
    card: bool = False,
    known: Iterable[str] = (),
    **extra: Any,
) -> Rendered:
    """`card`: the text sits on the status card, so it may not restate the card's numbers.
    `known`: the run's people (`bot.llm.people.known_people`), whom the reply may name only when
    the facts do."""
    numbered = numbered_facts(facts)
    facts_text = NumberedFacts.block(numbered.facts)
    highlights = NumberedFacts.block(numbered.highlights)
    threads = NumberedFacts.block(numbered.threads)
    system = load_prompt("system")
    prompt = load_prompt(task)
    user = prompt.render(
        facts=facts_text,
        highlights=highlights,
        open_threads=threads,
        max_words=max_words,
        **extra,
    )
    index = FactIndex.build(facts_text, highlights, threads)
    if card:
        index.shown = card_numbers(facts)
    index.urls -= _urls_in_names(facts)
    people = _people(facts)
    rendered_system = system.render()
    cited = CitedRequest(
        sources=_linkable(numbered.sources, index),
        always=f"{facts.run_name} {facts.run_slug}",
        shown=index.shown,
        known=tuple(known),
        request=rendered_system + "\n" + user,
    )
    return Rendered(
        task=task,
        prompt_name=task,
        prompt_hash=short_hash(system.text, prompt.text),
        system=rendered_system,
        user=user,
        index=index,
        max_chars=NARRATIVE_MAX_CHARS,
        max_tokens=NARRATIVE_MAX_TOKENS,
        max_words=max_words,
        instructions=instruction_shingles(system.text, prompt.text),
        names=(
            *distinctive_names(facts.run_name, facts.run_slug),
            *sorted(p for p in people if p and len(p) > 2),
        ),
        people=given([user], [*known, *(p for p in people if p)], request=rendered_system),
        cited=cited,
    )


def _urls_in_names(facts: NarrativeFacts) -> set[str]:
    """A URL that is only part of a name or title (a display name "[Status](https://evil…)") is
    not a source's link: the writer may not link it."""
    names = [h.author for h in facts.highlights] + [t.author for t in facts.open_threads]
    names += [t.title for t in facts.open_threads] + [i.title for i in facts.incidents]
    own = [h.url for h in facts.highlights] + [t.url for t in facts.open_threads]
    return urls_in(names) - urls_in([*own, *facts.links.values()])


def _people(facts: NarrativeFacts) -> set[str | None]:
    """Everyone the facts name: highlights' and threads' authors, incidents' reporters."""
    people = {h.author for h in facts.highlights} | {t.author for t in facts.open_threads}
    people |= {i.reported_by for i in facts.incidents}
    return people


def _linkable(sources: dict[int, Source], index: FactIndex) -> dict[int, Source]:
    """The sources, each keeping its link only when the writer may show it."""
    return {
        n: s if not s.url or normalise_url(s.url) in index.urls else Source(n, s.text)
        for n, s in sources.items()
    }


def grade(text: str, rendered: Rendered) -> GroundingReport:
    """Every check a narrative or digest must pass: not empty, not an echo of the request,
    within its length, about this run (`bot.llm.gates`), grounded in the facts, and crediting
    people only with what the facts credit them with (`bot.llm.people`)."""
    if not text.strip():
        return GroundingReport(problems=["the reply was empty"])
    echo = echoes_request(text, rendered.instructions)
    if echo is not None:
        return GroundingReport(problems=[echo])
    report = GroundingReport()
    if rendered.max_words:
        long = length_problem(text, max_words=rendered.max_words, max_chars=rendered.max_chars)
        if long is not None:
            report.problems.append(long)
    if rendered.cited is not None:
        # cited prose: each sentence against what it cites; citing a fact of the run is
        # being about the run (its name need not be repeated)
        if not citations_in(text):
            report.problems.append(
                "the reply cites no facts: end each sentence that says something with the [n] "
                "of the facts or sources it rests on"
            )
        report.problems.extend(check_sentences(text, rendered.cited))
        return report
    if not about_the_run(text, rendered.index, rendered.names):
        report.problems.append(
            "the reply does not say anything about this run: name it and what happened to it"
        )
    report.problems.extend(check(text, rendered.index).problems)
    if rendered.people is not None:
        report.problems.extend(check_people(text, rendered.people))
    return report


async def write_grounded(
    store: Store,
    llm: LLMClient | None,
    rendered: Rendered,
    template: str,
    *,
    run_slug: str | None,
    now: datetime,
    cache_key: str | None = None,
) -> LLMOutput:
    """Call, check, retry once with feedback, else the template. Never raises for model trouble."""
    output: LLMOutput | None = None
    if llm is not None:
        try:
            output = await _attempt(store, llm, rendered, run_slug=run_slug, now=now)
        except LLMUnavailable as exc:
            llm.note_fallback(exc, rendered.task, now)
    if output is None:
        output = LLMOutput(
            task=rendered.task,
            prompt_name=rendered.prompt_name,
            prompt_hash=rendered.prompt_hash,
            model=TEMPLATE_MODEL,
            content=sanitize_output(
                template, allowed_urls=rendered.index.urls, limit=rendered.max_chars
            ),
            created_at=now,
            run_slug=run_slug,
            fallback=True,
        )
    output.cache_key = cache_key
    await store.llm.record(output)
    return output


async def _attempt(
    store: Store, llm: LLMClient, rendered: Rendered, *, run_slug: str | None, now: datetime
) -> LLMOutput | None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": rendered.user}]
    problems: list[str] = []
    for attempt in range(2):
        result = await llm.complete(
            system=rendered.system, messages=messages, max_tokens=rendered.max_tokens, now=now
        )
        report = grade(result.text, rendered)
        if report.ok:
            return _final(result, rendered, run_slug=run_slug, now=now)
        problems = report.problems
        await store.llm.record(
            result.output(
                task=f"{rendered.task}.rejected",
                prompt_name=rendered.prompt_name,
                prompt_hash=rendered.prompt_hash,
                content=result.text + "\n\n[grounding]\n" + report.feedback(),
                created_at=now,
                run_slug=run_slug,
            )
        )
        if attempt == 0:
            feedback = load_prompt("grounding_retry").render(problems=report.feedback())
            messages = [
                *messages,
                {"role": "assistant", "content": result.text or "(empty)"},
                {"role": "user", "content": feedback},
            ]
    log.warning(
        "LLM %s failed the grounding check twice (%s); using the template text",
        rendered.task,
        "; ".join(problems[:5]),
    )
    return None


def within_words(text: str, max_words: int) -> str:
    """`text` ended at its last whole sentence within `max_words` words (citation markers do
    not count): a reply a little over its budget passes the length check and is then trimmed
    here, never published long and never cut mid-sentence. The first sentence always stays."""
    if _words(text) <= max_words:
        return text
    pos, count, keep = 0, 0, None
    for piece in sentences(text):
        start = text.find(piece, pos)
        if start < 0:
            break
        pos = start + len(piece)
        count += _words(piece)
        if count > max_words and keep is not None:
            break
        keep = pos
    return text[:keep].rstrip() if keep is not None else text


def _words(text: str) -> int:
    """Words as a reader counts them: citation markers and lone punctuation left out."""
    return sum(1 for w in strip_citations(text).split() if any(c.isalnum() for c in w))


def _final(
    result: LLMResult, rendered: Rendered, *, run_slug: str | None, now: datetime
) -> LLMOutput:
    said = within_words(result.text, rendered.max_words) if rendered.max_words else result.text
    text = sanitize_output(said, allowed_urls=rendered.index.urls, limit=rendered.max_chars)
    if rendered.cited is not None:
        # after the length cap, so that no cap cuts a link in half; the links are the
        # sources' own (`_linkable`), not the model's
        text = link_citations(text, rendered.cited.sources)
    return result.output(
        task=rendered.task,
        prompt_name=rendered.prompt_name,
        prompt_hash=rendered.prompt_hash,
        content=text,
        created_at=now,
        run_slug=run_slug,
    )
