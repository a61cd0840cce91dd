"""Channel watch: messages in a run's `watch_channels` (and in threads under them, where teams
often take a discussion) become events. Bots (this one included) are ignored, edits update the
event, deletions mark it deleted, and no other channel is ever stored. Needs the
message-content intent."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from bot.models import Event
from bot.timeutil import ensure_utc

if TYPE_CHECKING:
    from bot.app import RunscribeBot

log = logging.getLogger(__name__)
BODY_LIMIT = 4000


def watched_id(channel: object, channel_id: int) -> int:
    """The id that `watch_channels` would name: a thread's parent, else the channel itself."""
    if isinstance(channel, discord.Thread) and channel.parent_id is not None:
        return channel.parent_id
    return channel_id


def message_event(slug: str, message: discord.Message) -> Event:
    channel = message.channel
    name = getattr(channel, "name", None) or str(channel.id)
    if isinstance(channel, discord.Thread) and channel.parent is not None:
        name = f"{channel.parent.name} › {name}"
    return Event(
        run_slug=slug,
        source="discord",
        external_id=f"msg:{message.id}",
        kind="message",
        at=ensure_utc(message.created_at),
        updated_at=ensure_utc(message.edited_at) if message.edited_at else None,
        author=message.author.display_name,
        ref=f"#{name}",
        url=message.jump_url,
        body=message.content[:BODY_LIMIT],
        thread=f"discord:{channel.id}",
    )


class Watch(commands.Cog):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot

    def runs_watching(self, channel_id: int) -> list[str]:
        return [run.slug for run in self.bot.runs if channel_id in run.watch_channels]

    def _ignored(self, message: discord.Message) -> bool:
        return message.author.bot or message.author.id == getattr(self.bot.user, "id", None)

    def _runs_for(self, channel_id: int) -> list[str]:
        return self.runs_watching(watched_id(self.bot.get_channel(channel_id), channel_id))

    async def _store(self, message: discord.Message) -> None:
        slugs = self.runs_watching(watched_id(message.channel, message.channel.id))
        if not slugs or self._ignored(message):
            return
        events = [message_event(slug, message) for slug in slugs]
        await self.bot.store.events.upsert_many(events)
        now = self.bot.clock()
        for slug in slugs:
            await self.bot.store.health.record_success("discord", slug, now)

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        await self._store(message)

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if "content" not in payload.data:
            return  # an embed unfurl or a pin: nothing a reader would call an edit
        await self._store(payload.message)

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        for slug in self._runs_for(payload.channel_id):
            await self.bot.store.events.mark_deleted(slug, "discord", f"msg:{payload.message_id}")

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        for slug in self._runs_for(payload.channel_id):
            for message_id in payload.message_ids:
                await self.bot.store.events.mark_deleted(slug, "discord", f"msg:{message_id}")

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        now = self.bot.clock()
        for run in self.bot.runs:
            if run.watch_channels:
                await self.bot.store.health.record_success("discord", run.slug, now)
        log.info("connected as %s; watching %d channel(s)", self.bot.user, len(self._channels()))

    def _channels(self) -> set[int]:
        return {channel for run in self.bot.runs for channel in run.watch_channels}


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Watch(bot))
