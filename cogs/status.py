"""`/status [run]`: the run's card from the store, with the loss chart. Answers inside Discord's
3 seconds: the report is a handful of indexed reads on the read-only connections (never behind
the poll cycle's writes), and the chart is served from the cache: charts are redrawn in the
background after W&B rounds, and a command whose data is newer than the chart attaches the newest
finished one while this version is drawn. The command defers before any store work when the bot
is busy, and only a run's first chart is waited for (deferred first)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import card_to_embed, discord_time
from bot.render.cards import status_card
from bot.services.narrative import status_with_narrative
from cogs.common import NO_MENTIONS, resolve_run, run_autocomplete

if TYPE_CHECKING:
    from bot.app import RunscribeBot

CHART = "chart.png"


class Status(commands.Cog):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot

    @app_commands.command(name="status", description="Progress, health and ETA of a training run")
    @app_commands.describe(run="Which run (optional when only one is tracked)")
    @app_commands.autocomplete(run=run_autocomplete)
    async def status(self, interaction: discord.Interaction, run: str | None = None) -> None:
        bot = self.bot
        with bot.answering():
            if bot.busy:
                # A poll cycle (sharing this event loop) or other commands are running:
                # acknowledge before any read.
                await interaction.response.defer(thinking=True)
            store = bot.reader
            slug = await resolve_run(bot, run, interaction)
            version = await store.metrics.version(slug)
            png = bot.charting.cache.ready(slug, version)
            if png is None:
                # Data newer than the chart: attach the newest finished one and have this
                # version drawn in the background. Only a run's first chart is waited for.
                png = bot.charting.cache.latest(slug)
                if png is not None:
                    bot.charting.chart_soon(slug, version)
            if png is None and not interaction.response.is_done():
                await interaction.response.defer(thinking=True)  # the first chart is drawn
            report, narrative = await bot.flights.run(
                ("status", slug),
                lambda: status_with_narrative(store, slug, bot.clock(), started_at=bot.started_at),
            )
            if png is None:
                png = await bot.charting.first_chart(slug, version)
            card = status_card(report, narrative, discord_time, chart=CHART if png else None)
            embed = card_to_embed(card)
            files = [discord.File(io.BytesIO(png), filename=CHART)] if png else []
            if interaction.response.is_done():
                await interaction.followup.send(
                    embed=embed, files=files, allowed_mentions=NO_MENTIONS
                )
            else:
                await interaction.response.send_message(
                    embed=embed, files=files, allowed_mentions=NO_MENTIONS
                )


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Status(bot))
