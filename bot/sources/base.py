"""What every live source looks like to the poller."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    import httpx

    from bot.config.runsfile import RunConfig
    from bot.config.settings import Settings
    from bot.store import Store

T = TypeVar("T")


@dataclass(slots=True)
class PollResult:
    """What one poll of one source did. `requests` counts HTTP/GraphQL calls made."""

    events: int = 0  # events inserted or updated
    points: int = 0  # metric points inserted
    requests: int = 0
    not_modified: int = 0  # requests answered 304


class SourceUnavailable(Exception):
    """A source failed in a way worth one clear log line (bad token, unknown repository).
    `retry_after` (seconds), when set, is the earliest sensible retry."""

    def __init__(self, message: str, *, retry_after: float | None = None, fatal: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.fatal = fatal  # configuration problem: retrying soon will not help


class Source(Protocol):
    name: str  # "github" | "wandb" | "replay"

    @property
    def key(self) -> str:
        """Backoff scope, e.g. "github:owner/repo" or "wandb:hero"."""
        ...

    @property
    def run_slugs(self) -> list[str]:
        """Runs whose freshness this source vouches for when a poll succeeds."""
        ...

    async def poll(self, now: datetime) -> PollResult:
        """Fetch what is new, commit it to the store, then advance cursors. Raise on failure."""
        ...


class LiveContext(Protocol):
    """What a source's builder (its registration's `SourceSpec.build`) builds with: the store,
    the settings, and clients that outlive one build (the runs file is reloaded, the sources
    rebuilt; a client a running poll still uses is never torn down by a rebuild)."""

    store: Store
    settings: Settings

    async def http_client(self) -> httpx.AsyncClient:
        """The process's one HTTP client (opened on first need)."""
        ...

    async def shared(self, name: str, open: Callable[[], AbstractAsyncContextManager[T]]) -> T:
        """The client called `name`, entered from `open()` on first need and exited when the
        process's sources are closed."""
        ...


class BuildSources(Protocol):
    """A registration's `build`: the live sources for the runs that use the source (its
    `configured`), never called with none."""

    async def __call__(
        self, context: LiveContext, runs: Sequence[RunConfig]
    ) -> Sequence[Source]: ...
