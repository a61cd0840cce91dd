"""/ask's LLM answer against the local fake Anthropic server: grounded answers pass with their
citations; invented citations, links and numbers never reach the user (one retry, then the
search results); mentions are stripped; outages, slowness and no key fall back; spend is
recorded and answers are cached by question and data version."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta

from bot.ask.service import Answer, AskService
from bot.llm.client import LLMClient, usage_report
from bot.models import Event, RunInfo
from bot.process.wiring import answer_writer
from bot.store import Store
from tests.fakes.anthropic import FakeAnthropic, Recorded, error, slow, text

QUESTION = "Why did we lower the gate weight decay?"


async def seed(store: Store, now: datetime) -> list[Event]:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero 70B", timezone="UTC"))
    base = "https://github.com/acme/llm/issues/812#issuecomment-"
    events = [
        Event(
            run_slug="hero",
            source="github",
            external_id=f"comment:{n}",
            kind="comment",
            at=now - timedelta(days=n),
            author=author,
            ref="#812",
            url=f"{base}{n}",
            body=body,
            thread="github:acme/llm#812",
        )
        for n, author, body in (
            (
                1,
                "priya",
                "We lowered the gate weight decay from 0.1 to 0.01 because the gate "
                "norms kept growing in the late layers.",
            ),
            (
                2,
                "ines",
                "After the gate weight decay change the norms stopped growing; loss "
                "unaffected at step 30,000.",
            ),
        )
    ]
    await store.events.upsert_many(events)
    return events


def check_invariants(answer: Answer) -> None:
    """What `ask --json` promises, whatever the model wrote."""
    data = answer.as_json()
    numbers = {c["n"] for c in data["citations"]}  # type: ignore[union-attr]
    assert numbers == set(range(1, len(numbers) + 1))
    for n in re.findall(r"\[(\d+)\]", str(data["answer"])):
        assert int(n) in numbers
    urls = {c["url"] for c in data["citations"]}  # type: ignore[union-attr]
    for url in re.findall(r"https?://[^\s)\]]+", str(data["answer"])):
        assert url.rstrip(".,") in urls
    assert "@everyone" not in str(data["answer"]) and "@here" not in str(data["answer"])


async def ask(store: Store, llm: LLMClient | None, now: datetime, **kw: object) -> Answer:
    service = AskService(store, answer_writer(store, llm), **kw)  # type: ignore[arg-type]
    answer = await service.ask("hero", QUESTION, now)
    check_invariants(answer)
    return answer


async def rows(store: Store, task: str) -> int:
    row = await store.db.fetchone("SELECT COUNT(*) FROM llm_outputs WHERE task = ?", (task,))
    return int(row[0]) if row else 0


async def test_a_grounded_answer_keeps_its_citations(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    fake.push(text("It was lowered to 0.01 because the gate norms kept growing [2][1]."))
    answer = await ask(store, make_llm(), now)
    assert answer.by == "llm"
    # renumbered in order of first citation: the model's [2] is now [1]
    assert answer.answer.endswith("[1][2].")
    assert len(answer.citations) == 2
    [request] = fake.message_requests
    prompt = request.user_text
    assert '<untrusted_data source="github" n="1"' in prompt
    assert 'kind="question"' in prompt and QUESTION in prompt
    cited_first = answer.citations[0].event
    assert 'n="2" date=' in prompt and cited_first.url in prompt


async def test_invented_citation_is_retried_then_falls_back(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    fake.push(text("Lowered to 0.01 [99]."), text("Lowered to 0.01 [1][99]."))
    answer = await ask(store, make_llm(), now)
    assert answer.by == "search"
    assert "[99]" not in answer.answer and "0.01 [" not in answer.answer
    assert len(fake.message_requests) == 2
    retry = fake.message_requests[1].body["messages"]
    assert "[99] is not a source" in retry[-1]["content"]
    assert await rows(store, "ask.rejected") == 2 and await rows(store, "ask") == 0


async def test_a_retry_that_fixes_the_citation_is_used(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    fake.push(text("Lowered to 0.01 [99]."), text("Lowered to 0.01 [1]."))
    answer = await ask(store, make_llm(), now)
    assert answer.by == "llm" and "[99]" not in answer.answer
    assert await rows(store, "ask.rejected") == 1 and await rows(store, "ask") == 1


async def test_invented_link_never_reaches_the_user(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    bad = "Lowered to 0.01 [1]; details at https://evil.example/phish."
    fake.push(text(bad), text(bad))
    answer = await ask(store, make_llm(), now)
    assert answer.by == "search"
    assert "evil.example" not in json.dumps(answer.as_json())


async def test_invented_number_is_rejected(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    # 0.02 is in no source; 0.01 is only in the source the second draft does not cite
    fake.push(text("Lowered to 0.02 [1]."), text("It was lowered to 0.01 [2]."))
    citing = await ask(store, make_llm(), now)
    texts = [r.user_text for r in fake.message_requests]
    assert citing.by == "search", texts


async def test_mentions_are_stripped(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    fake.push(text("@everyone it was lowered to 0.01 [1]. <@&123> <@456> @here"))
    answer = await ask(store, make_llm(), now)
    assert answer.by == "llm"
    assert "@everyone" not in answer.answer and "<@" not in answer.answer
    assert "@here" not in answer.answer


async def test_outage_and_no_key_fall_back_to_search(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)

    def down(request: Recorded):  # type: ignore[no-untyped-def]
        return error(529, "overloaded")

    fake.handler = down
    answer = await ask(store, make_llm(), now)
    assert answer.by == "search" and len(answer.citations) == 2
    assert answer.answer.splitlines()[1].startswith("[1] ")
    no_key = await ask(store, None, now)
    assert no_key.by == "search" and no_key.answer == answer.answer


async def test_a_slow_model_falls_back_within_the_deadline(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    fake.push(slow(1.5, text("Lowered to 0.01 [1].")))
    answer = await ask(store, make_llm(timeout=5.0), now, deadline=0.2)
    assert answer.by == "search"


async def test_spend_is_recorded_and_shows_in_usage(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    fake.push(text("Lowered to 0.01 [9]."), text("Lowered to 0.01 [1]."))
    await ask(store, make_llm(), now)
    report = usage_report(store, now, daily_budget_usd=5.0)
    by_task = (await report)["today"]["by_task"]
    assert by_task["ask"]["calls"] == 1 and by_task["ask"]["cost_usd"] > 0
    assert by_task["ask.rejected"]["calls"] == 1


async def test_over_budget_answers_from_search(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    await seed(store, now)
    answer = await ask(store, make_llm(daily_budget_usd=0.000001), now)
    assert answer.by == "search" and fake.message_requests == []


async def test_answers_are_cached_until_the_data_changes(
    store: Store, fake: FakeAnthropic, make_llm: Callable[..., LLMClient], now: datetime
) -> None:
    events = await seed(store, now)
    fake.handler = lambda request: text("Lowered to 0.01 [1].")
    llm = make_llm()
    first = await ask(store, llm, now)
    again = await ask(store, llm, now + timedelta(minutes=5))
    assert len(fake.message_requests) == 1
    assert again.cached and again.answer == first.answer
    assert [c.event.id for c in again.citations] == [c.event.id for c in first.citations]
    edited = events[1]
    edited.body += " We will revisit at step 60,000."
    edited.updated_at = now
    await store.events.upsert_many([edited])
    await ask(store, llm, now + timedelta(minutes=6))
    assert len(fake.message_requests) == 2
