"""`/digest [run]`: compose the last 24 hours now and reply. Composing may call the LLM, so the
command defers first. The scheduled daily digest is not here: `bot.app` runs it through the
outbox (see `bot.outputs.digests.run_due_digests`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import card_to_embed, discord_time
from bot.outputs.digests import compose_text
from bot.render.cards import digest_card
from bot.services.digest import build_digest
from cogs.common import NO_MENTIONS, resolve_run, run_autocomplete

if TYPE_CHECKING:
    from bot.app import RunscribeBot


class Digest(commands.Cog):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot

    @app_commands.command(name="digest", description="What happened to a run in the last 24 hours")
    @app_commands.describe(run="Which run (optional when only one is tracked)")
    @app_commands.autocomplete(run=run_autocomplete)
    async def digest(self, interaction: discord.Interaction, run: str | None = None) -> None:
        bot = self.bot
        slug = await resolve_run(bot, run, interaction)
        await interaction.response.defer(thinking=True)
        facts = await build_digest(bot.reader, slug, bot.clock())
        facts.text = await compose_text(facts, bot.rounds.digest_composer)
        embed = card_to_embed(digest_card(facts, discord_time))
        await interaction.followup.send(embed=embed, allowed_mentions=NO_MENTIONS)


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Digest(bot))
