"""Helpers shared by the command cogs: resolving the `run` option, autocompleting it, and a
private reply that works whether or not the interaction was already answered."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.app import NO_MENTIONS, reply_private
from bot.core.limits import CHOICE_NAME_LIMIT, CHOICES_LIMIT
from bot.services.runs import channel_run, pick_run

if TYPE_CHECKING:
    from bot.app import RunscribeBot

log = logging.getLogger(__name__)


async def known_slugs(bot: RunscribeBot) -> list[str]:
    """Runs in the runs file, then any others recorded in the store."""
    slugs = [run.slug for run in bot.runs]
    for info in await bot.reader.runs.all():
        if info.slug not in slugs:
            slugs.append(info.slug)
    return slugs


def interaction_run(bot: RunscribeBot, interaction: discord.Interaction | None) -> str | None:
    """The run the interaction's channel belongs to (or the channel its thread is in)."""
    if interaction is None:
        return None
    channel = interaction.channel
    parent = channel.parent_id if isinstance(channel, discord.Thread) else None
    return channel_run(bot.runs, interaction.channel_id, parent)


async def resolve_run(
    bot: RunscribeBot, requested: str | None, interaction: discord.Interaction | None = None
) -> str:
    """The slug to show: the one named, else the run of the channel asked in, else the runs
    file's `default_run`, else the only run tracked."""
    return pick_run(
        await known_slugs(bot),
        requested,
        none="No run is tracked yet: add one to the runs file and reload it.",
        several="Several runs are tracked and this channel belongs to none of them; pick one "
        "with `run` ({slugs}), or set `default_run` in the runs file.",
        channel=interaction_run(bot, interaction),
        default=bot.default_run,
    )


async def run_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    bot: RunscribeBot = interaction.client  # type: ignore[assignment]
    names = {run.slug: run.name for run in bot.runs}
    needle = current.lower()
    choices = []
    slugs = await known_slugs(bot)
    here = interaction_run(bot, interaction)
    if here in slugs:  # the channel's own run first
        slugs.remove(here)
        slugs.insert(0, here)
    for slug in slugs:
        name = names.get(slug, slug)
        if needle in slug or needle in name.lower():
            choices.append(
                app_commands.Choice(name=f"{slug} — {name}"[:CHOICE_NAME_LIMIT], value=slug)
            )
    return choices[:CHOICES_LIMIT]


__all__ = [
    "NO_MENTIONS",
    "interaction_run",
    "known_slugs",
    "reply_private",
    "resolve_run",
    "run_autocomplete",
]
