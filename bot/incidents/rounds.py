"""One run's round of the incident engine: what it reads from the store (`RoundReader`: a window
around the run's open incidents, the W&B facts since the last round, new reports, alerts and
the events the registered detectors declare they read) and what it plans to write (`Cycle`).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from bot.config.runsfile import Thresholds
from bot.incidents.detectors import CRASH, DETECTORS, RunData, spec_for
from bot.incidents.forecasts import advance_forecasts
from bot.incidents.lifecycle import Judgement, Policy
from bot.incidents.steps import Failures
from bot.models import Event, Incident, RunInfo, Silence
from bot.store import Store

T = TypeVar("T")

#: the most events of one declared (source, kind) a cycle reads for a run (the newest)
READ_LIMIT = 1000

Saved = tuple[list[Incident], dict[int, list[tuple[str, str]]], set[int], set[int]]


@dataclass(slots=True)
class Cycle:
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
    failures: Failures
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

    def saved(self) -> Saved:
        """The round's incidents and plans as they are, to go back to when a step fails."""
        return replica((self.incidents, self.updates, self.new_ids, self.resolved_now))

    def restore(self, saved: Saved) -> None:
        self.incidents, self.updates, self.new_ids, self.resolved_now = saved


def replica(value: T) -> T:
    """A deep copy of plain data (incidents, their details, dates, numbers, strings): a pickle
    round trip, several times faster than ``copy.deepcopy`` on these and with the same result.
    Every round saves its incidents before each step, so the copy is on the engine's path."""
    copied: T = pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    return copied


def restore_incident(incident: Incident, was: Incident) -> None:
    for name in Incident.__dataclass_fields__:
        setattr(incident, name, getattr(was, name))


@dataclass(slots=True)
class _Window:
    """Where a round's reads start."""

    eval_start: datetime  # W&B episodes that ended before this were judged by earlier rounds
    report_since: datetime
    start: datetime  # the data conditions' window: every open incident's, or `eval_start`
    known_down: datetime | None


class RoundReader:
    """Reads what each round judges. Keeps, per run, the newest point the previous round
    judged, so the next reads raw points from there."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self._judged_through: dict[str, datetime] = {}

    async def read(self, store: Store, run: RunInfo, now: datetime, failures: Failures) -> Cycle:
        """What the round judges: a window of the store around the run's open incidents."""
        repo = store.incidents
        window, incidents = await self._window(store, run, now)
        wandb_events = await repo.wandb_events(
            run.slug, window.start - self.policy.late_margin, now
        )
        # Reports can be ingested long after they were written (a thread tracked late, an edit):
        # look back far enough to attach them to the incident they describe.
        reports = await repo.unlinked_reports(run.slug, window.report_since, now)
        alerts = await repo.alert_events(run.slug, window.eval_start, now)
        declared = await self._declared(store, run.slug, window.start, now)
        read = [event for events in declared.values() for event in events]
        data = await self._data(store, run, now, window, wandb_events, reports, alerts, declared)
        return Cycle(
            run=run,
            judge=Judgement(data, self.policy),
            incidents=incidents,
            events={e.id: e for e in (*wandb_events, *reports, *alerts, *read) if e.id is not None},
            silences=await repo.active_silences(run.slug, now),
            channel=run.config.alerts_channel,
            new_ids=set(),
            updates={},
            resolved_now=set(),
            failures=failures,
        )

    async def _window(
        self, store: Store, run: RunInfo, now: datetime
    ) -> tuple[_Window, list[Incident]]:
        p = self.policy
        last_detect, wandb_seen = await store.incidents.engine_state(run.slug)
        base = wandb_seen or last_detect
        if base is not None:
            eval_start = max(now - p.max_lookback, min(base, now) - p.late_margin)
        else:
            eval_start = now - p.first_lookback
        report_since = eval_start - p.followup_window - p.group_window
        incidents = await store.incidents.relevant(run.slug, report_since - p.followup_window)
        start, known_down = data_window(incidents, eval_start)
        start = max(start, now - p.max_lookback)
        return _Window(eval_start, report_since, start, known_down), incidents

    async def _declared(
        self, store: Store, slug: str, start: datetime, now: datetime
    ) -> dict[tuple[str, str], Sequence[Event]]:
        """The events the registered detectors declare they read (`DetectorSpec.reads`), each
        (source, kind) once, for the window the W&B events cover."""
        wanted = dict.fromkeys(pair for spec in DETECTORS for pair in spec.reads)
        return {
            (source, kind): await store.events.of_kind(
                slug, source, kind, since=start - self.policy.late_margin, until=now,
                limit=READ_LIMIT,
            )
            for source, kind in wanted
        }  # fmt: skip

    async def _data(
        self,
        store: Store,
        run: RunInfo,
        now: datetime,
        window: _Window,
        wandb_events: list[Event],
        reports: list[Event],
        alerts: list[Event],
        declared: dict[tuple[str, str], Sequence[Event]],
    ) -> RunData:
        p = self.policy
        health = (await store.health.for_run(run.slug)).get("wandb")
        snapshots = await store.snapshots.chain(run.slug)
        points = await store.metrics.window(run.slug, window.start - p.baseline)
        tail_start = now - p.raw_tail
        judged = self._judged_through.get(run.slug)
        if judged is not None:
            tail_start = max(min(tail_start, judged - timedelta(minutes=1)), now - p.raw_tail_max)
        tail = await store.metrics.raw_since(run.slug, tail_start, now)
        if tail:
            self._judged_through[run.slug] = tail[-1].at
        chain = run.wandb_chain(snapshots)
        return RunData(
            slug=run.slug,
            name=run.name,
            now=now,
            thresholds=run.config.alerts,
            chain=chain,
            snapshots={s.wandb_run: s for s in snapshots},
            points=[pt for pt in points if pt.at <= now],
            tail=tail,
            tail_start=tail_start,
            wandb_events=wandb_events,
            reports=reports,
            eval_start=window.eval_start,
            loss_key=run.config.metrics.loss,
            known_down=window.known_down,
            clear_hold=p.clear_hold,
            wandb_health=health,
            forecasts=await advance_forecasts(store, run, chain, now),
            alerts=alerts,
            events=declared,
        )


def data_window(
    incidents: list[Incident], eval_start: datetime
) -> tuple[datetime, datetime | None]:
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
