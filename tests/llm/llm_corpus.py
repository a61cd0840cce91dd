"""The LLM regression corpus: a made-up run, the requests the bot sends on it, and
hand-written answers to each, correct and seeded wrong, run through the real checks.

The scenario is a fictional 120B MoE run ("Kestrel", `northwind/kestrel`, Pacific time): a hang
on a node with Xid 79, its diagnosis, recovery and fix PR, an ablation ladder, an optimizer
proposal, Discord chat about checkpoint size and upload time, an eval result, a long-context
plan and chit-chat. Nothing is copied from a real thread.

`capture()` stores the scenario in SQLite and drives the bot's own code against the local fake
Anthropic server, recording every request it sends: the enrichment batch (`LLMEnricher`), the
narrative and digest (`write_narrative`, `write_digest` with facts rendered by
`bot.llm.grounded`) and each `/ask` (`AskService`). `python -m tests.llm.llm_corpus` writes them to
`tests/data/llm_corpus/requests.json` for reading; the answers in
`tests/data/llm_corpus/answers.jsonl` were written against those requests. `grade()` runs one
answer through the checks the bot applies: `validate_item` for an enrichment item,
`grounded.grade` for a narrative or digest, `ask.check_answer` for an answer.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.ask.service import AskService
from bot.enrich.rules import enrich_event
from bot.llm.ask import check_answer
from bot.llm.client import LLMClient
from bot.llm.digest import write_digest
from bot.llm.enrich import LLMEnricher, render_event, validate_item
from bot.llm.grounded import Rendered, render_facts, render_prompt
from bot.llm.grounded import grade as grounded_grade
from bot.llm.narrative import NARRATIVE_MAX_WORDS
from bot.llm.people import known_people
from bot.models import RESTORE, Event, GithubComment, GithubThread, Restart, RunInfo
from bot.narrative.facts import (
    DigestFacts,
    IncidentFact,
    NarrativeFacts,
    open_threads_from,
    select_narrative_highlights,
)
from bot.narrative.templates import DIGEST_MAX_CHARS
from bot.process.wiring import answer_writer
from bot.services.narrative import ask_facts
from bot.store import Database, Store
from tests.fakes.anthropic import FakeAnthropic, Recorded, Reply, text, tool_use

DATA = Path(__file__).resolve().parents[1] / "data" / "llm_corpus"
REQUESTS = DATA / "requests.json"
ANSWERS = DATA / "answers.jsonl"
# cited narratives and digests: a development set, and two held-back sets, each written before
# the checks ran on it and looked at only after its first run (the checks changed after each).
CITED = DATA / "cited.jsonl"
HELDBACK_FIRST = DATA / "cited_heldback.jsonl"
HELDBACK_SECOND = DATA / "cited_heldback_2.jsonl"
# the third was written after the last change to the checks and never tuned on
HELDBACK = DATA / "cited_heldback_3.jsonl"

NOW = datetime(2026, 10, 14, 16, 0, tzinfo=UTC)  # 9:00 a.m. in Los Angeles
SLUG = "kestrel"
RUN = RunInfo(
    slug=SLUG,
    name="Kestrel 120B-A12B MoE",
    total_steps=400_000,
    target_tokens=16e12,
    launched_at=datetime(2026, 8, 31, 17, 0, tzinfo=UTC),
    timezone="America/Los_Angeles",
)
REPO = "https://github.com/northwind/kestrel"
DISCORD = "https://discord.com/channels/5150/7070"
QUESTIONS = (
    "why did kestrel stop on tuesday night?",
    "how big is a checkpoint and how long does the upload take?",
    "who approved the cooldown schedule?",
)


def _at(hours_ago: float) -> datetime:
    return NOW - timedelta(hours=hours_ago)


def _gh(
    n: int,
    kind: str,
    number: int,
    hours_ago: float,
    author: str,
    body: str,
    *,
    title: str,
    labels: Sequence[str] = (),
    state: str | None = None,
    pull: bool = False,
) -> Event:
    own = kind in ("issue", "pull")
    path = "pull" if pull else "issues"
    url = f"{REPO}/{path}/{number}" + ("" if own else f"#issuecomment-88{n:04d}")
    return Event(
        run_slug=SLUG,
        source="github",
        external_id=f"{kind}:{number}" if own else f"comment:88{n:04d}",
        kind=kind,
        at=_at(hours_ago),
        author=author,
        ref=f"#{number}",
        url=url,
        title=title if own else None,
        body=body,
        state=state,
        thread=f"github:northwind/kestrel#{number}",
        # the thread's own description knows its author; a comment also knows its thread
        extra=(
            GithubThread(author_association="MEMBER")
            if own
            else GithubComment(
                thread_title=title,
                thread_prefix="",
                thread_labels=tuple(labels),
                thread_kind="pull" if pull else "issue",
                author_association="MEMBER",
            )
        ).to_json(),
    )


def _dc(n: int, hours_ago: float, author: str, body: str) -> Event:
    return Event(
        run_slug=SLUG,
        source="discord",
        external_id=f"msg:{n}",
        kind="message",
        at=_at(hours_ago),
        author=author,
        ref="#kestrel-run",
        url=f"{DISCORD}/99{n:05d}",
        body=body,
        thread="discord:7070",
    )


HANG = "[incident] Kestrel hung at step 61,500: NCCL timeout after k17n3 fell off the bus"


def events() -> list[Event]:
    """The scenario's GitHub and Discord events (times are hours before NOW)."""
    return [
        _gh(
            1,
            "issue",
            412,
            12.0,
            "tomas-r",
            "Training stopped logging at 04:12 UTC. Last step 61,500. The NCCL watchdog on rank "
            "212 (host k17n3) reports a collective timeout after 1800 s and the job is hung; "
            "nothing has trained since. Looking at the host now.",
            title=HANG,
            labels=("incident",),
            state="open",
        ),
        _gh(
            2,
            "comment",
            412,
            11.5,
            "tomas-r",
            "k17n3 logged Xid 79 at 04:09 UTC (GPU fell off the bus), three minutes before the "
            "timeout. Draining it; @kofi-a swapped in the spare k22n1, which is healthy.",
            title=HANG,
            labels=("incident",),
        ),
        _gh(
            3,
            "comment",
            412,
            10.0,
            "mei-lin",
            "Relaunched from the 61,000 checkpoint on k22n1 in place of k17n3. Step 61,020 "
            "logged at 05:58 UTC with loss 2.087, matching the pre-hang curve. Total downtime "
            "1 h 46 min, and we lost 500 steps.",
            title=HANG,
            labels=("incident",),
        ),
        _gh(4, "comment", 412, 9.5, "ade-o", "thanks both!", title=HANG, labels=("incident",)),
        _gh(
            5,
            "pull",
            415,
            6.0,
            "mei-lin",
            "Fixes the 30-minute wait behind #412: when a host reports Xid 79 the launcher now "
            "drains it and restarts from the latest checkpoint at once instead of waiting for "
            "the NCCL watchdog. Tested by injecting Xid 79 on a 2-node job.",
            title="Drain Xid 79 hosts and restart at once instead of waiting for the NCCL timeout",
            labels=("infra",),
            state="open",
            pull=True,
        ),
        _gh(
            6,
            "issue",
            398,
            30.0,
            "priya-k",
            "Ladder d512-d2048 with and without QK-norm, 8B tokens per rung, same data and "
            "schedule. Question: does QK-norm still help at 12B active parameters?",
            title="[ablation] d512-d2048 ladder: QK-norm vs none",
            labels=("ablation",),
            state="open",
        ),
        _gh(
            7,
            "comment",
            398,
            8.0,
            "priya-k",
            "Results at 8B tokens: d512 3.104 vs 3.118, d1024 2.412 vs 2.431, d2048 2.201 vs "
            "2.219 (QK-norm first). The gap holds at about 0.02 on every rung.",
            title="[ablation] d512-d2048 ladder: QK-norm vs none",
            labels=("ablation",),
        ),
        _gh(
            8,
            "issue",
            401,
            28.0,
            "jun-h",
            "Proposal: start the WSD cooldown at step 351,000 (the last 12.25% of steps), "
            "decaying the learning rate linearly from 3e-4 to 3e-5. Not approved yet.",
            title="Cooldown schedule for the last stretch of Kestrel",
            labels=("optimizer",),
            state="open",
        ),
        _dc(
            9,
            7.0,
            "Sam O",  # a Discord display name
            "the 60k checkpoint is 4,995 GiB and the upload to gs://nw-kestrel took 4h34m. we "
            "should look at parallel uploads before the next permanent one",
        ),
        _dc(10, 6.9, "ravi", "lol same"),
        _dc(
            11,
            5.0,
            "ines",
            "evals at 60k are in: MMLU 58.3 (56.9 at 50k), HellaSwag 79.1. on track",
        ),
        _dc(
            12,
            3.0,
            "jun-h",
            "plan for the end of the run: extend to 65,536-token context for the final 5% of "
            "tokens with YaRN, on the current data mix",
        ),
        _gh(
            13,
            "issue",
            380,
            24 * 20,
            "tomas-r",
            "Kestrel was preempted at step 22,400; back from 22,000 after 38 min.",
            title="[incident] Preemption at step 22,400",
            labels=("incident",),
            state="closed",
        ),
    ]


RESTART = Restart(
    at=_at(10.05),
    kind=RESTORE,
    wandb_run="northwind/kestrel/kestrel-b7-r3",
    previous_run=None,
    from_step=61_500,
    to_step=61_000,
    stopped_at=_at(11.8),
    resumed_at=_at(10.05),
)
HANG_INCIDENT = IncidentFact(
    title="W&B run kestrel-b7-r3 stopped logging at step 61,500",
    status="resolved",
    started_at=_at(11.8),
    resolved_at=_at(10.05),
    severity="critical",
    cause="no step logged for 30 min after step 61,500",
    kind="stall",
    reported_cause="Training stopped logging at 04:12 UTC. Last step 61,500. The NCCL watchdog "
    "on rank 212 (host k17n3) reports a collective timeout",
    reported_by="tomas-r",
)


@dataclass(slots=True)
class Request:
    """One request the bot sent, as the model saw it."""

    id: str
    kind: str  # enrich | narrative | digest | ask
    system: list[str] | str
    user: str


@dataclass(slots=True)
class Scenario:
    store: Store
    events: list[Event]  # stored, with ids, in `events()` order
    requests: list[Request] = field(default_factory=list)
    narrative: Rendered | None = None
    digest: Rendered | None = None
    asks: dict[str, tuple[list[Event], str]] = field(default_factory=dict)  # id → sources, facts
    rendered_events: dict[int, str] = field(default_factory=dict)  # local id → what it saw
    known: list[str] = field(default_factory=list)  # the run's people, as the store holds them


def _system(body: dict[str, Any]) -> list[str] | str:
    system = body.get("system")
    if isinstance(system, list):
        return [b.get("text", "") for b in system]
    return str(system or "")


def _enrich_reply(answers: dict[int, dict[str, Any]]) -> Any:
    def reply(request: Recorded) -> Reply:
        choice = request.body.get("tool_choice") or {}
        if choice.get("type") == "tool":
            items = [answers[i] for i in request.event_ids if i in answers]
            return tool_use(choice["name"], {"items": items})
        return text("(not used)")

    return reply


def narrative_facts(stored: Sequence[Event], now: datetime = NOW) -> NarrativeFacts:
    threads = open_threads_from(stored)
    return NarrativeFacts(
        run_slug=SLUG,
        run_name=RUN.name,
        now=now,
        timezone=RUN.timezone,
        state="running",
        step=62_840,
        total_steps=RUN.total_steps,
        percent=15.7,
        tokens=2.57e12,
        target_tokens=RUN.target_tokens,
        launched_at=RUN.launched_at,
        projected_end=datetime(2027, 4, 17, tzinfo=UTC),
        projected_margin=timedelta(days=8),
        loss=2.081,
        last_restart=RESTART,
        restart_incident=HANG_INCIDENT,
        incidents=[HANG_INCIDENT],
        counts_by_tag={"incident": 5, "ablation": 2, "optimizer": 1, "evals": 1},
        highlights=select_narrative_highlights(stored, now, {t.ref for t in threads if t.ref}),
        open_threads=threads,
        links={"W&B report": "https://wandb.ai/northwind/kestrel/reports/Kestrel--VmlldzoxMjM"},
        incidents_total=2,
        self_healed=0,
        wandb_run=RESTART.wandb_run,
    )


def digest_facts(stored: Sequence[Event]) -> DigestFacts:
    base = narrative_facts(stored)
    fields = {name: getattr(base, name) for name in base.__dataclass_fields__}
    fields["highlights"] = [h for h in base.highlights if NOW - h.at <= timedelta(hours=24)]
    return DigestFacts(
        **fields,
        window_start=NOW - timedelta(hours=24),
        window_end=NOW,
        step_at_start=60_120,
        events_in_window=10,
        restarts_in_window=[RESTART],
        incidents_opened=1,
        incidents_resolved=1,
    )


def load_answers(path: Path = ANSWERS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def development_set() -> list[dict[str, Any]]:
    """Every answer the checks may be tuned on: enrichment and /ask, and the cited narratives
    and digests. (`HELDBACK` is measured, never tuned on.)"""
    return [*load_answers(ANSWERS), *load_answers(CITED)]


# The kind of mistake a seeded wrong answer makes: a value, name or person that is nowhere in
# the request ("invented"), or one that is there but belongs to another fact ("borrowed").
_BORROWED_VARIANTS = frozenset({"wrong_person", "step_neighbour"})


def error_kind(answer: dict[str, Any]) -> str | None:
    """ "invented" or "borrowed" for a wrong answer, None for a correct one."""
    if answer["expect"] == "accept":
        return None
    if answer.get("error"):
        return str(answer["error"])
    return "borrowed" if answer["variant"] in _BORROWED_VARIANTS else "invented"


def enrichment_summaries() -> dict[str, str]:
    """external id → the correct enrichment answer's summary (what the store holds)."""
    out: dict[str, str] = {}
    if not ANSWERS.exists():
        return out
    for answer in load_answers():
        if answer["kind"] == "enrich" and answer["variant"] == "correct":
            out[answer["event"]] = answer["item"]["summary"]
    return out


async def capture(store: Store, fake: FakeAnthropic) -> Scenario:
    """Store the scenario and send every request the bot sends on it; record them."""
    await store.runs.upsert(RUN)
    await store.events.upsert_many(events())
    stored = await store.events.timeline(SLUG, limit=100, newsworthy_only=False)
    stored.sort(key=lambda e: [x.external_id for x in events()].index(e.external_id))
    scenario = Scenario(store=store, events=stored)
    llm = LLMClient(
        store,
        api_key="sk-test-not-a-secret",
        base_url=fake.base_url,
        model="claude-sonnet-4-6",
        max_retry_wait=0.01,
    )
    try:
        # 1. enrichment: one batch, answered with the corpus' correct items where there are any
        correct = {
            a["event"]: a["item"]
            for a in (load_answers() if ANSWERS.exists() else [])
            if a["kind"] == "enrich" and a["variant"] == "correct"
        }
        by_local = {
            n: {**correct[e.external_id], "id": n}
            for n, e in enumerate(stored, 1)
            if e.external_id in correct
        }
        fake.handler = _enrich_reply(by_local)
        enricher = LLMEnricher(llm, store, run_names={SLUG: RUN.name}, clock=lambda: NOW)
        results = await enricher.enrich(stored)
        for n, e in enumerate(stored, 1):
            scenario.rendered_events[n] = render_event(n, e)
        # the store holds the enrichment (the correct answers' summaries, else the rules')
        summaries = enrichment_summaries()
        for e in stored:
            assert e.id is not None
            enrichment, _ = results.get(e.id) or (enrich_event(e), "rules")
            await store.events.set_enrichment(
                e,
                summary=summaries.get(e.external_id, enrichment.summary),
                tag=enrichment.tag,
                incident=enrichment.incident,
                live_report=enrichment.live_report,
                severity=enrichment.severity,
                newsworthy=enrichment.newsworthy,
                enriched_by="llm:corpus",
            )
        stored = [await store.events.get(e.id) for e in stored if e.id is not None]  # type: ignore[misc]
        scenario.events = [e for e in stored if e is not None]
        # 2. the narrative and the digest, rendered from facts by the bot's own code
        fake.handler = lambda request: text("(recorded)")
        facts = narrative_facts(scenario.events)
        scenario.known = await known_people(store, SLUG)
        scenario.narrative = render_prompt(
            "narrative", facts, max_words=NARRATIVE_MAX_WORDS, card=True, known=scenario.known
        )
        await write_narrative_request(store, llm, facts)
        dfacts = digest_facts(scenario.events)
        await write_digest(store, llm, dfacts, NOW)
        from bot.llm.digest import DIGEST_MAX_WORDS

        window = "the 24 hours up to Oct 14, 2026, 9:00 a.m. PDT"
        scenario.digest = render_prompt(
            "digest", dfacts, max_words=DIGEST_MAX_WORDS, window=window, known=scenario.known
        )
        scenario.digest.max_chars = DIGEST_MAX_CHARS
        # 3. /ask: the service's own search, facts and request
        service = AskService(store, answer_writer(store, llm))
        for n, question in enumerate(QUESTIONS, 1):
            searched = await service.search(SLUG, question, NOW)
            await service.ask(SLUG, question, NOW)
            facts_for_ask = await ask_facts(store, SLUG, NOW)
            sources = [hit.event for hit in searched.hits]
            scenario.asks[f"ask-{n}"] = (sources, render_facts(facts_for_ask))
    finally:
        fake.handler = None
        await llm.aclose()
    kinds = {"enrich": 0, "narrative": 0, "digest": 0, "ask": 0}
    for recorded in fake.message_requests:
        if len(recorded.body.get("messages", [])) > 1:
            continue  # a retry after a rejected draft: the corpus answers first requests
        user = recorded.user_text
        if recorded.body.get("tool_choice"):
            kind = "enrich"
        elif "status narrative" in user:
            kind = "narrative"
        elif "daily digest" in user:
            kind = "digest"
        else:
            kind = "ask"
        kinds[kind] += 1
        scenario.requests.append(
            Request(f"{kind}-{kinds[kind]}", kind, _system(recorded.body), user)
        )
    return scenario


async def write_narrative_request(store: Store, llm: LLMClient, facts: NarrativeFacts) -> None:
    from bot.llm.narrative import write_narrative

    await write_narrative(store, llm, facts, NOW)


def grade(scenario: Scenario, answer: dict[str, Any]) -> list[str]:
    """The problems the bot's checks find in one answer (empty: accepted)."""
    kind = answer["kind"]
    if kind == "enrich":
        by_external = {e.external_id: (n, e) for n, e in enumerate(scenario.events, 1)}
        n, event = by_external[answer["event"]]
        raw = {**answer["item"], "id": n}
        accepted = validate_item(
            raw, event, scenario.rendered_events[n], enrich_event(event), scenario.known
        )
        return [] if accepted is not None else ["the item was rejected"]
    if kind in ("narrative", "digest"):
        rendered = scenario.narrative if kind == "narrative" else scenario.digest
        assert rendered is not None
        return grounded_grade(answer["text"], rendered).problems
    sources, facts_text = scenario.asks[answer["request"]]
    return check_answer(answer["text"], sources, facts_text, RUN.timezone, scenario.known).problems


async def _requests() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "corpus.db") as db, FakeAnthropic() as fake:
            scenario = await capture(Store(db), fake)
    return [
        {"id": r.id, "kind": r.kind, "system": r.system, "user": r.user} for r in scenario.requests
    ]


def main(out: Path = REQUESTS) -> int:
    data = asyncio.run(_requests())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(data)} requests to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
