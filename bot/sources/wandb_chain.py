"""The chain of W&B runs one tracked run is (steps 1 and 2 of `bot.sources.wandb`): the listed
runs loaded, new runs matching `wandb_run_pattern` discovered, and each member read with
`bot.sources.wandb_history`. Runs on the W&B worker thread; plain data out (`ChainFetch`)."""

from __future__ import annotations

import logging
import re
from typing import Any

from bot.config.settings import RunConfig
from bot.sources.base import SourceUnavailable
from bot.sources.wandb_client import WandbClient
from bot.sources.wandb_cursors import ChainCursor, HistoryCursor
from bot.sources.wandb_history import (
    ChainFetch,
    HistoryReader,
    MemberFetch,
    attr,
)

log = logging.getLogger(__name__)

DISCOVERY_PAGE = 100


class _RunMissing(Exception):
    pass


class ChainFetcher:
    """Loads the chain's members and reads what each logged since its cursor."""

    def __init__(self, key: str, run: RunConfig, client: WandbClient, history: HistoryReader):
        self.key = key  # the source's key, for the log
        self.run = run
        self.slug = run.slug
        self.client = client
        self.history = history
        self.pattern = re.compile(run.wandb_run_pattern) if run.wandb_run_pattern else None
        entity, project, _ = run.wandb_runs[0].split("/")
        self.entity, self.project = entity, project

    def ordered_members(self, chain: ChainCursor) -> list[str]:
        """Listed runs in listed order, then discovered ones by creation time."""
        found = sorted(chain.discovered, key=lambda p: (chain.discovered.get(p) or "", p))
        return self.run.wandb_chain(found)

    def fetch(self, api: Any, chain: ChainCursor, cursors: dict[str, HistoryCursor]) -> ChainFetch:
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
        for path in self.ordered_members(chain):
            if path in runs:
                continue
            try:
                runs[path] = self._load_run(api, path, listed=False)
            except _RunMissing:
                log.warning("%s: W&B run %s has disappeared; skipping it", self.key, path)
            requests += 1
        members: list[MemberFetch] = []
        for path in self.ordered_members(chain):
            if path not in runs:
                continue
            cursor = cursors.get(path) or HistoryCursor()
            member, used = self.history.read_member(runs[path], path, cursor)
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
        since = chain.since or attr(first, "createdAt")
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
            created = attr(run, "createdAt")
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
