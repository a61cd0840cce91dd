"""Silences need a responder: `/incidents silence` and `unsilence` through the real CommandTree,
for members with and without the run's `responder_role` or Manage Server; acknowledgement stays
open to everyone and records who."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.config.settings import RunsFile
from bot.core.timeutil import utcnow
from bot.models import Incident, Silence
from bot.store import Store
from tests.bot.conftest import StartBot, with_config
from tests.fakes.discord import FakeDiscord, Interaction
from tests.waiting import PATIENCE

RESPONDERS = 700_000_000_000_000_001
MANAGE_GUILD = 0x20
MEMBER = {"user_id": 800_000_000_000_000_010, "user_name": "mallory"}
RESPONDER = {"user_id": 800_000_000_000_000_011, "user_name": "rita", "roles": [RESPONDERS]}
ADMIN = {"user_id": 800_000_000_000_000_012, "user_name": "ada", "permissions": MANAGE_GUILD}


def option(name: str, value: Any, type_: int = 3) -> dict[str, Any]:
    return {"name": name, "type": type_, "value": value}


async def reply(record: Interaction) -> str:
    """The private answer's text."""
    body = await asyncio.wait_for(record.callback, PATIENCE)
    assert body["type"] == 4 and body["data"]["flags"] & 64, body
    return str(body["data"]["content"])


async def silence(fake: FakeDiscord, who: dict[str, Any], **options: Any) -> str:
    values = {"duration": "2h", "reason": "planned maintenance", "condition": "all", **options}
    return await reply(
        await fake.slash(
            "incidents",
            [option(k, v) for k, v in values.items()],
            subcommand="silence",
            **who,
        )
    )


async def unsilence(fake: FakeDiscord, who: dict[str, Any], silence_id: int) -> str:
    record = await fake.slash(
        "incidents", [option("silence_id", silence_id, 4)], subcommand="unsilence", **who
    )
    return await reply(record)


async def silences(store: Store) -> list[Silence]:
    return await store.incidents.silences("aurora")


@pytest.fixture
def responder_runs(runs: RunsFile, fake: FakeDiscord) -> RunsFile:
    fake.add_role(RESPONDERS, "oncall")
    return with_config(runs, responder_role=RESPONDERS)


async def test_only_responders_and_managers_silence_and_unsilence(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, responder_runs: RunsFile
) -> None:
    await start_bot(runs_file=responder_runs)
    before = len(await silences(seeded_store))

    refused = await silence(fake, MEMBER)
    assert "needs the oncall role or Manage Server" in refused
    assert len(await silences(seeded_store)) == before

    made = await silence(fake, RESPONDER, condition="stall")
    assert made.startswith("Silence #")
    [mine] = [s for s in await silences(seeded_store) if s.matcher == "stall"]
    assert mine.owner == "rita" and mine.id is not None  # a name people know, not an id

    assert "needs the oncall role" in await unsilence(fake, MEMBER, mine.id)
    assert mine.id in [s.id for s in await seeded_store.incidents.active_silences(
        "aurora", utcnow()
    )]  # fmt: skip

    assert await unsilence(fake, ADMIN, mine.id) == f"Silence #{mine.id} ended."
    ended = await seeded_store.incidents.get_silence(mine.id)
    assert ended is not None and ended.cancelled_by == "ada"
    assert (await silence(fake, ADMIN, condition="report:*")).startswith("Silence #")


async def test_without_a_responder_role_only_manage_server_silences(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store
) -> None:
    await start_bot()
    refused = await silence(fake, MEMBER)
    assert "Only members with Manage Server" in refused and "responder_role" in refused
    assert (await silence(fake, ADMIN)).startswith("Silence #")


async def test_unknown_condition_and_enormous_duration_are_refused_plainly(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, responder_runs: RunsFile
) -> None:
    await start_bot(runs_file=responder_runs)
    before = len(await silences(seeded_store))
    unknown = await silence(fake, RESPONDER, condition="evrything")
    assert "unknown condition 'evrything'" in unknown
    for name in ("`all`", "`wandb-state`", "`stall`", "`heartbeat`", "`loss-nan`", "`oom`"):
        assert name in unknown
    enormous = await silence(fake, RESPONDER, duration="9999999999d")
    assert "at most 14 days" in enormous and not enormous.startswith("Sorry")
    assert len(await silences(seeded_store)) == before
    assert (await silence(fake, RESPONDER, duration="14d", condition="loss-*")).startswith(
        "Silence #"
    )


async def test_a_star_is_refused_privately_and_silences_nothing(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, responder_runs: RunsFile
) -> None:
    """`/incidents silence condition:*` silenced every condition (issue 35)."""
    await start_bot(runs_file=responder_runs)
    before = len(await silences(seeded_store))
    said = await silence(fake, RESPONDER, condition="*")
    assert "`*` would silence every condition of the run" in said and "`all`" in said
    assert len(await silences(seeded_store)) == before


async def test_anyone_can_acknowledge_and_it_records_who(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, responder_runs: RunsFile
) -> None:
    now = utcnow()
    incident_id = await seeded_store.incidents.save(
        Incident(
            run_slug="aurora",
            fingerprint="stall",
            kind="stall",
            title="No new step for 25 min",
            status="firing",
            started_at=now,
            fired_at=now,
        )
    )
    await start_bot(runs_file=responder_runs)
    record = await fake.slash(
        "incidents", [option("incident_id", incident_id, 4)], subcommand="ack", **MEMBER
    )
    assert (await reply(record)).startswith(f"Acknowledged incident #{incident_id}")
    incident = await seeded_store.incidents.get(incident_id)
    assert incident is not None and incident.acked_by == "mallory"  # the display name
