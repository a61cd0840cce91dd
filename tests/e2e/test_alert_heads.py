"""Alert heads always end right, through the bot against the fake Discord and W&B servers: a
head silenced after it alerted still turns ✅ and loses its Acknowledge button when the incident
resolves, and `/incidents ack` edits the head at once, as the button does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.models import OutboxItem
from bot.outbox.payload import make_payload
from tests.e2e.deployment import (
    MIN,
    assert_head_resolved,
    clean_env,
    crash,
    discord_endpoints,
    fake_discord,
    full_text,
    healthy_deployment,
    resume,
    visible,
    wandb_env,
    wandb_server,
    wb,
)
from tests.fakes.discord import FakeDiscord, Interaction
from tests.fakes.wandb import FakeWandb
from tests.waiting import PATIENCE

__all__ = [  # the deployment's fixtures, shared
    "clean_env",
    "discord_endpoints",
    "fake_discord",
    "wandb_env",
    "wandb_server",
    "wb",
]

MANAGE_GUILD = 0x20


def option(name: str, value: Any, type_: int = 3) -> dict[str, Any]:
    return {"name": name, "type": type_, "value": value}


async def reply(record: Interaction) -> str:
    body = await asyncio.wait_for(record.callback, PATIENCE)
    return str(body["data"]["content"])


async def test_a_silenced_head_still_ends_resolved_without_its_button(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    async with healthy_deployment(tmp_path, wb, fake_discord) as d:
        head = await crash(d, wb)
        assert head["components"], "the alert has its Acknowledge button"

        # a responder silences the run while it is being fixed
        record = await fake_discord.slash(
            "incidents",
            [option("duration", "2h"), option("reason", "fixing the node"), option("run", "hero")],
            subcommand="silence",
            permissions=MANAGE_GUILD,
        )
        assert (await reply(record)).startswith("Silence #")

        resume(wb, d.t0 + 12 * MIN, first_step=80, count=10)
        await d.cycle(d.t0 + 25 * MIN)
        [head] = d.channel()  # silenced: no resolution post in the channel...
        assert_head_resolved(head)  # ...but the head reads resolved and has no button
        # ...and the thread gets only its closing line, then is archived (issue 41)
        [closing] = [visible(m) for m in d.thread(head)]
        assert closing.startswith("✅ Resolved") and "closing this thread" in closing
        assert d.discord.archived(int(head["id"]))
        [incident] = await d.store.incidents.find("hero")
        assert incident.status == "resolved"


async def test_the_ack_command_edits_the_head_like_the_button(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    async with healthy_deployment(tmp_path, wb, fake_discord) as d:
        head = await crash(d, wb)
        assert "acknowledged by" not in full_text(head)
        [incident] = await d.store.incidents.find("hero")

        record = await fake_discord.slash(
            "incidents",
            [option("incident_id", incident.id, 4)],
            subcommand="ack",
            user_name="dana",
        )
        assert (await reply(record)).startswith(f"Acknowledged incident #{incident.id}")
        # no poll cycle in between: the command itself has the head edited
        await fake_discord.wait_for(lambda: d.channel()[0]["edited_timestamp"])
        [head] = d.channel()
        assert "acknowledged by dana" in full_text(head)
        assert head["components"], "still open: the button stays"


async def test_an_edit_in_the_archived_thread_reopens_edits_and_closes_it(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    """Discord refuses edits in an archived thread (50083); an incident's thread is archived
    when it resolves, and its write-up may change later: the edit still lands, and the thread
    is archived again."""
    async with healthy_deployment(tmp_path, wb, fake_discord) as d:
        head = await crash(d, wb)
        resume(wb, d.t0 + 12 * MIN, first_step=80, count=10)
        await d.cycle(d.t0 + 25 * MIN)
        thread = int(head["id"])
        assert d.discord.archived(thread)
        [incident] = await d.store.incidents.find("hero")
        writeup = await d.store.outbox.get_by_key(f"incident:{incident.id}:writeup")
        assert writeup is not None and writeup.id is not None and writeup.message_id
        await d.store.outbox.enqueue(
            OutboxItem(
                channel_id=writeup.channel_id,
                kind="edit",
                payload=make_payload("A later line of the write-up.", edit_of=writeup.id),
                dedup_key=f"incident:{incident.id}:writeup:edit:test",
                run_slug="hero",
            )
        )
        await d.cycle(d.t0 + 27 * MIN)
        [message] = [m for m in d.thread(head) if m["id"] == writeup.message_id]
        assert visible(message) == "A later line of the write-up."
        assert d.discord.archived(thread), "closed again after the edit"
        edit = await d.store.outbox.get_by_key(f"incident:{incident.id}:writeup:edit:test")
        assert edit is not None and edit.status == "sent"
