"""The live status messages' Discord listener: a person deleting a run's live message gets a
new one at once (the refresher would also find it gone at its next edit, by the 404)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord.ext import commands

if TYPE_CHECKING:
    from bot.app import RunscribeBot


class LiveStatus(commands.Cog):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot

    def _status_channel(self, channel_id: int) -> bool:
        return any(run.status_channel == channel_id for run in self.bot.runs)

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        if self._status_channel(payload.channel_id):
            await self.bot.live.deleted(payload.message_id)

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        if self._status_channel(payload.channel_id):
            for message_id in payload.message_ids:
                await self.bot.live.deleted(message_id)


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(LiveStatus(bot))
