"""Silences: "post nothing about this run's <condition> until <time>", with an owner and a
reason. Incidents are still detected and recorded while silenced; only posts are held back.

Silencing (and ending a silence) is for responders: members with the run's `responder_role` or
Manage Server. Acknowledging an incident stays open to everyone and records who did it."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from bot.core.errors import UserFacingError
from bot.enrich.incident_signals import KIND_PRIORITY
from bot.incidents.detectors import (
    ALERT_PREFIX,
    DETECTORS,
    KIND_LABELS,
    REPORT_PREFIX,
)
from bot.models import Incident, Silence
from bot.store import Store

MAX_SILENCE = timedelta(days=14)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(m|min|mins|h|hr|hrs|d|day|days)?\s*$", re.I)
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}
_ALL = {"*", "all", "any"}  # what matches every condition ('*': silences stored before 35)
_SAID_ALL = {"all", "any"}  # how a person asks for every condition: in words, never a glob


def conditions() -> dict[str, str]:
    """What a silence can name, with what it covers (shown when a condition is unknown): `all`
    and every detector in the registry; a family of conditions (reports, drifts) as a glob. Each
    condition also answers to its incident kind (a family's kind is its prefix: `drift`)."""
    return {
        "all": "every condition of the run",
        **{
            spec.fingerprint + ("*" if spec.family else ""): spec.description
            or (
                f"every `{spec.fingerprint.rstrip(':')}` condition"
                if spec.family
                else spec.fingerprint
            )
            for spec in DETECTORS
        },
    }


#: Kinds of incidents people report; `report:<kind>:*` (or the bare kind) silences one of them.
REPORT_KINDS: tuple[str, ...] = tuple(dict.fromkeys([*KIND_PRIORITY, *KIND_LABELS]))


def _detector_kinds() -> tuple[str, ...]:
    """Kinds that differ from their detector's fingerprint."""
    return (
        "crash",
        *(
            s.fingerprint.rstrip(":")
            for s in DETECTORS
            if s.family and s.fingerprint != REPORT_PREFIX
        ),
    )


def parse_duration(text: str) -> timedelta:
    """'90m', '2h', '1.5 h', '3d', a bare number is minutes; at most MAX_SILENCE."""
    match = _DURATION.match(text or "")
    if not match:
        raise UserFacingError(f"can't read the duration {text!r}; try 30m, 2h or 1d")
    unit = (match.group(2) or "m")[0].lower()
    seconds = float(match.group(1)) * _UNIT_SECONDS[unit]  # a float: never overflows
    if seconds <= 0:
        raise UserFacingError("the duration must be positive")
    if seconds > MAX_SILENCE.total_seconds():
        raise UserFacingError(
            f"{text.strip()[:24]!r} is too long: a silence can last at most "
            f"{MAX_SILENCE.days} days (end it early with unsilence)"
        )
    return timedelta(seconds=seconds)


def known_condition(matcher: str, kinds: Collection[str] = ()) -> bool:
    """Whether a matcher can match anything a detector or a report produces (`kinds`: more
    incident kinds the run has seen, e.g. the names of its Alertmanager alerts)."""
    matcher = matcher.strip().lower()
    if matcher in _SAID_ALL:
        return True
    names = [*conditions(), *_detector_kinds(), *REPORT_KINDS, *(k.lower() for k in kinds)]
    names += [f"{REPORT_PREFIX}{kind}:thread" for kind in REPORT_KINDS]
    names += [f"{spec.fingerprint}x" for spec in DETECTORS if spec.family]
    if any(fnmatch.fnmatchcase(name, matcher) for name in names):
        return True
    # one condition of a family by its fingerprint: report:<kind>:<thread>, drift:<metric>
    parts = matcher.split(":", 2)
    if matcher.startswith(REPORT_PREFIX):
        return (
            len(parts) == 3
            and bool(parts[2])
            and any(fnmatch.fnmatchcase(kind, parts[1]) for kind in REPORT_KINDS)
        )
    return any(
        spec.family and matcher.startswith(spec.fingerprint) and matcher != spec.fingerprint
        for spec in DETECTORS
    )


def matches_everything(matcher: str) -> bool:
    """Whether a glob (`*`, `**`, `*?`…) would match every condition a run can have: refused,
    since a silence that broad must be asked for in words (`all`)."""
    matcher = matcher.strip().lower()
    if matcher in _SAID_ALL or not set(matcher) & set("*?["):
        return False
    names = [*(spec.fingerprint.rstrip(":") for spec in DETECTORS), *_detector_kinds()]
    names += [f"{REPORT_PREFIX}oom:discord:1", f"{ALERT_PREFIX}x:1", "crash", "a", "b:c"]
    return all(fnmatch.fnmatchcase(name, matcher) for name in names)


def plain_glob(matcher: str) -> str:
    """The matcher as said back (no backticks that would break the code span)."""
    return matcher.replace("`", "'")[:40]


def check_condition(matcher: str, kinds: Collection[str] = ()) -> str:
    """The matcher, cleaned; an unknown one is refused with the list of conditions (`kinds`:
    see `known_condition`)."""
    matcher = (matcher or "all").strip() or "all"
    if len(matcher) > 200:
        raise UserFacingError("the condition is too long")
    if matches_everything(matcher):
        raise UserFacingError(
            f"`{plain_glob(matcher)}` would silence every condition of the run, so it is not "
            "taken as a pattern. Name the condition (`crash`, `stall`, `loss-*`, `report:oom`…), "
            "or say `all` to silence everything on purpose."
        )
    kind = matcher.lower().removeprefix(REPORT_PREFIX)
    if matcher.lower().startswith(REPORT_PREFIX) and kind in REPORT_KINDS:
        matcher = f"{matcher}:*"  # 'report:oom' means every reported OOM
    name = matcher[len(ALERT_PREFIX) :]
    if matcher.lower().startswith(ALERT_PREFIX) and name and not set(name) & set(":*?["):
        matcher = f"{matcher}:*"  # 'alert:GPUXidError' means every alert of that name
    if not known_condition(matcher, kinds):
        names = ", ".join(f"`{name}`" for name in conditions())
        kinds = ", ".join(f"`{kind}`" for kind in REPORT_KINDS)
        raise UserFacingError(
            f"unknown condition {matcher!r}. Conditions: {names}; reported kinds: {kinds} "
            "(or `report:<kind>:*`); globs such as `loss-*` work too."
        )
    return matcher


def require_responder(
    slug: str,
    responder_role: int | None,
    *,
    role_ids: Collection[int],
    manages_server: bool,
    role_name: str | None = None,
) -> None:
    """Silences are for the run's responders (its `responder_role`) and Manage Server."""
    if manages_server or (responder_role is not None and responder_role in role_ids):
        return
    if responder_role is None:
        raise UserFacingError(
            f"Only members with Manage Server can silence or unsilence alerts for {slug} "
            "(set `responder_role` in the runs file to let responders do it)."
        )
    role = f"the {role_name} role" if role_name else f"the responder role ({responder_role})"
    raise UserFacingError(
        f"Silencing or unsilencing alerts for {slug} needs {role} or Manage Server."
    )


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
    matcher = check_condition(matcher, await store.events.alert_names(slug))
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


async def silence_run(store: Store, silence_id: int) -> str:
    """The run a silence belongs to (who may end it depends on the run)."""
    silence = await store.incidents.get_silence(silence_id)
    if silence is None:
        raise UserFacingError(f"no silence #{silence_id}")
    return silence.run_slug


async def end_silence(store: Store, silence_id: int, who: str, now: datetime) -> Silence:
    repo = store.incidents
    silence = await repo.get_silence(silence_id)
    if silence is None:
        raise UserFacingError(f"no silence #{silence_id}")
    if not await repo.cancel_silence(silence_id, who, now):
        raise UserFacingError(f"silence #{silence_id} was already ended")
    silence.cancelled_at, silence.cancelled_by = now, who
    return silence
