"""Matching a finding to an incident of the round (step 3 of `bot.incidents.engine`): the open
one with its fingerprint, else an open incident of the same group close in time, else a new one;
an episode a resolved incident already covers is old news.
"""

from __future__ import annotations

import bot.incidents.lifecycle as lifecycle
from bot.incidents.detectors import OUTAGE, Finding, is_report
from bot.incidents.rounds import Cycle
from bot.models import Incident


def match(cycle: Cycle, finding: Finding) -> tuple[Incident | None, str]:
    """The incident a finding belongs to, and how: "old" (an episode a resolved incident
    already covers), "member" (the open incident with its fingerprint), "join" (an open
    outage close in time), "followup" (a report about a resolved one), or None and "new"."""
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
    return None, "new"


def resolved_covering(cycle: Cycle, finding: Finding) -> Incident | None:
    """The newest resolved incident whose episode of the finding's condition the finding
    began in (or just before: within the hold)."""
    for incident in reversed(cycle.incidents):
        member = incident.details.members.get(finding.fingerprint)
        if incident.status != "resolved" or member is None:
            continue
        since, until = member.since, member.until or incident.resolved_at
        assert until is not None
        if since - lifecycle.hold(cycle.judge, incident) <= finding.since <= until:
            return incident
    return None
