"""What every live source looks like to the poller."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


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
