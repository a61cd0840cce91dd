"""Read and act on incidents for commands, `/status` and the digest. Store only: no network."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bot.core.errors import UserFacingError
from bot.incidents.detectors import CRASH, MONITOR, telling_kind
from bot.incidents.writeup import outages_of
from bot.models import Incident
from bot.store import Store


@dataclass(slots=True)
class IncidentView:
    """One line of `/incidents`: start, end, duration and cause."""

    incident: Incident
    started_at: datetime
    ended_at: datetime | None
    duration: timedelta | None  # None while open
    cause: str
    resolution: str | None
    kinds: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (label, url): "GitHub #12"
    silenced: bool = False

    @property
    def id(self) -> int:
        assert self.incident.id is not None
        return self.incident.id

    @property
    def open(self) -> bool:
        return self.incident.status != "resolved"


@dataclass(frozen=True, slots=True)
class IncidentStats:
    """Unpacks as a tuple too: `count, healed, *_ = await incident_stats(store, slug)`."""

    count: int  # incidents that alerted (the monitor's own notices excluded)
    self_healed_restarts: int  # crashes training recovered from with no human report before
    open: int
    by_kind: dict[str, int]
    self_healed_by_kind: dict[str, int]
    downtime: timedelta  # summed duration of resolved crash incidents

    def __iter__(self) -> Iterator[Any]:
        return iter(
            (
                self.count,
                self.self_healed_restarts,
                self.open,
                self.by_kind,
                self.self_healed_by_kind,
                self.downtime,
            )
        )


def _view(incident: Incident) -> IncidentView:
    links: dict[str, str] = {}  # url -> label, first label wins
    for signal in incident.details.signals:
        if signal.url:
            links.setdefault(signal.url, signal.source)
    ended = incident.resolved_at
    return IncidentView(
        incident=incident,
        started_at=incident.started_at,
        ended_at=ended,
        duration=(ended - incident.started_at) if ended else None,
        cause=incident.cause or incident.title,
        resolution=incident.resolution,
        kinds=incident.kinds(),
        links=[(label, url) for url, label in links.items()],
        silenced=incident.details.silenced_by is not None,
    )


async def list_incidents(
    store: Store, slug: str | None, open_only: bool = False, *, limit: int = 25, offset: int = 0
) -> list[IncidentView]:
    """Newest first. Incidents that cleared inside their pending period (never alerted) are
    left out of the listing."""
    rows = await store.incidents.listing(slug, open_only=open_only, limit=limit, offset=offset)
    return [_view(i) for i in rows if not i.details.silent]


async def incident_stats(store: Store, slug: str, since: datetime | None = None) -> IncidentStats:
    """Over the whole run (or since `since`). The whole-run figures /status shows are kept in the
    store's memo under the incidents' data version, so a request reads one counter unless an
    incident changed since the last one."""
    if since is not None:
        return await _incident_stats(store, slug, since)
    version = await store.incidents.version(slug)
    key = ("incident_stats", slug)
    cached = store.memo.get(key)
    if cached is not None and cached[0] == version:
        return cached[1]
    stats = await _incident_stats(store, slug, None)
    store.memo[key] = (version, stats)
    return stats


async def _incident_stats(store: Store, slug: str, since: datetime | None) -> IncidentStats:
    count = opened = healed = 0
    by_kind: Counter[str] = Counter()
    healed_by_kind: Counter[str] = Counter()
    downtime = timedelta(0)
    for incident in await store.incidents.started_since(slug, since):
        if incident.fingerprint == MONITOR or incident.details.silent:
            continue
        if not incident.details.fired and incident.status != "resolved":
            continue  # still pending
        count += 1
        kinds = incident.kinds()
        by_kind.update(kinds)
        if incident.status != "resolved":
            opened += 1
            continue
        crash = incident.details.members.get(CRASH)
        if crash is None or incident.resolved_at is None or incident.id is None:
            continue
        downtime += sum(
            ((o.until or o.since) - o.since for o in outages_of(incident)), timedelta()
        )  # a reopened incident's outages, not the healthy stretches between them
        if crash.restart is not None and not await _people_acted(store, incident):
            healed += 1
            healed_by_kind.update(kinds)
    return IncidentStats(
        count=count,
        self_healed_restarts=healed,
        open=opened,
        by_kind=dict(by_kind),
        self_healed_by_kind=dict(healed_by_kind),
        downtime=downtime,
    )


async def _people_acted(store: Store, incident: Incident) -> bool:
    """Whether a person reported acting on the incident (requeue, restart, drain…): the engine
    reads that from what people wrote around it. An incident from before the engine did is
    judged the old way: any person's report before it resolved."""
    details = incident.details
    if details.acted_by is not None:
        return True
    if details.acted_checked_until is not None:
        return False
    assert incident.id is not None and incident.resolved_at is not None
    return bool(await store.incidents.human_reports_before(incident.id, incident.resolved_at))


def public_kind(incident: Incident) -> str:
    """`kind` in `status --json`: 'crash', 'stall', 'heartbeat', 'nan', 'spike', 'throughput',
    'drift', 'reported', 'monitor' or a registered detector's own, the most telling of its
    conditions (a crash a person also reported is a crash); else the incident's own kind."""
    return telling_kind([incident.fingerprint, *incident.details.members]) or incident.kind


async def acknowledge(store: Store, incident_id: int, who: str, now: datetime) -> Incident:
    """Record who acknowledged an incident and when (the alert message shows it from the next
    cycle on, and reminders stop)."""
    incident = await store.incidents.get(incident_id)
    if incident is None:
        raise UserFacingError(f"no incident #{incident_id}")
    if incident.acked_by:
        raise UserFacingError(f"incident #{incident_id} was already acknowledged by "
                              f"{incident.acked_by}")  # fmt: skip
    if incident.status == "resolved":
        raise UserFacingError(f"incident #{incident_id} is already resolved")
    if not await store.incidents.acknowledge(incident_id, who, now):
        raise UserFacingError(f"incident #{incident_id} was just acknowledged by someone else")
    incident.acked_by, incident.acked_at = who, now
    return incident
