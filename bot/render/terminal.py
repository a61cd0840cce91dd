"""Terminal rendering: the same cards, as plain text, with times in the run's own zone."""

from __future__ import annotations

import re
import textwrap
from datetime import datetime

from bot.core.mentions import URL_RE, masked_links, outermost
from bot.core.timeutil import ago, resolve_zone
from bot.narrative.entries import TimelineEntry
from bot.narrative.words import credit
from bot.render.cards import Card, TimeFormatter, TimeStyle

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")


def local_formatter(zone_name: str, now: datetime) -> TimeFormatter:
    zone = resolve_zone(zone_name)

    def fmt(value: datetime, style: TimeStyle) -> str:
        local = value.astimezone(zone)
        if style == "date":
            return f"{local:%b} {local.day}, {local:%Y}"
        if style == "time":
            return local.strftime("%H:%M %Z")
        if style == "relative":
            if value >= now:
                return "in " + ago(now, value).removesuffix(" ago")
            return ago(value, now)
        return f"{local:%b} {local.day}, {local:%Y %H:%M %Z}"

    return fmt


def _unmask(text: str) -> str:
    """Each masked link `[label](url)` as `label (url)`."""
    for link in reversed(outermost(masked_links(text))):
        if link.start is not None and link.closed and link.label and URL_RE.match(link.url):
            text = f"{text[: link.start]}{link.label} ({link.url}){text[link.end :]}"
    return text


# A narrative's or digest's citation as stored (`[\[2\]](https://…)`, see `bot.llm.cited`): a
# link the terminal cannot show, dropped with the space before it.
_CITATION = re.compile(r"[ \t]*\[\\\[\d{1,3}\\\]\]\(https?://[^)\s]+\)")


def plain(text: str) -> str:
    """Drop the little markdown the cards use, and citation links."""
    text = _unmask(_CITATION.sub("", text))
    text = _BOLD.sub(r"\1", text)
    return _CODE.sub(r"\1", text)


def render_card(card: Card, width: int = 100) -> str:
    out = [plain(card.title), "=" * min(len(card.title), width)]
    if card.description:
        for paragraph in card.description.split("\n"):
            # a list item ("• …") wraps under its text, not under its bullet
            indent = "  " if paragraph.startswith("• ") else ""
            out.append(
                textwrap.fill(plain(paragraph), width, subsequent_indent=indent)
                if paragraph.strip()
                else ""
            )
    for fld in card.fields:
        out.append("")
        out.append(f"{plain(fld.name)}:")
        for line in fld.value.split("\n"):
            out.append(
                textwrap.fill(plain(line), width, initial_indent="  ", subsequent_indent="    ")
            )
    if card.footer:
        out.append("")
        out.append(f"({plain(card.footer)})")
    return "\n".join(out)


def render_timeline(entries: list[TimelineEntry], fmt: TimeFormatter, width: int = 100) -> str:
    if not entries:
        return "No timeline entries."
    out: list[str] = []
    day = None
    for entry in entries:
        label = fmt(entry.at, "date")
        if label != day:
            if out:
                out.append("")
            out.append(label)
            day = label
        who = credit(entry.author, entry.source)
        ref = f" {entry.ref}" if entry.ref else ""
        state = f" [{entry.state}]" if entry.state and entry.source == "github" else ""
        flag = "! " if entry.incident else "  "
        tag = f"  ({entry.tag})" if entry.tag else ""
        head = f"{flag}{fmt(entry.at, 'time')}  {who}{ref}{state}{tag}"
        out.append(head)
        out.append(
            textwrap.fill(entry.summary, width, initial_indent="      ", subsequent_indent="      ")
        )
    return "\n".join(out)
