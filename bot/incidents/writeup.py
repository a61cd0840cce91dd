"""What an incident's write-up says, as facts: what happened and when, the cause in the
reporters' words, who acted, how training came back, what it cost, the follow-ups people opened
and every source. Read from the store when the incident resolves (and again whenever it
changes); `bot.posts.writeup` words it. Numbers come from the one record of each fact
(`Restart` for downtime and recomputed steps, the run's pace for their time and tokens)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from bot.analysis.goodput import DOWN_FINGERPRINTS, Pace
from bot.core.errors import UserFacingError
from bot.incidents.detectors import CRASH, where
from bot.models import (
    Event,
    Incident,
    IncidentAction,
    IncidentMember,
    LLMOutput,
    ReportedCause,
    Restart,
    RunInfo,
)
from bot.store import Store

#: Event kinds that are a follow-up when opened about an incident: an issue or a pull request.
FOLLOW_UP_KINDS = ("issue", "pull")
#: A GitHub issue or pull request named in a post ("opened #8617 for it").
_NAMED = re.compile(r"(?<![\w/&])#(\d{1,7})\b")
FOLLOW_UPS_NAMED = 10  # the most named threads looked up
#: Incidents resolved this recently get (and keep up to date) a write-up: in the thread, in the
#: ops log, and by the model when a key is set.
RECENT = timedelta(days=2)
#: The stored model write-ups' task and key (`writeup:<incident id>:<facts' hash>`).
PROSE_TASK = "writeup"

_Summed = TypeVar("_Summed", int, timedelta, float)


@dataclass(frozen=True, slots=True)
class Cost:
    """What an incident cost the run. `down`: last step before → first step after a restart,
    else first symptom → cleared for a condition that stops training; None: training went on."""

    down: timedelta | None = None
    steps_recomputed: int | None = None
    pace: Pace = field(default_factory=Pace)
    gpus: int | None = None  # the runs file's `gpus`
    restarted: bool = False  # `down` is a restart's gap (else the condition's span)
    outages: int = 1  # a reopened incident's cost sums its outages' (`summed`)
    #: summed over the outages, each at its own pace: recomputing time and tokens
    summed: tuple[timedelta | None, float | None] | None = None

    @property
    def down_means(self) -> str:
        said = "first symptom → cleared"
        if self.restarted:
            said = "last step before the interruption → first step after"
        return said if self.outages == 1 else f"{self.outages} outages, each {said}, summed"

    @property
    def recompute_time(self) -> timedelta | None:
        if self.summed is not None:
            return self.summed[0]
        per_step = self.pace.seconds_per_step
        if self.steps_recomputed is None or per_step is None:
            return None
        return timedelta(seconds=self.steps_recomputed * per_step)

    @property
    def tokens_recomputed(self) -> float | None:
        if self.summed is not None:
            return self.summed[1]
        per_step = self.pace.tokens_per_step
        if self.steps_recomputed is None or per_step is None:
            return None
        return self.steps_recomputed * per_step

    @property
    def lost(self) -> timedelta | None:
        """Down plus recomputing: the wall time the run made no new progress."""
        parts = [t for t in (self.down, self.recompute_time) if t is not None]
        return sum(parts, timedelta()) if parts else None

    @property
    def gpu_hours(self) -> float | None:
        lost = self.lost
        if self.gpus is None or lost is None:
            return None
        return self.gpus * lost.total_seconds() / 3600


def _total(values: Iterable[_Summed | None]) -> _Summed | None:
    found = [v for v in values if v is not None]
    return sum(found[1:], found[0]) if found else None


def summed_cost(costs: Sequence[Cost]) -> Cost:
    """A reopened incident's cost: its outages' costs added up (down, steps, recomputing time,
    tokens, so GPU-hours too); each outage's recomputing priced at its own pace."""
    if len(costs) == 1:
        return costs[0]
    paces = {c.pace for c in costs if c.steps_recomputed}
    return Cost(
        down=_total(c.down for c in costs),
        steps_recomputed=_total(c.steps_recomputed for c in costs),
        pace=paces.pop() if len(paces) == 1 else Pace(),
        gpus=costs[-1].gpus,
        restarted=all(c.restarted for c in costs),
        outages=len(costs),
        summed=(
            _total(c.recompute_time for c in costs),
            _total(c.tokens_recomputed for c in costs),
        ),
    )


@dataclass(frozen=True, slots=True)
class Outage:
    """One outage of an incident (an incident that reopened has several): when it began and
    cleared, what it was called, the restart training came back from, what it cost."""

    since: datetime
    until: datetime | None  # None: still open
    title: str
    restart: Restart | None
    down: timedelta | None
    reopened_at: datetime | None = None  # when the condition came back after it


def _restart(members: Mapping[str, IncidentMember]) -> Restart | None:
    crash = members.get(CRASH)
    if crash is not None and crash.restart is not None:
        return crash.restart
    return next((m.restart for m in members.values() if m.restart), None)


def _down(
    members: Mapping[str, IncidentMember],
    restart: Restart | None,
    since: datetime,
    until: datetime | None,
) -> timedelta | None:
    if restart is not None and restart.down_for is not None:
        return restart.down_for
    if not any(fp in DOWN_FINGERPRINTS for fp in members) or until is None:
        return None
    return until - since


def outages_of(incident: Incident) -> list[Outage]:
    """Its outages, oldest first: the earlier ones of a reopened incident, then the latest."""
    found = [
        Outage(o.since, o.until, o.title, r, _down(o.members, r, o.since, o.until), o.reopened_at)
        for o in incident.details.outages
        for r in [_restart(o.members)]
    ]
    members, since, until = incident.details.members, incident.outage_since, incident.resolved_at
    restart = _restart(members)
    found.append(
        Outage(since, until, incident.title, restart, _down(members, restart, since, until))
    )
    return found


def total_down(incident: Incident) -> timedelta | None:
    """Its downtime over every outage (None: none stopped training)."""
    downs = [o.down for o in outages_of(incident) if o.down is not None]
    return sum(downs, timedelta()) if downs else None


@dataclass(frozen=True, slots=True)
class Source:
    """A source the write-up links: what it is, where, and its link."""

    label: str  # "Discord #hero-run", "GitHub #8506"
    url: str
    at: datetime


@dataclass(slots=True)
class Writeup:
    incident: Incident
    run_name: str
    zone: str  # the run's IANA time zone: times are said in it
    cost: Cost
    restart: Restart | None = None  # how training came back
    cause: ReportedCause | None = None
    actions: list[IncidentAction] = field(default_factory=list)
    follow_ups: list[Event] = field(default_factory=list)  # issues and PRs opened about it
    sources: list[Source] = field(default_factory=list)
    outages: list[Outage] = field(default_factory=list)  # more than one: it reopened

    @property
    def id(self) -> int:
        assert self.incident.id is not None
        return self.incident.id


@dataclass(frozen=True, slots=True)
class Prose:
    """The write-up's words as stored for one state of its facts: the model's cited prose
    (`by` "llm", its `[n]` already links to the sources), or "template" when the model was
    refused, failed or timed out (the template's sections are then written from the facts)."""

    text: str
    by: str  # "llm" | "template"
    at: datetime

    @property
    def by_model(self) -> bool:
        return self.by == "llm" and bool(self.text.strip())


class WriteupPen(Protocol):
    """The model's side of the write-up (`bot.llm.writeup.ModelPen`), handed in when a key is
    set. `stored` reads what was written for the write-up's present facts (the store only: the
    incident's posts never wait on a model); `write` writes it (the model, checked, else the
    template's mark) and stores it, once per state of the facts."""

    async def stored(self, store: Store, writeup: Writeup) -> Prose | None: ...

    async def write(self, store: Store, writeup: Writeup, now: datetime) -> Prose: ...


def prose_of(stored: LLMOutput) -> Prose:
    return Prose(stored.content, "template" if stored.fallback else "llm", stored.created_at)


async def latest_prose(store: Store, incident_id: int) -> Prose | None:
    """The newest write-up stored for the incident, whatever state of its facts it was written
    for: what its thread and ops-log comment show (`/incidents report`, `runscribe incident`)."""
    stored = await store.llm.latest_keyed(f"{PROSE_TASK}:{incident_id}:")
    return prose_of(stored) if stored is not None else None


def restart_of(incident: Incident) -> Restart | None:
    """The restart training came back from (the latest outage's): the crash's, else any
    member's."""
    return _restart(incident.details.members)


def sources_of(incident: Incident, events: list[Event]) -> list[Source]:
    """Every linked source with a link, oldest first, each link once."""
    found: dict[str, Source] = {}
    for signal in incident.details.signals:
        if signal.url:
            found.setdefault(signal.url, Source(signal.source, signal.url, signal.at))
    for event in events:
        if event.url:
            found.setdefault(event.url, Source(where(event), event.url, event.at))
    for said in (incident.details.reported_cause, incident.details.action):
        if said is not None and said.url:
            found.setdefault(said.url, Source(said.source, said.url, said.at))
    return sorted(found.values(), key=lambda s: s.at)


async def follow_ups_of(store: Store, incident: Incident, events: list[Event]) -> list[Event]:
    """Issues and pull requests opened about the incident: linked to it, or named (#N) by the
    people who wrote about it, and opened at or after its first symptom (an older thread, the
    ops log itself, is where it was discussed, not a follow-up)."""
    found = {e.external_id: e for e in events if e.kind in FOLLOW_UP_KINDS}
    said = [e.body or e.title or "" for e in events if e.kind not in FOLLOW_UP_KINDS]
    said += [s.text for s in (incident.details.reported_cause, incident.details.action) if s]
    named = dict.fromkeys(m for text in said for m in _NAMED.findall(text))
    for number in list(named)[:FOLLOW_UPS_NAMED]:
        key = f"issue:{number}"
        if key not in found:
            event = await store.events.get_by_external(incident.run_slug, "github", key)
            if event is not None:
                found[key] = event
    return sorted(
        (e for e in found.values() if e.at >= incident.started_at and not e.deleted),
        key=lambda e: e.at,
    )


async def gather_writeup(store: Store, run: RunInfo, incident: Incident) -> Writeup:
    """The write-up's facts, from the store alone (no network, no model)."""
    assert incident.id is not None
    outages = outages_of(incident)
    costs = []
    for outage in outages:
        restart = outage.restart
        costs.append(
            Cost(
                down=outage.down,
                steps_recomputed=restart.recomputed_steps if restart else None,
                pace=await store.metrics.pace_around(run.slug, restart) if restart else Pace(),
                gpus=run.config.gpus,
                restarted=restart is not None and restart.down_for is not None,
            )
        )
    events = await store.incidents.events(incident.id)
    follow_ups = await follow_ups_of(store, incident, events)
    actions = [o.action for o in incident.details.outages if o.action is not None]
    if incident.details.action is not None:
        actions.append(incident.details.action)
    return Writeup(
        incident=incident,
        run_name=run.name,
        zone=run.timezone,
        cost=summed_cost(costs),
        restart=outages[-1].restart,
        cause=incident.details.reported_cause,
        actions=actions,
        follow_ups=follow_ups,
        sources=sources_of(incident, events),
        outages=outages,
    )


async def recent_writeups(store: Store, now: datetime) -> list[Writeup]:
    """Every run's incidents resolved within `RECENT` that alerted (history found after the
    fact gets none): the write-ups the model keeps written."""
    found = []
    for run in await store.runs.all():
        for incident in await store.incidents.find(run.slug, since=now - RECENT):
            details = incident.details
            if incident.status == "resolved" and details.fired and not details.history:
                found.append(await gather_writeup(store, run, incident))
    return found


async def writeup_for(store: Store, incident_id: int, slug: str | None = None) -> Writeup:
    """`/incidents report ID` and `runscribe incident ID`: a resolved incident's write-up."""
    incident = await store.incidents.get(incident_id)
    if incident is None or (slug is not None and incident.run_slug != slug):
        raise UserFacingError(f"No incident #{incident_id}.")
    if incident.status != "resolved":
        raise UserFacingError(f"Incident #{incident_id} is still open: it has no write-up yet.")
    run = await store.runs.get(incident.run_slug)
    if run is None:
        raise UserFacingError(f"Incident #{incident_id} belongs to no tracked run.")
    return await gather_writeup(store, run, incident)


async def report_for(
    store: Store, incident_id: int, slug: str | None = None
) -> tuple[Writeup, Prose | None]:
    """A resolved incident's write-up with the words stored for it (None: the template's)."""
    writeup = await writeup_for(store, incident_id, slug)
    return writeup, await latest_prose(store, incident_id)
