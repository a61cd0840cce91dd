"""One `wandb.Api` per process, driven from one worker thread.

The `wandb` 0.31 public API is synchronous: every call goes through the bundled `wandb-core`
process and blocks. Its thread safety is not documented, so all W&B work runs on a single
dedicated thread (a one-worker executor): the event loop never blocks, and only one thread ever
touches the `Api`. The `Api` is created lazily on that thread (its constructor already makes a
`Viewer` request to verify the key) and reused.

`configure_wandb_environment` keeps wandb's files in Runscribe's state directory (never `$HOME`),
silences it, turns off its error reporting and bounds wandb-core's GraphQL retries (by default 20
attempts with waits of up to 60 s, during which a history scan, which has no client-side
timeout, would hang the worker for many minutes).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from bot.sources.base import SourceUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")
ApiFactory = Callable[[], Any]
DEFAULT_BASE_URL = "https://api.wandb.ai"
PROBE_TIMEOUT = 10.0  # seconds the reachability probe waits for W&B

DEFAULT_TIMEOUT = 30.0  # seconds Python waits on wandb-core per GraphQL request
DEFAULT_POLL_TIMEOUT = 900.0  # seconds one poll may keep the worker busy
_RETRY_ENV = {
    "WANDB__GRAPHQL_RETRY_MAX": "3",
    "WANDB__GRAPHQL_RETRY_WAIT_MIN_SECONDS": "1",
    "WANDB__GRAPHQL_RETRY_WAIT_MAX_SECONDS": "10",
}


def configure_wandb_environment(state_dir: Path | None = None) -> Path:
    """Point wandb's directories at `state_dir` (default: a `wandb` folder in the temp dir) and
    make it quiet. Values already in the environment win. Must run before wandb creates its
    process-wide settings (the first `wandb.Api()`), which is why the default factory calls it.
    Returns the directory used."""
    root = state_dir or Path(tempfile.gettempdir()) / "runscribe-wandb"
    root.mkdir(parents=True, exist_ok=True)
    defaults = {
        "WANDB_DIR": str(root),
        "WANDB_CACHE_DIR": str(root / "cache"),
        "WANDB_CONFIG_DIR": str(root / "config"),
        "WANDB_DATA_DIR": str(root / "data"),
        "WANDB_ARTIFACT_DIR": str(root / "artifacts"),
        "WANDB_SILENT": "true",
        "WANDB_ERROR_REPORTING": "false",
        "WANDB_DISABLE_CODE": "true",
        **_RETRY_ENV,
    }
    for name, value in defaults.items():
        os.environ.setdefault(name, value)
    return root


class _DropOrphanReplies(logging.Filter):
    """wandb 0.31 logs "Received response with no mailbox slot" at ERROR whenever wandb-core
    acknowledges the cleanup request a finished history scan sends when garbage-collected. It is
    harmless and would otherwise appear on every poll."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "no mailbox slot" not in record.getMessage()


_FILTER = _DropOrphanReplies()


def quiet_wandb_logs() -> None:
    logger = logging.getLogger("wandb.sdk.mailbox.mailbox")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


@dataclass(frozen=True, slots=True)
class Reach:
    """What a plain `Viewer` query said about W&B: `ok` (it answered and took the key),
    `rejected` (401/403: the key is wrong), else unreachable, `detail` saying how."""

    ok: bool
    rejected: bool = False
    detail: str = ""


Probe = Callable[[], Awaitable[Reach]]


class HttpProbe:
    """The cheapest question W&B answers: `query Viewer { viewer { id } }` over plain HTTP (the
    wandb client reports a refused connection, a timeout and a 5xx all as an authentication
    error; this tells them apart). Basic auth `api:<key>`, as wandb sends it. One HTTP client per
    event loop, built off the loop (building its TLS context costs ~100 ms of CPU)."""

    def __init__(self, base_url: str | None, api_key: str, timeout: float = PROBE_TIMEOUT):
        self.url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/graphql"
        self._auth = ("api", api_key)
        self.timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = await asyncio.to_thread(httpx.AsyncClient, timeout=self.timeout)
            self._loop = loop
        return self._client

    async def __call__(self) -> Reach:
        body = {"query": "query Viewer { viewer { id } }", "variables": {}}
        try:
            client = await self._http()
            response = await client.post(self.url, json=body, auth=self._auth)
        except httpx.TimeoutException:
            return Reach(False, detail=f"no answer within {self.timeout:g} s")
        except httpx.ConnectError as exc:
            return Reach(False, detail="connection refused" if _refused(exc) else "cannot connect")
        except httpx.HTTPError as exc:
            return Reach(False, detail=type(exc).__name__)
        status = response.status_code
        if status in (401, 403):
            return Reach(False, rejected=True, detail=f"HTTP {status}")
        if status != 200:
            return Reach(False, detail=f"HTTP {status}")
        return Reach(True)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()


def http_probe(base_url: str | None, api_key: str, timeout: float = PROBE_TIMEOUT) -> HttpProbe:
    return HttpProbe(base_url, api_key, timeout)


def _refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(10):  # httpx → httpcore → OSError → ConnectionRefusedError
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def default_api_factory(
    *,
    base_url: str | None,
    api_key: str,
    entity: str | None,
    timeout: float = DEFAULT_TIMEOUT,
    state_dir: Path | None = None,
) -> ApiFactory:
    """A factory for the real `wandb.Api`. The entity override spares the `GetDefaultEntity`
    lookup that `Api.run()` would otherwise make."""

    def factory() -> Any:
        configure_wandb_environment(state_dir)
        quiet_wandb_logs()
        import wandb  # heavy import, deferred until W&B is actually used

        overrides: dict[str, Any] = {}
        if base_url:
            overrides["base_url"] = base_url
        if entity:
            overrides["entity"] = entity
        return wandb.Api(overrides=overrides, api_key=api_key, timeout=int(max(timeout, 1)))

    return factory


class WandbClient:
    """Owns the `Api` and the worker thread. Shared by every `WandbSource` of a process.

    `call(fn, *args)` runs `fn(api, *args)` on the worker. Calls are serialised; a call that
    outlives `poll_timeout` is abandoned (the thread cannot be interrupted) and later calls fail
    fast with `SourceUnavailable` until it finishes, instead of queueing behind it.

    Once a call has found W&B unreachable, the next call asks the probe first and fails at once
    while W&B still does not answer: wandb-core would spend its whole retry budget (and the
    worker) on every poll of an outage, only to say the same."""

    def __init__(
        self,
        api_factory: ApiFactory,
        *,
        poll_timeout: float = DEFAULT_POLL_TIMEOUT,
        describe: str = "W&B",
        probe: Probe | None = None,
        credential: str = "",
    ):
        self._factory = api_factory
        self.probe = probe  # None: nothing to ask beside the wandb client (tests, the demo)
        self.credential = credential  # a fingerprint of the key, never the key
        self._api: Any = None
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="wandb"
        )
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._abandoned: asyncio.Future[Any] | None = None
        self._down = False  # the last call found W&B unreachable: probe before the next
        self.poll_timeout = poll_timeout
        self.describe = describe  # "W&B at <base url>", for messages
        self.runs: dict[str, Any] = {}  # path -> wandb Run, reloaded on each poll
        self.closed = False

    @classmethod
    def from_settings(
        cls,
        *,
        base_url: str | None,
        api_key: str | None,
        entity: str | None,
        timeout: float = DEFAULT_TIMEOUT,
        state_dir: Path | None = None,
        poll_timeout: float = DEFAULT_POLL_TIMEOUT,
    ) -> WandbClient:
        where = f"W&B at {base_url}" if base_url else "W&B"
        if not api_key:

            def missing() -> Any:
                raise SourceUnavailable(
                    "WANDB_API_KEY is not set: W&B runs cannot be polled", fatal=True
                )

            return cls(missing, poll_timeout=poll_timeout, describe=where)
        factory = default_api_factory(
            base_url=base_url, api_key=api_key, entity=entity, timeout=timeout, state_dir=state_dir
        )
        return cls(
            factory,
            poll_timeout=poll_timeout,
            describe=where,
            probe=http_probe(base_url, api_key),
            credential=hashlib.sha256(api_key.encode()).hexdigest()[:12],
        )

    def api(self) -> Any:
        """The Api; creates it on first use. Call only from the worker (inside `call`)."""
        if self._api is None:
            self._api = self._factory()
            log.info("connected to %s", self.describe)
        return self._api

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        if self.closed:
            raise RuntimeError("WandbClient is closed")
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:  # one lock per event loop
            self._lock, self._lock_loop = asyncio.Lock(), loop
        async with self._lock:
            if self._abandoned is not None:
                if not self._abandoned.done():
                    raise SourceUnavailable(
                        f"{self.describe}: an earlier request is still running", retry_after=60
                    )
                self._abandoned = None
            if self._down and (still := await self._still_down()) is not None:
                raise still
            future = loop.run_in_executor(self._executor, self._invoke, fn, args)
            try:
                result = await asyncio.wait_for(asyncio.shield(future), self.poll_timeout)
                self._down = False
                return result
            except TimeoutError:
                self._abandoned = future
                future.add_done_callback(_consume)
                raise SourceUnavailable(
                    f"{self.describe} did not answer within {self.poll_timeout:.0f} s",
                    retry_after=60,
                ) from None
            except asyncio.CancelledError:
                self._abandoned = future
                future.add_done_callback(_consume)
                raise
            except SourceUnavailable:
                raise
            except Exception as exc:
                raise await self.explain(exc) from None

    async def explain(self, exc: Exception) -> Exception:
        """What a failed W&B call means. wandb says "AuthenticationError" or "the service
        process is busy" for a refused connection, a timeout and a 5xx alike; the probe asks
        W&B directly: only a 401/403 is a wrong key, anything else that does not answer is an
        outage (retried with the normal backoff). W&B answering means the error is something
        else: returned as it was."""
        auth = type(exc).__name__ == "AuthenticationError"
        if self.probe is None:
            if auth:
                return SourceUnavailable(
                    f"{self.describe} rejected the API key (check WANDB_API_KEY): {exc}",
                    fatal=True,
                )
            return exc
        try:
            reach = await self.probe()
        except Exception as probe_exc:  # the probe itself broke: say what wandb said
            log.debug("W&B probe failed: %s", probe_exc)
            return exc
        if reach.rejected:
            return SourceUnavailable(
                f"{self.describe} rejected the API key (check WANDB_API_KEY): {reach.detail}",
                fatal=True,
            )
        if not reach.ok:
            self._down = True
            return SourceUnavailable(f"{self.describe} is unreachable ({reach.detail})")
        if auth:  # W&B takes the key now: it did not a moment ago, or it was briefly down
            return SourceUnavailable(f"{self.describe} could not verify the API key: {exc}")
        return exc

    async def _still_down(self) -> SourceUnavailable | None:
        """After an outage: the error to raise without calling wandb-core if the probe says W&B
        still does not answer, else None (the call goes ahead and finds out for itself)."""
        if self.probe is None:
            return None
        try:
            reach = await self.probe()
        except Exception as probe_exc:  # the probe itself broke: let wandb try
            log.debug("W&B probe failed: %s", probe_exc)
            return None
        if reach.ok or reach.rejected:
            self._down = False
            return None
        return SourceUnavailable(f"{self.describe} is unreachable ({reach.detail})")

    async def reachable(self) -> bool:
        """The cheap probe the poller uses while W&B backs off (False: no probe configured)."""
        if self.probe is None:
            return False
        ok = (await self.probe()).ok
        if ok:
            self._down = False
        return ok

    def _invoke(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        return fn(self.api(), *args)

    async def aclose(self, *, teardown: bool = False) -> None:
        """Stop the worker. With `teardown`, also stop the wandb-core process (wandb does this
        at interpreter exit anyway; do it only when no other `Api` of this process needs it)."""
        if self.closed:
            return
        self.closed = True
        if isinstance(self.probe, HttpProbe):
            await self.probe.aclose()
        if teardown and self._api is not None:
            loop = asyncio.get_running_loop()
            try:
                await asyncio.wait_for(loop.run_in_executor(self._executor, _teardown), 10)
            except Exception:  # best effort at shutdown
                log.warning("wandb-core did not shut down cleanly", exc_info=True)
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._api = None
        self.runs.clear()


def _teardown() -> None:
    import wandb

    wandb.teardown()


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.debug("abandoned W&B request failed: %s", future.exception())
