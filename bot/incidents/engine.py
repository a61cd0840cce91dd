"""The incident lifecycle: findings → incidents → outbox, once per poll cycle, per run.

`IncidentEngine` implements `bot.pipeline.Detector`. Each cycle, for each run, inside one write
transaction (so a bot and a `runscribe poll --once` never both fire the same incident):

1. read a window of the store (W&B facts since the last cycle, open incidents, new reports,
   and the events of each (source, kind) a registered detector declares it reads);
2. run every detector of the registry (`bot.incidents.detectors.DETECTORS`), except, while W&B
   is unreachable, those judging W&B data: their conditions are frozen (never raised, never
   cleared) and at most a "monitor blind" notice is raised; a crash inhibits the detectors
   marked `inhibited_by_crash` (heartbeat, stall, throughput);
3. match each finding to an incident: the open one with its fingerprint, else an open incident
   of the same group close in time (a GitHub report of a lost node and a W&B crash are one
   incident), else a new one. A finding the store already resolved is old news; a new one
   already over for `Policy.backfill_after` (read back after downtime) is history: recorded,
   never alerted;
4. advance each open incident: pending → firing after the pending period; firing → resolved once
   the condition has stayed clear for the hold (2 min; longer for conditions that can only
   recur after their own threshold, doubled per flap), so a flapping condition stays one
   incident with one alert and one resolution;
5. queue posts, each with a dedup key: the alert (opens a thread), updates in the thread, edits
   of the alert message, the resolution (in the thread and in the channel), reminders if set.
   Silenced incidents and runs without an `alerts_channel` are recorded but post nothing.

All state (incidents with their typed `details` and members, the engine cursor) lives in SQLite,
so a new engine over the same database carries on where the last one stopped. The engine says
what happened; its `IncidentWords` (`bot.posts.incidents.IncidentPosts`, given by the
composition root) words each post, with neutral time stamps the Discord edge renders.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import bot.incidents.lifecycle as lifecycle
import bot.incidents.people as people
from bot.incidents.detectors import (
    CRASH,
    DETECTORS,
    OUTAGE,
    Finding,
    RunData,
    is_alert,
    is_report,
    spec_for,
    where,
)
from bot.incidents.forecasts import advance_forecasts
from bot.incidents.lifecycle import Judgement, Policy
from bot.incidents.silences import silencing
from bot.incidents.writeup import Writeup, gather_writeup
from bot.models import (
    DETECTION,
    Event,
    Incident,
    IncidentDetails,
    IncidentSignal,
    OutboxItem,
    ReportedCause,
    RunInfo,
    Silence,
)
from bot.runsfile import Thresholds
from bot.store import Store
from bot.store.db import TransactionLost
from bot.store.incidents import IncidentsRepo

log = logging.getLogger(__name__)

#: the most events of one declared (source, kind) a cycle reads for a run (the newest)
READ_LIMIT = 1000


class IncidentWords(Protocol):
    """How incident posts are worded (`bot.posts.incidents.IncidentPosts`). The engine
    decides what is said and when; each method returns the outbox payload (or the thread
    text) that says it."""

    def head_hash(self, incident: Incident, run_name: str, links: dict[str, str]) -> str: ...

    def alert(
        self, incident: Incident, run_name: str, links: dict[str, str], *, ping_role: int | None
    ) -> tuple[dict[str, Any], str]: ...

    def edit(
        self, incident: Incident, run_name: str, links: dict[str, str], *, edit_of: int
    ) -> dict[str, Any]: ...

    def update(self, text: str, *, archive_thread: bool) -> dict[str, Any]: ...

    def closing(self, incident: Incident) -> dict[str, Any]: ...

    def resolved(self, incident: Incident, run_name: str) -> dict[str, Any]: ...

    def reminder(self, incident: Incident, now: datetime) -> dict[str, Any]: ...

    def member_update(self, title: str, at: datetime) -> str: ...

    def alert_summary(
        self, incident: Incident, *, edit_of: int | None, archive_thread: bool
    ) -> dict[str, Any] | None: ...

    def cause_update(self, cause: ReportedCause) -> str: ...

    def event_update(self, event: Event) -> str: ...

    def writeup(
        self, writeup: Writeup, *, edit_of: int | None, archive_thread: bool
    ) -> dict[str, Any]: ...


@dataclass(slots=True)
class _Cycle:
    """One run's cycle: what was read, and what to write."""

    run: RunInfo
    judge: Judgement
    incidents: list[Incident]
    events: dict[int, Event]
    silences: list[Silence]
    channel: int | None
    new_ids: set[int]
    updates: dict[int, list[tuple[str, str]]]  # incident id -> [(dedup suffix, text)]
    resolved_now: set[int]
    failures: _Failures
    queued: int = 0

    @property
    def now(self) -> datetime:
        return self.judge.now

    @property
    def data(self) -> RunData:
        return self.judge.data

    @property
    def th(self) -> Thresholds:
        return self.judge.thresholds


class IncidentEngine:
    """The `Detector` of the pipeline: `await engine.detect(store, now)` → posts queued."""

    def __init__(
        self, words: IncidentWords, *, policy: Policy | None = None, runs: list[str] | None = None
    ):
        self.words = words
        self.policy = policy or Policy()
        self.runs = set(runs) if runs else None
        # per run, the newest point the previous round judged: the next reads raw from there
        self._judged_through: dict[str, datetime] = {}
        # per run, the causes of failure already logged (each is logged once, until a clean round)
        self._logged: dict[str, dict[str, int]] = {}

    async def detect(self, store: Store, now: datetime) -> int:
        queued = 0
        for run in await store.runs.all():
            if self.runs is not None and run.slug not in self.runs:
                continue
            failures = _Failures(run.slug, self._logged.setdefault(run.slug, {}))
            try:
                async with store.transaction():
                    queued += await self._detect_run(store, run, now, failures)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one broken run never blinds the others
                failures.add("the detection round", exc)
            await self._record_health(store, run.slug, now, failures)
        return queued

    async def _record_health(
        self, store: Store, slug: str, now: datetime, failures: _Failures
    ) -> None:
        """Say in the store whether the run's round went through (`/healthz` reads it): failing
        with what failed, ok again after a clean round. Written only on a change of state."""
        try:
            row = await store.health.get(DETECTION, slug)
            if failures.said:
                await store.health.record_failure(DETECTION, slug, now, failures.text(), None)
            elif row is not None and row.consecutive_failures:
                await store.health.record_success(DETECTION, slug, now)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failures.add("recording detection health", exc)
        if not failures.said and failures.logged:
            log.info("incident detection for run %s works again", slug)
            failures.logged.clear()

    # --- reading -----------------------------------------------------------------------------

    async def _detect_run(
        self,
        store: Store,
        run: RunInfo,
        now: datetime,
        failures: _Failures,
    ) -> int:
        """One run's round, inside its write transaction. Each detector, each finding's
        incident and each incident's posts is a step of its own: one that fails is rolled back
        (to a savepoint), logged once per cause and left for the next round, and the rest of the
        round goes on."""
        cycle = await self._read(store, run, now, failures)
        repo = store.incidents
        as_read = {i.id: repo.written(i) for i in cycle.incidents}  # only what changes is written
        steps = _Steps(store, failures)
        for finding in self._findings(cycle):
            saved = _saved(cycle)
            if not await steps.run(
                f"the {finding.fingerprint} incident", self._apply(store, repo, cycle, finding)
            ):
                _restore(cycle, saved)
        saved = _saved(cycle)
        if not await steps.run("thread follow-ups", self._thread_followups(store, repo, cycle)):
            _restore(cycle, saved)
        for incident in cycle.incidents:
            if incident.status != "resolved":
                self._advance(cycle, incident)
        saved = _saved(cycle)
        if not await steps.run("who acted", self._people_acting(repo, cycle)):
            _restore(cycle, saved)
        for incident in cycle.incidents:
            was = copy.deepcopy(incident)
            if not await steps.run(
                f"incident #{incident.id}'s posts",
                self._deliver_and_write(store, cycle, incident, as_read.get(incident.id)),
            ):
                _restore_incident(incident, was)
        await repo.set_engine_state(run.slug, now, None if cycle.data.blind else now)
        return cycle.queued

    async def _deliver_and_write(
        self, store: Store, cycle: _Cycle, incident: Incident, was: tuple[Any, ...] | None
    ) -> None:
        await self._deliver(store, cycle, incident)
        await store.incidents.update(incident, was=was)

    async def _read(self, store: Store, run: RunInfo, now: datetime, failures: _Failures) -> _Cycle:
        """What the round judges: a window of the store around the run's open incidents."""
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
        window_start, known_down = _window(incidents, eval_start)
        window_start = max(window_start, now - p.max_lookback)
        snapshots = await store.snapshots.chain(run.slug)
        points = await store.metrics.window(run.slug, window_start - p.baseline)
        tail_start = now - p.raw_tail
        judged = self._judged_through.get(run.slug)
        if judged is not None:
            tail_start = max(min(tail_start, judged - timedelta(minutes=1)), now - p.raw_tail_max)
        tail = await store.metrics.raw_since(run.slug, tail_start, now)
        if tail:
            self._judged_through[run.slug] = tail[-1].at
        wandb_events = await repo.wandb_events(run.slug, window_start - p.late_margin, now)
        # Reports can be ingested long after they were written (a thread tracked late, an edit):
        # look back far enough to attach them to the incident they describe.
        reports = await repo.unlinked_reports(run.slug, report_since, now)
        alerts = await repo.alert_events(run.slug, eval_start, now)
        # The events the registered detectors declare they read (`DetectorSpec.reads`), each
        # (source, kind) once, for the window the W&B events cover.
        wanted = dict.fromkeys(pair for spec in DETECTORS for pair in spec.reads)
        declared = {
            (source, kind): await store.events.of_kind(
                run.slug, source, kind, since=window_start - p.late_margin, until=now,
                limit=READ_LIMIT,
            )
            for source, kind in wanted
        }  # fmt: skip
        read = [event for events in declared.values() for event in events]
        chain = run.wandb_chain(snapshots)
        data = RunData(
            slug=run.slug,
            name=run.name,
            now=now,
            thresholds=th,
            chain=chain,
            snapshots={s.wandb_run: s for s in snapshots},
            points=[pt for pt in points if pt.at <= now],
            tail=tail,
            tail_start=tail_start,
            wandb_events=wandb_events,
            reports=reports,
            eval_start=eval_start,
            loss_key=run.config.metrics.loss,
            known_down=known_down,
            clear_hold=p.clear_hold,
            wandb_health=health,
            forecasts=await advance_forecasts(store, run, chain, now),
            alerts=alerts,
            events=declared,
        )
        return _Cycle(
            run=run,
            judge=Judgement(data, p),
            incidents=incidents,
            events={e.id: e for e in (*wandb_events, *reports, *alerts, *read) if e.id is not None},
            silences=await repo.active_silences(run.slug, now),
            channel=run.config.alerts_channel,
            new_ids=set(),
            updates={},
            resolved_now=set(),
            failures=failures,
        )

    def _findings(self, cycle: _Cycle) -> list[Finding]:
        """Run the registry. Matching order: W&B and monitor findings crash first, then by
        start; reports last, so they join the incident the W&B data already opened."""
        data, now = cycle.data, cycle.now
        findings: list[Finding] = []
        for spec in DETECTORS:
            if data.blind and spec.judges == "wandb":
                cycle.judge.frozen.add(spec.fingerprint)
                continue
            try:
                detection = spec.detect(data)
            except Exception as exc:  # one broken detector never blinds the others
                cycle.failures.add(f"the {spec.fingerprint} detector", exc)
                cycle.judge.frozen.add(spec.fingerprint)  # neither raised nor cleared
                continue
            if detection.frozen:
                cycle.judge.frozen.add(spec.fingerprint)
            elif detection.findings:
                findings += detection.findings
            elif detection.clear_at is not None:
                cycle.judge.clears[spec.fingerprint] = min(detection.clear_at, now)
        crash_open = any(
            i.details.crash_open(CRASH) for i in cycle.incidents if i.status != "resolved"
        )
        crash_now = any(f.fingerprint == CRASH and f.active for f in findings)
        if crash_now or (data.blind and crash_open):
            inhibited = [spec for spec in DETECTORS if spec.inhibited_by_crash]
            findings = [f for f in findings if not any(s.owns(f.fingerprint) for s in inhibited)]
            cycle.judge.frozen |= {spec.fingerprint for spec in inhibited}
        findings.sort(key=lambda f: (is_report(f.fingerprint), f.fingerprint != CRASH, f.since))
        return findings

    # --- matching ----------------------------------------------------------------------------

    def _match(self, cycle: _Cycle, finding: Finding) -> tuple[Incident | None, str]:
        p = self.policy
        report = is_report(finding.fingerprint)
        # A condition's episode a resolved incident already covers is old news, even when the
        # run has since opened another incident of that condition (a detector reports each
        # episode it still sees: the previous crash beside the new one).
        old = self._resolved_covering(cycle, finding)
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

    def _resolved_covering(self, cycle: _Cycle, finding: Finding) -> Incident | None:
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
                and finding.since - clear >= lifecycle.hold(cycle.judge, incident)
            ):
                self._advance(cycle, incident, at=finding.since)
                # written now: the store allows one unresolved incident per condition, and the
                # finding may open the next one
                await repo.update(incident)
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
                details=IncidentDetails(
                    group=finding.group,
                    recurrence=await repo.recurrence(cycle.run.slug, finding.fingerprint),
                ),
            )
            await store.incidents.save(incident)
            assert incident.id is not None
            cycle.incidents.append(incident)
            cycle.new_ids.add(incident.id)
            if not finding.event_ids:  # a drift, a stall…: no event of its own to list it
                await store.events.upsert_many([incident_note(incident, finding.cause)])
        assert incident.id is not None
        if how != "followup":
            self._member(cycle, incident, finding, joined=how == "join")
        if incident.id in cycle.new_ids and not incident.details.fired:
            # Found already over, long ago (read back after downtime): history, not news.
            clear = incident.details.clear_time()
            incident.details.history = (
                clear is not None and cycle.now - clear >= self.policy.backfill_after
            )
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
                (event.source == "wandb" and event.kind == "restart") or is_alert_event(event)
            ):
                cycle.updates.setdefault(incident.id, []).append(
                    (f"update:{event_id}", self._update_text(incident, event))
                )
            else:
                people.attach_cause(incident, event)

    def _member(self, cycle: _Cycle, incident: Incident, finding: Finding, *, joined: bool) -> None:
        new = lifecycle.absorb(cycle.judge, incident, finding)
        if is_report(finding.fingerprint) or is_alert(finding.fingerprint):
            # a report is posted in the thread as its event, said once; alerts, however many,
            # are said by the incident's one alert summary (`_alert_summary`)
            return
        if new and joined and incident.id is not None and incident.id not in cycle.new_ids:
            cycle.updates.setdefault(incident.id, []).append(
                (
                    f"member:{finding.fingerprint}:{int(finding.since.timestamp())}",
                    self.words.member_update(f"{finding.title}. {finding.cause}", finding.since),
                )
            )
            if finding.fingerprint == CRASH:
                incident.title = finding.title  # the W&B fact names the outage best

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
                        (f"update:{event.id}", self._update_text(incident, event))
                    )
                else:
                    people.attach_cause(incident, event)

    async def _people_acting(self, repo: IncidentsRepo, cycle: _Cycle) -> None:
        """Whether a person reported acting on each recent incident (a requeue, a restart, a
        drain…), read from what people wrote around it and credited to the one incident it
        acted on (`people.credit_actions`): only a recovery nobody reported acting on counts as
        "on its own". Each incident stops being read once it is past its lag."""
        waiting = [i for i in cycle.incidents if people.wants_action(i, cycle.now)]
        if waiting:
            windows = [people.acting_window(i, cycle.now) for i in waiting]
            start, end = min(w[0] for w in windows), max(w[1] for w in windows)
            posts = await repo.people_posts(cycle.run.slug, start, end)
            people.credit_actions(cycle.incidents, waiting, posts)
            for incident, window in zip(waiting, windows, strict=True):
                incident.details.acted_checked_until = window[1]
        for incident in cycle.incidents:
            # the resolution says who acted, and when in the run's own zone
            people.credit_resolution(incident, cycle.run.config.timezone)

    def _update_text(self, incident: Incident, event: Event) -> str:
        """A thread post for a newly linked event: the reported cause when this person's report
        is the first one about the incident, else the event itself."""
        if people.attach_cause(incident, event):
            cause = incident.details.reported_cause
            assert cause is not None
            return self.words.cause_update(cause)
        return self.words.event_update(event)

    # --- lifecycle ---------------------------------------------------------------------------

    def _advance(self, cycle: _Cycle, incident: Incident, at: datetime | None = None) -> None:
        if lifecycle.advance(cycle.judge, incident, at) and incident.id is not None:
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
        if incident.id is None or not details.fired or details.history:
            return  # pending, or history found after the fact: nothing to post
        silence = silencing(cycle.silences, incident, cycle.now)
        details.silenced_by = silence.id if silence is not None else None
        if silence is not None and not details.notified:
            return  # held back: nothing was posted, nothing is
        if cycle.channel is None:
            return
        key = f"incident:{incident.id}"
        name = cycle.run.name
        links = _links(cycle, incident)
        done = incident.status == "resolved"
        if not details.notified:
            if not done and incident.status != "firing":
                return
            if done and incident.id not in cycle.resolved_now:
                return  # fired and cleared while silenced (or without a channel): stay quiet
            # the ping: the run's alert role, on the incident's first post only
            body, head_hash = self.words.alert(
                incident, name, links, ping_role=cycle.run.config.alert_role
            )
            fired = await self._enqueue(store, cycle, "alert", f"{key}:fired", body)
            details.notified = True
            details.fired_outbox_id = fired
            details.head_hash = head_hash
            details.edits = 0
            cycle.updates.pop(incident.id, None)  # the alert already shows them
        fired_id = details.fired_outbox_id
        updates = cycle.updates.pop(incident.id, [])
        for suffix, text in updates if silence is None else []:
            # after the resolution, a late follow-up reopens the archived thread: close it again
            body = self.words.update(text, archive_thread=details.resolved_posted)
            await self._enqueue(store, cycle, "update", f"{key}:{suffix}", body, fired_id)
        if silence is None and fired_id is not None and not details.resolved_posted:
            await self._alert_summary(store, cycle, incident, fired_id)
        head_hash = self.words.head_hash(incident, name, links)
        if head_hash != details.head_hash and fired_id is not None:
            details.edits += 1
            body = self.words.edit(incident, name, links, edit_of=fired_id)
            await self._enqueue(store, cycle, "edit", f"{key}:edit:{details.edits}", body)
            details.head_hash = head_hash
        if silence is not None:
            # Silenced after it alerted: the head posted before stays true (acknowledged,
            # resolved and without its button), and nothing new is posted in the channel; its
            # thread is still closed and archived when it resolves.
            if done and not details.resolved_posted and fired_id is not None:
                body = self.words.closing(incident)
                await self._enqueue(
                    store, cycle, "resolved", f"{key}:resolved:thread", body, fired_id
                )
                details.resolved_posted = True
            return
        if done and not details.resolved_posted:
            # Said once: the head above now reads resolved, the thread gets its write-up and a
            # closing line and is archived, the channel one resolution message.
            await self._writeup(store, cycle, incident, fired_id)
            body = self.words.closing(incident)
            await self._enqueue(store, cycle, "resolved", f"{key}:resolved:thread", body, fired_id)
            body = self.words.resolved(incident, name)
            await self._enqueue(store, cycle, "resolved", f"{key}:resolved", body)
            details.resolved_posted = True
            return
        if done:
            await self._writeup(store, cycle, incident, fired_id)  # edited if it changed
            return
        if lifecycle.reminder_due(incident, cycle.now, cycle.th):
            count = details.reminders + 1
            body = self.words.reminder(incident, cycle.now)
            await self._enqueue(store, cycle, "update", f"{key}:reminder:{count}", body, fired_id)
            details.reminders = count
            details.last_reminder_at = cycle.now

    async def _writeup(
        self, store: Store, cycle: _Cycle, incident: Incident, fired_id: int | None
    ) -> None:
        """The incident's one write-up, in its thread when it resolves (just before the closing
        line): posted once (keyed by the incident, so a restart re-posts nothing), edited in
        place whenever what it says changes (a late report, a person's action read after it
        resolved, a follow-up opened, a reopening)."""
        if fired_id is None:
            return
        key = f"incident:{incident.id}:writeup"
        posted = await store.outbox.get_by_key(key)
        facts = await gather_writeup(store, cycle.run, incident)
        if posted is None:
            body = self.words.writeup(facts, edit_of=None, archive_thread=False)
            await self._enqueue(store, cycle, "update", key, body, fired_id)
            return
        body = self.words.writeup(facts, edit_of=posted.id, archive_thread=False)
        if body.get("card") != posted.payload.get("card"):
            card = json.dumps(body.get("card"), sort_keys=True)
            edit = hashlib.sha256(card.encode()).hexdigest()[:16]
            await self._enqueue(store, cycle, "edit", f"{key}:edit:{edit}", body)

    async def _alert_summary(
        self, store: Store, cycle: _Cycle, incident: Incident, fired_id: int
    ) -> None:
        """The thread's one post about the incident's Alertmanager alerts: posted when there is
        more to say than the head (a group, an alert joining another incident, alerts left out
        of a notification), then edited as the alerts change; never a post per alert."""
        key = f"incident:{incident.id}:alerts"
        posted = await store.outbox.get_by_key(key)
        body = self.words.alert_summary(
            incident, edit_of=posted.id if posted is not None else None, archive_thread=False
        )
        if body is None:
            return
        if posted is None:
            await self._enqueue(store, cycle, "update", key, body, fired_id)
        elif body.get("content") != posted.payload.get("content"):
            # one edit per distinct text (the text carries its last change's time)
            await self._enqueue(store, cycle, "edit", f"{key}:edit:{_digest(body)}", body)


# --- helpers ------------------------------------------------------------------------------------


def is_alert_event(event: Event) -> bool:
    return event.source == "alertmanager"


def _digest(body: dict[str, Any]) -> str:
    text = str(body.get("content") or "")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def incident_note(incident: Incident, cause: str | None) -> Event:
    """The /timeline entry of an incident found in data rather than in an event (a metric off
    its forecast, a stall): a Runscribe note at its start, with its title and cause."""
    return Event(
        run_slug=incident.run_slug,
        source="system",
        external_id=f"incident:{incident.id}",
        kind="note",
        at=incident.started_at,
        ref=f"incident #{incident.id}",
        title=incident.title,
        body=cause or "",
    )


class _Failures:
    """What failed in one run's round. Each cause (what failed, and how) is logged once with
    its traceback, not every round, until a clean round (`logged`, kept by the engine)."""

    def __init__(self, slug: str, logged: dict[str, int]):
        self.slug = slug
        self.logged = logged
        self.said: list[str] = []

    def add(self, what: str, exc: BaseException) -> None:
        text = f"{what} failed: {type(exc).__name__}: {exc}"[:300]
        self.said.append(text)
        if text in self.logged:
            self.logged[text] += 1
            log.debug("incident detection for run %s: %s (again)", self.slug, text)
            return
        self.logged[text] = 1
        log.error("incident detection for run %s: %s", self.slug, text, exc_info=exc)

    def text(self) -> str:
        return "; ".join(dict.fromkeys(self.said))


class _Steps:
    """Runs each step of a round in a savepoint of the round's transaction: a step that raises
    is undone and recorded, and the round goes on."""

    def __init__(self, store: Store, failures: _Failures):
        self.store = store
        self.failures = failures

    async def run(self, what: str, step: Coroutine[Any, Any, None]) -> bool:
        try:
            async with self.store.db.savepoint():
                await step
        except (asyncio.CancelledError, TransactionLost):
            raise  # the round as a whole is over
        except Exception as exc:
            self.failures.add(what, exc)
            return False
        return True


_Saved = tuple[list[Incident], dict[int, list[tuple[str, str]]], set[int], set[int]]


def _saved(cycle: _Cycle) -> _Saved:
    """The round's incidents and plans as they are, to go back to when a step fails."""
    return copy.deepcopy((cycle.incidents, cycle.updates, cycle.new_ids, cycle.resolved_now))


def _restore(cycle: _Cycle, saved: _Saved) -> None:
    cycle.incidents, cycle.updates, cycle.new_ids, cycle.resolved_now = saved


def _restore_incident(incident: Incident, was: Incident) -> None:
    for name in Incident.__dataclass_fields__:
        setattr(incident, name, getattr(was, name))


def _window(incidents: list[Incident], eval_start: datetime) -> tuple[datetime, datetime | None]:
    """Where the data a round reads must start (the start of every open incident's data
    conditions, or `eval_start`), and when a crash the open incidents still track began."""
    window_start = eval_start
    known_down: datetime | None = None
    for incident in incidents:
        if incident.status == "resolved":
            continue
        for fp, member in incident.details.members.items():
            spec = spec_for(fp)
            if spec is not None and spec.judges not in ("monitor", "alerts"):
                window_start = min(window_start, member.since)
                if fp == CRASH and member.until is None:
                    since = member.since
                    known_down = since if known_down is None else min(known_down, since)
    return window_start, known_down


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
    for member in incident.details.members.values():
        # a detector's own links, labelled by what they open (an alert's runbook, its graph)
        for label, url in (member.facts.get("links") or {}).items():
            if url not in links.values() and len(links) < 6:
                links[label] = url
    for label, url in cycle.run.links.items():
        if url not in links.values() and len(links) < 6:
            links[label] = url
    return links
