"""What `/timeline` and `runscribe timeline` show: dated one-line entries, newest first."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.core.errors import UserFacingError
from bot.models import SOURCE_SPECS, TAGS
from bot.narrative.entries import TimelineEntry, entry_from_event
from bot.services.runs import UnknownRun
from bot.store import Store

MAX_DAYS = 3650


class BadFilter(UserFacingError):
    """A timeline filter a user typed wrong; the message is safe to show them."""


def validate_filters(days: int | None, tag: str | None, source: str | None) -> None:
    if days is not None and not 1 <= days <= MAX_DAYS:
        raise BadFilter(f"days must be between 1 and {MAX_DAYS}")
    if tag is not None and tag not in TAGS:
        raise BadFilter(f"unknown tag {tag!r}; use one of: {', '.join(TAGS)}")
    if source is not None and source not in SOURCE_SPECS:
        known = ", ".join(SOURCE_SPECS.names())
        raise BadFilter(f"unknown source {source!r}; use one of: {known}")


async def build_timeline(
    store: Store,
    slug: str,
    now: datetime,
    *,
    days: int | None = 7,
    tag: str | None = None,
    source: str | None = None,
    limit: int = 200,
    offset: int = 0,
    until: datetime | None = None,
) -> list[TimelineEntry]:
    """Newest first: the events of the `days` before `now` (and any dated after it, unless
    `until` ends the window there: entries at `until` or later are left out)."""
    validate_filters(days, tag, source)
    if await store.runs.get(slug) is None:
        raise UnknownRun(slug)
    since = now - timedelta(days=days) if days is not None else None
    events = await store.events.listing(
        slug, since=since, until=until, tag=tag, source=source, limit=limit, offset=offset
    )
    return [entry_from_event(event) for event in events]
