"""The incident write-up's model writer: the write-up's facts (`bot.incidents.writeup`, computed
by code) as numbered sources, the model's cited prose checked sentence by sentence against what
each cites (`bot.llm.grounded.grade`, the narrative's checks), one retry with the problems, else
the template's mark.

`ModelPen.write` is never on an alert's path: the bot's write-up loop calls it for incidents
that resolved (`bot.process.runtime.Runtime.write_writeups`), and the incident delivery and the ops
log read what it stored (`ModelPen.stored`) in a later round. Store first: the output is stored
under `writeup:<incident>:<hash of the prompt and the facts>` before anything posts it, so a
restart finds it (no second call for the same facts) and the outbox's key posts it once; facts
that change (a reopening, a late report) are a new key, written once and edited in.

The cost (downtime, steps and tokens recomputed, GPU-hours), the follow-ups and the sources are
among the facts the model may cite, but the write-up always shows them as the template's lines
(`bot.posts.writeup.paragraphs`): the figures a reader checks are the code's, never reworded."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime

from bot.core.hashing import short_hash
from bot.core.numbers import fmt_big, fmt_int, fmt_value
from bot.core.timeutil import humanize_duration
from bot.incidents.writeup import PROSE_TASK, Prose, Writeup, prose_of
from bot.llm.cited import CitedRequest, Source
from bot.llm.client import LLMClient
from bot.llm.gates import distinctive_names, instruction_shingles
from bot.llm.grounded import TEMPLATE_MODEL, NumberedFacts, Rendered, write_grounded
from bot.llm.grounding import FactIndex
from bot.llm.people import given, known_people
from bot.llm.prompts import load_prompt
from bot.llm.safety import fence
from bot.models import Event, LLMOutput, Restart
from bot.narrative.format import fmt_time, inline
from bot.store import Store

log = logging.getLogger(__name__)

WRITEUP_MAX_WORDS = 160
WRITEUP_MAX_TOKENS = 700
WRITEUP_MAX_CHARS = 1800  # the card keeps room for the computed lines below it
#: How long a write-up may take, retry included, before the template's is used.
WRITE_DEADLINE = 180.0


def fact_sources(w: Writeup) -> list[Source]:
    """The write-up's facts, one numbered source each: a person's words fenced as data and
    linked to where they wrote them; each cost figure a fact of its own (so a figure cited from
    the wrong one is refused)."""
    tz, i = w.zone, w.incident
    items: list[tuple[str, str | None]] = []
    head = f"incident #{w.id} of {inline(w.run_name, 80)}: {inline(i.title, 160)}"
    head += f"; first symptom {fmt_time(i.started_at, tz)}"
    if i.resolved_at is not None:
        head += f"; resolved {fmt_time(i.resolved_at, tz)}"
    first = w.sources[0].url if w.sources else None  # the first symptom's page
    items.append((head + f" (every time here is in {tz})", first))
    for before, outage in zip(w.outages, w.outages[1:], strict=False):
        assert before.until is not None
        items.append(
            (
                f"it reopened: {inline(before.title, 160)} had resolved "
                f"{fmt_time(before.until, tz)}; the condition came back "
                f"{fmt_time(outage.since, tz)}: {inline(outage.title, 160)}",
                None,
            )
        )
        if before.restart is not None:
            items.append((f"in the earlier outage, {_came_back_of(before.restart, tz)}", None))
    if i.cause and w.restart is None:
        items.append(("what the monitor saw: " + fence(inline(i.cause), source="system"), None))
    if w.cause is not None:
        said = w.cause
        when = fmt_time(said.at, tz)
        text = fence(inline(said.text, 400), source=said.source, author=said.author, date=when)
        items.append((f"the cause as a person reported it: {text}", said.url))
    for action in w.actions:
        when = fmt_time(action.at, tz)
        text = fence(inline(action.text, 400), source=action.source, author=action.who, date=when)
        items.append((f"a person acted on it: {text}", action.url))
    if i.acked_by and i.acked_at:
        items.append((f"acknowledged by {inline(i.acked_by, 60)} {fmt_time(i.acked_at, tz)}", None))
    items.append((_came_back(w), _run_page(w)))
    items.extend((line, None) for line in _cost_lines(w))
    items.extend((_follow_up(e), e.url) for e in w.follow_ups)
    return [Source(n, text, url) for n, (text, url) in enumerate(items, 1)]


def _came_back(w: Writeup) -> str:
    r = w.restart
    if r is None:
        said = w.incident.resolution or "the condition cleared"
        return "how it ended: " + fence(inline(said), source="system")
    return _came_back_of(r, w.zone)


def _came_back_of(r: Restart, tz: str) -> str:
    line = f"training came back: W&B run {inline(r.wandb_run.rsplit('/', 1)[-1], 80)} logged again"
    line += f" {fmt_time(r.resumed_at or r.at, tz)}"
    if r.checkpoint_step is not None:
        line += f", from the checkpoint at step {fmt_int(r.checkpoint_step)}"
    if r.to_step is not None and r.to_step != r.checkpoint_step:
        line += f", first step logged {fmt_int(r.to_step)}"
    if r.from_step is not None:
        line += f"; the last step before the interruption was {fmt_int(r.from_step)}"
    if r.previous_run:
        line += f", in W&B run {inline(r.previous_run.rsplit('/', 1)[-1], 80)}"
    return line


def _run_page(w: Writeup) -> str | None:
    """The page of the W&B run training came back in, when the write-up links it."""
    if w.restart is None:
        return None
    name = w.restart.wandb_run.rsplit("/", 1)[-1]
    return next((s.url for s in w.sources if s.label.endswith(name)), None)


def _cost_lines(w: Writeup) -> list[str]:
    """Each figure next to the words that say what it is ("down 26 min", "43 GPU-hours"), so a
    figure cited as another one is refused (`bot.llm.cited.misplaced`)."""
    c, lines = w.cost, []
    if c.down is not None:
        lines.append(f"downtime: training was down {humanize_duration(c.down)} ({c.down_means})")
    if c.steps_recomputed is not None:
        line = f"recomputed: {fmt_int(c.steps_recomputed)} steps"
        if c.tokens_recomputed is not None:
            line += f" ({fmt_big(c.tokens_recomputed)} tokens)"
        line += " recomputed after the restart"
        if c.recompute_time is not None:
            line += f", recomputing took {humanize_duration(c.recompute_time)}"
            if c.pace.seconds_per_step is not None:
                line += f" at {fmt_value(c.pace.seconds_per_step)} s a step"
        lines.append(line)
    if c.gpu_hours is not None and c.lost is not None and c.gpus is not None:
        lines.append(
            f"GPU-hours: {fmt_int(c.gpu_hours)} GPU-hours without new progress "
            f"({fmt_int(c.gpus)} GPUs for {humanize_duration(c.lost)})"
        )
    if not lines:
        lines.append("cost: no training time lost")
    return lines


def _follow_up(event: Event) -> str:
    what = "pull request" if event.kind == "pull" else "issue"
    text = fence(
        inline(event.title or event.ref or what, 160),
        source=event.source,
        ref=event.ref,
        author=event.author,
        state=event.state,
    )
    return f"follow-up {what} opened about it: {text}"


def writeup_request(w: Writeup, known: tuple[str, ...] = ()) -> Rendered:
    """The request and what its answer is checked against: the narrative's checks (cited
    sentences, numbers kept with their fact, people credited only with what their fact says)."""
    numbered = fact_sources(w)
    facts = NumberedFacts.block(numbered)
    system, prompt = load_prompt("system"), load_prompt("writeup")
    user = prompt.render(facts=facts, max_words=WRITEUP_MAX_WORDS)
    rendered_system = system.render()
    index = FactIndex.build(facts)
    people = {p for p in _people(w) if p}
    return Rendered(
        task=PROSE_TASK,
        prompt_name=PROSE_TASK,
        prompt_hash=short_hash(system.text, prompt.text),
        system=rendered_system,
        user=user,
        index=index,
        max_chars=WRITEUP_MAX_CHARS,
        max_tokens=WRITEUP_MAX_TOKENS,
        max_words=WRITEUP_MAX_WORDS,
        instructions=instruction_shingles(system.text, prompt.text),
        names=(*distinctive_names(w.run_name, w.incident.run_slug), *sorted(people)),
        people=given([user], [*known, *people], request=rendered_system),
        cited=CitedRequest(
            sources={s.n: s for s in numbered},
            always=w.run_name,
            known=tuple(known),
            request=rendered_system + "\n" + user,
        ),
    )


def _people(w: Writeup) -> set[str | None]:
    found = {w.cause.author if w.cause else None, w.incident.acked_by}
    found |= {a.who for a in w.actions} | {e.author for e in w.follow_ups}
    return found


def prose_key(w: Writeup) -> str:
    """The stored write-up's key: the incident, and a hash of the prompt and the facts (what
    the model would be asked), so the same facts are never written twice."""
    system, prompt = load_prompt("system"), load_prompt("writeup")
    facts = NumberedFacts.block(fact_sources(w))
    return f"{PROSE_TASK}:{w.id}:{short_hash(system.text, prompt.text, facts)}"


@dataclass(slots=True)
class ModelPen:
    """The `WriteupPen` of a process with a model key."""

    llm: LLMClient
    deadline: float = WRITE_DEADLINE

    async def stored(self, store: Store, writeup: Writeup) -> Prose | None:
        found = await store.llm.by_cache_key(prose_key(writeup))
        return prose_of(found) if found is not None else None

    async def write(self, store: Store, writeup: Writeup, now: datetime) -> Prose:
        """The write-up's words for its present facts: stored ones when there are, else the
        model's (checked; refused or failing: the template's mark), stored before returning."""
        key = prose_key(writeup)
        found = await store.llm.by_cache_key(key)
        if found is None:
            try:
                found = await asyncio.wait_for(self._write(store, writeup, key, now), self.deadline)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a slow or broken model: the template, never a gap
                log.warning("incident %s write-up: %r; the template is used", writeup.id, exc)
                found = _template_mark(writeup, key, now)
                await store.llm.record(found)
        return prose_of(found)

    async def _write(self, store: Store, writeup: Writeup, key: str, now: datetime) -> LLMOutput:
        known = tuple(await known_people(store, writeup.incident.run_slug))
        # building the facts' index is CPU work: in a worker thread, never on the loop
        rendered = await asyncio.to_thread(writeup_request, writeup, known)
        return await write_grounded(
            store,
            self.llm,
            rendered,
            "",  # the template is written from the facts when shown, never stored
            run_slug=writeup.incident.run_slug,
            now=now,
            cache_key=key,
        )


def _template_mark(w: Writeup, key: str, now: datetime) -> LLMOutput:
    return LLMOutput(
        task=PROSE_TASK,
        prompt_name=PROSE_TASK,
        prompt_hash=key.rsplit(":", 1)[-1],
        model=TEMPLATE_MODEL,
        content="",
        created_at=now,
        run_slug=w.incident.run_slug,
        fallback=True,
        cache_key=key,
    )


__all__ = ["ModelPen", "fact_sources", "prose_key", "writeup_request"]
