"""Dates and times as the narrative, the digest and the cards write them (numbers are
`bot.core.numbers`'s, durations `bot.core.timeutil`'s). Times are rendered in the run's own zone
(`bot.core.timeutil.resolve_zone`); everything inside stays UTC."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from bot.core.timeutil import humanize_duration, resolve_zone


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


def inline(text: str | None, limit: int = 200) -> str:
    """One line of at most `limit` characters (whitespace collapsed, an ellipsis where cut)."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: Up to this margin either side, the end is a day with its range in days ("Nov 28, 2026 ±
#: 4 days"): a date a lead can plan on; beyond it, the months the range spans.
RANGE_PRECISION = timedelta(days=21)
_DAY = timedelta(days=1)


def fmt_month(value: datetime, *, year: bool = True) -> str:
    return f"{value:%B} {value.year}" if year else f"{value:%B}"


def projection_is_a_day(margin: timedelta | None) -> bool:
    """Whether a projected end is precise enough to name its day (with its range in days)."""
    return margin is not None and margin <= RANGE_PRECISION


def margin_days(margin: timedelta) -> str:
    """The range either side of a projected day: " ± 4 days"; "" under half a day."""
    days = round(margin / _DAY)
    return f" ± {days} day{'s' if days != 1 else ''}" if days >= 1 else ""


def fmt_projected(end: datetime, margin: timedelta | None, tz: str, now: datetime) -> str:
    """A projected end with the precision its margin allows (`projection_margin`): "Apr 21,
    2027 ± 4 days" within three weeks ("around Apr 21, 2027" under half a day), else the months
    the range spans ("April–May 2027", "December 2026 – February 2027"). Without a margin the
    uncertainty is unknown, so only the months are named. Never a countdown."""
    zone = resolve_zone(tz)
    if margin is not None and projection_is_a_day(margin):
        days = margin_days(margin)
        return f"{fmt_date(end, tz)}{days}" if days else f"around {fmt_date(end, tz)}"
    spread = margin if margin is not None else (end - now)
    low = max(end - spread, now).astimezone(zone)
    high = (end + spread).astimezone(zone)
    if (low.year, low.month) == (high.year, high.month):
        return fmt_month(low)
    if low.year == high.year:
        return f"{fmt_month(low, year=False)}–{fmt_month(high)}"
    return f"{fmt_month(low)} – {fmt_month(high)}"


def fmt_window(window: timedelta) -> str:
    """A rate window's real length: "24 h", "3 h", "40 min" (whole hours from two hours on)."""
    minutes = max(1, round(window.total_seconds() / 60))
    if minutes < 120:
        return f"{minutes} min" if minutes < 60 else humanize_duration(timedelta(minutes=minutes))
    return f"{round(minutes / 60)} h"


_SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=\S)")


def whole_sentences(text: str | None, limit: int) -> str:
    """As many whole sentences of `text` as fit in `limit` characters (on one line); when even
    the first does not fit, it is cut at its last clause (`, ` `; ` ` — `) or word that fits,
    with an ellipsis. Never cut mid-word, never a dangling mark."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    kept = ""
    for part in _SENTENCE_BREAK.split(text):
        joined = f"{kept} {part}" if kept else part
        if len(joined) > limit:
            break
        kept = joined
    if kept:
        return kept
    cut = text[: limit - 1]
    for mark in ("; ", ", ", " — ", " – ", ": "):
        at = cut.rfind(mark)
        if at >= limit // 2:
            return cut[:at].rstrip() + "…"
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip(" ,;:—–-(") + "…"


def fmt_when(value: datetime, tz: str) -> str:
    """A moment without its year, as a sentence says it: "Sep 1 at 7:39 p.m. EDT"."""
    local = value.astimezone(resolve_zone(tz))
    hour = local.hour % 12 or 12
    half = "a.m." if local.hour < 12 else "p.m."
    return f"{local:%b} {local.day} at {hour}:{local.minute:02d} {half} {local.tzname() or tz}"


def fmt_day(value: datetime, tz: str) -> str:
    """A day without its year: "Sep 2"."""
    local = value.astimezone(resolve_zone(tz))
    return f"{local:%b} {local.day}"
