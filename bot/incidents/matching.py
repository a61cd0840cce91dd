"""Matching a finding to an incident of the round (step 3 of `bot.incidents.engine`): the open
one with its fingerprint, else an open incident of the same group close in time, else a new one;
an episode a resolved incident already covers is old news.
"""

from __future__ import annotations

from datetime import datetime

import bot.incidents.lifecycle as lifecycle
from bot.incidents.detectors import OUTAGE, Finding, is_report
from bot.incidents.rounds import Cycle
from bot.models import Incident, IncidentMember


def match(cycle: Cycle, finding: Finding) -> tuple[Incident | None, str]:
    """The incident a finding belongs to, and how: "old" (an episode a resolved incident, or
    an earlier outage of a reopened one, already covers), "member" (the open incident with its
    fingerprint), "join" (an open outage close in time), "followup" (a report about a resolved
    one), "reopen" (the condition of one resolved within the run's `reopen_minutes`), or None
    and "new"."""
    p = cycle.judge.policy
    report = is_report(finding.fingerprint)
    # A condition's episode a resolved incident already covers is old news, even when the
    # run has since opened another incident of that condition (a detector reports each
    # episode it still sees: the previous crash beside the new one).
    old = resolved_covering(cycle, finding)
    if old is not None and not report:
        return old, "old"
    for incident in cycle.incidents:
        if incident.status != "resolved" and finding.fingerprint in incident.fingerprints():
            return incident, "member"
    if old is not None:
        return old, "followup"
    if finding.group == OUTAGE:
        for incident in cycle.incidents:
            if (
                incident.status != "resolved"
                and incident.details.group == OUTAGE
                and finding.since >= incident.started_at - p.group_window
            ):
                return incident, "join"
        if report:
            for incident in reversed(cycle.incidents):
                resolved = incident.resolved_at
                if (
                    resolved is not None
                    and incident.details.group == OUTAGE
                    and incident.started_at - p.group_window
                    <= finding.since
                    <= resolved + p.followup_window
                ):
                    return incident, "followup"
    back = reopenable(cycle, finding)
    if back is not None:
        return back, "reopen"
    return None, "new"


def reopenable(cycle: Cycle, finding: Finding) -> Incident | None:
    """The resolved incident a condition that came back reopens: the one that last resolved
    with that condition in its latest outage, at most the run's `reopen_minutes` before the
    condition came back, once it had alerted (neither history nor cleared unheard). A person's
    report is a follow-up, never a reopening."""
    window = lifecycle.reopen_window(cycle.judge)
    if not window or is_report(finding.fingerprint):
        return None
    found: Incident | None = None
    for incident in cycle.incidents:
        resolved, details = incident.resolved_at, incident.details
        if (
            resolved is not None
            and incident.status == "resolved"
            and finding.fingerprint in details.members
            and details.fired
            and not (details.history or details.silent)
            and resolved < finding.since <= resolved + window
            and (found is None or resolved > (found.resolved_at or resolved))
        ):
            found = incident
    if found is None or any(
        i.status != "resolved" and found.fingerprint in i.fingerprints() for i in cycle.incidents
    ):
        return None  # the store keeps one unresolved incident per condition
    return found


def resolved_covering(cycle: Cycle, finding: Finding) -> Incident | None:
    """The newest incident whose episode of the finding's condition, resolved, the finding
    began in (or just before: within the hold): its own when it is resolved, or an earlier
    outage of one that reopened."""
    for incident in reversed(cycle.incidents):
        hold = lifecycle.hold(cycle.judge, incident)
        episodes: list[tuple[IncidentMember | None, datetime | None]] = [
            (o.members.get(finding.fingerprint), o.until) for o in incident.details.outages
        ]
        if incident.status == "resolved":
            member = incident.details.members.get(finding.fingerprint)
            episodes.append((member, incident.resolved_at))
        for member, resolved in episodes:
            if member is None:
                continue
            until = member.until or resolved
            assert until is not None
            if member.since - hold <= finding.since <= until:
                return incident
    return None
