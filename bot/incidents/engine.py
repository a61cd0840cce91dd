"""The incident lifecycle: findings → incidents → outbox, once per poll cycle, per run.

`IncidentEngine` implements `bot.pipeline.Detector`. Each cycle, for each run, inside one write
transaction (so a bot and a `runscribe poll --once` never both fire the same incident):

1. read a window of the store (W&B facts since the last cycle, open incidents, new reports);
2. run every detector of the registry (`bot.incidents.detectors.DETECTORS`), except, while W&B
   is unreachable, those judging W&B data: their conditions are frozen (never raised, never
   cleared) and at most a "monitor blind" notice is raised; a crash inhibits the detectors
   marked `inhibited_by_crash` (heartbeat, stall, throughput);
3. match each finding to an incident: the open one with its fingerprint, else an open incident
   of the same group close in time (a GitHub report of a lost node and a W&B crash are one
   incident), else a new one. A finding the store already resolved is old news;
4. advance each open incident: pending → firing after the pending period; firing → resolved once
   the condition has stayed clear for the hold (2 min; longer for conditions that can only
   recur after their own threshold, doubled per flap), so a flapping condition stays one
   incident with one alert and one resolution;
5. queue posts, each with a dedup key: the alert (opens a thread), updates in the thread, edits
   of the alert message, the resolution (in the thread and in the channel), reminders if set.
   Silenced incidents and runs without an `alerts_channel` are recorded but post nothing.

All state (incidents with their typed `details` and members, the engine cursor) lives in SQLite,
so a new engine over the same database carries on where the last one stopped. Posts carry
neutral time stamps (`bot.render.stamps`); the Discord edge renders them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

import bot.incidents.messages as messages
from bot.incidents.detectors import (
    CRASH,
    DETECTORS,
    MONITOR,
    OUTAGE,
    Finding,
    RunData,
    is_report,
    spec_for,
    where,
)
from bot.incidents.silences import silencing
from bot.models import (
    MONITOR_STALE_AFTER,
    Event,
    Incident,
    IncidentDetails,
    IncidentMember,
    IncidentSignal,
    OutboxItem,
    RunInfo,
    Silence,
)
from bot.services.forecasts import advance_forecasts
from bot.settings import Thresholds
from bot.store import Store
from bot.store.incidents import IncidentsRepo

log = logging.getLogger(__name__)

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
    monitor_notice_after: timedelta = timedelta(minutes=30)  # W&B unreachable this long: notice


@dataclass(slots=True)
class _Cycle:
    """One run's cycle: what was read, and what to write."""

    run: RunInfo
    now: datetime
    th: Thresholds
    data: RunData
    frozen: set[str]
    clears: dict[str, datetime]
    incidents: list[Incident]
    events: dict[int, Event]
    silences: list[Silence]
    channel: int | None
    new_ids: set[int]
    updates: dict[int, list[tuple[str, str]]]  # incident id -> [(dedup suffix, text)]
    resolved_now: set[int]
    queued: int = 0


class IncidentEngine:
    """The `Detector` of the pipeline: `await engine.detect(store, now)` → posts queued."""

    def __init__(self, *, policy: Policy | None = None, runs: list[str] | None = None):
        self.policy = policy or Policy()
        self.runs = set(runs) if runs else None

    async def detect(self, store: Store, now: datetime) -> int:
        queued = 0
        for run in await store.runs.all():
            if self.runs is not None and run.slug not in self.runs:
                continue
            try:
                async with store.transaction():
                    queued += await self._detect_run(store, run, now)
            except asyncio.CancelledError:
                raise
            except Exception:  # one broken run never blinds the others
                log.exception("incident detection failed for run %s", run.slug)
        return queued

    # --- reading -----------------------------------------------------------------------------

    async def _detect_run(self, store: Store, run: RunInfo, now: datetime) -> int:
        p = self.policy
        repo = store.incidents
        th = run.config.alerts
        last_detect, wandb_seen = await repo.engine_state(run.slug)
        health = (await store.health.for_run(run.slug)).get("wandb")
        base = wandb_seen or last_detect
        if base is not None:
            eval_start = max(now - p.max_lookback, min(base, now) - p.late_margin)
        else:
            eval_start = now - p.first_lookback
        report_since = eval_start - p.followup_window - p.group_window
        incidents = await repo.relevant(run.slug, report_since - p.followup_window)
        window_start = eval_start
        known_down: datetime | None = None
        for incident in incidents:
            if incident.status == "resolved":
                continue
            for fp, member in incident.details.members.items():
                spec = spec_for(fp)
                if spec is not None and spec.judges != "monitor":
                    window_start = min(window_start, member.since)
                    if fp == CRASH and member.until is None:
                        since = member.since
                        known_down = since if known_down is None else min(known_down, since)
        window_start = max(window_start, now - p.max_lookback)
        snapshots = await store.snapshots.chain(run.slug)
        points = await store.metrics.window(run.slug, window_start - p.baseline)
        wandb_events = await repo.wandb_events(run.slug, window_start - p.late_margin, now)
        # Reports can be ingested long after they were written (a thread tracked late, an edit):
        # look back far enough to attach them to the incident they describe.
        reports = await repo.unlinked_reports(run.slug, report_since, now)
        chain = run.wandb_chain(snapshots)
        data = RunData(
            slug=run.slug,
            name=run.name,
            now=now,
            thresholds=th,
            chain=chain,
            snapshots={s.wandb_run: s for s in snapshots},
            points=[pt for pt in points if pt.at <= now],
            wandb_events=wandb_events,
            reports=reports,
            eval_start=eval_start,
            loss_key=run.config.metrics.loss,
            known_down=known_down,
            clear_hold=p.clear_hold,
            wandb_health=health,
            forecasts=await advance_forecasts(store, run, chain, now),
        )
        cycle = _Cycle(
            run=run,
            now=now,
            th=th,
            data=data,
            frozen=set(),
            clears={},
            incidents=incidents,
            events={e.id: e for e in (*wandb_events, *reports) if e.id is not None},
            silences=await repo.active_silences(run.slug, now),
            channel=run.config.alerts_channel,
            new_ids=set(),
            updates={},
            resolved_now=set(),
        )
        findings = self._findings(cycle)
        for finding in findings:
            await self._apply(store, repo, cycle, finding)
        await self._thread_followups(store, repo, cycle)
        for incident in cycle.incidents:
            if incident.status != "resolved":
                self._advance(cycle, incident)
        for incident in cycle.incidents:
            await self._deliver(store, cycle, incident)
            await repo.update(incident)
        await repo.set_engine_state(run.slug, now, None if data.blind else now)
        return cycle.queued

    def _findings(self, cycle: _Cycle) -> list[Finding]:
        """Run the registry. Matching order: W&B and monitor findings crash first, then by
        start; reports last, so they join the incident the W&B data already opened."""
        data, now = cycle.data, cycle.now
        findings: list[Finding] = []
        for spec in DETECTORS:
            if data.blind and spec.judges == "wandb":
                cycle.frozen.add(spec.fingerprint)
                continue
            detection = spec.detect(data)
            if detection.frozen:
                cycle.frozen.add(spec.fingerprint)
            elif detection.findings:
                findings += detection.findings
            elif detection.clear_at is not None:
                cycle.clears[spec.fingerprint] = min(detection.clear_at, now)
        crash_open = any(
            i.details.crash_open(CRASH) for i in cycle.incidents if i.status != "resolved"
        )
        crash_now = any(f.fingerprint == CRASH and f.active for f in findings)
        if crash_now or (data.blind and crash_open):
            inhibited = [spec for spec in DETECTORS if spec.inhibited_by_crash]
            findings = [f for f in findings if not any(s.owns(f.fingerprint) for s in inhibited)]
            cycle.frozen |= {spec.fingerprint for spec in inhibited}
        findings.sort(key=lambda f: (is_report(f.fingerprint), f.fingerprint != CRASH, f.since))
        return findings

    # --- matching ----------------------------------------------------------------------------

    def _hold(self, cycle: _Cycle, incident: Incident) -> timedelta:
        p = self.policy
        holds = []
        for fp in incident.details.members:
            spec = spec_for(fp)
            if spec is None:
                holds.append(p.clear_hold)
            elif spec.hold is not None:
                holds.append(spec.hold(cycle.th, p.clear_hold))
        base = max(holds) if holds else p.report_quiet
        return base * min(2**incident.details.flaps, p.max_flap_factor)

    def _match(self, cycle: _Cycle, finding: Finding) -> tuple[Incident | None, str]:
        p = self.policy
        report = is_report(finding.fingerprint)
        for incident in cycle.incidents:
            if incident.status != "resolved" and finding.fingerprint in incident.fingerprints():
                return incident, "member"
        for incident in reversed(cycle.incidents):
            member = incident.details.members.get(finding.fingerprint)
            if incident.status != "resolved" or member is None:
                continue
            since, until = member.since, member.until or incident.resolved_at
            assert until is not None
            if since - self._hold(cycle, incident) <= finding.since <= until:
                return incident, ("followup" if report else "old")
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

    async def _apply(
        self, store: Store, repo: IncidentsRepo, cycle: _Cycle, finding: Finding
    ) -> None:
        incident, how = self._match(cycle, finding)
        if how == "old":
            return
        if incident is not None and how in ("member", "join"):
            # A clear that had outlasted its hold when this finding began was a resolution: the
            # finding is a new episode (or, for a report, a follow-up). Seen when one cycle
            # covers a long stretch (a slow poll, the day-by-day demo).
            clear = incident.details.clear_time()
            if (
                clear is not None
                and incident.status != "resolved"
                and finding.since - clear >= self._hold(cycle, incident)
            ):
                self._advance(cycle, incident, at=finding.since)
                incident, how = self._match(cycle, finding)
                if how == "old":
                    return
        if incident is None and finding.since < cycle.data.eval_start - self.policy.first_lookback:
            return  # an old report that matches nothing: history, not an alert
        if incident is None:
            incident = Incident(
                run_slug=cycle.run.slug,
                fingerprint=finding.fingerprint,
                kind=finding.kind,
                title=finding.title,
                status="pending",
                started_at=finding.since,
                severity=finding.severity,
                last_seen_at=cycle.now,
                cause=finding.cause,
                details=IncidentDetails(group=finding.group),
            )
            await store.incidents.save(incident)
            assert incident.id is not None
            cycle.incidents.append(incident)
            cycle.new_ids.add(incident.id)
        assert incident.id is not None
        if how != "followup":
            self._member(cycle, incident, finding, joined=how == "join")
        linked = await repo.linked_ids(incident.id)
        for event_id in finding.event_ids:
            if event_id in linked:
                continue
            await store.incidents.link_event(incident.id, event_id)
            event = cycle.events.get(event_id)
            if event is None:
                continue
            _add_signal(incident, event)
            if incident.id not in cycle.new_ids and not (
                event.source == "wandb" and event.kind == "restart"
            ):
                cycle.updates.setdefault(incident.id, []).append(
                    (f"update:{event_id}", messages.event_update(event))
                )

    def _member(self, cycle: _Cycle, incident: Incident, finding: Finding, *, joined: bool) -> None:
        details = incident.details
        member = details.members.get(finding.fingerprint)
        if member is None:
            member = details.members[finding.fingerprint] = IncidentMember(
                kind=finding.kind, title=finding.title, since=finding.since
            )
            if joined and incident.id is not None and incident.id not in cycle.new_ids:
                cycle.updates.setdefault(incident.id, []).append(
                    (
                        f"member:{finding.fingerprint}:{int(finding.since.timestamp())}",
                        messages.member_update(f"{finding.title}. {finding.cause}", finding.since),
                    )
                )
                if finding.fingerprint == CRASH:
                    incident.title = finding.title  # the W&B fact names the outage best
        elif member.until is not None and finding.active:
            details.flaps += 1
        since = min(member.since, finding.since)
        member.since = since
        member.until = finding.until
        member.facts = finding.facts
        member.seen_at = cycle.now
        if finding.resolution:
            member.resolution = finding.resolution
        if is_report(finding.fingerprint):
            member.last_report_at = finding.last_report_at
            until, text = self._report_clear(cycle, member)
            member.until, member.resolution = until, text or None
            if finding.thread and finding.thread not in details.threads:
                details.threads.append(finding.thread)
        if since < incident.started_at:
            incident.started_at = since
        if _SEVERITY_RANK.get(finding.severity, 1) > _SEVERITY_RANK.get(incident.severity, 1):
            incident.severity = finding.severity
        if finding.active:
            incident.last_seen_at = cycle.now

    async def _thread_followups(self, store: Store, repo: IncidentsRepo, cycle: _Cycle) -> None:
        """New comments on the GitHub threads an open incident was reported in go to its
        Discord thread."""
        for incident in cycle.incidents:
            threads = [t for t in incident.details.threads if t.startswith("github:")]
            if incident.status == "resolved" or not threads or incident.id is None:
                continue
            since = incident.started_at - self.policy.group_window
            for event in await repo.unlinked_in_threads(cycle.run.slug, threads, since, cycle.now):
                assert event.id is not None
                await store.incidents.link_event(incident.id, event.id)
                _add_signal(incident, event)
                if incident.id not in cycle.new_ids:
                    cycle.updates.setdefault(incident.id, []).append(
                        (f"update:{event.id}", messages.event_update(event))
                    )

    # --- lifecycle ---------------------------------------------------------------------------

    def _report_clear(self, cycle: _Cycle, member: IncidentMember) -> tuple[datetime | None, str]:
        """When a reported incident counts as over: training progressed after the last report
        (W&B runs), or no further report for a day (runs without W&B data)."""
        last = member.last_report_at or member.since
        data = cycle.data
        if data.blind:
            return None, ""
        if data.snapshots or data.series:
            point = data.first_point_after(last)
            if point is None:
                return None, ""
            return (
                point.at,
                f"Training has been progressing since the report (step {point.step:,}).",
            )
        if cycle.now - last >= self.policy.report_expiry:
            return last + self.policy.report_expiry, "No further reports for 24 h."
        return None, ""

    def _advance(self, cycle: _Cycle, incident: Incident, at: datetime | None = None) -> None:
        """Move the incident along its lifecycle as of `at` (default: now)."""
        now = at or cycle.now
        details = incident.details
        for fp, member in details.members.items():
            if at is not None:
                break  # judging the past: only what the findings already said counts
            if member.until is not None:
                continue
            if is_report(fp):
                until, text = self._report_clear(cycle, member)
                if until is not None:
                    member.until, member.resolution = until, text
            elif not _frozen(cycle, fp) and member.seen_at != now:
                # no finding this cycle: the condition is over
                member.until = cycle.clears.get(fp, now)
        if any(m.until is None for m in details.members.values()):
            details.clear_since = None
        else:
            details.clear_since = max(m.until or now for m in details.members.values())
        clear = details.clear_since
        if incident.status == "pending":
            pending = self._pending(cycle, incident)
            end = clear if clear is not None else now
            if end - incident.started_at >= pending:
                incident.status = "firing"
                incident.fired_at = cycle.now
                details.fired = True
            elif clear is not None:
                details.silent = True  # cleared before its pending period: never alerted
                self._resolve(cycle, incident, clear)
                return
        if (
            incident.status == "firing"
            and clear is not None
            and now - clear >= self._hold(cycle, incident)
        ):
            self._resolve(cycle, incident, clear)

    def _pending(self, cycle: _Cycle, incident: Incident) -> timedelta:
        pending = timedelta(minutes=cycle.th.pending_minutes)
        if incident.fingerprint == MONITOR:
            pending = max(pending, self.policy.monitor_notice_after - MONITOR_STALE_AFTER)
        return pending

    def _resolve(self, cycle: _Cycle, incident: Incident, at: datetime) -> None:
        order = sorted(
            incident.details.members.items(),
            key=lambda kv: (kv[0] != CRASH, -(kv[1].until or at).timestamp()),
        )
        text = next((m.resolution for _, m in order if m.resolution), None)
        if text is None:
            text = _default_resolution(incident, at)
        incident.status = "resolved"
        incident.resolved_at = at
        incident.resolution = text
        incident.details.clear_since = None
        if incident.id is not None:
            cycle.resolved_now.add(incident.id)

    # --- delivery ----------------------------------------------------------------------------

    async def _enqueue(
        self,
        store: Store,
        cycle: _Cycle,
        kind: str,
        key: str,
        body: dict[str, Any],
        reply_to: int | None = None,
    ) -> int | None:
        assert cycle.channel is not None
        item = OutboxItem(
            channel_id=cycle.channel,
            kind=kind,
            payload=body,
            dedup_key=key,
            run_slug=cycle.run.slug,
            created_at=cycle.now,
            reply_to=reply_to,
        )
        item_id = await store.outbox.enqueue(item)
        if item_id is not None:
            cycle.queued += 1
            return item_id
        existing = await store.outbox.get_by_key(key)
        return existing.id if existing is not None else None

    async def _deliver(self, store: Store, cycle: _Cycle, incident: Incident) -> None:
        details = incident.details
        if incident.id is None or not details.fired:
            return
        silence = silencing(cycle.silences, incident, cycle.now)
        if silence is not None:
            details.silenced_by = silence.id
            return
        details.silenced_by = None
        if cycle.channel is None:
            return
        key = f"incident:{incident.id}"
        name = cycle.run.name
        links = _links(cycle, incident)
        if not details.notified:
            if incident.status != "firing" and incident.id not in cycle.resolved_now:
                return  # fired and cleared while silenced (or without a channel): stay quiet
            card = messages.head_card(incident, name, links)
            body = messages.payload(
                card,
                messages.alert_content(incident, name),
                thread_name=messages.thread_name(incident),
            )
            body["buttons"] = [messages.ack_button(incident.id)]  # for a poster that renders them
            fired = await self._enqueue(store, cycle, "alert", f"{key}:fired", body)
            details.notified = True
            details.fired_outbox_id = fired
            details.head_hash = messages.digest(asdict(card))
            details.edits = 0
            cycle.updates.pop(incident.id, None)  # the alert already shows them
        fired_id = details.fired_outbox_id
        for suffix, text in cycle.updates.pop(incident.id, []):
            body = messages.payload(None, text)
            await self._enqueue(store, cycle, "update", f"{key}:{suffix}", body, fired_id)
        card = messages.head_card(incident, name, links)
        digest = messages.digest(asdict(card))
        if digest != details.head_hash and fired_id is not None:
            details.edits += 1
            body = messages.payload(card, messages.alert_content(incident, name), edit_of=fired_id)
            await self._enqueue(store, cycle, "edit", f"{key}:edit:{details.edits}", body)
            details.head_hash = digest
        if incident.status == "resolved" and not details.resolved_posted:
            text = messages.resolved_content(incident)
            await self._enqueue(
                store, cycle, "resolved", f"{key}:resolved:thread",
                messages.payload(None, text, thread_only=True), fired_id,
            )  # fmt: skip
            body = messages.payload(messages.resolved_card(incident, name), text)
            await self._enqueue(store, cycle, "resolved", f"{key}:resolved", body)
            details.resolved_posted = True
            return
        reminder = cycle.th.reminder_minutes
        if incident.status == "firing" and reminder and not incident.acked_by:
            last = details.last_reminder_at or incident.fired_at or cycle.now
            if cycle.now - last >= timedelta(minutes=reminder):
                count = details.reminders + 1
                body = messages.payload(None, messages.reminder_content(incident, cycle.now))
                await self._enqueue(
                    store, cycle, "update", f"{key}:reminder:{count}", body, fired_id
                )
                details.reminders = count
                details.last_reminder_at = cycle.now


# --- helpers ------------------------------------------------------------------------------------


def _add_signal(incident: Incident, event: Event) -> None:
    signals = incident.details.signals
    if any(s.event_id == event.id for s in signals):
        return
    text = event.summary or event.title or event.body or event.kind
    signals.append(IncidentSignal(event.id, event.at, where(event), text[:300], event.url))
    signals.sort(key=lambda s: s.at)
    del signals[:-50]


def _links(cycle: _Cycle, incident: Incident) -> dict[str, str]:
    links: dict[str, str] = {}
    for signal in incident.details.signals:
        url = signal.url
        if url and url not in links.values() and len(links) < 6:
            links[signal.source] = url
    for label, url in cycle.run.links.items():
        if url not in links.values() and len(links) < 6:
            links[label] = url
    return links


def _default_resolution(incident: Incident, at: datetime) -> str:
    for spec in DETECTORS:
        said = spec.default_resolution
        if said and any(spec.owns(fp) for fp in incident.details.members):
            return said
    return f"The condition cleared at {at:%Y-%m-%d %H:%M} UTC."


def _frozen(cycle: _Cycle, fingerprint: str) -> bool:
    """Whether this cycle neither raises nor clears the condition (its detector, or the family
    it belongs to, e.g. `drift:<metric>`, is frozen)."""
    if fingerprint in cycle.frozen:
        return True
    spec = spec_for(fingerprint)
    return spec is not None and spec.fingerprint in cycle.frozen
