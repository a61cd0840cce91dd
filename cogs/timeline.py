"""`/timeline [run] [days] [tag] [source]`: dated entries, newest first, grouped by day, paged
with buttons that only the person who asked can press."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import card_to_embed, discord_time
from bot.models import SOURCE_SPECS, TAGS
from bot.render.cards import Card, timeline_pages
from bot.services.timeline import TimelineEntry, build_timeline
from cogs.common import NO_MENTIONS, reply_private, resolve_run, run_autocomplete

if TYPE_CHECKING:
    from bot.app import RunscribeBot

log = logging.getLogger(__name__)
MAX_ENTRIES = 500
SLOW_FILTER_DAYS = 30
PAGER_TIMEOUT = 300.0  # the buttons work for five minutes after the last press
# Pagers with live buttons at once (each a view discord.py keeps until it ends, with its timer);
# opening another retires the oldest.
LIVE_PAGERS = 20

TAG_CHOICES = [app_commands.Choice(name=tag, value=tag) for tag in TAGS]
SOURCE_CHOICES = [app_commands.Choice(name=source, value=source) for source in SOURCE_SPECS.names()]

ReadPages = Callable[[], Awaitable[list[Card]]]


class Pager(discord.ui.View):
    """◀ / ▶ over a timeline's pages. Buttons answer only the invoker; others get a private note.

    A pager holds the page it shows and how to read the pages again, never the pages
    themselves: each press reads the same question from the store (`read`, frozen at the
    moment it was asked) and shows the page asked for. Holding every rendered page (up to 500
    entries a timeline) made each live pager grow with the run's history: in a soak with a
    /timeline every two minutes they were most of the bot's heap growth."""

    def __init__(
        self, first: list[Card], read: ReadPages, owner_id: int, *, timeout: float = PAGER_TIMEOUT
    ):
        super().__init__(timeout=timeout)
        self.read = read
        self.owner_id = owner_id
        self.index = 0
        self.count = len(first)
        self.page = first[0]
        self.origin: discord.Interaction | None = None
        self._sync_buttons()

    def _sync_buttons(self) -> None:
        self.previous.disabled = self.index == 0
        self.next.disabled = self.index >= self.count - 1

    def embed(self) -> discord.Embed:
        return card_to_embed(self.page)

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id == self.owner_id:
            return True
        await reply_private(
            interaction, "Only the person who ran /timeline can turn these pages; run it yourself."
        )
        return False

    async def _show(self, interaction: discord.Interaction, index: int) -> None:
        try:
            pages = await self.read()
        except Exception:
            log.exception("a /timeline page could not be read")
            await reply_private(interaction, "The timeline could not be read just now; try again.")
            return
        self.count = len(pages)
        self.index = max(0, min(index, self.count - 1))
        self.page = pages[self.index]
        self._sync_buttons()
        await interaction.response.edit_message(
            embed=self.embed(), view=self, allowed_mentions=NO_MENTIONS
        )

    @discord.ui.button(label="◀ Newer", style=discord.ButtonStyle.secondary)
    async def previous(
        self, interaction: discord.Interaction, button: discord.ui.Button[Pager]
    ) -> None:
        await self._show(interaction, self.index - 1)

    @discord.ui.button(label="Older ▶", style=discord.ButtonStyle.secondary)
    async def next(
        self, interaction: discord.Interaction, button: discord.ui.Button[Pager]
    ) -> None:
        await self._show(interaction, self.index + 1)

    async def on_timeout(self) -> None:
        await self.retire()

    async def retire(self) -> None:
        """Stop answering presses, let go of the interaction, and take the buttons off the
        message."""
        self.stop()
        origin, self.origin = self.origin, None
        if origin is None:
            return
        try:
            await origin.edit_original_response(view=None)
        except discord.HTTPException:
            pass  # message deleted or token expired: nothing to tidy


class Timeline(commands.Cog):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot
        self.live_pagers = LIVE_PAGERS
        self._pagers: deque[Pager] = deque()  # oldest first

    async def cog_unload(self) -> None:
        while self._pagers:
            self._pagers.popleft().stop()

    async def _keep(self, pager: Pager) -> None:
        """Count `pager` among the live ones; past `live_pagers`, the oldest are retired."""
        live = [p for p in self._pagers if not p.is_finished()]
        live.append(pager)
        while len(live) > self.live_pagers:
            await live.pop(0).retire()
        self._pagers = deque(live)

    @app_commands.command(name="timeline", description="What happened to a run, newest first")
    @app_commands.describe(
        run="Which run (optional when only one is tracked)",
        days="How many days back (default 7)",
        tag="Only entries with this tag",
        source="Only entries from this source",
    )
    @app_commands.choices(tag=TAG_CHOICES, source=SOURCE_CHOICES)
    @app_commands.autocomplete(run=run_autocomplete)
    async def timeline(
        self,
        interaction: discord.Interaction,
        run: str | None = None,
        days: app_commands.Range[int, 1, 3650] = 7,
        tag: str | None = None,
        source: str | None = None,
    ) -> None:
        bot = self.bot
        with bot.answering():
            if bot.busy:  # a poll cycle or other commands are running: acknowledge first
                await interaction.response.defer(thinking=True)
            store = bot.reader
            slug = await resolve_run(bot, run, interaction)
            # A filter over a long range may read far back before it finds 500 entries.
            if (tag or source) and days > SLOW_FILTER_DAYS and not interaction.response.is_done():
                await interaction.response.defer(thinking=True)
            # The question, frozen: the window ends where this answer's newest entry is, so
            # a later press reads the same pages (what arrives meanwhile waits for the next
            # /timeline) even if the newest entries are dated ahead of the bot's clock.
            now = bot.clock()

            def ask(until: datetime | None) -> Awaitable[list[TimelineEntry]]:
                return build_timeline(
                    store, slug, now, days=days, tag=tag, source=source,
                    limit=MAX_ENTRIES, until=until,
                )  # fmt: skip

            key = ("timeline", slug, days, tag, source)
            entries = await bot.flights.run(key, lambda: ask(None))
            until = max([now, *(e.at for e in entries[:1])]) + timedelta(microseconds=1)
            info = await store.runs.get(slug)
            title = f"Timeline — {info.name if info else slug} · last {_days(days)}"
            if tag or source:
                title += " · " + " · ".join(x for x in (tag, source) if x)
            zone = info.timezone if info else "UTC"

            def render(found: list[TimelineEntry]) -> list[Card]:
                return timeline_pages(found, title, discord_time, zone=zone)

            pages = render(entries)
            if len(pages) == 1:
                await _answer(interaction, embed=card_to_embed(pages[0]))
                return

            async def read() -> list[Card]:
                return render(await ask(until))

            view = Pager(pages, read, interaction.user.id)
            del pages, entries  # the pager keeps its first page only
            view.origin = interaction
            await _answer(interaction, embed=view.embed(), view=view)
            await self._keep(view)


async def _answer(
    interaction: discord.Interaction, *, embed: discord.Embed, view: discord.ui.View | None = None
) -> None:
    """The reply, or its followup when the command deferred first."""
    if interaction.response.is_done():
        if view is None:
            await interaction.followup.send(embed=embed, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.followup.send(embed=embed, view=view, allowed_mentions=NO_MENTIONS)
    elif view is None:
        await interaction.response.send_message(embed=embed, allowed_mentions=NO_MENTIONS)
    else:
        await interaction.response.send_message(
            embed=embed, view=view, allowed_mentions=NO_MENTIONS
        )


def _days(days: int) -> str:
    return "day" if days == 1 else f"{days} days"


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Timeline(bot))
