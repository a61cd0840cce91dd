"""Helpers shared by the command cogs: resolving the `run` option, autocompleting it, and a
private reply that works whether or not the interaction was already answered."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.mentions import defuse_mentions
from bot.services.runs import pick_run

if TYPE_CHECKING:
    from bot.app import RunscribeBot

log = logging.getLogger(__name__)
NO_MENTIONS = discord.AllowedMentions.none()


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
            choices.append(app_commands.Choice(name=f"{slug} — {name}"[:100], value=slug))
    return choices[:25]


async def reply_private(interaction: discord.Interaction, text: str) -> None:
    """An ephemeral answer; a followup when the interaction was already deferred or answered.
    The text may echo what the user typed, so mentions are escaped as well as disabled."""
    text = defuse_mentions(text)[:2000]
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.send_message(
                text, ephemeral=True, allowed_mentions=NO_MENTIONS
            )
    except discord.HTTPException:
        log.warning("could not answer interaction %s (expired or deleted)", interaction.id)
