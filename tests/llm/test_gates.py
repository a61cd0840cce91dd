"""Text gates beyond numbers: a reply that echoes the request, says nothing about the
run, or outgrows its length never becomes a narrative or digest; an /ask answer that cites
nothing and does not say the history is silent never counts as written by the model."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

from bot.ask.service import AskService
from bot.llm.ask import check_answer
from bot.llm.client import LLMClient
from bot.llm.digest import write_digest
from bot.llm.narrative import write_narrative
from bot.models import RunInfo
from bot.process.wiring import answer_writer
from bot.store import Store
from tests.fakes.anthropic import FakeAnthropic, Recorded, Reply, text
from tests.llm.facts_fixture import digest_facts, narrative_facts
from tests.llm.test_ask import QUESTION, seed


def fake_reply_to(request: Recorded) -> Reply:
    """What a generic fake answers: the start of the request, quoted."""
    return text("Fake reply to: " + request.user_text[:300])


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


@pytest.mark.parametrize(
    "reply",
    [
        None,  # the fake's default: the request quoted
        "Write the status narrative for the training run below: 1 to 3 short paragraphs.",
        "Training is running. No incident is open.",  # grounded, and about nothing
        GOOD + " " + " ".join(["The gate norm keeps growing."] * 80),  # far past its length
        "Done.",
    ],
)
async def test_a_reply_that_does_not_do_the_task_falls_back_to_the_template(
    fake: FakeAnthropic,
    make_llm: Callable[..., LLMClient],
    store: Store,
    run: RunInfo,
    now: datetime,
    reply: str | None,
) -> None:
    if reply is None:
        fake.handler = fake_reply_to
    else:
        fake.push(text(reply), text(reply))
    facts = narrative_facts(now)
    output = await write_narrative(store, make_llm(), facts, now)
    assert output.fallback and output.model == "template"
    assert "Fake reply" not in output.content and "Write the status" not in output.content
    assert len(fake.message_requests) == 2  # one retry with the problems, then the template


async def test_the_digest_never_becomes_the_fakes_echo(
    fake: FakeAnthropic,
    make_llm: Callable[..., LLMClient],
    store: Store,
    run: RunInfo,
    now: datetime,
) -> None:
    fake.handler = fake_reply_to
    output = await write_digest(store, make_llm(), digest_facts(now), now)
    assert output.fallback and "Fake reply" not in output.content


async def test_a_real_narrative_still_passes(
    fake: FakeAnthropic,
    make_llm: Callable[..., LLMClient],
    store: Store,
    run: RunInfo,
    now: datetime,
) -> None:
    fake.push(text(GOOD))
    output = await write_narrative(store, make_llm(), narrative_facts(now), now)
    assert not output.fallback and output.content == GOOD_LINKED


async def test_an_ask_answer_must_cite_or_say_the_history_is_silent(
    fake: FakeAnthropic, make_llm: Callable[..., LLMClient], store: Store, now: datetime
) -> None:
    events = await seed(store, now)
    uncited = "We lowered the gate weight decay from 0.1 to 0.01 because the norms kept growing."
    assert not check_answer(uncited, events, "", "UTC").ok
    silent = "The history does not say who approved the change; the closest is the decay change."
    assert check_answer(silent, events, "", "UTC").ok
    assert check_answer(uncited + " [1]", events, "", "UTC").ok

    fake.handler = fake_reply_to
    service = AskService(store, answer_writer(store, make_llm()))
    answer = await service.ask("hero", QUESTION, now=now)
    assert answer.by == "search"
    assert "Fake reply" not in answer.as_json()["answer"]  # type: ignore[operator]
