"""Reading a W&B run's history incrementally (steps 3 and 4 of `bot.sources.wandb`): keyed
scans joined on `_step`, the re-read row that proves the history was not rewritten, and the
gallop back that locates a rewind, from and to the cursors of `bot.sources.wandb_cursors`. Runs
on the W&B worker thread; plain data in and out (no store).

Also the shapes a poll passes from the worker to the event loop (`MemberFetch`, `ChainFetch`)
and the small readers of W&B's loosely typed values they share."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bot.config.settings import RunConfig
from bot.core.timeutil import parse_time
from bot.sources.wandb_cursors import ChainCursor, HistoryCursor

log = logging.getLogger(__name__)

SOURCE = "wandb"
PAGE_SIZE = 1000  # rows per history page (one GraphQL request each)
# A run logging again in place after this long without a row, at a later step, restarted when
# W&B saw it stopped (crashed, heartbeat lost) or its `_runtime` did not run on with the clock
# (W&B counts a resumed run's runtime from where it stopped, so the time down is missing).
RESUME_GAP = timedelta(minutes=5)

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


# ----------------------------------------------------------------------------- the reader


class HistoryReader:
    """Reads one W&B run of the chain: its `Run` fields and the history rows after its cursor."""

    def __init__(self, key: str, run: RunConfig, *, page_size: int = PAGE_SIZE):
        self.key = key  # the source's key, for the log
        self.page_size = page_size
        metrics = run.metrics
        self.step_key = metrics.step or "_step"
        self.loss_key = metrics.loss
        self.tokens_key = metrics.tokens
        self.scans = self._scan_groups()
        # `[[runs.forecasts]]` keys: one more keyed scan each, kept apart from the points.
        extra = [] if self.step_key == "_step" else [self.step_key]
        self.watch_scans = {f.metric: [f.metric, *extra, "_timestamp"] for f in run.forecasts}

    def _scan_groups(self) -> list[list[str]]:
        """Key lists of the history scans; the first is the primary (continuity-checked) one."""
        extra = [] if self.step_key == "_step" else [self.step_key]
        metrics = [k for k in dict.fromkeys([self.loss_key, self.tokens_key]) if k]
        metrics = [k for k in metrics if k != self.step_key and not k.startswith("_")]
        if not metrics:
            return [[*extra, "_timestamp"]]
        return [[key, *extra, "_timestamp"] for key in metrics]

    def read_member(self, run: Any, path: str, cursor: HistoryCursor) -> tuple[MemberFetch, int]:
        """The member as read now, and the number of requests it took."""
        extra_requests = 0
        history_keys = attr(run, "historyKeys") or {}
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
        raw_summary = attr(run, "summaryMetrics") or {}
        summary = {
            k: raw_summary[k]
            for k in summary_keys
            if k and isinstance(raw_summary, dict) and k in raw_summary
        }
        created_raw = attr(run, "createdAt")
        member = MemberFetch(
            path=path,
            run_id=run.id,
            name=run.name,
            state=str(run.state or "unknown"),
            created_raw=created_raw,
            created_at=parse_time(created_raw),
            heartbeat_at=parse_time(attr(run, "heartbeatAt")),
            url=_run_url(run),
            summary=summary,
            last_history_step=last_step,
            rows=[],
            step=cursor.step,
            check_step=cursor.check_step,
            check_ts=cursor.check_ts,
        )
        used = self.read_history(run, member, cursor)
        return member, used + extra_requests

    def read_history(self, run: Any, member: MemberFetch, cursor: HistoryCursor) -> int:
        """Fill in the member's new rows; returns the number of requests made."""
        if member.last_history_step == cursor.step:
            return 0  # nothing logged since the last poll: no scan at all
        reader = _Reader(run, self.page_size)
        if member.last_history_step > cursor.step and self._read_on(reader, member, cursor):
            return reader.requests
        self._read_rewound(reader, member, cursor)
        return reader.requests

    def _read_on(self, reader: _Reader, member: MemberFetch, cursor: HistoryCursor) -> bool:
        """The rows logged after the cursor. False, having read only the primary scan, when the
        last row read before changed (the history was rewritten)."""
        last = member.last_history_step
        primary, *others = self.scans
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
                return False
            rows = [r for r in rows if r["_step"] > cursor.step]
        merged = _join(rows, [reader.scan(keys, cursor.step + 1, last + 1) for keys in others])
        member.runtimes = _runtimes(reader, rows, cursor)
        self.finish(member, merged, last, rows[-1] if rows else None)
        member.watched = {
            metric: reader.scan(keys, cursor.step + 1, last + 1)
            for metric, keys in self.watch_scans.items()
        }
        return True

    def _read_rewound(self, reader: _Reader, member: MemberFetch, cursor: HistoryCursor) -> None:
        """The history was rewritten (a rewind). Rows logged after the last one we read have a
        later `_timestamp`; gallop back until older rows show up, then take the newer ones."""
        last = member.last_history_step
        primary, *others = self.scans
        member.rewound_from = cursor.step
        after = cursor.check_ts
        lo = self._gallop(reader, member, min(cursor.step, last) + 1, after)
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
        self.finish(member, _join(rows, other_rows), last, check)
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

    def _gallop(self, reader: _Reader, member: MemberFetch, top: int, after: float | None) -> int:
        """The `_step` to re-read from: back from `top` in doubling windows until a window holds
        a row logged at or before `after` (the last row read before the rewind)."""
        lo = top
        if after is None:
            log.warning(
                "%s: history of %s was rewritten but rows carry no _timestamp; "
                "rows before step %d may be missed",
                self.key,
                member.path,
                top,
            )
            return lo
        width = self.page_size
        while lo > 0:
            lo = max(top - width, 0)
            window = reader.scan(self.scans[0], lo, top)
            if any((r.get("_timestamp") or math.inf) <= after for r in window):
                break
            width *= 2
        return lo

    @staticmethod
    def finish(
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


# ----------------------------------------------------------------------------- scans


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


def _runtimes(
    reader: _Reader, rows: Sequence[dict[str, Any]], cursor: HistoryCursor
) -> dict[int, float]:
    """W&B's `_runtime` on either side of each silence in the rows (one small scan each, and
    only where there is a silence): a resumed run's runtime does not count the time it was
    down, so it tells a restart from a pause (`bot.sources.wandb_restarts`). Rows without it
    (an older W&B) leave it unknown."""
    found: dict[int, float] = {}
    for before, after in _silences(rows, cursor):
        for row in reader.scan(["_runtime"], before, after + 1):
            runtime = as_float(row.get("_runtime"))
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


# ----------------------------------------------------------------------------- values


def attr(run: Any, name: str) -> Any:
    """A field of the `Run` query (a stand-in run may carry it as an attribute)."""
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


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value)


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def from_ts(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return parse_time(float(value))
