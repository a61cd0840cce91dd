"""Time helpers. Inside Runscribe every datetime is timezone-aware UTC; local time is a rendering
concern only. The store keeps times as fixed-width ISO-8601 text so they sort as strings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_DB_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utcnow() -> datetime:
    return datetime.now(UTC)


def resolve_zone(name: str, *, strict: bool = False) -> ZoneInfo:
    """The IANA zone `name`. An unknown name is UTC, or a ValueError when `strict` (the runs
    file's validator: a typo there must be reported, not silently read as UTC)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        if strict:
            raise ValueError(f"unknown time zone {name!r}") from None
        return ZoneInfo("UTC")


def ensure_utc(value: datetime) -> datetime:
    """Naive datetimes are taken to be UTC (W&B and GitHub both send UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_time(value: str | int | float | datetime | None) -> datetime | None:
    """Parse ISO-8601 (with or without zone, with a trailing Z) or epoch seconds into UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return ensure_utc(value)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC)
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return ensure_utc(datetime.fromisoformat(text))


def to_db(value: datetime | None) -> str | None:
    if value is None:
        return None
    return ensure_utc(value).strftime(_DB_FORMAT)


def from_db(value: str | None) -> datetime | None:
    if value is None:
        return None
    # fromisoformat reads our fixed format (trailing Z included) ~10x faster than strptime,
    # which matters when a status read parses thousands of metric points.
    return datetime.fromisoformat(value)


def humanize_delta(delta: timedelta) -> str:
    """'just now', '4 min', '3 h 12 min', '2 d 5 h' — compact, for status lines."""
    seconds = int(delta.total_seconds())
    if seconds < 0:
        seconds = 0
    if seconds < 60:
        return "just now" if seconds < 10 else f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def humanize_duration(delta: timedelta) -> str:
    """How long something lasted: '4 min', '3 h 12 min', and 'under a minute' below a minute
    (never 'just now', which is a moment, not a duration)."""
    if delta.total_seconds() < 60:
        return "under a minute"
    return humanize_delta(delta)


def ago(then: datetime | None, now: datetime) -> str:
    if then is None:
        return "never"
    text = humanize_delta(now - then)
    return text if text == "just now" else f"{text} ago"
