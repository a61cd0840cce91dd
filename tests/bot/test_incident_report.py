"""`/incidents report ID` through the real CommandTree: a resolved incident's write-up shown
again (the same card its thread got); an unknown or open one gets a private, plain answer."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.core.timeutil import utcnow
from bot.incidents.writeup import writeup_for
from bot.llm.client import LLMClient
from bot.llm.writeup import ModelPen
from bot.models import Incident, IncidentDetails, IncidentMember, ReportedCause
from bot.posts.writeup import BY_MODEL
from bot.store import Store
from tests.bot.conftest import StartBot
from tests.bot.test_silences import MEMBER, option, reply
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.discord import FakeDiscord
from tests.waiting import PATIENCE


def resolved_stall() -> Incident:
    now = utcnow()
    since = now - timedelta(hours=3)
    cause = ReportedCause(
        "node r7 dropped out of the job", "bob", "Discord #ops", since, "https://example.org/m/1"
    )
    return Incident(
        run_slug="aurora",
        fingerprint="stall",
        kind="stall",
        title="No new step for 25 min",
        status="resolved",
        started_at=since,
        fired_at=since,
        resolved_at=since + timedelta(minutes=40),
        details=IncidentDetails(
            members={
                "stall": IncidentMember("stall", "stall", since, since + timedelta(minutes=40))
            },
            reported_cause=cause,
            fired=True,
        ),
    )


async def test_report_shows_a_resolved_incidents_writeup(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store
) -> None:
    incident = resolved_stall()
    await seeded_store.incidents.save(incident)
    await start_bot()
    record = await fake.slash(
        "incidents", [option("incident_id", incident.id, 4)], subcommand="report", **MEMBER
    )
    body = await asyncio.wait_for(record.callback, PATIENCE)
    assert body["type"] == 4 and not body["data"].get("flags", 0) & 64
    assert body["data"]["allowed_mentions"] == {"parse": []}
    [embed] = body["data"]["embeds"]
    assert embed["title"].startswith(f"Write-up: incident #{incident.id}")
    assert "40 min down (first symptom → cleared)" in embed["description"]
    assert "bob wrote in [Discord \\#ops](https://example.org/m/1)" in embed["description"]
    for heading in ("What happened", "Cause, as reported", "Who acted", "Cost", "Sources"):
        assert f"**{heading}.**" in embed["description"]


async def test_report_shows_the_models_writeup_when_it_wrote_one(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store
) -> None:
    incident = resolved_stall()
    await seeded_store.incidents.save(incident)
    assert incident.id is not None
    answer = (
        "No new step was logged for 25 min [1]. "
        "bob reported that node r7 dropped out of the job [2]."
    )
    async with FakeAnthropic() as model:
        llm = LLMClient(seeded_store, api_key="sk-test", base_url=model.base_url, model="m")
        model.push(text(answer))
        writeup = await writeup_for(seeded_store, incident.id)
        assert (await ModelPen(llm).write(seeded_store, writeup, utcnow())).by == "llm"
        await llm.aclose()
    await start_bot()
    record = await fake.slash(
        "incidents", [option("incident_id", incident.id, 4)], subcommand="report", **MEMBER
    )
    body = await asyncio.wait_for(record.callback, PATIENCE)
    [embed] = body["data"]["embeds"]
    said = embed["description"]
    assert (
        "bob reported that node r7 dropped out of the job [\\[1\\]](https://example.org/m/1)"
        in said
    )
    assert "**Cause, as reported.**" not in said  # the model's words tell it
    assert "**Cost.** 40 min down (first symptom → cleared)" in said  # the code's figures
    assert embed["footer"]["text"].endswith(BY_MODEL)


async def test_report_of_an_unknown_incident_is_a_private_hint(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    record = await fake.slash(
        "incidents", [option("incident_id", 987_654, 4)], subcommand="report", **MEMBER
    )
    assert await reply(record) == "No incident #987654."
