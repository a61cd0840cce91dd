"""The incident lifecycle, pure: a finding absorbed into an incident's members, and an incident
moved pending → firing → resolved. No I/O and no clock: a `Judgement` carries the cycle's time,
the run's thresholds and what the detectors said; the engine reads and writes the store.

- pending → firing once the condition has lasted the run's `pending_minutes` (the monitor's own
  notice waits until W&B has been unreachable for `Policy.monitor_notice_after`);
- pending → resolved, silently, when it clears inside that period (never alerted);
- firing → resolved once every member has stayed clear for the hold: the engine's `clear_hold`,
  or longer where the detector says so (`DetectorSpec.hold`), doubled per flap; a person's
  report of a fault an Alertmanager alert was firing for clears when the alert is resolved;
- a member the data cannot judge this cycle (`frozen`: W&B unreachable, or inhibited by a crash)
  is neither raised nor cleared;
- resolved → firing again (`reopen`) when the same condition comes back within the run's
  `reopen_minutes` of the resolution: the outage it had is kept (`PastOutage`), one incident
  covers both; past the window (or with `reopen_minutes = 0`) the return is a new incident.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.config.runsfile import Thresholds
from bot.core.numbers import fmt_int
from bot.incidents.detectors import (
    ALERT_PREFIX,
    CRASH,
    DETECTORS,
    MONITOR,
    Finding,
    RunData,
    is_report,
    spec_for,
)
from bot.models import Incident, IncidentMember, PastOutage

_SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


@dataclass(frozen=True, slots=True)
class Policy:
    """Engine-wide timing. Per-run thresholds come from the runs file (`[runs.alerts]`)."""

    clear_hold: timedelta = timedelta(minutes=2)  # a clear must hold this long to resolve
    max_flap_factor: int = 8  # the hold doubles per flap, up to this factor
    group_window: timedelta = timedelta(hours=2)  # reports and W&B signals this close: one incident
    followup_window: timedelta = timedelta(hours=12)  # late reports attach to a resolved incident
    report_quiet: timedelta = timedelta(minutes=30)  # report-only incidents: progress this long
    report_expiry: timedelta = timedelta(hours=24)  # report-only, run without W&B data
    first_lookback: timedelta = timedelta(hours=6)  # history a brand-new engine looks at
    late_margin: timedelta = timedelta(hours=1)  # data arriving late (slow history, enrichment)
    max_lookback: timedelta = timedelta(days=3)
    baseline: timedelta = timedelta(hours=6)  # points read before the window (trends, rates)
    # The newest points are judged one by one, not from the per-minute rollup: a loss spike's
    # K points, logged within one minute at a step a second, would be thinned away. Read raw:
    # what arrived since the points the previous round judged (less a minute), and at least
    # the last `raw_tail`, at most the last `raw_tail_max` (a backlog after an outage).
    raw_tail: timedelta = timedelta(minutes=2)
    raw_tail_max: timedelta = timedelta(minutes=30)
    monitor_notice_after: timedelta = timedelta(minutes=5)  # W&B unreachable this long: notice
    # A condition first found already over for this long is history (a backfill: W&B or a
    # thread read back after downtime), recorded but never alerted.
    backfill_after: timedelta = timedelta(hours=1)


@dataclass(slots=True)
class Judgement:
    """What one cycle knows when it judges a run's incidents."""

    data: RunData
    policy: Policy = field(default_factory=Policy)
    frozen: set[str] = field(default_factory=set)  # conditions the data cannot judge now
    clears: dict[str, datetime] = field(default_factory=dict)  # clear since, per fingerprint

    @property
    def now(self) -> datetime:
        return self.data.now

    def is_frozen(self, fingerprint: str) -> bool:
        """Whether the condition, or the family it belongs to (`drift:<metric>`), is frozen."""
        if fingerprint in self.frozen:
            return True
        spec = spec_for(fingerprint)
        return spec is not None and spec.fingerprint in self.frozen

    @property
    def thresholds(self) -> Thresholds:
        return self.data.thresholds


def hold(j: Judgement, incident: Incident) -> timedelta:
    """How long every member must stay clear before the incident resolves."""
    p = j.policy
    holds = []
    for fp in incident.details.members:
        spec = spec_for(fp)
        if spec is None:
            holds.append(p.clear_hold)
        elif spec.hold is not None:
            holds.append(spec.hold(j.thresholds, p.clear_hold))
    base = max(holds) if holds else p.report_quiet
    return base * min(2**incident.details.flaps, p.max_flap_factor)


def pending_period(j: Judgement, incident: Incident) -> timedelta:
    pending = timedelta(minutes=j.thresholds.pending_minutes)
    if incident.fingerprint == MONITOR:
        pending = max(pending, j.policy.monitor_notice_after)
    return pending


def report_clear(j: Judgement, member: IncidentMember) -> tuple[datetime | None, str]:
    """When a reported incident counts as over: training progressed after the last report
    (W&B runs), or no further report for a day (runs without W&B data)."""
    last = member.last_report_at or member.since
    data = j.data
    if data.blind:
        return None, ""
    if data.snapshots or data.series:
        point = data.first_point_after(last)
        if point is None:
            return None, ""
        return (
            point.at,
            f"Training has been progressing since the report (step {fmt_int(point.step)}).",
        )
    if j.now - last >= j.policy.report_expiry:
        return last + j.policy.report_expiry, "No further reports for 24 h."
    return None, ""


def alerts_clear(incident: Incident) -> datetime | None:
    """When the last of the incident's Alertmanager alerts was resolved; None while one still
    fires, or when it has none."""
    ends = [m.until for fp, m in incident.details.members.items() if fp.startswith(ALERT_PREFIX)]
    if not ends or any(end is None for end in ends):
        return None
    return max(end for end in ends if end is not None)


def reported_clear(
    j: Judgement, incident: Incident, member: IncidentMember
) -> tuple[datetime | None, str]:
    """When a person's report in the incident counts as over. A report of the fault an alert
    was firing for (it came while an alert of the incident fired) clears with that alert:
    when Alertmanager says the last one resolved. Any other report: `report_clear`."""
    resolved = alerts_clear(incident)
    last = member.last_report_at or member.since
    if resolved is not None and last <= resolved:
        return max(resolved, member.since), ""
    return report_clear(j, member)


def absorb(j: Judgement, incident: Incident, finding: Finding) -> bool:
    """Record a finding as a member of the incident (new, or the same condition seen again).
    Returns whether the member is new."""
    details = incident.details
    member = details.members.get(finding.fingerprint)
    new = member is None
    if member is None:
        member = details.members[finding.fingerprint] = IncidentMember(
            kind=finding.kind, title=finding.title, since=finding.since
        )
    elif member.until is not None and finding.active:
        details.flaps += 1
    since = min(member.since, finding.since)
    member.since = since
    member.until = finding.until
    member.facts = finding.facts
    member.restart = finding.restart
    member.seen_at = j.now
    if finding.resolution:
        member.resolution = finding.resolution
    if is_report(finding.fingerprint):
        member.last_report_at = finding.last_report_at
        until, text = reported_clear(j, incident, member)
        member.until, member.resolution = until, text or None
        if finding.thread and finding.thread not in details.threads:
            details.threads.append(finding.thread)
    if since < incident.started_at:
        incident.started_at = since
    if _SEVERITY_RANK.get(finding.severity, 1) > _SEVERITY_RANK.get(incident.severity, 1):
        incident.severity = finding.severity
    if finding.active:
        incident.last_seen_at = j.now
    return new


def advance(j: Judgement, incident: Incident, at: datetime | None = None) -> bool:
    """Move the incident along its lifecycle as of `at` (default: now). Returns whether it
    resolved."""
    now = at or j.now
    details = incident.details
    for fp, member in details.members.items():
        if at is not None:
            break  # judging the past: only what the findings already said counts
        if member.until is not None:
            continue
        if is_report(fp):
            until, text = reported_clear(j, incident, member)
            if until is not None:
                member.until, member.resolution = until, text or None
        elif not j.is_frozen(fp) and member.seen_at != now:
            member.until = j.clears.get(fp, now)  # no finding this cycle: the condition is over
    if any(m.until is None for m in details.members.values()):
        details.clear_since = None
    else:
        details.clear_since = max(m.until or now for m in details.members.values())
    clear = details.clear_since
    if incident.status == "pending":
        end = clear if clear is not None else now
        if end - incident.started_at >= pending_period(j, incident):
            incident.status = "firing"
            incident.fired_at = j.now
            details.fired = True
        elif clear is not None:
            details.silent = True  # cleared before its pending period: never alerted
            resolve(incident, clear)
            return True
    if incident.status == "firing" and clear is not None and now - clear >= hold(j, incident):
        resolve(incident, clear)
        return True
    return False


def resolve(incident: Incident, at: datetime) -> None:
    """Resolved at `at`, saying what cleared it: the crash's resolution first, else the latest
    member's, else the detector's default."""
    order = sorted(
        incident.details.members.items(),
        key=lambda kv: (kv[0] != CRASH, -(kv[1].until or at).timestamp()),
    )
    text = next((m.resolution for _, m in order if m.resolution), None)
    incident.status = "resolved"
    incident.resolved_at = at
    incident.resolution = text if text is not None else default_resolution(incident, at)
    incident.details.clear_since = None


def default_resolution(incident: Incident, at: datetime) -> str:
    for spec in DETECTORS:
        said = spec.default_resolution
        if said and any(spec.owns(fp) for fp in incident.details.members):
            return said
    # no clock time here: every surface shows `resolved_at` itself, in the reader's or the
    # run's zone (a bare UTC time read wrong in a run set to another zone)
    return "The condition cleared."


def reopen_window(j: Judgement) -> timedelta:
    """How long after an incident resolved its condition coming back reopens it (zero: never)."""
    return timedelta(minutes=j.thresholds.reopen_minutes)


def reopen(j: Judgement, incident: Incident, finding: Finding) -> None:
    """The resolved incident's condition came back (`finding`), within `reopen_window`: the outage
    it had is kept as a `PastOutage` (its members, resolution, acknowledgement and who acted),
    and it fires again at once (its condition passed its pending period in this incident).
    The finding names the new outage and becomes its member next (`absorb`); acknowledgement,
    reminders, flaps and who acted start over for it."""
    details, at = incident.details, finding.since
    assert incident.resolved_at is not None
    details.outages.append(
        PastOutage(
            since=incident.outage_since,
            until=incident.resolved_at,
            reopened_at=at,
            title=incident.title,
            fired_at=incident.fired_at,
            resolution=incident.resolution,
            acked_by=incident.acked_by,
            acked_at=incident.acked_at,
            action=details.action,
            members=details.members,
        )
    )
    details.members = {}
    details.flaps = 0
    details.clear_since = None
    details.fired = True
    details.resolved_posted = False
    details.reminders, details.last_reminder_at = 0, None
    details.action, details.acted_by, details.credited = None, None, False
    details.acted_checked_until = None
    incident.status = "firing"
    incident.title, incident.cause, incident.severity = (
        finding.title,
        finding.cause,
        finding.severity,
    )
    incident.fired_at = incident.last_seen_at = j.now
    incident.resolved_at = incident.resolution = None
    incident.acked_by = incident.acked_at = None


def reminder_due(incident: Incident, now: datetime, th: Thresholds) -> bool:
    """A firing, unacknowledged incident is reminded every `reminder_minutes` (if set)."""
    every = th.reminder_minutes
    if incident.status != "firing" or not every or incident.acked_by:
        return False
    last = incident.details.last_reminder_at or incident.fired_at or now
    return now - last >= timedelta(minutes=every)
