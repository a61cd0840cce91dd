"""Neutral time stamps inside post text.

Code that composes a post without knowing who will read it (the incident engine queues posts
from any process, the bot or `runscribe poll`) writes `stamp(at, style)`. The edge that shows
the text renders every stamp for its reader with a `TimeFormatter`: Discord as `<t:…>` (each
reader sees their own local time), a terminal in the run's zone. A stamp is exactly as long as
Discord's rendering of it, so limits applied to the neutral text hold for the rendered one.

Stamps are delimited by two private-use code points; a stamp forged in fetched text can only ever
render as a time."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

from bot.render.cards import Card, CardField, TimeFormatter, TimeStyle

_OPEN, _CLOSE = "\ue000", "\ue001"
_CODES: dict[TimeStyle, str] = {"date": "D", "datetime": "f", "relative": "R", "time": "t"}
_STYLES: dict[str, TimeStyle] = {code: style for style, code in _CODES.items()}
_STAMP = re.compile(f"{_OPEN}t:(-?\\d+):([{''.join(_STYLES)}]){_CLOSE}")


def stamp(at: datetime, style: TimeStyle = "datetime") -> str:
    return f"{_OPEN}t:{int(at.timestamp())}:{_CODES[style]}{_CLOSE}"


def render_stamps(text: str, fmt: TimeFormatter) -> str:
    if _OPEN not in text:
        return text
    return _STAMP.sub(
        lambda m: fmt(datetime.fromtimestamp(int(m.group(1)), UTC), _STYLES[m.group(2)]), text
    )


def render_card_stamps(card: Card, fmt: TimeFormatter) -> Card:
    def render(text: str | None) -> str | None:
        return render_stamps(text, fmt) if text else text

    return replace(
        card,
        title=render_stamps(card.title, fmt),
        description=render_stamps(card.description, fmt),
        fields=[
            CardField(render_stamps(f.name, fmt), render_stamps(f.value, fmt), f.inline)
            for f in card.fields
        ],
        footer=render(card.footer),
    )
