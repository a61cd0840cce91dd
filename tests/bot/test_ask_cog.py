"""`/ask` through discord.py's real CommandTree against the fake Discord: public by default,
ephemeral with `private`, linked citations, bad input and the rate limit answered privately,
and a model's invented citation or ping never shown."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from bot.llm.client import LLMClient
from bot.process.wiring import answer_writer
from tests.bot.conftest import StartBot
from tests.bot.test_cogs import answered, option
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.discord import FakeDiscord

QUESTION = "why did we fork aurora-main-wd-c9e514?"
LINK = re.compile(r"\[\\\[(\d+)\\\]\]\((https://[^)\s]+)\)")


def sent_mentions(fake: FakeDiscord, record: Any) -> list[Any]:
    """`allowed_mentions` of every followup sent for this interaction."""
    return [
        (r.json or {}).get("allowed_mentions")
        for r in fake.message_requests()
        if r.path.startswith("/webhooks/") and record.token in r.path
    ]


async def followup(fake: FakeDiscord, record: Any) -> dict[str, Any]:
    await fake.wait_for(lambda: record.followups)
    return record.followups[0]


async def test_ask_answers_publicly_with_linked_citations(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    record = await fake.slash("ask", [option("question", QUESTION)])
    body = await answered(record)
    assert body["type"] == 5 and not (body.get("data") or {}).get("flags", 0) & 64
    message = await followup(fake, record)
    assert not message.get("flags", 0) & 64
    assert sent_mentions(fake, record) == [{"parse": []}]
    [embed] = message["embeds"]
    assert embed["title"] == f"Q: {QUESTION}"
    labels = [int(n) for n in re.findall(r"\\\[(\d+)\\\]", embed["description"])]
    assert labels == list(range(1, len(labels) + 1)) and len(labels) >= 3
    links = LINK.findall(embed["description"])
    assert links  # events with a URL are linked (W&B state changes have none)
    assert all("github.com" in url or "discord.com" in url or "wandb" in url for _, url in links)
    assert "<t:" in embed["description"]  # each citation dated in the reader's own zone
    assert "no LLM answer" in embed["footer"]["text"]
    size = len(embed["title"]) + len(embed.get("description", "")) + len(embed["footer"]["text"])
    assert size <= 6000


async def test_private_answers_are_ephemeral(start_bot: StartBot, fake: FakeDiscord) -> None:
    await start_bot()
    record = await fake.slash("ask", [option("question", QUESTION), option("private", True, 5)])
    body = await answered(record)
    assert body["type"] == 5 and body["data"]["flags"] & 64
    message = await followup(fake, record)
    assert message["flags"] & 64


@pytest.mark.parametrize(
    ("question", "expected"),
    [("?!? *** (AND OR NOT) -", "nothing to search for"), ("x" * 2001, "2,000")],
)
async def test_bad_questions_get_a_private_line(
    start_bot: StartBot, fake: FakeDiscord, question: str, expected: str
) -> None:
    await start_bot()
    record = await fake.slash("ask", [option("question", question)])
    body = await answered(record)
    assert body["type"] == 4 and body["data"]["flags"] & 64
    assert expected in body["data"]["content"] and "\n" not in body["data"]["content"]


async def test_unknown_run_gets_a_private_hint(start_bot: StartBot, fake: FakeDiscord) -> None:
    await start_bot()
    record = await fake.slash("ask", [option("question", QUESTION), option("run", "nope")])
    body = await answered(record)
    assert body["type"] == 4 and body["data"]["flags"] & 64
    assert "unknown run 'nope'" in body["data"]["content"]


async def test_sixth_question_in_a_minute_is_politely_refused(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    for _ in range(5):
        record = await fake.slash("ask", [option("question", QUESTION)])
        assert (await answered(record))["type"] == 5
    record = await fake.slash("ask", [option("question", QUESTION)])
    body = await answered(record)
    assert body["type"] == 4 and body["data"]["flags"] & 64
    assert "try again in" in body["data"]["content"]
    other = await fake.slash("ask", [option("question", QUESTION)], user_id=800_000_000_000_000_777)
    assert (await answered(other))["type"] == 5  # the limit is per user


async def test_model_inventions_and_pings_never_reach_the_channel(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    bot = await start_bot()
    async with FakeAnthropic() as anthropic:
        llm = LLMClient(
            bot.store,
            api_key="sk-test",
            base_url=anthropic.base_url,
            model="claude-haiku-4-5",
            max_retry_wait=0.01,
        )
        answers = answer_writer(bot.store, llm)
        bot.runtime = dataclasses.replace(bot.runtime, llm=llm, answers=answers)  # type: ignore[type-var]
        anthropic.push(
            text("@everyone it forked for the optimizer change [1][99], see https://evil.example"),
            text("@everyone <@&42> The fork carried the optimizer change from #1519 [2]."),
        )
        try:
            record = await fake.slash("ask", [option("question", QUESTION)])
            first = await followup(fake, record)
            # the matches are shown first; the written answer replaces them in place
            await fake.wait_for(lambda: "answered by" in first["embeds"][0]["footer"]["text"])
        finally:
            await llm.aclose()
    webhook = [r.method for r in fake.message_requests() if r.path.startswith("/webhooks/")]
    assert webhook == ["POST", "PATCH"]
    [embed] = first["embeds"]
    shown = embed["description"] + "".join(f["value"] for f in embed.get("fields", []))
    assert "answered by the LLM" in embed["footer"]["text"]
    assert "@everyone" not in shown and "<@&" not in shown
    assert "[99]" not in shown and "99\\]" not in shown and "evil.example" not in shown
    assert LINK.findall(embed["description"])  # [1] linked to its event
    assert sent_mentions(fake, record) == [{"parse": []}, {"parse": []}]
