"""Slash commands appear on a first start: the bot publishes them, to
DISCORD_GUILD_ID or else globally, whenever their definition differs from what it last published
there (a hash in the store), says so in one log line, and a restart with the same commands sends
no request."""

from __future__ import annotations

import logging

import discord
import pytest

from bot.app import DEFAULT_EXTENSIONS
from bot.services.commands import SOURCE
from bot.store import Store
from tests.bot.conftest import StartBot
from tests.fakes.discord import FakeDiscord


def puts(fake: FakeDiscord) -> list[str]:
    return [r.path for r in fake.requests if r.method == "PUT"]


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "slash commands" in r.getMessage()]


async def test_without_a_guild_the_first_start_publishes_globally_and_a_restart_does_not(
    start_bot: StartBot, fake: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.app")
    bot = await start_bot(guild=False)
    assert puts(fake) == [f"/applications/{fake.app_id}/commands"]
    names = {c["name"] for c in fake.commands[None]}
    assert {"status", "timeline", "incidents", "admin"} <= names
    [line] = said(caplog)
    assert line.startswith(f"published {len(fake.commands[None])} slash commands to every server")
    await bot.close()

    caplog.clear()
    await start_bot(guild=False)
    assert puts(fake) == [f"/applications/{fake.app_id}/commands"]  # nothing new sent
    assert said(caplog) == [
        "slash commands unchanged since last published to every server (global)"
    ]


async def test_to_the_guild_again_when_the_commands_change(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store
) -> None:
    guild = f"/applications/{fake.app_id}/guilds/{fake.guild_id}/commands"
    bot = await start_bot()
    assert puts(fake) == [guild]
    await bot.close()
    bot = await start_bot()
    assert puts(fake) == [guild]  # the same commands: not published again
    await bot.close()
    # A release without one of the cogs: a different definition, published at once.
    fewer = tuple(e for e in DEFAULT_EXTENSIONS if not e.endswith(".digest"))
    assert len(fewer) == len(DEFAULT_EXTENSIONS) - 1
    await start_bot(extensions=fewer)
    assert puts(fake) == [guild, guild]
    assert "digest" not in {c["name"] for c in fake.commands[fake.guild_id]}
    assert await seeded_store.cursors.get(SOURCE, f"{fake.app_id}:{fake.guild_id}") != (None, None)


async def test_a_refused_publish_is_logged_and_retried_at_the_next_start(
    start_bot: StartBot, fake: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.app")
    # Missing Access: the bot was invited without the applications.commands scope.
    fake.inject("PUT", r"/commands$", 403)
    bot = await start_bot()
    [line] = said(caplog)
    assert line.startswith(f"could not publish slash commands to guild {fake.guild_id}")
    assert not fake.commands.get(fake.guild_id)
    await bot.close()
    await start_bot()
    assert {c["name"] for c in fake.commands[fake.guild_id]} >= {"status"}


async def test_no_voice_warnings_at_start(
    start_bot: StartBot, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a fresh process: discord.py warns once per process, so an earlier test's bot
    # would otherwise have spent the warning already.
    monkeypatch.setattr(discord.VoiceClient, "warn_nacl", True)
    monkeypatch.setattr(discord.VoiceClient, "warn_dave", True)
    caplog.set_level(logging.WARNING, logger="discord")
    await start_bot()
    voice = [r.getMessage() for r in caplog.records if "voice" in r.getMessage()]
    assert voice == []
