"""`/incidents list|report|silence|unsilence|ack` and the persistent Acknowledge button on alerts.

Thin: validate, call one service in `bot.incidents`, render. Discord does not allow a command
group to be invoked itself, so the listing is `/incidents list [run] [scope]`."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import card_to_embed, discord_time
from bot.core.errors import UserFacingError
from bot.core.limits import CHOICES_LIMIT
from bot.core.mentions import unlinked
from bot.incidents.service import acknowledge, list_incidents
from bot.incidents.silences import (
    REPORT_KINDS,
    add_silence,
    conditions,
    end_silence,
    parse_duration,
    require_responder,
    silence_run,
)
from bot.incidents.writeup import report_for
from bot.posts.incidents import listing_card
from bot.posts.writeup import writeup_card
from cogs.common import NO_MENTIONS, reply_private, resolve_run, run_autocomplete

if TYPE_CHECKING:
    from bot.app import RunscribeBot

log = logging.getLogger(__name__)


def _who(user: discord.abc.User) -> str:
    """How posts and listings name a person: their display name in the server, not an id."""
    return user.display_name


async def condition_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    needle = current.strip().lower()
    names = [*conditions(), *REPORT_KINDS]
    return [
        app_commands.Choice(name=name, value=name)
        for name in dict.fromkeys(names)
        if needle in name
    ][:CHOICES_LIMIT]


class AckButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"runscribe:incident-ack:(?P<id>\d+)",
):
    """Survives restarts: the incident id lives in the custom_id, not in memory."""

    def __init__(self, incident_id: int) -> None:
        super().__init__(
            discord.ui.Button(
                label="Acknowledge",
                style=discord.ButtonStyle.secondary,
                custom_id=f"runscribe:incident-ack:{incident_id}",
            )
        )
        self.incident_id = incident_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> AckButton:
        return cls(int(match["id"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        bot: RunscribeBot = interaction.client  # type: ignore[assignment]
        try:
            incident = await acknowledge(
                bot.store, self.incident_id, _who(interaction.user), bot.clock()
            )
        except UserFacingError as exc:
            await reply_private(interaction, str(exc))
            return
        await reply_private(
            interaction, f"Acknowledged incident #{incident.id}: {unlinked(incident.title)}"
        )
        await bot.rounds.acknowledged()


@app_commands.guild_only()
class Incidents(commands.GroupCog, group_name="incidents", group_description="Run incidents"):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot
        super().__init__()

    def _require_responder(self, interaction: discord.Interaction, slug: str) -> None:
        """Silences need the run's `responder_role` or Manage Server (raises UserFacingError)."""
        config = self.bot.run_config(slug)
        role_id = config.responder_role if config else None
        user = interaction.user
        roles = user.roles if isinstance(user, discord.Member) else []
        guild_role = interaction.guild.get_role(role_id) if interaction.guild and role_id else None
        require_responder(
            slug,
            role_id,
            role_ids={role.id for role in roles},
            manages_server=interaction.permissions.manage_guild,
            role_name=guild_role.name if guild_role else None,
        )

    @app_commands.command(name="list", description="Incidents with start, end, duration, cause")
    @app_commands.describe(
        run="Which run (optional when only one is tracked)",
        scope="Only the open incidents, or all of them (newest first)",
    )
    @app_commands.autocomplete(run=run_autocomplete)
    async def list_(
        self,
        interaction: discord.Interaction,
        run: str | None = None,
        scope: Literal["open", "all"] = "all",
    ) -> None:
        slug = await resolve_run(self.bot, run, interaction)
        views = await list_incidents(self.bot.reader, slug, open_only=scope == "open", limit=11)
        info = await self.bot.reader.runs.get(slug)
        card = listing_card(
            views, info.name if info else slug, open_only=scope == "open", now=self.bot.clock()
        )
        await interaction.response.send_message(
            embed=card_to_embed(card), allowed_mentions=NO_MENTIONS
        )

    @app_commands.command(name="silence", description="Post nothing about a condition for a while")
    @app_commands.describe(
        run="Which run",
        condition="all, a condition (stall, loss-nan…), a reported kind (oom…) or report:*",
        duration="How long: 30m, 2h, 1d",
        reason="Why (shown to others)",
    )
    @app_commands.autocomplete(run=run_autocomplete, condition=condition_autocomplete)
    async def silence(
        self,
        interaction: discord.Interaction,
        duration: str,
        reason: str,
        run: str | None = None,
        condition: str = "all",
    ) -> None:
        slug = await resolve_run(self.bot, run, interaction)
        self._require_responder(interaction, slug)
        now = self.bot.clock()
        made = await add_silence(
            self.bot.store,
            slug,
            condition,
            parse_duration(duration),
            _who(interaction.user),
            reason,
            now,
        )
        await reply_private(
            interaction,
            f"Silence #{made.id} on {slug} `{made.matcher}` until "
            f"{discord_time(made.ends_at, 'datetime')}: incidents are still recorded, nothing is "
            f"posted about them.",
        )

    @app_commands.command(name="unsilence", description="End a silence early")
    @app_commands.describe(silence_id="The silence's number, as /incidents silence replied")
    async def unsilence(self, interaction: discord.Interaction, silence_id: int) -> None:
        self._require_responder(interaction, await silence_run(self.bot.store, silence_id))
        ended = await end_silence(
            self.bot.store, silence_id, _who(interaction.user), self.bot.clock()
        )
        await reply_private(interaction, f"Silence #{ended.id} ended.")

    @app_commands.command(name="report", description="An incident's write-up, shown again")
    @app_commands.describe(incident_id="The incident's number, as its alert shows (#12)")
    async def report(self, interaction: discord.Interaction, incident_id: int) -> None:
        writeup, prose = await report_for(self.bot.reader, incident_id)
        await interaction.response.send_message(
            embed=card_to_embed(writeup_card(writeup, prose)), allowed_mentions=NO_MENTIONS
        )

    @app_commands.command(name="ack", description="Acknowledge an incident (recorded with you)")
    @app_commands.describe(incident_id="The incident's number, as its alert shows (#12)")
    async def ack(self, interaction: discord.Interaction, incident_id: int) -> None:
        incident = await acknowledge(
            self.bot.store, incident_id, _who(interaction.user), self.bot.clock()
        )
        await reply_private(
            interaction, f"Acknowledged incident #{incident.id}: {unlinked(incident.title)}"
        )
        await self.bot.rounds.acknowledged()  # the head says who, as after the button


async def setup(bot: RunscribeBot) -> None:
    bot.add_dynamic_items(AckButton)
    await bot.add_cog(Incidents(bot))
