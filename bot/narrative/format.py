"""Numbers, dates and times as the narrative and the digest write them. Times are rendered in
the run's own zone (`bot.timeutil.resolve_zone`); everything inside stays UTC."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from bot.timeutil import humanize_duration, resolve_zone


def fmt_date(value: datetime, tz: str) -> str:
    local = value.astimezone(resolve_zone(tz))
    return f"{local:%b} {local.day}, {local.year}"


def fmt_time(value: datetime, tz: str) -> str:
    local = value.astimezone(resolve_zone(tz))
    hour = local.hour % 12 or 12
    half = "a.m." if local.hour < 12 else "p.m."
    return f"{fmt_date(value, tz)}, {hour}:{local.minute:02d} {half} {local.tzname() or tz}"


def sentence(text: str) -> str:
    """End with exactly one full stop, unless the text already ends a sentence (? ! …)."""
    text = text.rstrip().rstrip(".")
    return text if text.endswith(("?", "!", "…")) else text + "."


def fmt_int(value: float | int) -> str:
    return f"{int(value):,}"


def fmt_big(value: float, *, decimals: int | None = None) -> str:
    """The one token (and large count) formatter. Three significant digits by default:
    2.46e12 → '2.46T'; 18e12 → '18T'; 5.3e8 → '530M'. With `decimals`, that many decimals at
    most: 9.8624e11 → '986.24B' (the status card's progress line)."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            scaled = value / scale
            digits = (
                decimals
                if decimals is not None
                else max(0, 2 - math.floor(math.log10(abs(scaled))))
            )
            text = f"{scaled:.{digits}f}"
            if "." in text:  # '530' stays '530', '2.50' becomes '2.5'
                text = text.rstrip("0").rstrip(".")
            return text + suffix
    return f"{value:g}" if decimals is None else f"{value:.0f}"


def fmt_duration(delta: timedelta) -> str:
    return humanize_duration(delta)


def inline(text: str | None, limit: int = 200) -> str:
    """One line of at most `limit` characters (whitespace collapsed, an ellipsis where cut)."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
