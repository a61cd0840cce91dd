"""Silences: "post nothing about this run's <condition> until <time>", with an owner and a
reason. Incidents are still detected and recorded while silenced; only posts are held back."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from bot.errors import UserFacingError
from bot.models import Incident, Silence
from bot.store import Store

MAX_SILENCE = timedelta(days=14)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(m|min|mins|h|hr|hrs|d|day|days)?\s*$", re.I)
_ALL = {"*", "all", "any"}


def parse_duration(text: str) -> timedelta:
    """'90m', '2h', '1.5 h', '3d', a bare number is minutes."""
    match = _DURATION.match(text or "")
    if not match:
        raise UserFacingError(f"can't read the duration {text!r}; try 30m, 2h or 1d")
    value = float(match.group(1))
    unit = (match.group(2) or "m").lower()
    delta = (
        timedelta(days=value)
        if unit.startswith("d")
        else timedelta(hours=value)
        if unit.startswith("h")
        else timedelta(minutes=value)
    )
    if delta <= timedelta(0):
        raise UserFacingError("the duration must be positive")
    if delta > MAX_SILENCE:
        raise UserFacingError("a silence can last at most 14 days")
    return delta


def matches(matcher: str, incident: Incident) -> bool:
    """A matcher is '*', a fingerprint, a kind, or a glob over either ('report:*')."""
    matcher = matcher.strip().lower()
    if matcher in _ALL:
        return True
    names = {incident.fingerprint.lower(), incident.kind.lower()}
    for fp, member in incident.details.members.items():
        names.add(fp.lower())
        names.add(member.kind.lower())
    return any(fnmatch.fnmatchcase(name, matcher) for name in names)


def silencing(silences: Iterable[Silence], incident: Incident, now: datetime) -> Silence | None:
    for silence in silences:
        if silence.active(now) and matches(silence.matcher, incident):
            return silence
    return None


async def add_silence(
    store: Store,
    slug: str,
    matcher: str,
    duration: timedelta,
    owner: str,
    reason: str,
    now: datetime,
) -> Silence:
    if await store.runs.get(slug) is None:
        raise UserFacingError(f"unknown run {slug!r}")
    matcher = (matcher or "*").strip() or "*"
    if len(matcher) > 200:
        raise UserFacingError("the condition is too long")
    silence = Silence(
        run_slug=slug,
        matcher=matcher,
        starts_at=now,
        ends_at=now + duration,
        owner=owner,
        reason=(reason or "").strip()[:500],
        created_at=now,
    )
    await store.incidents.add_silence(silence)
    return silence


async def end_silence(store: Store, silence_id: int, who: str, now: datetime) -> Silence:
    repo = store.incidents
    silence = await repo.get_silence(silence_id)
    if silence is None:
        raise UserFacingError(f"no silence #{silence_id}")
    if not await repo.cancel_silence(silence_id, who, now):
        raise UserFacingError(f"silence #{silence_id} was already ended")
    silence.cancelled_at, silence.cancelled_by = now, who
    return silence
