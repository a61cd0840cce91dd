"""The status narrative: facts in, grounded prose out, template text when the model is absent,
over budget, failing, or cannot stay within the facts.

Flow of `write_grounded` (shared with the digest): render the prompt from facts → call → check
every number, date, reference and link against the rendered facts (`grounding.check`) → on
failure, one retry in the same conversation with the problems listed → on a second failure, the
template. Rejected drafts are recorded as `<task>.rejected` rows (they cost money and the usage
report shows them); the final text, model or template, is recorded as `<task>` with the prompt
name and hash, model, tokens and cost, after `safety.sanitize_output`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.llm.client import LLMClient, LLMResult, LLMUnavailable
from bot.llm.facts import (
    NarrativeFacts,
    fmt_big,
    fmt_date,
    fmt_duration,
    fmt_int,
    render_facts,
    render_highlights,
    render_open_threads,
    sentence,
)
from bot.llm.grounding import FactIndex, GroundingReport, check
from bot.llm.prompts import load_prompt, short_hash
from bot.llm.safety import sanitize_output
from bot.models import LLMOutput
from bot.store import Store

log = logging.getLogger(__name__)

NARRATIVE_MAX_WORDS = 250
NARRATIVE_MAX_CHARS = 1800
NARRATIVE_MAX_TOKENS = 900
TEMPLATE_MODEL = "template"

FactsBuilder = Callable[[Store, str, datetime], Awaitable[NarrativeFacts]]


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


def render_prompt(task: str, facts: NarrativeFacts, *, max_words: int, **extra: Any) -> Rendered:
    facts_text = render_facts(facts)
    highlights = render_highlights(facts.highlights, facts.timezone)
    threads = render_open_threads(facts.open_threads, facts.timezone)
    system = load_prompt("system")
    prompt = load_prompt(task)
    user = prompt.render(
        facts=facts_text,
        highlights=highlights,
        open_threads=threads,
        max_words=max_words,
        **extra,
    )
    return Rendered(
        task=task,
        prompt_name=task,
        prompt_hash=short_hash(system.text, prompt.text),
        system=system.render(),
        user=user,
        index=FactIndex.build(facts_text, highlights, threads),
        max_chars=NARRATIVE_MAX_CHARS,
        max_tokens=NARRATIVE_MAX_TOKENS,
    )


def _grade(text: str, index: FactIndex) -> GroundingReport:
    if not text.strip():
        return GroundingReport(problems=["the reply was empty"])
    return check(text, index)


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
        report = _grade(result.text, rendered.index)
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


def _final(
    result: LLMResult, rendered: Rendered, *, run_slug: str | None, now: datetime
) -> LLMOutput:
    text = sanitize_output(result.text, allowed_urls=rendered.index.urls, limit=rendered.max_chars)
    return result.output(
        task=rendered.task,
        prompt_name=rendered.prompt_name,
        prompt_hash=rendered.prompt_hash,
        content=text,
        created_at=now,
        run_slug=run_slug,
    )


# -- narrative ---------------------------------------------------------------------------------


def template_narrative(facts: NarrativeFacts) -> str:
    """Plain sentences from the facts alone: what no-key installs show and the fallback."""
    name = facts.run_name
    tz = facts.timezone
    parts: list[str] = []
    if facts.step is None:
        parts.append(f"{name} has not logged any training steps yet.")
    else:
        where = f"step {fmt_int(facts.step)}"
        if facts.total_steps:
            where += f" of {fmt_int(facts.total_steps)}"
        if facts.percent is not None:
            where += f" ({facts.percent:.1f}% of the way)"
        verb = {
            "running": "is training at",
            "finished": "has finished at",
            "crashed": "crashed at",
            "failed": "failed at",
            "killed": "was stopped at",
            "preempted": "was preempted at",
        }.get(facts.state, f"is {facts.state} at")
        opening = f"{name} {verb} {where}"
        if facts.tokens is not None and facts.target_tokens:
            opening += (
                f", with {fmt_big(facts.tokens)} of {fmt_big(facts.target_tokens)} tokens seen"
            )
        parts.append(opening + ".")
        if facts.projected_end and facts.state != "finished":
            parts.append(
                f"At the current pace it should finish around {fmt_date(facts.projected_end, tz)}."
            )
    restart = facts.last_restart
    if restart is not None:
        text = f"The last restart was {fmt_duration(facts.now - restart.at)} ago"
        if restart.resumed_step is not None:
            text += (
                f"; training resumed from the last checkpoint (a saved copy of the model) at "
                f"step {fmt_int(restart.resumed_step)}"
            )
        if restart.down_for is not None:
            text += f" after {fmt_duration(restart.down_for)} down"
        parts.append(text + ".")
        if restart.cause:
            parts.append(f"Cause: {restart.cause.rstrip('.')}.")
    if facts.monitor_stale:
        parts.append(
            "Runscribe has not been able to reach W&B recently, so these figures may be behind; "
            "that says nothing about the run itself."
        )
    open_incidents = [i for i in facts.incidents if i.status != "resolved"]
    resolved = [i for i in facts.incidents if i.status == "resolved"]
    if open_incidents:
        titles = "; ".join(i.title for i in open_incidents[:3])
        parts.append(f"Open incident{'s' if len(open_incidents) != 1 else ''}: {titles}.")
    elif resolved:
        latest = resolved[0]
        parts.append(
            f"No incident is open; the latest, {latest.title.rstrip('.')}, was resolved after "
            f"{fmt_duration(latest.duration(facts.now))}."
        )
    else:
        parts.append("No incident is open.")
    if facts.incidents_total:
        total, healed = facts.incidents_total, facts.self_healed
        line = f"The run has had {total} incident{'s' if total != 1 else ''} so far"
        if healed:
            line += f"; training recovered from {healed} of them on its own"
        parts.append(line + ".")
    paragraphs = [" ".join(parts)]
    if facts.highlights:
        recent = facts.highlights[:3]
        lines = []
        for h in recent:
            who = h.author or "Someone"
            ref = f" ({h.ref})" if h.ref else ""
            lines.append(f"{who}{ref}: {sentence(h.summary)}")
        paragraphs.append("Latest: " + " ".join(lines))
    if facts.open_threads:
        refs = ", ".join(f"{t.ref} {t.title}" if t.ref else t.title for t in facts.open_threads[:4])
        paragraphs.append(f"Still open: {refs}.")
    return "\n\n".join(paragraphs)[:NARRATIVE_MAX_CHARS]


async def write_narrative(
    store: Store, llm: LLMClient | None, facts: NarrativeFacts, now: datetime
) -> LLMOutput:
    """Write, check and store the status narrative for `facts.run_slug`. Always returns a stored
    output (fallback=True when it is the template)."""
    rendered = render_prompt("narrative", facts, max_words=NARRATIVE_MAX_WORDS)
    return await write_grounded(
        store,
        llm,
        rendered,
        template_narrative(facts),
        run_slug=facts.run_slug,
        now=now,
        cache_key=f"narrative:{facts.run_slug}:{facts.fingerprint()}",
    )


def next_refresh_at(
    last: LLMOutput | None, every: timedelta = timedelta(minutes=30)
) -> datetime | None:
    """When the next narrative may be written (for "updated 12 min ago, next in 18 min")."""
    return None if last is None else last.created_at + every


async def refresh_narrative_if_due(
    store: Store,
    llm: LLMClient | None,
    facts_builder: FactsBuilder,
    run_slug: str,
    now: datetime,
    every: timedelta = timedelta(minutes=30),
    *,
    max_age: timedelta = timedelta(hours=6),
) -> LLMOutput | None:
    """Write a new narrative when `every` has passed since the last one AND something new
    happened (state, restart, incidents, highlights or open threads changed — the facts'
    fingerprint), or when the last one is older than `max_age` (its numbers age). Returns the new
    output, or None when nothing was written. Reading facts touches only the store."""
    last = await store.llm.latest(run_slug, "narrative")
    if last is not None and now - last.created_at < every:
        return None
    facts = await facts_builder(store, run_slug, now)
    if last is not None:
        same = last.cache_key == f"narrative:{run_slug}:{facts.fingerprint()}"
        if same and now - last.created_at < max_age:
            return None
    return await write_narrative(store, llm, facts, now)


__all__ = [
    "FactsBuilder",
    "Rendered",
    "next_refresh_at",
    "refresh_narrative_if_due",
    "render_prompt",
    "template_narrative",
    "write_grounded",
    "write_narrative",
]
