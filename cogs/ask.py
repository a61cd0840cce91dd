"""`/ask question [run] [private]`: an answer from the run's stored history, with linked
citations. Public by default so the channel learns; `private` makes it ephemeral. Bad questions
and the rate limit get a short private reply before anything is deferred."""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import card_to_embed, discord_time
from bot.ask.limits import RateLimiter
from bot.ask.query import parse_question
from bot.ask.service import AskService
from bot.render.ask import answer_card
from cogs.common import NO_MENTIONS, reply_private, resolve_run, run_autocomplete

if TYPE_CHECKING:
    from bot.app import RunscribeBot
    from bot.store import Store

log = logging.getLogger(__name__)
# The matches are shown right after the deferral; the model then has this long to replace them
# with a written answer (the interaction token lasts 15 minutes).
LLM_DEADLINE = 30.0


class Ask(commands.Cog):
    def __init__(self, bot: RunscribeBot, limiter: RateLimiter | None = None):
        self.bot = bot
        self.limiter = limiter or RateLimiter(store=bot.store)  # survives a restart

    def service(self, store: Store | None = None) -> AskService:
        """Over the writer's store or the given one (a search only reads; the runtime's writer
        stores the LLM's answer through the writer's store)."""
        writer = getattr(self.bot.runtime, "answers", None)
        return AskService(store or self.bot.store, writer, deadline=LLM_DEADLINE)

    @app_commands.command(name="ask", description="Ask about a run; answered from its history")
    @app_commands.describe(
        question="What you want to know, e.g. why did we lower the gate weight decay?",
        run="Which run (optional when only one is tracked)",
        private="Only you see the answer (default: everyone in the channel)",
    )
    @app_commands.autocomplete(run=run_autocomplete)
    async def ask(
        self,
        interaction: discord.Interaction,
        question: str,
        run: str | None = None,
        private: bool = False,
    ) -> None:
        bot = self.bot
        # Length is checked here, not by Discord, so an over-long question gets a clear reply.
        parse_question(question)  # BadQuestion → a private reply from the error handler
        slug = await resolve_run(bot, run, interaction)
        wait = await self.limiter.try_acquire(interaction.user.id)
        if wait is not None:
            await reply_private(
                interaction,
                "You have asked a lot in the last minute; please try again in "
                f"{math.ceil(wait)} s.",
            )
            return
        await interaction.response.defer(ephemeral=private, thinking=True)
        service = self.service()
        # The search reads through the read-only connections, never behind the poll cycle.
        searched = await self.service(bot.reader).search(slug, question, bot.clock())
        info = await bot.reader.runs.get(slug)
        name = info.name if info else slug
        writing = service.writes and bool(searched.hits)
        # The matches go out at once; a written answer replaces them when it is ready.
        card = answer_card(searched.answer, discord_time, run_name=name, writing=writing)
        message = await interaction.followup.send(
            embed=card_to_embed(card), ephemeral=private, allowed_mentions=NO_MENTIONS, wait=True
        )
        if not writing:
            return
        answer = await service.write(searched, bot.clock())
        final = answer_card(answer or searched.answer, discord_time, run_name=name)
        try:
            await message.edit(embed=card_to_embed(final), allowed_mentions=NO_MENTIONS)
        except discord.HTTPException:
            log.warning("could not update the /ask answer (message deleted or token expired)")


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Ask(bot))
