"""The GitHub source: one repository polled as a whole, serving every run configured on it.

Each poll makes two conditional requests when nothing changed (repository issues and issue
comments, both `sort=updated&direction=asc&since=<cursor>`), both answered 304. The cursor
stays put while the window after it is small, so the request URL repeats and its ETag stays
valid; when the window grows past `KEEP_WINDOW` items, or spans pages, the cursor moves to the
newest item and one more request learns the new URL's ETag. Every page is committed in one
transaction with the cursor (and ETag) it justifies, so a crash re-fetches and loses nothing.

Tracking (per run): listed issues, labelled threads and keyword matches are the run's own
threads; threads they mention, or that mention them, follow (one hop). The mention graph covers
the whole repository, so a thread that becomes tracked later pulls in earlier neighbours, and
its earlier comments are backfilled from `/issues/{n}/comments`. PR reviews with text are read
when a tracked PR's `updated_at` moves.

The jobs live in their own modules: the listings in `github_listing` (`RepoLister`), tracking,
the reference graph and the events in `github_tracking` (`ThreadTracker`), backfilled comments
and reviews in `github_reviews` (`Conversations`); this module runs a poll and takes the
threads the webhook pushes."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import httpx

from bot.config.settings import RunConfig, Settings
from bot.models import Event
from bot.sources.base import LiveContext, PollResult
from bot.sources.github_http import GitHubHTTP, Sleep
from bot.sources.github_listing import RepoLister
from bot.sources.github_reviews import Conversations
from bot.sources.github_threads import Pushed, run_fingerprint
from bot.sources.github_tracking import ThreadTracker
from bot.store import Store

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://api.github.com"
PER_PAGE = 100
KEEP_WINDOW = 50  # items after the cursor we re-read rather than move the cursor


class GitHubSource:
    """Polls one repository for every run configured on it."""

    name = "github"

    def __init__(
        self,
        store: Store,
        client: httpx.AsyncClient,
        settings: Settings,
        runs: Sequence[RunConfig],
        *,
        timeout: float = 30.0,
        retries: int = 3,
        retry_base: float = 0.5,
        retry_cap: float = 4.0,
        sleep: Sleep = asyncio.sleep,
        per_page: int = PER_PAGE,
        keep_window: int = KEEP_WINDOW,
    ):
        repos = {run.github_repo for run in runs}
        if len(repos) != 1 or None in repos:
            raise ValueError(
                f"GitHubSource serves exactly one repository, got {sorted(map(str, repos))}"
            )
        self.repo: str = str(next(iter(repos)))
        self.store = store
        self.runs = list(runs)
        self.per_page = per_page
        self.keep_window = min(keep_window, per_page)
        self.http = GitHubHTTP(
            client,
            base_url=settings.github_api_url or DEFAULT_API_URL,
            repo=self.repo,
            token=settings.github_token,
            timeout=timeout,
            retries=retries,
            retry_base=retry_base,
            retry_cap=retry_cap,
            sleep=sleep,
        )
        self.threads = ThreadTracker(store, self.http, self.repo, self.runs)
        self.listings = RepoLister(
            self.threads, per_page=self.per_page, keep_window=self.keep_window
        )
        self.conversations = Conversations(self.threads, per_page=self.per_page)
        # A poll and a pushed delivery both read the tracking state, change it and write it
        # back: one at a time, so neither overwrites what the other learned.
        self._state_lock = asyncio.Lock()

    @property
    def key(self) -> str:
        return f"github:{self.repo}"

    @property
    def credential(self) -> str:
        """A fingerprint of GITHUB_TOKEN (a new token tries at once, whatever the backoff)."""
        token = self.http.token_value
        return hashlib.sha256(token.encode()).hexdigest()[:12] if token else ""

    async def probe(self) -> bool:
        """Whether GitHub answers now: `GET /rate_limit`, which costs no rate limit (the poller
        asks while this source backs off from an outage)."""
        return await self.http.answers()

    @property
    def run_slugs(self) -> list[str]:
        return [run.slug for run in self.runs]

    # --- the poll ------------------------------------------------------------------------------

    async def poll(self, now: datetime) -> PollResult:
        async with self._state_lock:
            return await self._poll()

    async def _poll(self) -> PollResult:
        requests, not_modified = self.http.requests, self.http.not_modified
        await self.threads.record_runs()
        poll = await self.threads.load()
        rescan = [
            run
            for run in self.runs
            if poll.tracking[run.slug].fingerprint != run_fingerprint(run) and poll.listed_before
        ]
        if rescan:
            # The tracking rules changed (or a run is new): read every issue once more so
            # labels and keywords are matched against the whole history.
            log.info(
                "GitHub %s: tracking rules changed for %s; re-scanning issues",
                self.repo,
                ", ".join(run.slug for run in rescan),
            )
            for run in rescan:
                poll.tracking[run.slug].primary = set()
            await self.listings.read(poll, "issues", rescan=True)
        await self.listings.read(poll, "issues")
        if any(poll.tracking[run.slug].fingerprint != run_fingerprint(run) for run in self.runs):
            for run in self.runs:
                poll.tracking[run.slug].fingerprint = run_fingerprint(run)
            await self.threads.commit(poll, [])
        await self.listings.read(poll, "comments")
        await self.conversations.backfill(poll)
        await self.conversations.reviews(poll)
        self.http.secondary_strikes = 0
        return PollResult(
            events=poll.changed,
            requests=self.http.requests - requests,
            not_modified=self.http.not_modified - not_modified,
        )

    async def ingest(self, pushes: Sequence[Pushed]) -> int:
        """Threads, comments and reviews pushed by GitHub's webhook (`bot.hooks.github`),
        filtered and stored exactly as a poll reads them: the same tracking rules and mention
        graph, the same events under the same keys (so a poll reading them again changes
        nothing). No cursor moves: the next poll still reads everything after its own cursor.
        Returns the number of events written."""
        async with self._state_lock:
            await self.threads.record_runs()
            poll = await self.threads.load()
            events: list[Event] = []
            for push in pushes:  # in the order GitHub sent them: a later version wins
                events += await self.threads.issue_page(poll, [push.issue])
                if push.comment is not None:
                    events += await self.threads.comment_page(poll, [push.comment])
                if push.review is not None:
                    events += await self.conversations.pushed_review(poll, push.issue, push.review)
            # GitHub does not promise to deliver in order: of two versions, the newer is kept.
            newest: dict[tuple[str, str], Event] = {}
            for event in events:
                key = (event.run_slug, event.external_id)
                seen = newest.get(key)
                if seen is None or (event.updated_at or event.at) >= (seen.updated_at or seen.at):
                    newest[key] = event
            await self.threads.commit(poll, list(newest.values()))  # one transaction for the batch
            # A thread tracked from now on (labelled, mentioned) gets its earlier comments now,
            # read from the thread itself. (Not left to the poll's listing: its cursor window
            # may hold comments dropped while the thread was untracked, which a 304 would hide
            # once the thread is no longer pending.)
            await self.conversations.backfill(poll)
            return poll.changed


def build_github_sources(
    store: Store,
    client: httpx.AsyncClient,
    settings: Settings,
    runs: Sequence[RunConfig],
    **options: Any,
) -> list[GitHubSource]:
    """One source per repository, serving every run that names it (in runs-file order)."""
    by_repo: dict[str, list[RunConfig]] = {}
    for run in runs:
        if run.github_repo:
            by_repo.setdefault(run.github_repo, []).append(run)
    return [GitHubSource(store, client, settings, group, **options) for group in by_repo.values()]


async def live_sources(context: LiveContext, runs: Sequence[RunConfig]) -> list[GitHubSource]:
    """The registration's builder (`SourceSpec.build`): one source per repository, sharing the
    process's HTTP client."""
    client = await context.http_client()
    return build_github_sources(context.store, client, context.settings, runs)
