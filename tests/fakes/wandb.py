"""A local fake W&B server that speaks GraphQL the way `wandb` 0.31 (via wandb-core) sends it.

Everything is `POST /graphql` with `{"query", "variables"}`; the operation is the name after
`query` in the text. Answered: Viewer, GetDefaultEntity, Run, Runs, RunHistoryKeys,
RunParquetHistory, SampledHistoryPage, HistoryPage, RunSampledHistory, RunFullHistory. Anything
else is logged and answered `{"errors": [...]}` (the client raises CommError), so a new query
shape shows up in `unknown_operations` instead of being silently mis-served.

History is served "live" only (`parquetUrls: []`), which is how W&B serves data it has not yet
exported; `liveData` lists just the first and last live step (wandb-core only needs the minimum).

State lives in memory and is guarded by a lock: the server can run on its own thread
(`FakeWandb.start()` / `stop()`, which is what tests with a module-scoped wandb-core use) or in
the caller's loop (`async with fake.serve():`). Test controls: `add_run`, `log`, `append_rows`,
`rewind`, `resume`, `set_state`, `fail_next`, `set_down`, `delay`; `requests` records every
operation with the number of history rows it returned.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

_OPERATION = re.compile(r"\b(query|mutation)\s+(\w+)")
_BASE_TIME = datetime(2026, 8, 20, tzinfo=UTC)


def wandb_time(value: datetime) -> str:
    """W&B's createdAt/heartbeatAt format: ISO, UTC, no zone suffix."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


@dataclass
class FakeRun:
    entity: str
    project: str
    id: str  # W&B "name" (the run id)
    display_name: str
    created_at: datetime
    state: str = "running"
    heartbeat_at: datetime | None = None
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    storage_id: str = ""
    steps: list[int] = field(default_factory=list)  # sorted `_step` of `rows`
    down: timedelta = timedelta(0)  # time it was stopped (`resume`): not in its `_runtime`
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{self.entity}/{self.project}/{self.id}"

    @property
    def last_step(self) -> int:
        return self.steps[-1] if self.steps else -1

    def history_keys(self) -> dict[str, Any]:
        keys: dict[str, int] = {}
        # Counting every key of a 390k-row history per request would dominate the benchmark;
        # the last rows are representative enough for a fake.
        for row in self.rows[-50:]:
            for key in row:
                keys[key] = keys.get(key, 0) + 1
        out: dict[str, Any] = {
            "keys": {k: {"typeCounts": [{"type": "number", "count": n}]} for k, n in keys.items()}
        }
        if self.steps:
            out["lastStep"] = self.last_step
        return out

    def node(self, full: bool) -> dict[str, Any]:
        node: dict[str, Any] = {
            "projectId": "123",
            "id": self.storage_id,
            "tags": [],
            "name": self.id,
            "displayName": self.display_name,
            "sweepName": None,
            "state": self.state,
            "group": None,
            "jobType": None,
            "commit": None,
            "readOnly": False,
            "createdAt": wandb_time(self.created_at),
            "heartbeatAt": wandb_time(self.heartbeat_at or self.created_at),
            "description": None,
            "notes": None,
            "historyLineCount": len(self.rows),
            "user": {"name": "Trainer", "username": "trainer"},
        }
        if full:
            node["config"] = json.dumps({k: {"value": v} for k, v in self.config.items()})
            node["summaryMetrics"] = json.dumps(self.summary)
            node["systemMetrics"] = "{}"
            node["historyKeys"] = self.history_keys()
        return node

    def window(self, min_step: int, max_step: int) -> list[dict[str, Any]]:
        """Rows with min_step <= _step <= max_step."""
        lo = bisect.bisect_left(self.steps, min_step)
        hi = bisect.bisect_right(self.steps, max_step)
        return self.rows[lo:hi]


@dataclass
class LoggedRequest:
    operation: str
    variables: dict[str, Any]
    rows: int = 0  # history rows returned
    status: int = 200


class FakeWandb:
    """In-memory W&B. `base_url` is valid once the server is started."""

    def __init__(self, api_key: str = "fake-key-0123456789abcdef0123456789abcdef0123"):
        self.api_key = api_key
        self.entity = "ent"
        self.runs: dict[str, FakeRun] = {}
        self.requests: list[LoggedRequest] = []
        self.unknown_operations: list[str] = []
        self._lock = threading.RLock()
        self._fail: list[int] = []  # statuses for the next requests
        self._down_status: int | None = None
        self._delay = 0.0
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()  # set when the port closes
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.port = 0
        self._counter = 0

    # ----------------------------------------------------------------- lifecycle

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/graphql", self._graphql)
        return app

    async def _start_site(self) -> None:
        self._closing = asyncio.Event()
        self._runner = web.AppRunner(self._app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[union-attr,attr-defined]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr,attr-defined]

    async def _close_site(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _pause(self, seconds: float) -> None:
        """A scripted slow answer: `seconds`, or less once the server closes (the client has
        long given up; a sleeping handler would hold the shutdown for its whole timeout)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[FakeWandb]:
        """Serve from the current event loop (the loop must not be blocked by W&B calls)."""
        await self._start_site()
        try:
            yield self
        finally:
            assert self._runner is not None
            await self._close_site()

    def start(self) -> FakeWandb:
        """Serve from a private thread and loop, independent of the test's loop."""
        ready = threading.Event()
        errors: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._close_site())
            loop.close()

        self._thread = threading.Thread(target=main, name="fake-wandb", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise errors[0]
        return self

    def stop(self) -> None:
        """Close the port; later requests get "connection refused"."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None
            self._loop = None

    def reset(self) -> None:
        with self._lock:
            self.runs.clear()
            self.requests.clear()
            self.unknown_operations.clear()
            self._fail.clear()
            self._down_status = None
            self._delay = 0.0

    # ----------------------------------------------------------------- controls

    def add_run(
        self,
        path: str,
        *,
        display_name: str | None = None,
        created_at: datetime | None = None,
        state: str = "running",
        config: dict[str, Any] | None = None,
    ) -> FakeRun:
        entity, project, run_id = path.split("/")
        with self._lock:
            self._counter += 1
            run = FakeRun(
                entity=entity,
                project=project,
                id=run_id,
                display_name=display_name or run_id,
                created_at=created_at or _BASE_TIME + timedelta(seconds=self._counter),
                state=state,
                config=config or {},
                storage_id=base64.b64encode(
                    f"Run:v1:{run_id}:{project}:{entity}".encode()
                ).decode(),
            )
            run.heartbeat_at = run.created_at
            self.runs[path] = run
            return run

    def append_rows(self, path: str, rows: Iterable[dict[str, Any]]) -> int:
        """Append history rows. A row without `_step` gets the next one. A row whose `_step`
        is at or below the last one rewrites history from there (W&B's rewind: the later rows
        are dropped, like `resume_from=...?_step=N`). Returns the last `_step`."""
        with self._lock:
            run = self.runs[path]
            for row in rows:
                row = dict(row)
                step = int(row.get("_step", run.last_step + 1))
                if step <= run.last_step:
                    cut = bisect.bisect_left(run.steps, step)
                    del run.steps[cut:], run.rows[cut:]
                row["_step"] = step
                run.steps.append(step)
                run.rows.append(row)
                if "_timestamp" in row:
                    run.heartbeat_at = datetime.fromtimestamp(row["_timestamp"], UTC)
                run.summary.update(row)
            return run.last_step

    def log(
        self,
        path: str,
        count: int,
        *,
        start: datetime,
        every: timedelta = timedelta(seconds=30),
        step_key: str | None = None,
        first_value: int | None = None,
        loss: float = 3.0,
        tokens_per_step: float = 4_000_000,
        loss_key: str = "train/loss",
        tokens_key: str | None = "throughput/total_tokens",
        loss_at: Callable[[int], float] | None = None,
        extra: Callable[[int], dict[str, float]] | None = None,
    ) -> list[dict[str, Any]]:
        """Append `count` training rows at `every` intervals from `start`. With `step_key`, the
        trainer's own step counter (starting at `first_value`, default continuing) is logged too.
        `loss_at(step)` replaces the default loss curve; `extra(step)` adds more keys (watched
        metrics such as a gradient norm) to each row.
        """
        with self._lock:
            run = self.runs[path]
            value = first_value
            if value is None:
                value = (
                    (run.rows[-1].get(step_key, run.last_step) + 1)
                    if step_key and run.rows
                    else (run.last_step + 1)
                )
            rows = []
            for i in range(count):
                at = start + every * i
                trainer_step = value + i
                row: dict[str, Any] = {
                    "_timestamp": at.timestamp(),
                    "_runtime": (at - run.created_at - run.down).total_seconds(),
                    loss_key: round(
                        loss_at(trainer_step)
                        if loss_at
                        else loss * (1 + 1 / (1 + trainer_step / 1000)),
                        6,
                    ),
                }
                if extra:
                    row.update(extra(trainer_step))
                if tokens_key:
                    row[tokens_key] = tokens_per_step * (trainer_step + 1)
                if step_key:
                    row[step_key] = trainer_step
                rows.append(row)
            self.append_rows(path, rows)
            return rows

    def rewind(self, path: str, step: int) -> None:
        """Drop history from `step` on (the next row logged gets `step`)."""
        with self._lock:
            run = self.runs[path]
            cut = bisect.bisect_left(run.steps, step)
            del run.steps[cut:], run.rows[cut:]

    def resume(self, path: str, at: datetime) -> None:
        """The process stopped after its last row and `wandb.init(id=..., resume="allow")` ran
        again at `at`: the run is running again, and its `_runtime` goes on from where it stopped
        (W&B counts a resumed run's runtime without the time it was down)."""
        with self._lock:
            run = self.runs[path]
            last = run.rows[-1].get("_timestamp") if run.rows else None
            if last is not None:
                run.down += at - datetime.fromtimestamp(last, UTC)
            run.state = "running"
            run.heartbeat_at = at

    def set_state(self, path: str, state: str, heartbeat_at: datetime | None = None) -> None:
        with self._lock:
            run = self.runs[path]
            run.state = state
            if heartbeat_at is not None:
                run.heartbeat_at = heartbeat_at

    def fail_next(self, count: int = 1, status: int = 500) -> None:
        with self._lock:
            self._fail.extend([status] * count)

    def set_down(self, status: int | None = 503) -> None:
        """Answer every request with `status` (None: back to normal)."""
        with self._lock:
            self._down_status = status

    def delay(self, seconds: float) -> None:
        with self._lock:
            self._delay = seconds

    # ----------------------------------------------------------------- request log helpers

    def operations(self) -> list[str]:
        with self._lock:
            return [r.operation for r in self.requests]

    def rows_sent(self) -> int:
        with self._lock:
            return sum(r.rows for r in self.requests)

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    # ----------------------------------------------------------------- GraphQL

    async def _graphql(self, request: web.Request) -> web.Response:
        body = await request.json()
        query: str = body.get("query", "")
        variables: dict[str, Any] = body.get("variables") or {}
        if isinstance(variables, str):
            variables = json.loads(variables or "{}")
        match = _OPERATION.search(query)
        operation = match.group(2) if match else "<anonymous>"
        with self._lock:
            delay = self._delay
            status = self._fail.pop(0) if self._fail else self._down_status
        if delay:
            await self._pause(delay)
        entry = LoggedRequest(operation, variables)
        if status is not None:
            entry.status = status
            with self._lock:
                self.requests.append(entry)
            return web.json_response({"errors": [{"message": "injected failure"}]}, status=status)
        if not self._authorized(request.headers.get("Authorization", "")):
            entry.status = 401
            with self._lock:
                self.requests.append(entry)
            return web.json_response({"errors": [{"message": "invalid api key"}]}, status=401)
        handler = getattr(self, f"_op_{operation}", None)
        with self._lock:
            if handler is None:
                self.unknown_operations.append(operation)
                self.requests.append(entry)
                message = f"fake W&B does not implement operation {operation!r}"
                return web.json_response({"errors": [{"message": message}]})
            data = handler(variables, query, entry)
            self.requests.append(entry)
        return web.json_response({"data": data})

    def _authorized(self, header: str) -> bool:
        if not header.startswith("Basic "):
            return False
        try:
            user_pass = base64.b64decode(header[6:]).decode()
        except ValueError:
            return False
        return user_pass.partition(":")[2] == self.api_key

    def _run(self, variables: dict[str, Any], name_var: str = "name") -> FakeRun | None:
        path = f"{variables.get('entity')}/{variables.get('project')}/{variables.get(name_var)}"
        return self.runs.get(path)

    def _op_Viewer(self, variables: dict[str, Any], query: str, entry: LoggedRequest) -> Any:
        return {
            "viewer": {
                "id": "VXNlcjox",
                "entity": self.entity,
                "username": "trainer",
                "email": None,
                "flags": None,
                "teams": {"edges": []},
            }
        }

    def _op_GetDefaultEntity(
        self, variables: dict[str, Any], query: str, entry: LoggedRequest
    ) -> Any:
        return {"viewer": {"id": "VXNlcjox", "entity": self.entity}}

    def _project_exists(self, entity: str, project: str) -> bool:
        return any(r.entity == entity and r.project == project for r in self.runs.values())

    def _op_Run(self, variables: dict[str, Any], query: str, entry: LoggedRequest) -> Any:
        if not self._project_exists(variables.get("entity", ""), variables.get("project", "")):
            return {"project": None}
        run = self._run(variables)
        return {"project": {"run": run.node(full=True) if run else None}}

    def _op_Runs(self, variables: dict[str, Any], query: str, entry: LoggedRequest) -> Any:
        entity, project = variables.get("entity"), variables.get("project")
        if not self._project_exists(str(entity), str(project)):
            return {"project": None}
        filters = json.loads(variables.get("filters") or "{}")
        runs = [
            r
            for r in self.runs.values()
            if r.entity == entity and r.project == project and _matches(r, filters)
        ]
        order = variables.get("order") or "+created_at"
        field_name = order.lstrip("+-")
        attr = "heartbeat_at" if field_name in ("heartbeat_at", "heartbeatAt") else "created_at"
        runs.sort(key=lambda r: (getattr(r, attr) or r.created_at, r.id), reverse=order[0] == "-")
        start = int(variables.get("cursor") or 0)
        per_page = int(variables.get("perPage") or 50)
        page = runs[start : start + per_page]
        full = "...RunFragment" in query
        edges = [
            {"node": r.node(full=full), "cursor": str(start + i + 1)} for i, r in enumerate(page)
        ]
        return {
            "project": {
                "internalId": "UHJvamVjdDox",
                "runCount": len(runs),
                "readOnly": False,
                "runs": {
                    "edges": edges,
                    "pageInfo": {
                        "endCursor": str(start + len(page)),
                        "hasNextPage": start + len(page) < len(runs),
                    },
                },
            }
        }

    def _op_RunHistoryKeys(
        self, variables: dict[str, Any], query: str, entry: LoggedRequest
    ) -> Any:
        run = self._run(variables)
        return {"project": {"run": {"historyKeys": run.history_keys()} if run else None}}

    def _op_RunParquetHistory(
        self, variables: dict[str, Any], query: str, entry: LoggedRequest
    ) -> Any:
        run = self._run(variables, "runName")
        if run is None:
            return {"project": {"run": None}}
        live = (
            [{"_step": float(run.steps[0])}, {"_step": float(run.steps[-1])}] if run.steps else []
        )
        return {"project": {"run": {"parquetHistory": {"parquetUrls": [], "liveData": live}}}}

    def _op_SampledHistoryPage(
        self, variables: dict[str, Any], query: str, entry: LoggedRequest
    ) -> Any:
        run = self._run(variables, "run")
        if run is None:
            return {"project": {"run": None}}
        spec = json.loads(variables["spec"])
        rows = _sampled(run, spec)
        entry.rows = len(rows)
        return {"project": {"run": {"sampledHistory": [rows]}}}

    def _op_HistoryPage(self, variables: dict[str, Any], query: str, entry: LoggedRequest) -> Any:
        run = self._run(variables, "run")
        if run is None:
            return {"project": {"run": None}}
        # maxStep is exclusive here (wandb-core pages [minStep, maxStep)).
        rows = run.window(int(variables["minStep"]), int(variables["maxStep"]) - 1)
        rows = rows[: int(variables.get("pageSize") or len(rows))]
        entry.rows = len(rows)
        return {"project": {"run": {"history": [json.dumps(r) for r in rows]}}}

    def _op_RunSampledHistory(
        self, variables: dict[str, Any], query: str, entry: LoggedRequest
    ) -> Any:
        run = self._run(variables)
        if run is None:
            return {"project": {"run": None}}
        result = [_sampled(run, json.loads(spec)) for spec in variables.get("specs", [])]
        entry.rows = sum(len(r) for r in result)
        return {"project": {"run": {"sampledHistory": result}}}

    def _op_RunFullHistory(
        self, variables: dict[str, Any], query: str, entry: LoggedRequest
    ) -> Any:
        run = self._run(variables)
        if run is None:
            return {"project": {"run": None}}
        rows = _downsample(run.rows, int(variables.get("samples") or 500))
        entry.rows = len(rows)
        return {"project": {"run": {"history": [json.dumps(r) for r in rows]}}}


def _sampled(run: FakeRun, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """sampledHistory: rows in [minStep, maxStep] holding every key in spec["keys"], reduced
    to those keys, downsampled to `samples`."""
    keys = list(dict.fromkeys([*spec.get("keys", []), "_step"]))
    min_step = int(spec.get("minStep", 0))
    max_step = int(spec.get("maxStep", 2**62))
    rows = [
        {k: row[k] for k in keys}
        for row in run.window(min_step, max_step)
        if all(k in row for k in keys)
    ]
    return _downsample(rows, int(spec.get("samples", 500)))


def _downsample(rows: list[dict[str, Any]], samples: int) -> list[dict[str, Any]]:
    if samples <= 0 or len(rows) <= samples:
        return rows
    stride = len(rows) / samples
    return [rows[int(i * stride)] for i in range(samples)]


# ------------------------------------------------------------------- a small Mongo-ish filter

_FIELDS = {
    "name": lambda r: r.id,
    "displayName": lambda r: r.display_name,
    "display_name": lambda r: r.display_name,
    "createdAt": lambda r: wandb_time(r.created_at),
    "created_at": lambda r: wandb_time(r.created_at),
    "state": lambda r: r.state,
}


def _matches(run: FakeRun, query: dict[str, Any]) -> bool:
    for key, cond in query.items():
        if key == "$and":
            if not all(_matches(run, q) for q in cond):
                return False
        elif key == "$or":
            if not any(_matches(run, q) for q in cond):
                return False
        elif key == "$nor":
            if any(_matches(run, q) for q in cond):
                return False
        else:
            getter = _FIELDS.get(key)
            value = getter(run) if getter else None
            if not _test(value, cond):
                return False
    return True


def _test(value: Any, cond: Any) -> bool:
    if not isinstance(cond, dict):
        return bool(value == cond)
    return all(_op(op, value, arg) for op, arg in cond.items())


def _op(op: str, value: Any, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if op == "$in":
        return value in arg
    if op == "$nin":
        return value not in arg
    if op == "$exists":
        return (value is not None) == bool(arg)
    if op == "$regex":
        return value is not None and re.search(arg, str(value)) is not None
    if value is None:
        return False
    bound = _norm(arg)
    if op == "$gt":
        return bool(value > bound)
    if op == "$gte":
        return bool(value >= bound)
    if op == "$lt":
        return bool(value < bound)
    if op == "$lte":
        return bool(value <= bound)
    return False


def _norm(arg: Any) -> Any:
    """Compare times as W&B's zone-less ISO text, whatever format the client sent."""
    if isinstance(arg, str) and re.match(r"^\d{4}-\d\d-\d\dT", arg):
        text = arg.replace("Z", "+00:00")
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return arg
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
        return (
            parsed.isoformat(timespec="seconds") if parsed.microsecond == 0 else parsed.isoformat()
        )
    return arg
