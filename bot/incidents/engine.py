"""The incident lifecycle: findings → incidents → outbox, once per poll cycle, per run.

`IncidentEngine` implements `bot.pipeline.Detector`. Each cycle, for each run, inside one write
transaction (so a bot and a `runscribe poll --once` never both fire the same incident):

1. read a window of the store (W&B facts since the last cycle, open incidents, new reports);
2. run the pure detectors (`bot.incidents.detectors`), unless W&B is unreachable: then W&B
   conditions are frozen (never raised, never cleared) and at most a "monitor blind" notice is
   raised; a crash inhibits stall, heartbeat and throughput;
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

All state (incidents with their members in `details`, the engine cursor) lives in SQLite, so a
new engine over the same database carries on where the last one stopped.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.incidents import messages
from bot.incidents.detectors import (
    CRASH,
    DRIFT_PREFIX,
    HEARTBEAT,
    INHIBITED_BY_CRASH,
    MONITOR,
    OUTAGE,
    REPORT_PREFIX,
    STALL,
    THROUGHPUT,
    WANDB_FINGERPRINTS,
    Finding,
    RunData,
    detect_crash,
    detect_drift,
    detect_heartbeat,
    detect_nan,
    detect_reports,
    detect_spike,
    detect_stall,
    detect_throughput,
    drift_fingerprint,
    where,
)
from bot.incidents.silences import silencing
from bot.models import Event, Incident, OutboxItem, RunInfo, Silence, SourceHealth
from bot.services.forecasts import advance_forecasts
from bot.services.status import MONITOR_STALE_AFTER
from bot.settings import Thresholds
from bot.store import Store
from bot.store.incidents import IncidentsRepo
from bot.timeutil import humanize_delta

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


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def members(incident: Incident) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = incident.details.setdefault("members", {})
    return found


def fingerprints(incident: Incident) -> set[str]:
    return {incident.fingerprint, *members(incident)}


@dataclass(slots=True)
class _Cycle:
    """One run's cycle: what was read, and what to write."""

    run: RunInfo
    now: datetime
    th: Thresholds
    data: RunData
    blind: bool
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
        blind = _blind(health, now)
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
            for fp, member in members(incident).items():
                if fp in WANDB_FINGERPRINTS or fp.startswith(REPORT_PREFIX):
                    since = _dt(member["since"])
                    assert since is not None
                    window_start = min(window_start, since)
                    if fp == CRASH and member.get("until") is None:
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
            forecasts=await advance_forecasts(store, run, chain, now),
        )
        cycle = _Cycle(
            run=run,
            now=now,
            th=th,
            data=data,
            blind=blind,
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
        findings = self._findings(cycle, health)
        for finding in findings:
            await self._apply(store, repo, cycle, finding)
        await self._thread_followups(store, repo, cycle)
        for incident in cycle.incidents:
            if incident.status != "resolved":
                self._advance(cycle, incident)
        for incident in cycle.incidents:
            await self._deliver(store, cycle, incident)
            await repo.update(incident)
        await repo.set_engine_state(run.slug, now, None if blind else now)
        return cycle.queued

    def _findings(self, cycle: _Cycle, health: SourceHealth | None) -> list[Finding]:
        data, now = cycle.data, cycle.now
        findings: list[Finding] = []
        drifts = {drift_fingerprint(t.config.metric) for t in data.forecasts}
        if cycle.blind:
            cycle.frozen |= WANDB_FINGERPRINTS | drifts
            if health is not None and health.consecutive_failures > 0:
                findings.append(_monitor_finding(health, now))
            else:
                cycle.frozen.add(MONITOR)  # stale without failures: nobody is polling
        else:
            findings += detect_crash(data)
            live = ((HEARTBEAT, detect_heartbeat), (STALL, detect_stall))
            for fp, detector in (*live, (THROUGHPUT, detect_throughput)):
                found, clear = detector(data)
                if found is not None:
                    findings.append(found)
                elif clear is not None:
                    cycle.clears[fp] = min(clear, now)
            findings += detect_nan(data)
            findings += detect_spike(data)
            findings += detect_drift(data)
            if health is not None and health.last_success_at is not None:
                cycle.clears[MONITOR] = health.last_success_at
        crash_open = any(
            members(i).get(CRASH, {}).get("until", "x") is None
            for i in cycle.incidents
            if i.status != "resolved"
        )
        crash_now = any(f.fingerprint == CRASH and f.active for f in findings)
        if crash_now or (cycle.blind and crash_open):
            findings = [
                f
                for f in findings
                if f.fingerprint not in INHIBITED_BY_CRASH
                and not f.fingerprint.startswith(DRIFT_PREFIX)
            ]
            cycle.frozen |= INHIBITED_BY_CRASH | drifts
        findings.sort(key=lambda f: (f.fingerprint != CRASH, f.since))
        findings += detect_reports(data)  # after W&B findings, so reports join their incident
        return findings

    # --- matching ----------------------------------------------------------------------------

    def _hold(self, cycle: _Cycle, incident: Incident) -> timedelta:
        p, th = self.policy, cycle.th
        holds = []
        for fp, member in members(incident).items():
            if fp.startswith(REPORT_PREFIX):
                continue
            if member.get("kind") == "heartbeat":
                holds.append(timedelta(minutes=th.heartbeat_minutes) + p.clear_hold)
            elif member.get("kind") == "throughput":
                holds.append(max(timedelta(minutes=th.throughput_minutes), p.clear_hold))
            else:
                holds.append(p.clear_hold)
        base = max(holds) if holds else p.report_quiet
        flaps = int(incident.details.get("flaps", 0))
        return base * min(2**flaps, p.max_flap_factor)

    def _match(self, cycle: _Cycle, finding: Finding) -> tuple[Incident | None, str]:
        p = self.policy
        report = finding.fingerprint.startswith(REPORT_PREFIX)
        for incident in cycle.incidents:
            if incident.status != "resolved" and finding.fingerprint in fingerprints(incident):
                return incident, "member"
        for incident in reversed(cycle.incidents):
            member = members(incident).get(finding.fingerprint)
            if incident.status != "resolved" or member is None:
                continue
            since, until = _dt(member["since"]), _dt(member.get("until")) or incident.resolved_at
            assert since is not None and until is not None
            if since - self._hold(cycle, incident) <= finding.since <= until:
                return incident, ("followup" if report else "old")
        if finding.group == OUTAGE:
            for incident in cycle.incidents:
                if (
                    incident.status != "resolved"
                    and incident.details.get("group") == OUTAGE
                    and finding.since >= incident.started_at - p.group_window
                ):
                    return incident, "join"
            if report:
                for incident in reversed(cycle.incidents):
                    resolved = incident.resolved_at
                    if (
                        resolved is not None
                        and incident.details.get("group") == OUTAGE
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
            clear = _clear_time(incident)
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
                details={"group": finding.group, "flaps": 0, "members": {}, "signals": []},
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
        table = members(incident)
        member = table.get(finding.fingerprint)
        if member is None:
            member = table[finding.fingerprint] = {
                "kind": finding.kind,
                "title": finding.title,
                "since": _iso(finding.since),
                "until": None,
            }
            if joined and incident.id is not None and incident.id not in cycle.new_ids:
                cycle.updates.setdefault(incident.id, []).append(
                    (
                        f"member:{finding.fingerprint}:{int(finding.since.timestamp())}",
                        messages.member_update(f"{finding.title}. {finding.cause}", finding.since),
                    )
                )
                if finding.fingerprint == CRASH:
                    incident.title = finding.title  # the W&B fact names the outage best
        elif member.get("until") is not None and finding.active:
            incident.details["flaps"] = int(incident.details.get("flaps", 0)) + 1
        since = min(_dt(member["since"]) or finding.since, finding.since)
        member["since"] = _iso(since)
        member["until"] = _iso(finding.until)
        member["facts"] = finding.facts
        member["seen_at"] = _iso(cycle.now)
        if finding.resolution:
            member["resolution"] = finding.resolution
        if finding.fingerprint.startswith(REPORT_PREFIX):
            member["last_report_at"] = finding.facts.get("last_report_at")
            until, text = self._report_clear(cycle, member)
            member["until"], member["resolution"] = _iso(until), text or None
            if finding.facts.get("thread"):
                threads = incident.details.setdefault("threads", [])
                if finding.facts["thread"] not in threads:
                    threads.append(finding.facts["thread"])
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
            threads = [t for t in incident.details.get("threads", []) if t.startswith("github:")]
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

    def _report_clear(self, cycle: _Cycle, member: dict[str, Any]) -> tuple[datetime | None, str]:
        """When a reported incident counts as over: training progressed after the last report
        (W&B runs), or no further report for a day (runs without W&B data)."""
        last = _dt(member.get("last_report_at")) or _dt(member["since"])
        assert last is not None
        data = cycle.data
        if cycle.blind:
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
        for fp, member in members(incident).items():
            if at is not None:
                break  # judging the past: only what the findings already said counts
            if member.get("until") is not None:
                continue
            if fp.startswith(REPORT_PREFIX):
                until, text = self._report_clear(cycle, member)
                if until is not None:
                    member["until"], member["resolution"] = _iso(until), text
            elif fp not in cycle.frozen and member.get("seen_at") != _iso(now):
                # no finding this cycle: the condition is over
                member["until"] = _iso(cycle.clears.get(fp, now))
        active = [m for m in members(incident).values() if m.get("until") is None]
        details = incident.details
        if active:
            details["clear_since"] = None
        else:
            details["clear_since"] = _iso(
                max(_dt(m["until"]) or now for m in members(incident).values())
            )
        clear = _dt(details.get("clear_since"))
        if incident.status == "pending":
            pending = self._pending(cycle, incident)
            end = clear if clear is not None else now
            if end - incident.started_at >= pending:
                incident.status = "firing"
                incident.fired_at = cycle.now
                details["fired"] = True
            elif clear is not None:
                details["silent"] = True  # cleared before its pending period: never alerted
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
        table = members(incident)
        order = sorted(
            table.items(),
            key=lambda kv: (kv[0] != CRASH, -(_dt(kv[1].get("until")) or at).timestamp()),
        )
        text = next((m["resolution"] for _, m in order if m.get("resolution")), None)
        if text is None:
            text = _default_resolution(incident, at)
        incident.status = "resolved"
        incident.resolved_at = at
        incident.resolution = text
        incident.details["clear_since"] = None
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
        if incident.id is None or not details.get("fired"):
            return
        silence = silencing(cycle.silences, incident, cycle.now)
        if silence is not None:
            details["silenced_by"] = silence.id
            return
        details.pop("silenced_by", None)
        if cycle.channel is None:
            return
        key = f"incident:{incident.id}"
        name = cycle.run.name
        links = _links(cycle, incident)
        if not details.get("notified"):
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
            details["notified"] = True
            details["fired_outbox_id"] = fired
            details["head_hash"] = messages.digest(asdict(card))
            details["edits"] = 0
            cycle.updates.pop(incident.id, None)  # the alert already shows them
        fired_id = details.get("fired_outbox_id")
        for suffix, text in cycle.updates.pop(incident.id, []):
            body = messages.payload(None, text)
            await self._enqueue(store, cycle, "update", f"{key}:{suffix}", body, fired_id)
        card = messages.head_card(incident, name, links)
        digest = messages.digest(asdict(card))
        if digest != details.get("head_hash") and fired_id is not None:
            details["edits"] = int(details.get("edits", 0)) + 1
            body = messages.payload(card, messages.alert_content(incident, name), edit_of=fired_id)
            await self._enqueue(store, cycle, "edit", f"{key}:edit:{details['edits']}", body)
            details["head_hash"] = digest
        if incident.status == "resolved" and not details.get("resolved_posted"):
            text = messages.resolved_content(incident)
            await self._enqueue(
                store, cycle, "resolved", f"{key}:resolved:thread",
                messages.payload(None, text, thread_only=True), fired_id,
            )  # fmt: skip
            body = messages.payload(messages.resolved_card(incident, name), text)
            await self._enqueue(store, cycle, "resolved", f"{key}:resolved", body)
            details["resolved_posted"] = True
            return
        reminder = cycle.th.reminder_minutes
        if incident.status == "firing" and reminder and not incident.acked_by:
            last = _dt(details.get("last_reminder_at")) or incident.fired_at or cycle.now
            if cycle.now - last >= timedelta(minutes=reminder):
                count = int(details.get("reminders", 0)) + 1
                body = messages.payload(None, messages.reminder_content(incident, cycle.now))
                await self._enqueue(
                    store, cycle, "update", f"{key}:reminder:{count}", body, fired_id
                )
                details["reminders"] = count
                details["last_reminder_at"] = _iso(cycle.now)


# --- helpers ------------------------------------------------------------------------------------


def _clear_time(incident: Incident) -> datetime | None:
    """When every member of the incident had cleared (None while one still holds)."""
    ends = [_dt(m.get("until")) for m in members(incident).values()]
    if not ends or any(end is None for end in ends):
        return None
    return max(end for end in ends if end is not None)


def _blind(health: SourceHealth | None, now: datetime) -> bool:
    """W&B data is too old to judge the run by (the monitor, not the run, is the problem)."""
    if health is None:
        return False
    fresh = health.last_success_at
    return fresh is None or now - fresh > MONITOR_STALE_AFTER


def _monitor_finding(health: SourceHealth, now: datetime) -> Finding:
    fresh = health.last_success_at
    since = (fresh + MONITOR_STALE_AFTER) if fresh else (health.last_attempt_at or now)
    blind_for = humanize_delta(now - fresh) if fresh else "ever since it started"
    error = f" Last error: {health.last_error[:200]}" if health.last_error else ""
    return Finding(
        fingerprint=MONITOR,
        kind="monitor-stale",
        severity="info",
        title="Monitor blind: W&B unreachable",
        cause=(
            f"Runscribe has not been able to read W&B for {blind_for} "
            f"({health.consecutive_failures} failed polls). This says nothing about the run "
            f"itself: no crash, heartbeat or stall alert is raised until W&B answers again."
            f"{error}"
        ),
        since=since,
        resolution="W&B is reachable again; monitoring resumed.",
    )


def _add_signal(incident: Incident, event: Event) -> None:
    signals = incident.details.setdefault("signals", [])
    if any(s.get("event_id") == event.id for s in signals):
        return
    text = event.summary or event.title or event.body or event.kind
    source = where(event) if event.source != "wandb" else f"W&B {event.ref or ''}".strip()
    signals.append(
        {
            "event_id": event.id,
            "at": event.at.isoformat(),
            "source": source,
            "text": text[:300],
            "url": event.url,
        }
    )
    signals.sort(key=lambda s: s["at"])
    del signals[:-50]


def _links(cycle: _Cycle, incident: Incident) -> dict[str, str]:
    links: dict[str, str] = {}
    for signal in incident.details.get("signals", []):
        url = signal.get("url")
        if url and url not in links.values() and len(links) < 6:
            links[signal["source"]] = url
    for label, url in cycle.run.links.items():
        if url not in links.values() and len(links) < 6:
            links[label] = url
    return links


def _default_resolution(incident: Incident, at: datetime) -> str:
    kinds = {m.get("kind") for m in members(incident).values()}
    if "heartbeat" in kinds:
        return "W&B heartbeats are back."
    if "stall" in kinds:
        return "Training is logging steps again."
    if "throughput" in kinds:
        return "Throughput is back to its baseline."
    if "drift" in kinds:
        return "The metric is back within its forecast (or training went back before the drift)."
    return f"The condition cleared at {at:%Y-%m-%d %H:%M} UTC."
