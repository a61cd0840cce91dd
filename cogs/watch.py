"""Channel watch: messages in a run's `watch_channels` (and in threads under them, where teams
often take a discussion) become events. Bots (this one included) are ignored, edits update the
event, deletions mark it deleted, and no other channel is ever stored. Needs the
message-content intent.

The gateway does not replay what was posted while the bot was stopped or between an invalidated
session and the next READY, so at every READY and RESUMED each watched channel and its active
threads are read back (`bot.sources.chat` says how far) and stored through the same `_ingest`
as live messages.

No chat is lost to the store: every event goes through one `ChatWriter`
(`bot.sources.chat_writer`), which keeps what the store refuses in memory and writes it again;
when memory could not hold it all, the writer asks this cog for a read-back."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

import aiohttp
import discord
from discord.ext import commands

from bot.core.timeutil import ensure_utc
from bot.models import Event
from bot.sources.chat import (
    EDIT_LOOKBACK,
    PAGE,
    READ_BACK_PAGES,
    ChannelGate,
    Gap,
    ReadBackGaps,
    catch_up_plan,
    last_seen,
    message_key,
    thread_key,
)
from bot.sources.chat_writer import ChatWriter

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
        external_id=message_key(message.id),
        kind="message",
        at=ensure_utc(message.created_at),
        updated_at=ensure_utc(message.edited_at) if message.edited_at else None,
        author=message.author.display_name,
        ref=f"#{name}",
        url=message.jump_url,
        body=message.content[:BODY_LIMIT],
        thread=thread_key(channel.id),
    )


Readable = discord.TextChannel | discord.VoiceChannel | discord.StageChannel | discord.Thread
_NETWORK_ERRORS = (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError)


class Watch(commands.Cog):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot
        self.gate = ChannelGate()
        self._catch_ups: set[asyncio.Task[int]] = set()
        self.read_backs = 0  # read-backs finished since the cog was loaded
        self._unloaded = False
        self.page_budget = READ_BACK_PAGES
        self.writer = ChatWriter(bot.store, bot.clock, on_overflow=self.start_catch_up)

    @property
    def reading_back(self) -> bool:
        return bool(self._catch_ups)

    async def cog_unload(self) -> None:
        self._unloaded = True
        tasks = list(self._catch_ups)
        for task in tasks:
            task.cancel()
        await asyncio.gather(self.writer.close(), *tasks, return_exceptions=True)

    def runs_watching(self, channel_id: int) -> list[str]:
        return [run.slug for run in self.bot.runs if channel_id in run.watch_channels]

    def _ignored(self, message: discord.Message) -> bool:
        return message.author.bot or message.author.id == getattr(self.bot.user, "id", None)

    def _runs_for(self, channel_id: int) -> list[str]:
        return self.runs_watching(watched_id(self.bot.get_channel(channel_id), channel_id))

    async def _ingest(self, messages: Iterable[discord.Message], *, join: bool = False) -> int:
        """Store messages of watched channels as events: the one path for live messages, live
        edits and read-backs. The store keeps a version only when its content changed and it
        is not older than the stored one. Returns the number of events inserted or changed
        (0 for those that `join` a write under way: live messages, whose count nobody reads)."""
        events: list[Event] = []
        for message in messages:
            watching = self.runs_watching(watched_id(message.channel, message.channel.id))
            if not watching or self._ignored(message):
                continue
            events.extend(message_event(slug, message) for slug in watching)
        return await self.writer.write(events, join=join)

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        await self._ingest([message], join=True)

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if "content" not in payload.data:
            return  # an embed unfurl or a pin: nothing a reader would call an edit
        await self._ingest([payload.message], join=True)

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self._deleted(payload.channel_id, [payload.message_id])

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self._deleted(payload.channel_id, sorted(payload.message_ids))

    async def _deleted(self, channel_id: int, message_ids: list[int]) -> None:
        """Deletions go through the same writer as messages and edits, in arrival order."""
        keys = {message_key(m) for m in message_ids}
        await self.writer.delete(self._runs_for(channel_id), keys)

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        now = self.bot.clock()
        for run in self.bot.runs:
            if run.watch_channels:
                await self.bot.store.health.record_success("discord", run.slug, now)
        log.info("connected as %s; watching %d channel(s)", self.bot.user, len(self._channels()))
        self.start_catch_up("READY")

    @commands.Cog.listener()
    async def on_resumed(self) -> None:
        self.start_catch_up("RESUMED")

    def _channels(self) -> set[int]:
        return {channel for run in self.bot.runs for channel in run.watch_channels}

    # --- reading back what the gateway did not deliver ------------------------------------------

    def start_catch_up(self, why: str) -> asyncio.Task[int] | None:
        if self._unloaded or self.bot.is_closed():
            return None  # a READY handled while shutting down
        task = asyncio.create_task(self.catch_up(why), name="runscribe-catch-up")
        self._catch_ups.add(task)
        task.add_done_callback(self._catch_ups.discard)
        return task

    async def catch_up(self, why: str = "request") -> int:
        """Read back every watched channel and its active threads, one after another (discord.py
        waits out 429s per route; nothing is fetched in parallel). Returns the events stored or
        updated. Never raises: a channel that cannot be read is logged and skipped."""
        try:
            targets = await self._targets()
            changed = 0
            for target in targets:
                changed += await self._catch_up_one(target)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("reading back watched channels after %s failed", why)
            return 0
        finally:
            self.read_backs += 1
        if changed:
            log.info("after %s: %d missed message(s) or edit(s) stored", why, changed)
        return changed

    async def _targets(self) -> list[Readable]:
        found: list[discord.abc.GuildChannel | discord.Thread] = []
        for channel_id in sorted(self._channels()):
            known = self.bot.get_channel(channel_id)
            if isinstance(known, discord.abc.GuildChannel | discord.Thread):
                found.append(known)
            else:
                log.warning("watched channel %s is not visible to the bot", channel_id)
        threads = await self._active_threads({c.guild for c in found})
        targets: list[Readable] = []
        for channel in found:
            if isinstance(channel, Readable):
                targets.append(channel)
            targets.extend(threads.get(channel.id, []))
        return targets

    async def _active_threads(self, guilds: Iterable[discord.Guild]) -> dict[int, list[Readable]]:
        by_parent: dict[int, list[Readable]] = defaultdict(list)
        for guild in sorted(guilds, key=lambda g: g.id):
            try:
                threads = await guild.active_threads()
            except _NETWORK_ERRORS as exc:
                log.warning(
                    "cannot list the active threads of %s (%s); using known ones", guild, exc
                )
                threads = list(guild.threads)
            for thread in sorted(threads, key=lambda t: t.id):
                if thread.parent_id is not None:
                    by_parent[thread.parent_id].append(thread)
        return by_parent

    async def _catch_up_one(self, target: Readable) -> int:
        async def sweep() -> int:
            slugs = self.runs_watching(watched_id(target, target.id))
            seen = await last_seen(self.bot.store, slugs, target.id)
            plan = catch_up_plan(seen, self.bot.clock())
            changed = 0
            if plan.recheck_through is not None:
                through = discord.Object(plan.recheck_through + 1)
                edits = [m async for m in target.history(limit=EDIT_LOOKBACK, before=through)]
                changed += await self._ingest(reversed(edits))
            gaps = ReadBackGaps(self.bot.store)
            pending = [Gap(before=0, after=plan.after), *await gaps.load(target.id)]
            budget, left = self.page_budget, []
            for gap in pending:
                if budget <= 0:
                    left.append(gap)
                    continue
                read, rest, budget = await self._read_down(target, gap, budget)
                changed += read
                if rest is not None:
                    left.append(rest)
            await gaps.save(target.id, left)
            if left:
                log.info(
                    "read-back of %s stopped after %d pages; the next one resumes there",
                    target,
                    self.page_budget,
                )
            return changed

        try:
            return await self.gate.run(target.id, sweep) or 0
        except discord.Forbidden:
            log.warning("cannot read the history of %s: Read Message History is missing", target)
        except _NETWORK_ERRORS as exc:
            log.warning("reading back %s failed: %s", target, exc)
        return 0

    async def _read_down(
        self, target: Readable, gap: Gap, budget: int
    ) -> tuple[int, Gap | None, int]:
        """Newest first from `gap.before` (0: the newest message) until the read meets
        `gap.after` (stored history or the window's floor) or the budget ends. Returns what was
        stored, the part of the gap still unread (None: none), the pages left."""
        before = gap.before or None
        changed = 0
        while budget > 0:
            budget -= 1
            cursor = discord.Object(before) if before else None
            page = [m async for m in target.history(limit=PAGE, before=cursor)]
            fresh = [m for m in page if m.id > gap.after]
            changed += await self._ingest(reversed(fresh))
            if len(fresh) < len(page) or len(page) < PAGE:
                return changed, None, budget  # met stored history, or the channel's start
            before = page[-1].id
        return changed, Gap(before=before or 0, after=gap.after), budget


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Watch(bot))
