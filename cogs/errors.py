"""The one error handler on the command tree. Errors the user can fix (unknown run, bad filter,
missing data, missing permission) become a short private reply; anything else is logged with the
command, the user and the arguments, and answered with a short apology."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserFacingError
from cogs.common import reply_private

if TYPE_CHECKING:
    from bot.app import RunscribeBot

log = logging.getLogger(__name__)
APOLOGY = "Sorry, something went wrong on our side; it has been logged."


def user_message(error: app_commands.AppCommandError) -> str | None:
    """The private reply for an error the user can act on, or None for a bug."""
    original = getattr(error, "original", error)
    if isinstance(original, UserFacingError):
        return str(original)
    if isinstance(error, app_commands.MissingPermissions):
        return "You need the Manage Server permission for this command."
    if isinstance(error, app_commands.NoPrivateMessage):
        return "This command works only in a server."
    if isinstance(error, app_commands.CheckFailure):
        return "You cannot use this command here."
    if isinstance(error, app_commands.TransformerError):
        return f"{error.value!r} is not a valid value for that option."
    if isinstance(error, app_commands.CommandNotFound | app_commands.CommandSignatureMismatch):
        return "This command changed since Discord last saw it; try again in a minute."
    return None


def _arguments(interaction: discord.Interaction) -> dict[str, Any]:
    return {key: value for key, value in interaction.namespace.__dict__.items()}


class Errors(commands.Cog):
    def __init__(self, bot: RunscribeBot):
        self.bot = bot
        self._previous = bot.tree.on_error
        bot.tree.on_error = self.on_tree_error  # type: ignore[method-assign]

    async def cog_unload(self) -> None:
        self.bot.tree.on_error = self._previous  # type: ignore[method-assign]

    async def on_tree_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        message = user_message(error)
        if message is None:
            command = interaction.command.qualified_name if interaction.command else "?"
            log.error(
                "command /%s failed for user %s (%s) with arguments %r",
                command,
                interaction.user,
                interaction.user.id,
                _arguments(interaction),
                exc_info=getattr(error, "original", error),
            )
            message = APOLOGY
        await reply_private(interaction, message)


async def setup(bot: RunscribeBot) -> None:
    await bot.add_cog(Errors(bot))
