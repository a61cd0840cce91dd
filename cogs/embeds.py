"""Platform-neutral cards → `discord.Embed`, and the Discord time formatter. Not an extension:
a helper imported by the cogs and by `bot.app`'s outbox transport."""

from __future__ import annotations

from datetime import datetime

import discord

from bot.delivery import escape_mentions, fit_card
from bot.render.cards import Card, TimeStyle
from bot.render.stamps import render_card_stamps, render_stamps

COLORS: dict[str, int] = {
    "ok": 0x2ECC71,  # green: running and healthy
    "warning": 0xF1C40F,  # yellow: stalled, pending
    "bad": 0xE74C3C,  # red: crashed, failed, killed
    "stale": 0x95A5A6,  # grey: the monitor cannot see W&B (the run may be fine)
    "done": 0x3498DB,  # blue: finished
    "unknown": 0x7F8C8D,
    "info": 0x5865F2,  # blurple: timelines, digests
}
_STYLES: dict[str, discord.utils.TimestampStyle] = {
    "date": "D",
    "datetime": "f",
    "relative": "R",
    "time": "t",
}


def discord_time(value: datetime, style: TimeStyle) -> str:
    """`<t:…:D>` and friends, so every reader sees their own local time."""
    return discord.utils.format_dt(value, _STYLES.get(style, "f"))


def discord_text(text: str) -> str:
    """Post text for Discord: neutral time stamps become `<t:…>`."""
    return render_stamps(text, discord_time)


def card_to_embed(card: Card, *, color: int | None = None) -> discord.Embed:
    """An embed within Discord's limits, mentions escaped (embeds never ping, but text copied out
    of them could). Neutral time stamps become Discord timestamps."""
    card = fit_card(render_card_stamps(card, discord_time))
    embed = discord.Embed(
        title=card.title or None,
        description=card.description or None,
        url=card.url,
        color=color if color is not None else COLORS.get(card.color, COLORS["info"]),
    )
    for item in card.fields:
        embed.add_field(name=item.name, value=item.value, inline=item.inline)
    if card.footer:
        embed.set_footer(text=card.footer)
    if card.image:
        url = card.image if "://" in card.image else f"attachment://{card.image}"
        embed.set_image(url=url)
    return embed


def safe(text: str) -> str:
    return escape_mentions(text)
