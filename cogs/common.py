"""Helpers shared by the command cogs: resolving the `run` option, autocompleting it, and a
private reply that works whether or not the interaction was already answered."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.app import NO_MENTIONS, reply_private
from bot.limits import CHOICE_NAME_LIMIT, CHOICES_LIMIT
from bot.services.runs import pick_run

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


async def resolve_run(bot: RunscribeBot, requested: str | None) -> str:
    """The slug to show. `run` may be left out when exactly one run is tracked."""
    return pick_run(
        await known_slugs(bot),
        requested,
        none="No run is tracked yet: add one to the runs file and reload it.",
        several="Several runs are tracked; pick one with `run`: {slugs}.",
    )


async def run_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    bot: RunscribeBot = interaction.client  # type: ignore[assignment]
    names = {run.slug: run.name for run in bot.runs}
    needle = current.lower()
    choices = []
    for slug in await known_slugs(bot):
        name = names.get(slug, slug)
        if needle in slug or needle in name.lower():
            choices.append(
                app_commands.Choice(name=f"{slug} — {name}"[:CHOICE_NAME_LIMIT], value=slug)
            )
    return choices[:CHOICES_LIMIT]


__all__ = ["NO_MENTIONS", "known_slugs", "reply_private", "resolve_run", "run_autocomplete"]
