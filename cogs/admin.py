"""`/admin sync|reload|post-digest|live-status`: for people with Manage Server. Syncing
commands is for the bot's owner only (Discord allows 200 command creates a day per guild; never
sync on every start)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import discord_time
from bot.config.settings import ConfigError
from bot.core.errors import UserFacingError
from bot.outputs.digests import enqueue_digest
from cogs.common import reply_private, resolve_run, run_autocomplete

if TYPE_CHECKING:
    from bot.app import RunscribeBot

log = logging.getLogger(__name__)


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class Admin(commands.GroupCog, group_name="admin", group_description="Runscribe administration"):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot
        super().__init__()

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        """Manage Server for every admin command, checked here as well as by Discord's default
        permissions (which a server admin can loosen)."""
        if not interaction.permissions.manage_guild:
            raise app_commands.MissingPermissions(["manage_guild"])
        return True

    @app_commands.command(name="sync", description="Publish slash commands (bot owner only)")
    @app_commands.describe(scope="This server (immediate) or every server (global)")
    async def sync(
        self, interaction: discord.Interaction, scope: Literal["guild", "global"] = "guild"
    ) -> None:
        if not await self.bot.is_owner(interaction.user):
            raise UserFacingError("Only the bot's owner can sync commands.")
        await interaction.response.defer(ephemeral=True, thinking=True)
        tree = self.bot.tree
        if scope == "global":
            synced = await tree.sync()
        else:
            assert interaction.guild is not None
            tree.copy_global_to(guild=interaction.guild)
            synced = await tree.sync(guild=interaction.guild)
        log.info("%s synced %d commands (%s)", interaction.user.id, len(synced), scope)
        await reply_private(interaction, f"Synced {len(synced)} commands ({scope}).")

    @app_commands.command(name="reload", description="Re-read the runs file")
    async def reload(self, interaction: discord.Interaction) -> None:
        try:
            runs = await self.bot.reload_runs()
        except ConfigError as exc:
            problems = "\n".join(f"• {p}" for p in exc.problems[:10])
            raise UserFacingError(
                f"The runs file has problems; nothing changed:\n{problems}"
            ) from None
        slugs = ", ".join(run.slug for run in runs.runs)
        await reply_private(interaction, f"Runs file reloaded: {slugs}.")

    @app_commands.command(name="post-digest", description="Post a run's digest to its channel now")
    @app_commands.describe(run="Which run (optional when only one is tracked)")
    @app_commands.autocomplete(run=run_autocomplete)
    async def post_digest(self, interaction: discord.Interaction, run: str | None = None) -> None:
        bot = self.bot
        slug = await resolve_run(bot, run, interaction)
        config = bot.run_config(slug)
        if config is None or config.digest_channel is None:
            raise UserFacingError(f"Run {slug!r} has no digest_channel in the runs file.")
        await interaction.response.defer(ephemeral=True, thinking=True)
        item = await enqueue_digest(
            bot.store,
            config,
            bot.clock(),
            fmt=discord_time,
            composer=bot.rounds.digest_composer,
            dedup_key=f"digest:{slug}:manual:{interaction.id}",
            skip_quiet=False,
            asked=True,
        )
        await bot.drain_outbox()
        await reply_private(
            interaction,
            f"Digest on its way to <#{config.digest_channel}>."
            if item is not None
            else f"A digest for <#{config.digest_channel}> was already on its way.",
        )

    @app_commands.command(
        name="live-status", description="Post a run's live status message anew in its channel"
    )
    @app_commands.describe(run="Which run (optional when only one is tracked)")
    @app_commands.autocomplete(run=run_autocomplete)
    async def live_status(self, interaction: discord.Interaction, run: str | None = None) -> None:
        """After `status_channel` changed in the runs file (and /admin reload), or to bring the
        message back to the bottom of its channel: a new one is posted, the old one deleted."""
        bot = self.bot
        slug = await resolve_run(bot, run, interaction)
        config = bot.run_config(slug)
        if config is None or config.status_channel is None:
            raise UserFacingError(f"Run {slug!r} has no status_channel in the runs file.")
        await interaction.response.defer(ephemeral=True, thinking=True)
        await bot.live.repost(config, f"live:{slug}:repost:{interaction.id}")
        log.info("%s asked for a new live status message of %s", interaction.user.id, slug)
        await reply_private(
            interaction,
            f"A new live status message for {slug} is on its way to <#{config.status_channel}>; "
            "the old one is deleted.",
        )


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Admin(bot))
