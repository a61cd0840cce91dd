"""`/forecast [run] [metric]`: each watched metric with its forecast band, as a chart. Drawing
takes a moment per metric, so the command defers first; everything else is read from the store."""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import card_to_embed
from bot.core.limits import CHOICE_NAME_LIMIT, CHOICES_LIMIT
from bot.incidents.forecasts import forecast_configs
from bot.render.cards import forecast_cards, forecast_image
from bot.render.drawer import ChartError
from bot.services.forecasts import forecast_panels
from cogs.common import NO_MENTIONS, known_slugs, resolve_run, run_autocomplete

if TYPE_CHECKING:
    from bot.app import RunscribeBot

log = logging.getLogger(__name__)


class Forecast(commands.Cog):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot

    @app_commands.command(
        name="forecast", description="Watched metrics against their forecast bands"
    )
    @app_commands.describe(
        run="Which run (optional when only one is tracked)",
        metric="One watched metric (default: all of them)",
    )
    @app_commands.autocomplete(run=run_autocomplete)
    async def forecast(
        self, interaction: discord.Interaction, run: str | None = None, metric: str | None = None
    ) -> None:
        bot = self.bot
        slug = await resolve_run(bot, run, interaction)
        info, panels = await forecast_panels(bot.reader, slug, bot.clock(), metric)
        await interaction.response.defer(thinking=True)
        cards = forecast_cards(info.name, panels)
        files = []
        for index, panel in enumerate(panels):
            try:
                png = await bot.charting.drawer.forecast_chart(panel)
            except ChartError:
                # A chart that cannot be drawn costs its image only, never the answer.
                log.exception("forecast chart for %s failed; answering without it", slug)
                cards[index].image = None
                continue
            files.append(discord.File(io.BytesIO(png), filename=forecast_image(index)))
        embeds = [card_to_embed(card) for card in cards]
        await interaction.followup.send(embeds=embeds, files=files, allowed_mentions=NO_MENTIONS)

    @forecast.autocomplete("metric")
    async def _metric_autocomplete(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        slug = interaction.namespace.run or None
        slugs = await known_slugs(self.bot)
        if slug is None and len(slugs) == 1:
            slug = slugs[0]
        info = await self.bot.reader.runs.get(slug) if slug else None
        if info is None:
            return []
        needle = current.lower()
        choices = []
        for config in forecast_configs(info):
            name = f"{config.label} ({config.metric})" if config.label else config.metric
            if needle in name.lower():
                choices.append(
                    app_commands.Choice(name=name[:CHOICE_NAME_LIMIT], value=config.metric)
                )
        return choices[:CHOICES_LIMIT]


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Forecast(bot))
