"""LLM enrichment: summary, tag, incident flag + severity and newsworthy flag for many events per
request, through a forced tool call whose input is validated strictly.

- **Batches.** Events are packed up to `max_batch` per request and up to `max_batch_tokens`
  estimated input tokens. The system prompt, instructions and tool schema are paid once per batch;
  each event costs its fenced text (body cleaned by the rules' `clean_text`, then capped at
  `BODY_CHARS`), which keeps the amortized input under ~300 tokens per event. The fixed part
  (tool schema, system prompt, instructions) is sent with `cache_control` for prompt caching;
  the API caches it only above a model-dependent minimum length (below it nothing happens).
- **Cache.** Each enriched event is recorded in `llm_outputs` with
  `cache_key = sha(prompt version, event identity, content hash)`. An event seen again with the
  same content is answered from the store with no request; an edit changes the content hash and
  is enriched again. The prompt version covers the system prompt, the enrich prompt and the tool
  schema, so a prompt change re-enriches lazily (only events that come through again).
- **Fallback.** No key, a spent budget, a failed call: every affected event gets the rules'
  enrichment. A malformed item (unknown or duplicate id, bad tag, over-long or empty summary,
  wrong types, a number not in the event) is asked for once more, in a small batch of the
  refused items with the reason for each (`prompts/enrich_retry.md`), and only then falls back
  for that event. A fallback summary is never a heading of the post nor cut mid-phrase
  (`fallback_summary`).
- **Cost.** A batch's usage is split evenly over the rows it produced; the share of events whose
  items were rejected is recorded as one `enrich.rejected` row, so `usage` adds up to the bill.

Discord bursts: `group_conversations` turns consecutive messages of one channel into one
conversation event. It is pure; see its docstring for how the pipeline uses it. The conversation
is context, never judged itself: each chat message with substance is one item, judged with the
lines of its burst written before it (`context_lines`), so the model's verdict on a live
report lands on the message that reports it, the unit the incident engine reads.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from bot.core.numbers import fmt_int
from bot.core.timeutil import utcnow
from bot.enrich.context import ThreadContext
from bot.enrich.conversations import MAX_SPAN, context_lines, group_conversations
from bot.enrich.markdown import clean_text
from bot.enrich.rules import Enrichment, enrich_event
from bot.llm.client import LLMClient, LLMResult, LLMUnavailable, estimate_tokens
from bot.llm.gates import echoes_request, instruction_shingles
from bot.llm.grounding import FactIndex, check
from bot.llm.people import check_people, given, known_people
from bot.llm.prompts import load_prompt, short_hash
from bot.llm.safety import URL_RE, fence, sanitize_output, urls_in
from bot.models import TAGS, Event, LLMOutput
from bot.store import Store
from bot.store.events import RETRY_LABEL

log = logging.getLogger(__name__)

TASK = "enrich"
TOOL_NAME = "record_enrichments"
SUMMARY_MAX = 200
BODY_CHARS = 600
TITLE_CHARS = 160
SEVERITIES = ("info", "warning", "critical")
OUTPUT_TOKENS_PER_EVENT = 110  # max_tokens budget per item; typical use is ~60

ENRICH_TOOL: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": "Record the enrichment of every event in the batch, one item per event id.",
    "input_schema": {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer", "description": "the event's id"},
                        "summary": {"type": "string", "maxLength": SUMMARY_MAX},
                        "tag": {"type": "string", "enum": list(TAGS)},
                        "incident": {"type": "boolean"},
                        "live_report": {"type": "boolean"},
                        "severity": {"type": "string", "enum": list(SEVERITIES)},
                        "newsworthy": {"type": "boolean"},
                    },
                    "required": [
                        "id",
                        "summary",
                        "tag",
                        "incident",
                        "live_report",
                        "severity",
                        "newsworthy",
                    ],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["items"],
        "additionalProperties": False,
    },
}


def prompt_version() -> str:
    """Hash of everything that shapes an enrichment: system prompt, enrich prompt, tool schema."""
    system = load_prompt("system")
    enrich = load_prompt("enrich")
    batch = load_prompt("enrich_batch")
    tool = json.dumps(ENRICH_TOOL, sort_keys=True)
    return short_hash(system.text, enrich.text, batch.text, tool)


def fixed_instructions() -> list[str]:
    """The part of every enrichment request that never changes: the system prompt and the
    enrichment instructions (with the tool schema ahead of them, the cached prefix)."""
    return [
        load_prompt("system").render(),
        load_prompt("enrich").render(tool_name=TOOL_NAME, tags=", ".join(TAGS)),
    ]


@functools.cache
def _instructions() -> frozenset[tuple[str, ...]]:
    return instruction_shingles(load_prompt("system").text, load_prompt("enrich").text)


@functools.cache
def _request_words() -> str:
    return "\n".join(load_prompt(name).text for name in ("system", "enrich", "enrich_batch"))


def label(version: str | None = None) -> str:
    return f"llm:enrich@{(version or prompt_version())[:8]}"


def cache_key(event: Event, version: str | None = None) -> str:
    """Same prompt, same event identity, same content → same key."""
    digest = hashlib.sha256()
    for part in (
        version or prompt_version(),
        event.source,
        event.kind,
        event.author or "",
        event.ref or "",
        event.content_hash,
    ):
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return "enrich:" + digest.hexdigest()[:32]


def rules_for(event: Event) -> Enrichment:
    """The rules' enrichment, with a summary a reader can take as one: never a markdown
    heading standing for the whole post, never a sentence cut mid-phrase."""
    enrichment = enrich_event(event)
    summary = fallback_summary(enrichment.summary, event)
    return enrichment if summary == enrichment.summary else replace(enrichment, summary=summary)


_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+(?P<text>.+?)\s*#*\s*$", re.MULTILINE)
# Where a long sentence may end early without leaving a phrase open.
_CLAUSE_END = re.compile(r"(?:[,;:]|\s[—–-])\s|\s(?:and|but|because|so|which|while|after|since)\s")
MIN_CUT = 40  # characters a shortened summary keeps at least


def fallback_summary(summary: str, event: Event) -> str:
    """`summary` unless it is one of the body's headings (the post's first real sentence then,
    else its title) or was cut mid-phrase (then ended at its last whole clause)."""
    headings = {m.group("text").strip().lower() for m in _HEADING_LINE.finditer(event.body or "")}
    if summary.strip().rstrip(".:").lower() in headings:
        rest = _HEADING_LINE.sub("", event.body or "").strip()
        if rest:
            return fallback_summary(enrich_event(replace(event, body=rest)).summary, event)
        title = (event.title or "").strip()
        return title if title and title.lower() not in headings else f"Posted “{summary.strip()}”."
    if not summary.endswith("…"):
        return summary
    cut = summary[:-1]
    ends = [m.start() for m in _CLAUSE_END.finditer(cut) if m.start() >= MIN_CUT]
    if ends:
        return cut[: ends[-1]].rstrip(" ,;:—–-") + "."
    sentence = re.match(rf"(.{{{MIN_CUT},}}?[.!?])\s", cut)
    return sentence.group(1) if sentence else summary


def prepare_body(text: str, limit: int = BODY_CHARS) -> str:
    """Rules-cleaned prose, capped: the head carries the point, a short tail the conclusion."""
    cleaned = clean_text(text or "").strip()
    if len(cleaned) <= limit:
        return cleaned
    head = int(limit * 0.8)
    tail = limit - head - 5
    cut = cleaned[:head]
    space = cut.rfind(" ")
    if space > head * 0.7:
        cut = cut[:space]
    end = cleaned[-tail:]
    space = end.find(" ")
    if 0 <= space < tail * 0.3:
        end = end[space + 1 :]
    return f"{cut} […] {end}"


def _capped(text: str, limit: int = TITLE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_event(local_id: int, event: Event, said_before: Sequence[str] = ()) -> str:
    """One event as fenced data; metadata as attributes, text as the fenced body. A comment or
    review carries its thread (title, labels, issue or PR) as the rules read it, and GitHub's
    author_association, so the model judges it in the same context; a chat message carries the
    lines of its burst before it (`said_before`), marked as such, to read it against."""
    title = _capped(event.title or "")
    body = prepare_body(event.body)
    text = f"title: {title}\n{body}" if title else body
    if said_before:
        earlier = "\n".join(f"> {' '.join(line.split())}" for line in said_before)
        text = (
            f"(earlier in this conversation, for context only)\n{earlier}\n(this message)\n{text}"
        )
    context = ThreadContext.of(event)
    in_thread = event.kind not in ("issue", "pull")
    return fence(
        text or "(no text)",
        source=event.source,
        id=local_id,
        kind=event.kind,
        ref=event.ref,
        author=event.author,
        association=context.association,
        state=event.state,
        date=event.at.strftime("%Y-%m-%d") if event.at else None,
        thread=_capped(context.title) if in_thread else None,
        thread_kind=context.kind if in_thread and context.kind != "channel" else None,
        labels=_capped(", ".join(context.labels)),
    )


def _to_json(enrichment: Enrichment) -> str:
    return json.dumps(
        {
            "summary": enrichment.summary,
            "tag": enrichment.tag,
            "incident": enrichment.incident,
            "live_report": enrichment.live_report,
            "severity": enrichment.severity,
            "incident_kind": enrichment.incident_kind,
            "newsworthy": enrichment.newsworthy,
        },
        sort_keys=True,
    )


def _from_json(content: str) -> Enrichment | None:
    try:
        data = json.loads(content)
        enrichment = Enrichment(
            summary=str(data["summary"]),
            tag=str(data["tag"]),
            incident=bool(data["incident"]),
            severity=data.get("severity"),
            incident_kind=data.get("incident_kind"),
            newsworthy=bool(data["newsworthy"]),
            live_report=bool(data.get("live_report", data["incident"])),
        )
    except (ValueError, KeyError, TypeError):
        return None
    if enrichment.tag not in TAGS or not enrichment.summary:
        return None
    return enrichment


@dataclass(slots=True)
class _Pending:
    local_id: int
    event: Event
    rendered: str
    key: str
    context: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.rendered)


def plan_batches(
    items: Sequence[_Pending], *, max_events: int, max_tokens: int
) -> list[list[_Pending]]:
    batches: list[list[_Pending]] = []
    current: list[_Pending] = []
    size = 0
    for item in items:
        if current and (len(current) >= max_events or size + item.tokens > max_tokens):
            batches.append(current)
            current, size = [], 0
        current.append(item)
        size += item.tokens
    if current:
        batches.append(current)
    return batches


def validate_item(
    raw: Any, event: Event, seen_text: str, base: Enrichment, known: Iterable[str] = ()
) -> Enrichment | None:
    """A tool item → Enrichment, or None when anything about it is off. `known`: the run's
    people; the summary may name or credit only the people the event does (`bot.llm.people`)."""
    return check_item(raw, event, seen_text, base, known)[0]


def check_item(
    raw: Any, event: Event, seen_text: str, base: Enrichment, known: Iterable[str] = ()
) -> tuple[Enrichment | None, str]:
    """(the item as an Enrichment, "") or (None, why it was refused): the reason goes back to
    the model in the retry."""
    if not isinstance(raw, dict):
        return None, "the item is not an object"
    summary, tag = raw.get("summary"), raw.get("tag")
    incident, severity, newsworthy = raw.get("incident"), raw.get("severity"), raw.get("newsworthy")
    live = raw.get("live_report")
    if not isinstance(summary, str) or not summary.strip() or len(summary.strip()) > SUMMARY_MAX:
        return None, f"the summary must be one line of 1 to {SUMMARY_MAX} characters"
    if tag not in TAGS or not isinstance(incident, bool) or not isinstance(newsworthy, bool):
        return None, "tag, incident and newsworthy must be a known tag and two booleans"
    if not isinstance(live, bool) or (severity is not None and severity not in SEVERITIES):
        return None, "live_report must be a boolean and severity one of info, warning, critical"
    allowed = urls_in([event.body, event.url])
    # a summary has no links and does the task: a link (invented, cut or real) or an echo of
    # the instructions means the item is not an enrichment (`bot.llm.gates`)
    if URL_RE.search(summary):
        return None, "the summary has a link: summaries carry none"
    if echoes_request(summary, _instructions()):
        return None, "the summary repeats the instructions instead of summarising the event"
    clean = sanitize_output(" ".join(summary.split()), allowed_urls=allowed, limit=SUMMARY_MAX)
    # numbers, dates and refs in a summary must come from what the model saw of the event
    grounding = check(clean, FactIndex.build(seen_text))
    if not grounding.ok:
        return None, "; ".join(grounding.problems[:3])
    # people it names are the event's, credited with what the event says they did
    people = check_people(clean, given([seen_text], known, request=_request_words()))
    if people:
        return None, "; ".join(people[:2])
    # a live report is about its incident; the tag and the flag say the same thing
    incident = incident or live or tag == "incident"
    tag = "incident" if incident else tag
    sev = (severity if severity in ("warning", "critical") else "warning") if live else None
    enrichment = Enrichment(
        summary=clean,
        tag=tag,
        incident=incident,
        severity=sev,
        incident_kind=(base.incident_kind if live else None),
        newsworthy=newsworthy or live,
        live_report=live,
    )
    return enrichment, ""


# Rules stood in because the LLM failed: the pipeline offers these events to the LLM again
# (`RETRY_LABEL` lives with the index that finds them, in bot.store.events).


def _render_all(items: Sequence[_Pending]) -> None:
    for n, item in enumerate(items, start=1):
        item.local_id = n
        item.rendered = render_event(n, item.event, item.context)


def _rules_all(items: Sequence[_Pending], label: str) -> dict[int, tuple[Enrichment, str]]:
    return {i.event.id: (rules_for(i.event), label) for i in items if i.event.id is not None}


class LLMEnricher:
    """The pipeline's `Enricher` backed by the LLM, with the rules as the fallback."""

    name = "llm"
    retry_label = RETRY_LABEL

    def __init__(
        self,
        llm: LLMClient,
        store: Store | None = None,
        *,
        run_names: dict[str, str] | None = None,
        max_batch: int = 30,
        max_batch_tokens: int = 8000,
        clock: Callable[[], datetime] = utcnow,
        pause: timedelta = timedelta(minutes=5),
    ):
        self.llm = llm
        self.store = store or llm.store
        self.run_names = run_names or {}
        self.run_facts: dict[str, str] = {}
        self.max_batch = max_batch
        self.max_batch_tokens = max_batch_tokens
        self.clock = clock
        self.requests = 0  # requests sent by this enricher (for tests and the benchmark)
        # After a failed call the LLM is left alone for a while: an outage then costs one slow
        # failure per pause, not one per poll cycle.
        self.pause = pause
        self._paused_until: datetime | None = None

    async def enrich(self, events: Sequence[Event]) -> dict[int, tuple[Enrichment, str]]:
        out: dict[int, tuple[Enrichment, str]] = {}
        version = prompt_version()
        now = self.clock()
        todo: list[_Pending] = []
        for event in events:
            if event.id is None:
                continue
            if event.deleted or not ((event.body or "").strip() or (event.title or "").strip()):
                out[event.id] = (rules_for(event), "rules")
                continue
            key = cache_key(event, version)
            cached = await self.store.llm.by_cache_key(key)
            hit = _from_json(cached.content) if cached and not cached.fallback else None
            if hit is not None and cached is not None:
                out[event.id] = (hit, label(cached.prompt_hash))
                continue
            todo.append(_Pending(0, event, "", key, await self._context(event)))
        if not todo:
            return out
        # one request per run keeps the run name accurate for every event in it
        by_run: dict[str, list[_Pending]] = {}
        for item in todo:
            by_run.setdefault(item.event.run_slug, []).append(item)
        unavailable: LLMUnavailable | None = None
        if self._paused_until is not None and now < self._paused_until:
            unavailable = LLMUnavailable("error", "paused after a recent failure")
        await self.load_run_facts(set(by_run))
        for run_slug, items in by_run.items():
            # Rendering cleans each body with the rules (CPU work): in a worker thread.
            await asyncio.to_thread(_render_all, items)
            for batch in plan_batches(
                items, max_events=self.max_batch, max_tokens=self.max_batch_tokens
            ):
                if unavailable is None:
                    try:
                        out.update(await self._enrich_batch(run_slug, batch, version, now))
                        continue
                    except LLMUnavailable as exc:
                        unavailable = exc
                        self.llm.note_fallback(exc, TASK, now)
                        if exc.reason == "error":
                            self._paused_until = now + self.pause
                # An outage is worth another try later; no key or a spent budget is not.
                fallback = RETRY_LABEL if unavailable.reason == "error" else "rules"
                out.update(await asyncio.to_thread(_rules_all, batch, fallback))
        return out

    async def _context(self, event: Event) -> tuple[str, ...]:
        """What was said before a chat message in its burst (empty for anything else)."""
        if event.kind != "message" or not event.thread:
            return ()
        channel = await self.store.events.in_thread(
            event.run_slug, event.thread, since=event.at - MAX_SPAN, until=event.at, kind="message"
        )
        return tuple(context_lines(channel, event))

    def build_request(self, run_slug: str, batch: Sequence[_Pending]) -> tuple[list[str], str]:
        """(system blocks, user message) for one batch; local ids are 1..n within the batch.
        The system blocks (the system prompt and the enrichment instructions) are the same for
        every batch of every run, so they are sent for prompt caching; the run's name and the
        events are the user message."""
        for n, item in enumerate(batch, start=1):
            if item.local_id != n:
                item.local_id = n
                item.rendered = render_event(n, item.event, item.context)
        now = self.clock()
        user = load_prompt("enrich_batch").render(
            today=f"{now:%Y-%m-%d %H:%M} UTC ({now:%A})",
            run_name=self.run_names.get(run_slug, run_slug),
            run_facts=self.run_facts.get(run_slug) or "(no facts recorded yet)",
            count=len(batch),
            events="\n".join(item.rendered for item in batch),
        )
        return fixed_instructions(), user

    async def load_run_facts(self, run_slugs: set[str]) -> None:
        """The run facts each batch carries (its zone, launch, length), read once per run."""
        for slug in run_slugs - set(self.run_facts):
            run = await self.store.runs.get(slug)
            if run is None:
                continue
            lines = [f"slug: {run.slug}", f"time zone: {run.timezone} (event dates are UTC)"]
            if run.launched_at is not None:
                lines.append(f"launched: {run.launched_at:%Y-%m-%d}")
            if run.total_steps:
                lines.append(f"total steps: {fmt_int(run.total_steps)}")
            self.run_facts[slug] = "\n".join(lines)

    async def _enrich_batch(
        self, run_slug: str, batch: list[_Pending], version: str, now: datetime
    ) -> dict[int, tuple[Enrichment, str]]:
        """One request for the batch; the items it gets wrong are asked for once more, in a
        small batch of their own with the reasons (`enrich_retry`), and only then fall back to
        the rules."""
        authors = [*await known_people(self.store, run_slug), *(i.event.author for i in batch)]
        known = [k for k in authors if k]
        result = await self._request(run_slug, batch, now)
        accepted, rejected = await asyncio.to_thread(self._accept, result, batch, known)
        out = await self._record(result, run_slug, version, now, accepted, rejected)
        if not rejected:
            return out
        retry = [item for item, _ in rejected]
        for n, item in enumerate(retry, start=1):
            item.local_id, item.rendered = n, render_event(n, item.event)
        problems = "\n".join(f"- [{item.local_id}] {why}" for item, why in rejected)
        note = load_prompt("enrich_retry").render(problems=problems)
        try:
            result = await self._request(run_slug, retry, now, note)
        except LLMUnavailable as exc:
            self.llm.note_fallback(exc, TASK, now)
            accepted, rejected = [], [(item, "") for item in retry]
        else:
            accepted, rejected = await asyncio.to_thread(self._accept, result, retry, known)
            out.update(await self._record(result, run_slug, version, now, accepted, rejected))
        if rejected:
            log.warning(
                "LLM enrichment rejected %d item(s) twice (ids %s); using the rules for them",
                len(rejected),
                [item.event.id for item, _ in rejected],
            )
            out.update(await asyncio.to_thread(_rules_all, [i for i, _ in rejected], "rules"))
        return out

    async def _request(
        self, run_slug: str, batch: Sequence[_Pending], now: datetime, note: str = ""
    ) -> LLMResult:
        # (renumbering a later batch renders its events again: CPU work, so in a worker thread)
        system, user = await asyncio.to_thread(self.build_request, run_slug, batch)
        self.requests += 1
        return await self.llm.complete(
            system=system,
            cache_system=True,
            messages=[{"role": "user", "content": user + ("\n\n" + note if note else "")}],
            max_tokens=OUTPUT_TOKENS_PER_EVENT * len(batch) + 200,
            tools=[ENRICH_TOOL],
            tool_name=TOOL_NAME,
            model=self.llm.enrich_model,
            now=now,
        )

    async def _record(
        self,
        result: LLMResult,
        run_slug: str,
        version: str,
        now: datetime,
        accepted: Sequence[tuple[_Pending, Enrichment]],
        rejected: Sequence[tuple[_Pending, str]],
    ) -> dict[int, tuple[Enrichment, str]]:
        """Store the accepted items (the request's cost shared over them) and one
        `enrich.rejected` row for the rest; the accepted as the pipeline takes them."""
        out: dict[int, tuple[Enrichment, str]] = {}
        rows: list[LLMOutput] = []
        parts = len(accepted) + (1 if rejected else 0)
        name = label(version)
        for index, (item, enrichment) in enumerate(accepted):
            assert item.event.id is not None
            out[item.event.id] = (enrichment, name)
            rows.append(
                result.output(
                    task=TASK,
                    prompt_name="enrich",
                    prompt_hash=version,
                    content=_to_json(enrichment),
                    created_at=now,
                    run_slug=run_slug,
                    cache_key=item.key,
                    share=(index, parts),
                )
            )
        if rejected:
            content = {
                "rejected_event_ids": [item.event.id for item, _ in rejected],
                "reasons": [why for _, why in rejected],
                "stop_reason": result.stop_reason,
            }
            row = result.output(
                task=f"{TASK}.rejected",
                prompt_name="enrich",
                prompt_hash=version,
                content=json.dumps(content),
                created_at=now,
                run_slug=run_slug,
                share=(len(accepted), parts),
            )
            # a fully rejected batch carries the whole cost on this row
            rows.append(row if accepted else replace(row, cost_usd=result.cost_usd))
        async with self.store.transaction():
            for row in rows:
                await self.store.llm.record(row)
        return out

    @staticmethod
    def _accept(
        result: LLMResult, batch: list[_Pending], known: Sequence[str] = ()
    ) -> tuple[list[tuple[_Pending, Enrichment]], list[tuple[_Pending, str]]]:
        """(accepted items, refused items with why)."""
        by_id = {item.local_id: item for item in batch}
        found: dict[int, Enrichment] = {}
        reasons: dict[int, str] = {}
        data = result.tool_input
        raw_items = data.get("items") if isinstance(data, dict) else None
        if isinstance(raw_items, list):
            duplicates: set[int] = set()
            for raw in raw_items:
                if not isinstance(raw, dict):
                    continue
                local = raw.get("id")
                if isinstance(local, bool) or not isinstance(local, int) or local not in by_id:
                    continue
                if local in found or local in duplicates:
                    duplicates.add(local)
                    found.pop(local, None)
                    reasons[local] = "the event got more than one item: write exactly one"
                    continue
                item = by_id[local]
                enrichment, why = check_item(
                    raw, item.event, item.rendered, rules_for(item.event), known
                )
                if enrichment is not None:
                    found[local] = enrichment
                else:
                    reasons[local] = why
        accepted = [(by_id[i], e) for i, e in sorted(found.items())]
        rejected = [
            (item, reasons.get(item.local_id, "no item was written for this event"))
            for item in batch
            if item.local_id not in found
        ]
        return accepted, rejected


__all__ = [
    "ENRICH_TOOL",
    "TOOL_NAME",
    "LLMEnricher",
    "cache_key",
    "group_conversations",
    "label",
    "prepare_body",
    "prompt_version",
    "render_event",
]
