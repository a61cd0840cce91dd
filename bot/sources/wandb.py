"""The W&B source: one tracked run, i.e. a *chain* of W&B runs (resumes, forks), polled cheaply.

Per poll, on the W&B worker thread (see `bot.sources.wandb_client`):

1. Each chain member is loaded with one `Run` query (state, heartbeat, creation time, summary and
   `historyKeys.lastStep`). `Api.run()` caches runs, so later polls call `run.load(force=True)`.
2. With `wandb_run_pattern`, one `Runs` query (lightweight fragment) lists the project's runs
   created at or after the newest one already examined (`createdAt $gte`); names and display
   names are matched against the pattern here, in Python (W&B's server-side `$regex` is RE2 and
   would not see both names). New matches join the chain.
3. History is read incrementally. Nothing is scanned when `lastStep` has not moved. Otherwise one
   keyed scan per configured metric (`metrics.loss`, `metrics.tokens`, each with the step key and
   `_timestamp`), joined on `_step`. Why not one scan with every key: W&B only returns rows holding
   *all* requested keys, so a loss and a token count logged by separate `wandb.log` calls would
   never appear. Why not a key-less scan: that transfers every logged key and, once W&B has
   exported the history to parquet, downloads whole files. Scans start after the last `_step`
   read, except the first (loss) scan, which re-reads its last row once to prove the history was
   not rewritten (a rewind, `resume_from=...?_step=N`); the bench shows this costs one row.
   Each `[[runs.forecasts]]` key gets its own keyed scan over the same range; its values go to
   the `metric_series` table (`store.series`), not into the points.
4. A rewind (the history shrank, or the last row read changed) is located by galloping back from
   the old position until rows older than the last one read appear, then only the rows logged
   after it are taken.
5. A job restarted under the same run id (`resume="allow"`) logs on at the next step: W&B drops
   rows logged again below a run's `_step`. Where `RESUME_GAP` or more passed between two rows,
   `_runtime` is read for those two rows only (one small scan): a resumed run's runtime does not
   count the time it was down. A restart in place is such a silence after W&B saw the run
   stopped, or with `RUNTIME_LOST` missing from its runtime, or, without a runtime, one of
   `LONG_SILENCE` or more. Which checkpoint it resumed from is not in W&B (`Restart.went_on`).

Then, on the event loop, one `store.transaction()` commits the points, snapshots, events and the
cursors together, so a crash between fetching and committing re-reads the same rows next time
and nothing is lost or stored twice (points are also keyed on (run, step, time)).

Facts recorded as events (source "wandb"): every chain member after the first (`restart`,
`restart:new-run:<path>`), a step going back inside one run, or going on after the run stopped
(`restart`, `restart:restore:<path>:<to_step>:<at>`), and state changes (`state`,
`state:<path>:<state>:<when>`; the first observation of a run records its state once). Every
event is dated by the run's own data (a history row's `_timestamp`, the heartbeat, the run's
creation), never by when it was observed (`state_changed_at`): a crash W&B recorded three days
before Runscribe first looked is dated three days ago.
A W&B failure raises before anything is written: an unreachable W&B is never mistaken for a
crashed run.

Cursors (table `source_cursors`, source "wandb"): `<path>:history` holds the history position as
JSON (`step`: last `_step` covered, `check_step`/`check_ts`: the last loss row read, `value`/
`value_ts`: the last training step stored, `first`: the run's first training step);
`<slug>:chain` holds the chain (`members` in order, `discovered` with creation times, `since`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from bot.analysis.forecast import SeriesPoint
from bot.models import (
    NEW_RUN,
    RESTORE,
    UNHEALTHY_STATES,
    Event,
    MetricPoint,
    Restart,
    RunSnapshot,
    WandbState,
)
from bot.numbers import fmt_int
from bot.settings import RunConfig, Settings
from bot.sources.base import LiveContext, PollResult, SourceUnavailable
from bot.sources.wandb_client import (
    DEFAULT_POLL_TIMEOUT,
    DEFAULT_TIMEOUT,
    ApiFactory,
    WandbClient,
)
from bot.store import Store
from bot.timeutil import humanize_duration, parse_time

log = logging.getLogger(__name__)

SOURCE = "wandb"
PAGE_SIZE = 1000  # rows per history page (one GraphQL request each)
DISCOVERY_PAGE = 100
# A training step logged again after this much time counts as a restore, not a duplicate row.
SAME_STEP_RESTORE_GAP = timedelta(minutes=5)
# A run logging again in place after this long without a row, at a later step, restarted when
# W&B saw it stopped (crashed, heartbeat lost) or its `_runtime` did not run on with the clock
# (W&B counts a resumed run's runtime from where it stopped, so the time down is missing).
RESUME_GAP = timedelta(minutes=5)
# A resumed run's `_runtime` misses at least this much of the silence (the requeue; the new
# process's start-up and the steps it trains again before logging do count): a process that
# ran through a pause misses none of it.
RUNTIME_LOST = timedelta(minutes=1)
# A silence this long in a training run's history is a restart when its rows carry no `_runtime`
# to tell a pause (the process ran on) from a stop.
LONG_SILENCE = timedelta(minutes=30)
# Forward steps in a row that must agree before they are the run's logging interval (rows logged
# by time, at irregular steps, rarely agree: their first step after a restore is then taken as
# the checkpoint's).
STEADY_ROWS = 3


# ----------------------------------------------------------------------------- cursors


@dataclass(slots=True)
class HistoryCursor:
    step: int = -1  # last `_step` covered by every scan
    check_step: int | None = None  # `_step` of the last primary (loss) row read
    check_ts: float | None = None  # its `_timestamp`
    value: int | None = None  # last training step stored (the configured step key)
    value_ts: float | None = None
    first: int | None = None  # first training step of this W&B run
    gap: int | None = None  # steps between the last two training rows that moved forward
    steady: int = 0  # how many forward steps in a row were `gap` long

    @classmethod
    def load(cls, text: str | None) -> HistoryCursor:
        if not text:
            return cls()
        data = json.loads(text)
        if isinstance(data, int):  # a bare `_step`
            return cls(step=data)
        return cls(**{k: data.get(k) for k in cls.__slots__ if k in data})

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    def moved(self, gap: int) -> None:
        """The training step moved forward by `gap` from the previous row."""
        self.steady = self.steady + 1 if gap == self.gap else 1
        self.gap = gap

    @property
    def interval(self) -> int | None:
        """The run's fixed logging interval, once STEADY_ROWS forward steps in a row agree."""
        return self.gap if self.gap and self.steady >= STEADY_ROWS else None


@dataclass(slots=True)
class ChainCursor:
    members: list[str] = field(default_factory=list)
    discovered: dict[str, str | None] = field(default_factory=dict)  # path -> raw createdAt
    since: str | None = None  # raw createdAt: discovery looks at runs created from here on

    @classmethod
    def load(cls, text: str | None) -> ChainCursor:
        if not text:
            return cls()
        data = json.loads(text)
        return cls(
            members=list(data.get("members") or []),
            discovered=dict(data.get("discovered") or {}),
            since=data.get("since"),
        )

    def dump(self) -> str:
        return json.dumps(
            {"members": self.members, "discovered": self.discovered, "since": self.since},
            separators=(",", ":"),
            sort_keys=True,
        )


# ----------------------------------------------------------------------------- fetch results


@dataclass(slots=True)
class MemberFetch:
    """What the worker read about one W&B run of the chain (plain data, no wandb objects)."""

    path: str
    run_id: str
    name: str | None
    state: str
    created_raw: str | None
    created_at: datetime | None
    heartbeat_at: datetime | None
    url: str | None
    summary: dict[str, Any]
    last_history_step: int
    rows: list[dict[str, Any]]  # new history rows, joined on `_step`, in `_step` order
    step: int  # `_step` now covered
    check_step: int | None
    check_ts: float | None
    rewound_from: int | None = None  # `_step` position before a detected rewind
    watched: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # forecast key → rows
    #: `_runtime` by `_step` of the rows on either side of each silence (`RESUME_GAP`)
    runtimes: dict[int, float] = field(default_factory=dict)


@dataclass(slots=True)
class ChainFetch:
    members: list[MemberFetch]
    chain: ChainCursor
    requests: int


# ----------------------------------------------------------------------------- the source


class WandbSource:
    """Polls the W&B chain of one tracked run. Implements `bot.sources.base.Source`."""

    name = SOURCE

    def __init__(
        self,
        store: Store,
        run: RunConfig,
        client: WandbClient,
        *,
        page_size: int = PAGE_SIZE,
    ):
        if not run.wandb_runs:
            raise ValueError(f"run {run.slug!r} lists no wandb_runs")
        self.store = store
        self.run = run
        self.client = client
        self.page_size = page_size
        self.slug = run.slug
        self.pattern = re.compile(run.wandb_run_pattern) if run.wandb_run_pattern else None
        entity, project, _ = run.wandb_runs[0].split("/")
        self.entity, self.project = entity, project
        metrics = run.metrics
        self.step_key = metrics.step or "_step"
        self.loss_key = metrics.loss
        self.tokens_key = metrics.tokens
        self.scans = self._scan_groups()
        # `[[runs.forecasts]]` keys: one more keyed scan each, kept apart from the points.
        extra = [] if self.step_key == "_step" else [self.step_key]
        self.watch_scans = {f.metric: [f.metric, *extra, "_timestamp"] for f in run.forecasts}

    # W&B's silence is an alert risk: never wait more than 2 min before looking again.
    backoff_cap = timedelta(minutes=2)

    @property
    def key(self) -> str:
        return f"wandb:{self.slug}"

    @property
    def credential(self) -> str:
        return self.client.credential

    async def probe(self) -> bool:
        """Whether W&B answers now (the poller asks while this source backs off)."""
        return await self.client.reachable()

    @property
    def run_slugs(self) -> list[str]:
        return [self.slug]

    def _scan_groups(self) -> list[list[str]]:
        """Key lists of the history scans; the first is the primary (continuity-checked) one."""
        extra = [] if self.step_key == "_step" else [self.step_key]
        metrics = [k for k in dict.fromkeys([self.loss_key, self.tokens_key]) if k]
        metrics = [k for k in metrics if k != self.step_key and not k.startswith("_")]
        if not metrics:
            return [[*extra, "_timestamp"]]
        return [[key, *extra, "_timestamp"] for key in metrics]

    # ------------------------------------------------------------------ poll

    async def poll(self, now: datetime) -> PollResult:
        chain = ChainCursor.load((await self.store.cursors.get(SOURCE, self._chain_key))[0])
        known = self._ordered_members(chain)
        cursors: dict[str, HistoryCursor] = {}
        for path in dict.fromkeys([*known, *chain.discovered]):
            value, _ = await self.store.cursors.get(SOURCE, f"{path}:history")
            if value is not None:
                cursors[path] = HistoryCursor.load(value)
        fetched: ChainFetch = await self.client.call(self._fetch, chain, dict(cursors))
        return await self._commit(fetched, cursors, now)

    @property
    def _chain_key(self) -> str:
        return f"{self.slug}:chain"

    def _ordered_members(self, chain: ChainCursor) -> list[str]:
        """Listed runs in listed order, then discovered ones by creation time."""
        found = sorted(chain.discovered, key=lambda p: (chain.discovered.get(p) or "", p))
        return self.run.wandb_chain(found)

    # ------------------------------------------------------------------ worker side

    def _fetch(self, api: Any, chain: ChainCursor, cursors: dict[str, HistoryCursor]) -> ChainFetch:
        requests = 0
        runs: dict[str, Any] = {}
        for path in self.run.wandb_runs:
            runs[path] = self._load_run(api, path, listed=True)
            requests += 1
        chain = ChainCursor(list(chain.members), dict(chain.discovered), chain.since)
        if self.pattern is not None:
            try:
                requests += self._discover(api, chain, runs[self.run.wandb_runs[0]])
            except SourceUnavailable:
                raise
            except Exception as exc:  # W&B answered the run queries: keep polling the chain
                log.warning(
                    "%s: could not list runs of %s/%s to discover new chain members: %s",
                    self.key,
                    self.entity,
                    self.project,
                    exc,
                )
                requests += 1
        for path in self._ordered_members(chain):
            if path in runs:
                continue
            try:
                runs[path] = self._load_run(api, path, listed=False)
            except _RunMissing:
                log.warning("%s: W&B run %s has disappeared; skipping it", self.key, path)
            requests += 1
        members: list[MemberFetch] = []
        for path in self._ordered_members(chain):
            if path not in runs:
                continue
            member, used = self._read_member(runs[path], path, cursors.get(path) or HistoryCursor())
            members.append(member)
            requests += used
        chain.members = [m.path for m in members]
        return ChainFetch(members=members, chain=chain, requests=requests)

    def _load_run(self, api: Any, path: str, *, listed: bool) -> Any:
        cached = self.client.runs.get(path)
        try:
            if cached is not None:
                cached.load(force=True)
                return cached
            run = api.run(path)
        except Exception as exc:
            if "Could not find run" in str(exc):
                if listed:
                    raise SourceUnavailable(
                        f"{self.client.describe}: run {path} not found (check wandb_runs "
                        f"of run {self.slug!r} and that the API key can see it)",
                        fatal=True,
                    ) from None
                raise _RunMissing(path) from None
            raise
        self.client.runs[path] = run
        return run

    def _discover(self, api: Any, chain: ChainCursor, first: Any) -> int:
        """Add runs of the project matching the pattern that were created since `chain.since`.
        Returns the number of requests made."""
        assert self.pattern is not None
        since = chain.since or _attr(first, "createdAt")
        filters = {"createdAt": {"$gte": since}} if since else {}
        api.flush()  # Api.runs() caches result sets by filter
        found = api.runs(
            f"{self.entity}/{self.project}",
            filters=filters,
            order="+created_at",
            per_page=DISCOVERY_PAGE,
            lazy=True,
        )
        requests = 0
        newest = since
        listed = set(self.run.wandb_runs)
        for index, run in enumerate(found):
            if index % DISCOVERY_PAGE == 0:
                requests += 1
            created = _attr(run, "createdAt")
            if created and (newest is None or created > newest):
                newest = created
            path = f"{self.entity}/{self.project}/{run.id}"
            if path in listed or path in chain.discovered:
                continue
            if since and created and created < since:  # a server that ignores the filter
                continue
            names = [run.id, run.name or ""]
            if any(self.pattern.search(n) for n in names if n):
                chain.discovered[path] = created
                log.info("%s: W&B run %s (%s) joins the chain", self.key, path, run.name)
        chain.since = newest
        return max(requests, 1)

    def _read_member(self, run: Any, path: str, cursor: HistoryCursor) -> tuple[MemberFetch, int]:
        extra_requests = 0
        history_keys = _attr(run, "historyKeys") or {}
        if isinstance(history_keys, str):
            history_keys = json.loads(history_keys or "{}")
        if not isinstance(history_keys, dict):
            history_keys = {}
        last = history_keys.get("lastStep")
        if not isinstance(last, int | float) and history_keys.get("keys") is None:
            # A server that left historyKeys out of the Run query: ask separately.
            last = run.lastHistoryStep
            extra_requests = 1
        last_step = int(last) if isinstance(last, int | float) else -1
        summary_keys = {self.step_key, self.loss_key, self.tokens_key, "_step", "_runtime"}
        raw_summary = _attr(run, "summaryMetrics") or {}
        summary = {
            k: raw_summary[k]
            for k in summary_keys
            if k and isinstance(raw_summary, dict) and k in raw_summary
        }
        created_raw = _attr(run, "createdAt")
        member = MemberFetch(
            path=path,
            run_id=run.id,
            name=run.name,
            state=str(run.state or "unknown"),
            created_raw=created_raw,
            created_at=parse_time(created_raw),
            heartbeat_at=parse_time(_attr(run, "heartbeatAt")),
            url=_run_url(run),
            summary=summary,
            last_history_step=last_step,
            rows=[],
            step=cursor.step,
            check_step=cursor.check_step,
            check_ts=cursor.check_ts,
        )
        used = self._read_history(run, member, cursor)
        return member, used + extra_requests

    def _read_history(self, run: Any, member: MemberFetch, cursor: HistoryCursor) -> int:
        last = member.last_history_step
        if last == cursor.step:
            return 0  # nothing logged since the last poll: no scan at all
        reader = _Reader(run, self.page_size)
        primary, *others = self.scans
        rewound = last < cursor.step
        if not rewound:
            start = cursor.step + 1
            if cursor.check_step is not None and cursor.check_step <= cursor.step:
                start = cursor.check_step  # re-read the last row once: was history rewritten?
            rows = reader.scan(primary, start, last + 1)
            if cursor.check_step is not None:
                head = rows[0] if rows else None
                if (
                    head is None
                    or head["_step"] != cursor.check_step
                    or (cursor.check_ts is not None and head.get("_timestamp") != cursor.check_ts)
                ):
                    rewound = True
                else:
                    rows = [r for r in rows if r["_step"] > cursor.step]
            if not rewound:
                merged = _join(
                    rows, [reader.scan(keys, cursor.step + 1, last + 1) for keys in others]
                )
                member.runtimes = _runtimes(reader, rows, cursor)
                self._finish(member, merged, last, rows[-1] if rows else None)
                member.watched = {
                    metric: reader.scan(keys, cursor.step + 1, last + 1)
                    for metric, keys in self.watch_scans.items()
                }
                return reader.requests
        # The history was rewritten (a rewind). Rows logged after the last one we read have a
        # later `_timestamp`; gallop back until older rows show up, then take the newer ones.
        member.rewound_from = cursor.step
        after = cursor.check_ts
        top = min(cursor.step, last) + 1
        lo = top
        if after is not None:
            width = self.page_size
            while lo > 0:
                lo = max(top - width, 0)
                window = reader.scan(primary, lo, top)
                if any((r.get("_timestamp") or math.inf) <= after for r in window):
                    break
                width *= 2
        else:
            log.warning(
                "%s: history of %s was rewritten but rows carry no _timestamp; "
                "rows before step %d may be missed",
                self.key,
                member.path,
                top,
            )
        rows = reader.scan(primary, lo, last + 1)
        other_rows = [reader.scan(keys, lo, last + 1) for keys in others]
        check = rows[-1] if rows else None
        if after is not None:
            old = [r for r in rows if (r.get("_timestamp") or math.inf) <= after]
            rows = [r for r in rows if (r.get("_timestamp") or math.inf) > after]
            other_rows = [
                [r for r in rs if (r.get("_timestamp") or math.inf) > after] for rs in other_rows
            ]
            check = rows[-1] if rows else (old[-1] if old else None)
        self._finish(member, _join(rows, other_rows), last, check)
        member.watched = {
            metric: [
                r
                for r in reader.scan(keys, lo, last + 1)
                if after is None or (r.get("_timestamp") or math.inf) > after
            ]
            for metric, keys in self.watch_scans.items()
        }
        log.info(
            "%s: history of %s was rewritten (rewind from _step %d); %d rows re-read",
            self.key,
            member.path,
            cursor.step,
            len(rows),
        )
        return reader.requests

    @staticmethod
    def _finish(
        member: MemberFetch, merged: list[dict[str, Any]], last: int, check: dict[str, Any] | None
    ) -> None:
        """Record the rows and the new position; `check` is the last primary row read (None:
        keep the previous one, which is still the last primary row at or before `last`)."""
        member.rows = merged
        member.step = last
        if check is not None:
            member.check_step = int(check["_step"])
            ts = check.get("_timestamp")
            member.check_ts = float(ts) if isinstance(ts, int | float) else None

    # ------------------------------------------------------------------ commit side

    async def _commit(
        self, fetched: ChainFetch, cursors: dict[str, HistoryCursor], now: datetime
    ) -> PollResult:
        result = PollResult(requests=fetched.requests)
        # Turning a round's rows into points, series and events is CPU work proportional to the
        # logging rate (600 rows a minute at ten steps a second): done in a worker thread.
        stopped = {
            m.path
            for m in fetched.members
            if (seen := await self.store.snapshots.get(self.slug, m.path)) is not None
            and seen.state in UNHEALTHY_STATES
        }
        plans, events, watched = await asyncio.to_thread(self._plan, fetched, cursors, now, stopped)
        async with self.store.transaction():
            for member, points, after in plans:
                snapshot = RunSnapshot(
                    wandb_run=member.path,
                    name=member.name,
                    state=member.state,
                    created_at=member.created_at,
                    heartbeat_at=member.heartbeat_at,
                    last_step=after.value
                    if after.value is not None
                    else _int(member.summary.get(self.step_key)),
                    observed_at=now,
                    summary=member.summary,
                )
                previous_snapshot = await self.store.snapshots.upsert(self.slug, snapshot)
                state_event = self._state_event(member, previous_snapshot, snapshot, after, now)
                if state_event is not None:
                    events.append(state_event)
                result.points += await self.store.metrics.add_points(self.slug, points)
                for metric, series in watched[member.path].items():
                    result.points += await self.store.series.add(self.slug, metric, series)
                await self.store.cursors.set(SOURCE, f"{member.path}:history", after.dump())
            if events:
                upserted = await self.store.events.upsert_many(events)
                result.events = len(upserted.changed)
            await self.store.cursors.set(SOURCE, self._chain_key, fetched.chain.dump())
        if result.points or result.events:
            log.info(
                "%s: %d new points, %d events (%d W&B requests)",
                self.key,
                result.points,
                result.events,
                result.requests,
            )
        return result

    def _points(
        self, member: MemberFetch, before: HistoryCursor, now: datetime, stopped: bool = False
    ) -> tuple[list[MetricPoint], list[Event], HistoryCursor]:
        """Metric points of the new rows, restore events (the training step going back, or on
        after the run stopped: `stopped`, W&B last saw it crashed), and the cursor to store once
        they are committed."""
        after = HistoryCursor(
            step=member.step,
            check_step=member.check_step,
            check_ts=member.check_ts,
            value=before.value,
            value_ts=before.value_ts,
            first=before.first,
            gap=before.gap,
            steady=before.steady or 0,
        )
        points: list[MetricPoint] = []
        events: list[Event] = []
        prev_value, prev_at = before.value, _from_ts(before.value_ts)
        prev_row = before.check_step  # `_step` of the previous training row
        values = [v for v in (_int(row.get(self.step_key)) for row in member.rows) if v is not None]
        for row in member.rows:
            value = _int(row.get(self.step_key))
            if value is None:
                continue
            ts = row.get("_timestamp")
            at = _from_ts(ts) or now
            point = MetricPoint(
                wandb_run=member.path,
                step=value,
                at=at,
                tokens=_float(row.get(self.tokens_key)) if self.tokens_key else None,
                loss=_float(row.get(self.loss_key)) if self.loss_key else None,
            )
            if prev_value is not None and (
                value < prev_value
                or (
                    value == prev_value
                    and prev_at is not None
                    and at - prev_at > SAME_STEP_RESTORE_GAP
                )
            ):
                interval = after.interval or _fixed_interval(values[len(points) :])
                events.append(self._restore_event(member, prev_value, prev_at, value, at, interval))
            elif prev_value is not None and value > prev_value:
                runtime = _runtime_gap(member.runtimes, prev_row, row.get("_step"))
                if prev_at is not None and _resumed_in_place(at - prev_at, runtime, stopped):
                    events.append(
                        self._restore_event(member, prev_value, prev_at, value, at, after.interval)
                    )
                    stopped = False  # one restart per stop
                else:
                    after.moved(value - prev_value)
            if after.first is None:
                after.first = value
            points.append(point)
            prev_value, prev_at, prev_row = value, at, _int(row.get("_step"))
            after.value = value
            after.value_ts = ts if isinstance(ts, int | float) else None
        return points, events, after

    def _plan(
        self,
        fetched: ChainFetch,
        cursors: dict[str, HistoryCursor],
        now: datetime,
        stopped: set[str] | frozenset[str] = frozenset(),
    ) -> tuple[
        list[tuple[MemberFetch, list[MetricPoint], HistoryCursor]],
        list[Event],
        dict[str, dict[str, list[SeriesPoint]]],
    ]:
        """What a round's rows become (pure: no store): each member's points and new cursor,
        the events (restores, a new run of the chain), each watched metric's series."""
        events: list[Event] = []
        plans: list[tuple[MemberFetch, list[MetricPoint], HistoryCursor]] = []
        for index, member in enumerate(fetched.members):
            before = cursors.get(member.path) or HistoryCursor()
            points, restores, after = self._points(member, before, now, member.path in stopped)
            plans.append((member, points, after))
            events.extend(restores)
            if index > 0:
                previous = fetched.members[index - 1]
                event = self._new_run_event(
                    member, points, before, after, previous, plans[index - 1], cursors
                )
                if event is not None:
                    events.append(event)
        watched = {
            member.path: {
                metric: self._series(member, metric, rows, now)
                for metric, rows in member.watched.items()
            }
            for member in fetched.members
        }
        return plans, events, watched

    def _series(
        self, member: MemberFetch, metric: str, rows: list[dict[str, Any]], now: datetime
    ) -> list[SeriesPoint]:
        """The finite values of one watched key, on the configured step axis."""
        out = []
        for row in rows:
            step, value = _int(row.get(self.step_key)), _float(row.get(metric))
            if step is not None and value is not None:
                at = _from_ts(row.get("_timestamp")) or now
                out.append(SeriesPoint(member.path, step, at, value))
        return out

    def _base_event(self, member: MemberFetch, external_id: str, kind: str, at: datetime) -> Event:
        return Event(
            run_slug=self.slug,
            source=SOURCE,
            external_id=external_id,
            kind=kind,
            at=at,
            author=None,
            ref=member.run_id,
            url=member.url,
            state=member.state,
            thread=f"wandb:{member.path}",
        )

    def _label(self, member: MemberFetch) -> str:
        if member.name and member.name != member.run_id:
            return f"{member.name} ({member.run_id})"
        return member.run_id

    def _restore_event(
        self,
        member: MemberFetch,
        from_step: int,
        stopped_at: datetime | None,
        to_step: int,
        at: datetime,
        interval: int | None,
    ) -> Event:
        restart = Restart(
            at=at,
            kind=RESTORE,
            wandb_run=member.path,
            from_step=from_step,
            to_step=to_step,
            stopped_at=stopped_at if stopped_at is not None and stopped_at <= at else None,
            resumed_at=at,
            interval=interval,
        )
        event = self._base_event(
            member, f"restart:restore:{member.path}:{to_step}:{_iso(at)}", "restart", at
        )
        name = member.name or member.run_id
        down = humanize_duration(restart.down_for) if restart.down_for else None
        lost = restart.recomputed_steps or 0
        event.title = (
            f"W&B run {name} resumed from step {fmt_int(to_step)}"
            + (f" after {down}" if down else "")
            + f" (last step before: {fmt_int(from_step)}"
            + (f"; {fmt_int(lost)} steps recomputed)" if lost else ")")
        )
        if restart.went_on:
            down = down or "a while"
            event.body = (
                f"W&B run {self._label(member)} stopped logging at step {fmt_int(from_step)} and "
                f"logged again at step {fmt_int(to_step)} {down} later, at {_iso(at)}: "
                "restarted in place (W&B does not keep steps logged again before its last one)."
            )
            event.extra = restart.to_json()
            return event
        event.body = (
            f"Training in W&B run {self._label(member)} went back from step {fmt_int(from_step)} "
            f"to step {fmt_int(to_step)} at {_iso(at)}, a restore from an earlier checkpoint"
            + (f" that repeats {fmt_int(lost)} steps." if lost > 0 else ".")
        )
        event.extra = restart.to_json()
        return event

    def _new_run_event(
        self,
        member: MemberFetch,
        plan_points: list[MetricPoint],
        before: HistoryCursor,
        after: HistoryCursor,
        previous: MemberFetch,
        previous_plan: tuple[MemberFetch, list[MetricPoint], HistoryCursor],
        cursors: dict[str, HistoryCursor],
    ) -> Event | None:
        """`restart:new-run:<path>`: recorded when the member is first seen, and refined once
        (with the step it started from) when its first history rows arrive."""
        first_seen = member.path not in cursors  # no history cursor stored yet
        first_rows = before.first is None and after.first is not None
        if not (first_seen or first_rows):
            return None
        created = member.created_at
        first = plan_points[0] if plan_points else None
        resumed_at = first.at if first is not None and after.first == first.step else None
        # before the new run's first row: the trainer's clock, as the previous run's rows
        from_step, stopped_at = _last_before(
            previous_plan[1], cursors.get(previous.path), resumed_at or created
        )
        at = created or resumed_at
        if at is None:
            return None
        if stopped_at is not None and resumed_at is not None and resumed_at < stopped_at:
            stopped_at = None  # the previous run logged past the fork: no downtime to tell
        restart = Restart(
            at=at,
            kind=NEW_RUN,
            wandb_run=member.path,
            previous_run=previous.path,
            from_step=from_step,
            to_step=after.first,
            stopped_at=stopped_at,
            resumed_at=resumed_at,
            cause=_interruption(previous),
            interval=previous_plan[2].interval or after.interval,
        )
        event = self._base_event(member, f"restart:new-run:{member.path}", "restart", at)
        name = member.name or member.run_id
        prev_name = previous.name or previous.run_id
        parts = [f"W&B run {name} continues the chain after {prev_name}"]
        if after.first is not None:
            parts.append(f"starting at step {fmt_int(after.first)}")
        if from_step is not None:
            parts.append(f"(last step before: {fmt_int(from_step)})")
        event.title = " ".join(parts)
        event.body = (
            f"A new W&B run {self._label(member)} was created at {_iso(at)} in "
            f"{self.entity}/{self.project} and joined the chain of {self.run.name}."
            + (f" It starts at step {fmt_int(after.first)}." if after.first is not None else "")
            + (
                f" The previous run, {prev_name}, had reached step {fmt_int(from_step)}."
                if from_step is not None
                else ""
            )
        )
        event.extra = restart.to_json()
        return event

    def _state_event(
        self,
        member: MemberFetch,
        previous: RunSnapshot | None,
        snapshot: RunSnapshot,
        after: HistoryCursor,
        now: datetime,
    ) -> Event | None:
        old = previous.state if previous is not None else None
        if old == snapshot.state:
            return None
        at = state_changed_at(member, previous, after, now)
        event = self._base_event(
            member, f"state:{member.path}:{snapshot.state}:{_iso(at)}", "state", at
        )
        name = member.name or member.run_id
        step = snapshot.last_step
        at_step = f" at step {fmt_int(step)}" if step is not None else ""
        heartbeat = (
            f" Last heartbeat: {_iso(snapshot.heartbeat_at)}." if snapshot.heartbeat_at else ""
        )
        if old is None:
            event.title = f"W&B run {name} is {snapshot.state}{at_step}"
            event.body = (
                f"First observation of W&B run {self._label(member)}: "
                f"{snapshot.state}{at_step}.{heartbeat}"
            )
        else:
            event.title = f"W&B run {name} went from {old} to {snapshot.state}{at_step}"
            event.body = (
                f"W&B run {self._label(member)} changed state from {old} to {snapshot.state}"
                f"{at_step} at {_iso(at)} (observed at {_iso(now)}).{heartbeat}"
            )
        event.updated_at = now
        event.extra = WandbState(
            wandb_run=member.path,
            from_state=old,
            to_state=snapshot.state,
            step=step,
            heartbeat_at=snapshot.heartbeat_at,
            observed_at=now,
        ).to_json()
        return event


#: States in which a W&B run stopped: it stopped when W&B last heard from it.
STOPPED_STATES = frozenset({"crashed", "failed", "killed", "preempted", "finished"})


def state_changed_at(
    member: MemberFetch, previous: RunSnapshot | None, after: HistoryCursor, now: datetime
) -> datetime:
    """When a W&B run's state changed, from the run's own data, never from when Runscribe
    looked: a stop happened at the last sign of life (the later of the heartbeat and the last
    history row); a run that came back (crashed → running in place) at its first row logged
    after the previous heartbeat; anything else, or a first observation, at the heartbeat (a
    start never before the look that still saw the old state). A
    run W&B has no time for falls back to its creation, and only then to `now`. Never later
    than `now` (a server clock ahead of ours)."""
    beat = member.heartbeat_at
    last_row = _from_ts(after.value_ts)
    state = str(member.state)
    at: datetime | None
    if state in STOPPED_STATES:
        signs = [t for t in (beat, last_row) if t is not None]
        at = max(signs) if signs else None
    else:
        at = beat
        if previous is not None and previous.state in STOPPED_STATES:  # came back
            since = previous.heartbeat_at
            firsts = [
                t
                for t in (_from_ts(r.get("_timestamp")) for r in member.rows)
                if t is not None and (since is None or t > since)
            ]
            if firsts:
                at = min(firsts)
        if previous is not None and at is not None:
            # A start is later than the look that still saw the old state (a stop is not: W&B
            # marks a run crashed minutes after its last heartbeat).
            at = max(at, previous.observed_at)
    at = at or member.created_at or now
    return min(at, now)


# ----------------------------------------------------------------------------- helpers


class _RunMissing(Exception):
    pass


class _Reader:
    """Keyed history scans over [min_step, max_step) that count their GraphQL requests."""

    def __init__(self, run: Any, page_size: int):
        self.run = run
        self.page_size = page_size
        self.requests = 0

    def scan(self, keys: list[str], min_step: int, max_step: int) -> list[dict[str, Any]]:
        if max_step <= min_step:
            return []
        scan = _history_scan(self.run, keys, min_step, max_step, self.page_size)
        pages = -(-(max_step - min_step) // self.page_size)
        self.requests += 1 + pages  # RunParquetHistory + one page each
        rows = []
        for row in scan:
            step = row.get("_step")
            if isinstance(step, int | float):
                row["_step"] = int(step)
                rows.append(row)
        return rows


def _history_scan(run: Any, keys: list[str], min_step: int, max_step: int, page_size: int) -> Any:
    """`run.scan_history` without its extra `RunHistoryKeys` request: the `Run` query already
    told us `lastStep`, so build the `HistoryScan` directly when this wandb allows it."""
    service_api = getattr(run, "_service_api", None)
    if service_api is not None:
        try:
            from wandb.apis.public import HistoryScan
        except ImportError:
            service_api = None
    if service_api is None:  # another wandb version (or a stand-in run): the public way
        return run.scan_history(
            keys=keys, min_step=min_step, max_step=max_step, page_size=page_size
        )
    return HistoryScan(
        run=run,
        service_api=service_api,
        min_step=min_step,
        max_step=max_step,
        keys=keys,
        page_size=page_size,
    )


def _join(
    primary: list[dict[str, Any]], others: Sequence[list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    if not others or not any(others):
        return primary
    merged: dict[int, dict[str, Any]] = {}
    for rows in (primary, *others):
        for row in rows:
            slot = merged.setdefault(row["_step"], {})
            slot.update(row)
    return [merged[step] for step in sorted(merged)]


def _last_before(
    points: list[MetricPoint], cursor: HistoryCursor | None, created: datetime | None
) -> tuple[int | None, datetime | None]:
    """The previous run's last training step before `created`, and when it was logged: from
    this poll's points, else from what was stored before."""
    candidates = [p for p in points if created is None or p.at <= created]
    if candidates:
        return candidates[-1].step, candidates[-1].at
    if cursor is not None and cursor.value is not None:
        at = _from_ts(cursor.value_ts)
        if created is None or at is None or at <= created:
            return cursor.value, at
    return None, None


def _resumed_in_place(silence: timedelta, runtime: timedelta | None, stopped: bool) -> bool:
    """Whether a run that logged again at a later step after `silence` had stopped: W&B saw it
    stopped, or its runtime did not run on through the silence (a process that ran on paused:
    an evaluation, a slow checkpoint save), or, with no runtime in its rows, the silence is too
    long for a pause."""
    if silence < RESUME_GAP:
        return False
    if stopped:
        return True
    if runtime is not None:  # W&B's own word: did the process run through the silence?
        return silence - runtime >= RUNTIME_LOST
    return silence >= LONG_SILENCE


def _runtime_gap(runtimes: dict[int, float], before: int | None, step: Any) -> timedelta | None:
    """How far W&B's `_runtime` moved from the training row at `_step` `before` to the one at
    `step` (None: not read, or not logged)."""
    if before is None or not isinstance(step, int) or step not in runtimes:
        return None
    if before not in runtimes:
        return None
    return timedelta(seconds=runtimes[step] - runtimes[before])


def _runtimes(
    reader: _Reader, rows: Sequence[dict[str, Any]], cursor: HistoryCursor
) -> dict[int, float]:
    """W&B's `_runtime` on either side of each silence in the rows (one small scan each, and
    only where there is a silence): a resumed run's runtime does not count the time it was
    down, so it tells a restart from a pause (`_resumed_in_place`). Rows without it (an
    older W&B) leave it unknown."""
    found: dict[int, float] = {}
    for before, after in _silences(rows, cursor):
        for row in reader.scan(["_runtime"], before, after + 1):
            runtime = _float(row.get("_runtime"))
            if runtime is not None and row["_step"] in (before, after):
                found[row["_step"]] = runtime
    return found


def _silences(rows: Sequence[dict[str, Any]], cursor: HistoryCursor) -> list[tuple[int, int]]:
    """(`_step` before, `_step` after) of each silence of `RESUME_GAP` or more between training
    rows read (the first against the last row read before)."""
    out = []
    prev_step, prev_ts = cursor.check_step, cursor.check_ts
    for row in rows:
        ts = row.get("_timestamp")
        if not isinstance(ts, int | float):
            continue
        step = row["_step"]
        silent = prev_ts is not None and ts - prev_ts >= RESUME_GAP.total_seconds()
        if silent and prev_step is not None and prev_step < step:
            out.append((prev_step, step))
        prev_step, prev_ts = step, ts
    return out


def _fixed_interval(values: Sequence[int]) -> int | None:
    """The fixed number of steps between consecutive rows, when more than STEADY_ROWS rows are
    all that far apart (None: too few, or irregular)."""
    gaps = {b - a for a, b in pairwise(values)}
    if len(values) <= STEADY_ROWS or len(gaps) != 1:
        return None
    gap = gaps.pop()
    return gap if gap > 0 else None


def _interruption(previous: MemberFetch) -> str | None:
    """What W&B says ended the previous run, when it says something ended it."""
    if previous.state not in UNHEALTHY_STATES:
        return None
    return f"W&B run {previous.name or previous.run_id} {previous.state}"


def _attr(run: Any, name: str) -> Any:
    attrs = getattr(run, "_attrs", None)
    if isinstance(attrs, dict):
        return attrs.get(name)
    return getattr(run, name, None)


def _run_url(run: Any) -> str | None:
    try:
        url = run.url
    except Exception:
        return None
    return url if isinstance(url, str) and url.startswith("http") else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _from_ts(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return parse_time(float(value))


def _iso(value: datetime) -> str:
    return value.isoformat(timespec="seconds")


# ----------------------------------------------------------------------------- wiring


def build_wandb_client(
    settings: Settings,
    runs: Sequence[RunConfig],
    *,
    state_dir: Path | None = None,
    api_factory: ApiFactory | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_timeout: float = DEFAULT_POLL_TIMEOUT,
) -> WandbClient:
    """The process-wide client. The entity override is that of the first W&B run configured
    (paths are always fully qualified; the override only spares a `GetDefaultEntity` request)."""
    entity = next((r.wandb_runs[0].split("/")[0] for r in runs if r.wandb_runs), None)
    if api_factory is not None:
        return WandbClient(
            api_factory,
            poll_timeout=poll_timeout,
            describe=f"W&B at {settings.wandb_base_url}" if settings.wandb_base_url else "W&B",
        )
    key = settings.wandb_api_key.get_secret_value() if settings.wandb_api_key else None
    return WandbClient.from_settings(
        base_url=settings.wandb_base_url,
        api_key=key,
        entity=entity,
        timeout=timeout,
        state_dir=state_dir,
        poll_timeout=poll_timeout,
    )


def build_wandb_sources(
    store: Store, runs: Sequence[RunConfig], client: WandbClient
) -> list[WandbSource]:
    """One source per tracked run that lists W&B runs."""
    return [WandbSource(store, run, client) for run in runs if run.wandb_runs]


def wandb_state_dir(settings: Settings) -> Path:
    """wandb's own files (cache, config) live beside the database, never in $HOME."""
    return Path(settings.runscribe_db).resolve().parent / "wandb"


async def live_sources(context: LiveContext, runs: Sequence[RunConfig]) -> list[WandbSource]:
    """The registration's builder (`SourceSpec.build`): one source per run, sharing one client
    for the whole process (built for the first runs file; the wandb-core process is shut down
    with it)."""

    @asynccontextmanager
    async def open_client() -> AsyncIterator[WandbClient]:
        client = build_wandb_client(
            context.settings, runs, state_dir=wandb_state_dir(context.settings)
        )
        try:
            yield client
        finally:
            await client.aclose(teardown=True)

    client = await context.shared("wandb", open_client)
    return build_wandb_sources(context.store, runs, client)
