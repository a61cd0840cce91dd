"""Who did what: a reply that credits a person with what the facts do not (or names a person of
the run the model was not given) is refused by `bot.llm.people`, retried once with the problem
named, then replaced by the template or the search results; correct replies that name people in
any form (login, @login, display name, possessive, passive, a name only inside a GitHub body)
pass."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from bot.enrich.rules import enrich_event
from bot.llm.ask import check_answer
from bot.llm.client import LLMClient
from bot.llm.enrich import render_event, validate_item
from bot.llm.narrative import write_narrative
from bot.llm.people import check_people, given, known_people
from bot.llm.safety import fence
from bot.models import Event
from bot.narrative.templates import template_narrative
from bot.store import Store
from tests.fakes.anthropic import FakeAnthropic, text
from tests.llm.conftest import make_event
from tests.llm.facts_fixture import narrative_facts
from tests.llm.test_ask import QUESTION, ask, rows, seed

# the fixture's facts: Larry proposes light weight decay on the attention gate in #8833
GOOD = (
    "Hero 70B is training normally [2]. It restarted eighteen hours ago after an InfiniBand fault "
    "(the fast network between GPU hosts) and resumed from a checkpoint after 47 minutes down [9]. "
    "Larry's #8833 would add light weight decay to the attention gate [14]; #8818 is still open "
    "[16]."
)
# as stored and shown: each citation a link to its source, numbered by source page; a computed
# fact (the state, the restart) links to the run's W&B report
GOOD_LINKED = (
    "Hero 70B is training normally [\\[1\\]](https://wandb.ai/acme/hero/reports/1). It "
    "restarted eighteen hours ago after an InfiniBand fault (the fast network between GPU "
    "hosts) and resumed from a checkpoint after 47 minutes down "
    "[\\[1\\]](https://wandb.ai/acme/hero/reports/1). Larry's #8833 would add light weight "
    "decay to the attention gate [\\[2\\]](https://github.com/acme/llm/pull/8833); #8818 is "
    "still open [\\[3\\]](https://github.com/acme/llm/issues/8818)."
)
# the same, crediting a teammate of the run who is nowhere in the facts
ELSEWHERE = GOOD.replace("Larry's #8833 would add", "dana-w's proposal in #8833 would add")

THREAD = (
    fence(
        "k17n3 logged Xid 79 at 04:09 UTC. Draining it; thanks @dave-k for the spare k22n1.",
        source="github",
        author="tomas-r",
        ref="#412",
    )
    + "\n"
    + fence(
        "Relaunched from the 61,000 checkpoint on k22n1 in place of k17n3.",
        source="github",
        author="Mei Lin",
        ref="#412",
    )
)
THREAD_KNOWN = ["tomas-r", "Mei Lin", "priya-k", "will"]


def problems(reply: str) -> list[str]:
    return check_people(reply, given([THREAD], THREAD_KNOWN, request="drained the host"))


def test_correct_credit_in_every_form_passes() -> None:
    for reply in (
        "tomas-r drained k17n3 after it logged Xid 79.",
        "@tomas-r reported Xid 79 on k17n3 at 04:09 UTC.",
        "Mei Lin relaunched from the 61,000 checkpoint on k22n1.",  # a display name
        "mei lin relaunched on k22n1 in place of k17n3.",  # case-insensitive
        "Mei Lin's relaunch on k22n1 replaced k17n3.",  # possessive
        "The host k17n3 was drained by tomas-r after Xid 79.",  # passive
        "dave-k found the spare k22n1 for the relaunch.",  # only inside the GitHub body
        "On Tuesday NCCL timed out, GitHub reported it and InfiniBand was fine.",
        "Training will resume from the 61,000 checkpoint.",  # "will" is a person, and a word
        "Upstream fixed the driver; the vendor replaced k17n3 and Slurm requeued the job.",
    ):
        assert problems(reply) == [], reply


def test_a_wrong_person_is_refused() -> None:
    for reply in (
        "Mei Lin drained k17n3 after it logged Xid 79.",  # the two people swapped
        "tomas-r relaunched from the 61,000 checkpoint on k22n1.",
        "The relaunch on k22n1 was done by tomas-r.",
        "priya-k drained k17n3.",  # a teammate of the run, not in this thread
        "alice drained host k17n3 and requeued the job.",  # nobody of the run at all
        "Carol's fix drains hosts that log Xid 79.",
        "Will relaunched from the 61,000 checkpoint.",
        "The relaunch on k22n1 in #412 by tomas-r went fine.",  # "NOUN … by X"
        "As Mei Lin reported in #412, k17n3 logged Xid 79 at 04:09 UTC.",  # the report follows
        "Bob from infra drained k17n3.",
    ):
        assert problems(reply), reply


def test_a_negated_act_backs_no_claim() -> None:
    thread = fence(
        "Proposal: a WSD cooldown from step 351,000. Not approved yet.",
        source="github",
        author="jun-h",
        ref="#401",
    )
    facts = given([thread], ["jun-h"])
    assert check_people("jun-h proposed a WSD cooldown in #401.", facts) == []
    assert check_people("jun-h approved the WSD cooldown in #401.", facts)


async def test_a_narrative_crediting_a_teammate_of_the_run_is_retried(
    fake: FakeAnthropic, make_llm: Callable[..., LLMClient], store: Store, run, now: datetime
) -> None:
    # dana-w is a person of the run (the store holds her comment) but not in these facts
    await store.events.upsert_many([make_event(1, now - timedelta(days=9), author="dana-w")])
    fake.push(text(ELSEWHERE), text(GOOD))
    output = await write_narrative(store, make_llm(), narrative_facts(now), now)
    assert not output.fallback and output.content == GOOD_LINKED
    retry = fake.message_requests[1].body["messages"][-1]["content"]
    assert "dana-w is not in what you were given" in retry


async def test_a_narrative_that_keeps_crediting_the_wrong_person_gives_the_template(
    fake: FakeAnthropic, make_llm: Callable[..., LLMClient], store: Store, run, now: datetime
) -> None:
    await store.events.upsert_many([make_event(1, now - timedelta(days=9), author="dana-w")])
    fake.push(text(ELSEWHERE), text(ELSEWHERE))
    facts = narrative_facts(now)
    output = await write_narrative(store, make_llm(), facts, now)
    assert output.fallback and output.content == template_narrative(facts)


async def test_an_unknown_name_credited_with_a_proposal_is_refused_too(
    fake: FakeAnthropic, make_llm: Callable[..., LLMClient], store: Store, run, now: datetime
) -> None:
    # without the store's authors "dana-w's proposal" is a possessive of an unknown word:
    # still refused (a name-shaped word in claim position that the request never uses)
    fake.push(text(ELSEWHERE), text(GOOD))
    output = await write_narrative(store, make_llm(), narrative_facts(now), now)
    assert not output.fallback and len(fake.message_requests) == 2


async def test_an_answer_crediting_the_other_source_falls_back_to_search(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)  # priya lowered the decay [1]; ines saw the norms stop growing [2]
    wrong = "ines lowered the gate weight decay from 0.1 to 0.01 [1]."
    fake.push(text(wrong), text(wrong))
    answer = await ask(store, make_llm(), now)
    assert answer.by == "search" and await rows(store, "ask.rejected") == 2
    assert "ines" in fake.message_requests[1].body["messages"][-1]["content"]


async def test_an_answer_naming_the_right_person_is_shown(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    fake.push(
        text(
            "priya lowered the gate weight decay from 0.1 to 0.01 [1]; ines says the "
            "norms stopped growing after the change [2]."
        )
    )
    answer = await ask(store, make_llm(), now)
    assert answer.by == "llm" and QUESTION


def test_an_answer_may_credit_only_the_sources_it_cites(now: datetime) -> None:
    sources = [
        make_event(1, now, author="priya", body="We lowered the gate weight decay to 0.01."),
        make_event(2, now, author="ines", body="The norms stopped growing after the change."),
    ]
    assert check_answer("priya lowered the weight decay to 0.01 [1].", sources, "", "UTC").ok
    # ines wrote [2], which the answer does not cite for this
    assert not check_answer("ines lowered the weight decay to 0.01 [1].", sources, "", "UTC").ok
    # sam is a person of the run, in no source
    report = check_answer("sam lowered the weight decay to 0.01 [1].", sources, "", "UTC", ["sam"])
    assert not report.ok and "sam" in report.problems[0]


def test_an_enrichment_summary_names_only_the_event_s_people(now: datetime) -> None:
    event = make_event(
        3, now, author="tomas-r", body="k17n3 logged Xid 79. Draining it; k22n1 is healthy."
    )
    seen = render_event(1, event)
    item = {
        "id": 1,
        "tag": "incident",
        "incident": True,
        "live_report": False,
        "severity": None,
        "newsworthy": True,
    }
    right = {**item, "summary": "tomas-r is draining k17n3 after Xid 79."}
    wrong = {**item, "summary": "mei-lin drained k17n3 after Xid 79."}
    known = ["tomas-r", "mei-lin"]
    assert validate_item(right, event, seen, enrich_event(event), known) is not None
    assert validate_item(wrong, event, seen, enrich_event(event), known) is None


async def test_the_run_s_people_come_from_the_store_and_follow_it(
    store: Store, run, now: datetime
) -> None:
    events: list[Event] = [
        make_event(n, now - timedelta(hours=10 - n), author=a)
        for n, a in enumerate(["ada", "bo", "ada", "cy"], 1)
    ]
    await store.events.upsert_many(events)
    assert await known_people(store, "hero") == ["cy", "ada", "bo"]  # most recent first
    assert await store.events.authors("hero", limit=2) == ["cy", "ada"]  # bounded
    await store.events.upsert_many([make_event(9, now, author="Dana F")])
    assert (await known_people(store, "hero"))[0] == "Dana F"  # a new event is seen at once
