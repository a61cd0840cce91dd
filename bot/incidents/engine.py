"""The incident lifecycle: findings → incidents → outbox, once per poll cycle, per run.

`IncidentEngine` implements `bot.process.pipeline.Detector`. Each cycle, for each run, inside one
write transaction (so a bot and a `runscribe poll --once` never both fire the same incident):

1. read a window of the store (W&B facts since the last cycle, open incidents, new reports,
   and the events of each (source, kind) a registered detector declares it reads);
2. run every detector of the registry (`bot.incidents.detectors.DETECTORS`), except, while W&B
   is unreachable, those judging W&B data: their conditions are frozen (never raised, never
   cleared) and at most a "monitor blind" notice is raised; a crash inhibits the detectors
   marked `inhibited_by_crash` (heartbeat, stall, throughput);
3. match each finding to an incident: the open one with its fingerprint, else an open incident
   of the same group close in time (a GitHub report of a lost node and a W&B crash are one
   incident), else the resolved one whose condition it is, when it resolved within the run's
   `reopen_minutes` (it reopens: one incident, one write-up, for both outages), else a new one.
   A finding the store already resolved is old news; a new one
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

The parts beside it: `bot.incidents.rounds` reads a round (step 1) into a `Cycle`;
`bot.incidents.matching` matches a finding to its incident (step 3); `bot.incidents.delivery`
queues the posts (step 5, `IncidentDelivery.deliver`); `bot.incidents.steps` isolates failures
(each step in a savepoint, each cause logged once).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime

import bot.incidents.lifecycle as lifecycle
import bot.incidents.people as people
from bot.incidents.delivery import IncidentDelivery, IncidentWords
from bot.incidents.detectors import CRASH, DETECTORS, Finding, is_alert, is_report, where
from bot.incidents.lifecycle import Policy
from bot.incidents.matching import match
from bot.incidents.rounds import Cycle, RoundReader, replica, restore_incident
from bot.incidents.steps import Failures, Steps, record_health
from bot.incidents.writeup import WriteupPen
from bot.models import Event, Incident, IncidentDetails, IncidentSignal, RunInfo
from bot.store import Store
from bot.store.incidents import IncidentsRepo

__all__ = ["IncidentEngine", "IncidentWords", "incident_note", "is_alert_event"]


class IncidentEngine:
    """The `Detector` of the pipeline: `await engine.detect(store, now)` → posts queued."""

    def __init__(
        self,
        words: IncidentWords,
        *,
        policy: Policy | None = None,
        runs: list[str] | None = None,
        pen: WriteupPen | None = None,
    ):
        self.words = words
        self.policy = policy or Policy()
        self.runs = set(runs) if runs else None
        self.reader = RoundReader(self.policy)  # what each round reads
        # what each round posts; with a `pen`, the write-ups the model stored
        self.delivery = IncidentDelivery(words, pen)
        # per run, the causes of failure already logged (each is logged once, until a clean round)
        self._logged: dict[str, dict[str, int]] = {}

    async def detect(self, store: Store, now: datetime) -> int:
        queued = 0
        for run in await store.runs.all():
            if self.runs is not None and run.slug not in self.runs:
                continue
            failures = Failures(run.slug, self._logged.setdefault(run.slug, {}))
            try:
                async with store.transaction():
                    queued += await self._detect_run(store, run, now, failures)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one broken run never blinds the others
                failures.add("the detection round", exc)
            await record_health(store, run.slug, now, failures)
        return queued

    # --- the round ---------------------------------------------------------------------------

    async def _detect_run(
        self,
        store: Store,
        run: RunInfo,
        now: datetime,
        failures: Failures,
    ) -> int:
        """One run's round, inside its write transaction. Each detector, each finding's
        incident and each incident's posts is a step of its own: one that fails is rolled back
        (to a savepoint), logged once per cause and left for the next round, and the rest of the
        round goes on."""
        cycle = await self.reader.read(store, run, now, failures)
        repo = store.incidents
        as_read = {i.id: repo.written(i) for i in cycle.incidents}  # only what changes is written
        steps = Steps(store, failures)
        for finding in self._findings(cycle):
            saved = cycle.saved()
            if not await steps.run(
                f"the {finding.fingerprint} incident", self._apply(store, repo, cycle, finding)
            ):
                cycle.restore(saved)
        saved = cycle.saved()
        if not await steps.run("thread follow-ups", self._thread_followups(store, repo, cycle)):
            cycle.restore(saved)
        for incident in cycle.incidents:
            if incident.status != "resolved":
                self._advance(cycle, incident)
        saved = cycle.saved()
        if not await steps.run("who acted", self._people_acting(repo, cycle)):
            cycle.restore(saved)
        for incident in cycle.incidents:
            was = replica(incident)
            if not await steps.run(
                f"incident #{incident.id}'s posts",
                self._deliver_and_write(store, cycle, incident, as_read.get(incident.id)),
            ):
                restore_incident(incident, was)
        await repo.set_engine_state(run.slug, now, None if cycle.data.blind else now)
        return cycle.queued

    async def _deliver_and_write(
        self, store: Store, cycle: Cycle, incident: Incident, was: tuple[object, ...] | None
    ) -> None:
        await self._deliver(store, cycle, incident)
        await store.incidents.update(incident, was=was)

    async def _deliver(self, store: Store, cycle: Cycle, incident: Incident) -> None:
        """Queue what the round says about the incident: `IncidentDelivery.deliver` (the alert,
        thread updates, edits, the resolution, reminders)."""
        await self.delivery.deliver(store, cycle, incident)

    def _findings(self, cycle: Cycle) -> list[Finding]:
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

    async def _apply(
        self, store: Store, repo: IncidentsRepo, cycle: Cycle, finding: Finding
    ) -> None:
        incident, how = match(cycle, finding)
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
                incident, how = match(cycle, finding)
                if how == "old":
                    return
        if incident is not None and how == "reopen":
            await self._reopen(store, repo, cycle, incident, finding)
        if incident is None and finding.since < cycle.data.eval_start - self.policy.first_lookback:
            return  # an old report that matches nothing: history, not an alert
        if incident is None:
            incident = await self._open(store, repo, cycle, finding)
        assert incident.id is not None
        if how != "followup":
            self._member(cycle, incident, finding, joined=how == "join")
        if incident.id in cycle.new_ids and not incident.details.fired:
            # Found already over, long ago (read back after downtime): history, not news.
            clear = incident.details.clear_time()
            incident.details.history = (
                clear is not None and cycle.now - clear >= self.policy.backfill_after
            )
        await self._link_events(store, repo, cycle, incident, finding)

    async def _open(
        self, store: Store, repo: IncidentsRepo, cycle: Cycle, finding: Finding
    ) -> Incident:
        """A new pending incident for a finding that matched none."""
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
        return incident

    async def _reopen(
        self, store: Store, repo: IncidentsRepo, cycle: Cycle, incident: Incident, finding: Finding
    ) -> None:
        """The condition of a resolved incident came back within the run's `reopen_minutes`:
        the incident fires again (`lifecycle.reopen`), its acknowledgement of the outage before
        is kept with that outage and cleared from the record, and /timeline gets a note."""
        assert incident.id is not None
        lifecycle.reopen(cycle.judge, incident, finding)
        await repo.clear_acknowledgement(incident.id)
        cycle.new_ids.add(incident.id)  # its reopening post says what brought it back
        count = incident.details.reopens
        note = replace(
            incident_note(incident, finding.cause),
            external_id=f"incident:{incident.id}:reopened:{count}",
            at=finding.since,
            title=f"Incident #{incident.id} reopened: {finding.title}",
        )
        await store.events.upsert_many([note])

    async def _link_events(
        self, store: Store, repo: IncidentsRepo, cycle: Cycle, incident: Incident, finding: Finding
    ) -> None:
        """Link the finding's events to the incident; each new one is said in its thread."""
        assert incident.id is not None
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

    def _member(self, cycle: Cycle, incident: Incident, finding: Finding, *, joined: bool) -> None:
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

    async def _thread_followups(self, store: Store, repo: IncidentsRepo, cycle: Cycle) -> None:
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

    async def _people_acting(self, repo: IncidentsRepo, cycle: Cycle) -> None:
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

    def _advance(self, cycle: Cycle, incident: Incident, at: datetime | None = None) -> None:
        if lifecycle.advance(cycle.judge, incident, at) and incident.id is not None:
            cycle.resolved_now.add(incident.id)


# --- helpers ------------------------------------------------------------------------------------


def is_alert_event(event: Event) -> bool:
    return event.source == "alertmanager"


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


def _add_signal(incident: Incident, event: Event) -> None:
    signals = incident.details.signals
    if any(s.event_id == event.id for s in signals):
        return
    text = event.summary or event.title or event.body or event.kind
    signals.append(IncidentSignal(event.id, event.at, where(event), text[:300], event.url))
    signals.sort(key=lambda s: s.at)
    del signals[:-50]
