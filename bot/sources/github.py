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
when a tracked PR's `updated_at` moves."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from bot.models import Event, GithubComment, RunInfo
from bot.settings import RunConfig, Settings
from bot.sources.base import LiveContext, PollResult
from bot.sources.github_http import GitHubHTTP, Page, Sleep
from bot.sources.github_threads import (
    SOURCE,
    Pushed,
    RefGraph,
    Tracking,
    cap,
    comment_event,
    compute_tracked,
    find_refs,
    is_bot,
    is_own,
    is_seed,
    issue_event,
    issue_number,
    review_event,
    run_fingerprint,
    state_changed_at,
    state_event,
    thread_context,
    thread_context_of,
    thread_state,
)
from bot.store import Store
from bot.timeutil import parse_time

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://api.github.com"
PER_PAGE = 100
KEEP_WINDOW = 50  # items after the cursor we re-read rather than move the cursor
MAX_ROUNDS = 3  # listing rounds per poll (a moved cursor costs one round to learn its ETag)
MAX_BACKFILL = 200  # threads backfilled per poll; the rest wait for the next one

_MISSING = object()


@dataclass(slots=True)
class _Poll:
    """What one poll knows beyond the store."""

    graph: RefGraph
    tracking: dict[str, Tracking]
    issues_since: datetime | None  # the issues cursor when the poll began
    listed_before: bool  # the issues listing has been read (and committed) at least once
    seen: dict[int, dict[str, Any]] = field(default_factory=dict)  # issues read this poll
    states: dict[int, str] = field(default_factory=dict)  # thread number -> state
    known: dict[tuple[str, int], str | None] = field(default_factory=dict)  # stored issue state
    contexts: dict[tuple[str, int], GithubComment] = field(default_factory=dict)  # stored threads
    reviews: dict[int, str] = field(default_factory=dict)  # tracked PR -> updated_at to reach
    changed: int = 0


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
        self._runs_recorded = False
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

    # --- cursor keys ---------------------------------------------------------------------------

    def _listing_key(self, kind: str) -> str:
        return f"{self.repo}:{kind}"

    def _tracking_key(self, slug: str) -> str:
        return f"{self.repo}:tracked:{slug}"

    def _graph_key(self) -> str:
        return f"{self.repo}:refs"

    def _reviews_key(self, number: int) -> str:
        return f"{self.repo}:reviews:{number}"

    # --- the poll ------------------------------------------------------------------------------

    async def poll(self, now: datetime) -> PollResult:
        async with self._state_lock:
            return await self._poll()

    async def _poll(self) -> PollResult:
        requests, not_modified = self.http.requests, self.http.not_modified
        await self._record_runs()
        poll = await self._load()
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
            await self._listing(poll, "issues", rescan=True)
        await self._listing(poll, "issues")
        if any(poll.tracking[run.slug].fingerprint != run_fingerprint(run) for run in self.runs):
            for run in self.runs:
                poll.tracking[run.slug].fingerprint = run_fingerprint(run)
            await self._commit(poll, [])
        await self._listing(poll, "comments")
        await self._backfill(poll)
        await self._reviews(poll)
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
            await self._record_runs()
            poll = await self._load()
            events: list[Event] = []
            for push in pushes:  # in the order GitHub sent them: a later version wins
                events += await self._issue_page(poll, [push.issue])
                if push.comment is not None:
                    events += await self._comment_page(poll, [push.comment])
                if push.review is not None:
                    events += await self._pushed_review(poll, push.issue, push.review)
            # GitHub does not promise to deliver in order: of two versions, the newer is kept.
            newest: dict[tuple[str, str], Event] = {}
            for event in events:
                key = (event.run_slug, event.external_id)
                seen = newest.get(key)
                if seen is None or (event.updated_at or event.at) >= (seen.updated_at or seen.at):
                    newest[key] = event
            await self._commit(poll, list(newest.values()))  # one transaction for the batch
            # A thread tracked from now on (labelled, mentioned) gets its earlier comments now,
            # read from the thread itself. (Not left to the poll's listing: its cursor window
            # may hold comments dropped while the thread was untracked, which a 304 would hide
            # once the thread is no longer pending.)
            await self._backfill(poll)
            return poll.changed

    async def _pushed_review(
        self, poll: _Poll, issue: dict[str, Any], review: dict[str, Any]
    ) -> list[Event]:
        """A review as `_reviews` reads it: with text, on a tracked pull request."""
        number = int(issue["number"])
        if not (review.get("submitted_at") and (review.get("body") or "").strip()):
            return []
        return [
            review_event(
                run.slug,
                self.repo,
                number,
                review,
                await self._state_of(poll, run, number),
                await self._context_of(poll, run, number),
            )
            for run in self.runs
            if number in poll.tracking[run.slug].tracked and self._wanted(run, review)
        ]

    async def _record_runs(self) -> None:
        """Events reference `runs`; make sure each run has a row (the caller's row wins)."""
        if self._runs_recorded:
            return
        for run in self.runs:
            if await self.store.runs.get(run.slug) is None:
                await self.store.runs.upsert(RunInfo.from_config(run))
        self._runs_recorded = True

    async def _load(self) -> _Poll:
        graph_text, _ = await self.store.cursors.get(SOURCE, self._graph_key())
        tracking = {}
        for run in self.runs:
            text, _ = await self.store.cursors.get(SOURCE, self._tracking_key(run.slug))
            tracking[run.slug] = Tracking.from_json(text)
        since, etag = await self.store.cursors.get(SOURCE, self._listing_key("issues"))
        return _Poll(
            graph=RefGraph.from_json(graph_text),
            tracking=tracking,
            issues_since=parse_time(since),
            listed_before=since is not None or etag is not None,
        )

    async def _commit(
        self,
        poll: _Poll,
        events: list[Event],
        cursor: tuple[str, str | None, str | None] | None = None,
    ) -> None:
        """Events, the mention graph, tracking and (optionally) one cursor, atomically."""
        unique: dict[tuple[str, str], Event] = {}
        for event in events:
            unique[(event.run_slug, event.external_id)] = event
        async with self.store.transaction():
            result = await self.store.events.upsert_many(list(unique.values()))
            await self.store.cursors.set(SOURCE, self._graph_key(), poll.graph.to_json())
            for slug, tracking in poll.tracking.items():
                await self.store.cursors.set(SOURCE, self._tracking_key(slug), tracking.to_json())
            if cursor is not None:
                key, value, etag = cursor
                await self.store.cursors.set(SOURCE, key, value, etag)
        poll.changed += len(result.changed)

    # --- repository listings -------------------------------------------------------------------

    async def _listing(self, poll: _Poll, kind: str, *, rescan: bool = False) -> None:
        """Read `issues` or `comments` since the cursor, page by page, committing each page."""
        key = self._listing_key(kind)
        cursor, etag = (None, None) if rescan else await self.store.cursors.get(SOURCE, key)
        if kind == "comments" and self._covered_by_listing(poll, parse_time(cursor)):
            etag = None  # the window must be read again now that those threads are tracked
        path = "issues" if kind == "issues" else "issues/comments"
        for _round in range(MAX_ROUNDS):
            query = {"state": "all"} if kind == "issues" else {}
            query.update(sort="updated", direction="asc", per_page=str(self.per_page))
            if cursor:
                query["since"] = cursor
            params: dict[str, str] | None = query
            url: str | None = self.http.url(path)
            send_etag = etag
            page_count = 0
            seen_ids: set[Any] = set()
            churn = False
            first_max: str | None = None
            new_cursor = cursor
            settled = False
            while url is not None:
                page = await self.http.get(url, params, etag=send_etag, what=kind)
                if page.not_modified:
                    return
                page_count += 1
                ids = {item.get("id") for item in page.items}
                churn = churn or bool(ids & seen_ids)  # an item moved under our pagination
                seen_ids |= ids
                page_max = _latest(item.get("updated_at") for item in page.items)
                if page_count == 1:
                    first_max = page_max
                if kind == "issues":
                    events = await self._issue_page(poll, page.items)
                else:
                    events = await self._comment_page(poll, page.items)
                write: tuple[str, str | None, str | None] | None = None
                single = page_count == 1 and page.next_url is None
                if rescan:
                    write = None
                elif (
                    single
                    and len(page.items) < self.per_page
                    and (len(page.items) < self.keep_window or not _after(page_max, cursor))
                ):
                    write = (key, cursor, page.etag)  # same URL next time: a 304 when idle
                    settled = True
                else:
                    # Past items are safe to skip only up to where no item can have shifted.
                    target = first_max if churn else _latest([new_cursor, page_max])
                    new_cursor = _latest([cursor, target])
                    write = (key, new_cursor, None)
                await self._commit(poll, events, write)
                url, params, send_etag = page.next_url, None, None
            if rescan or settled or churn or new_cursor == cursor:
                return
            cursor, etag = new_cursor, None  # one more round learns the new URL's ETag

    def _covered_by_listing(self, poll: _Poll, since: datetime | None) -> bool:
        """A pending thread created after the comments cursor gets all its comments from the
        repository listing that follows, so it needs no backfill request. True if any was
        covered (the listing must then be read in full, not answered 304)."""
        covered = False
        for tracking in poll.tracking.values():
            for number in list(tracking.pending):
                item = poll.seen.get(number)
                created = parse_time(item.get("created_at")) if item else None
                if since is None or (created is not None and created >= since):
                    tracking.pending.discard(number)
                    covered = True
        return covered

    async def _issue_page(self, poll: _Poll, items: list[dict[str, Any]]) -> list[Event]:
        numbers = []
        for item in items:
            if not isinstance(item.get("number"), int):
                continue
            self._learn_issue(poll, item)
            numbers.append(item)
        events: list[Event] = []
        for run in self.runs:
            tracking = poll.tracking[run.slug]
            for item in numbers:
                if is_seed(run, item, is_bot(item.get("user"))):
                    tracking.primary.add(int(item["number"]))
            newly = await self._retrack(poll, run)
            on_page = set()
            for item in numbers:
                number = int(item["number"])
                if number in tracking.tracked:
                    on_page.add(number)
                    events += await self._issue_events(poll, run, item)
            for number in sorted(newly - on_page):
                events += await self._ensure_issue(poll, run, number)
        return events

    def _learn_issue(self, poll: _Poll, item: dict[str, Any]) -> None:
        number = int(item["number"])
        bot = is_bot(item.get("user"))
        item = dict(item, body=cap(item.get("body")))
        poll.seen[number] = item
        poll.states[number] = thread_state(item)
        if bot:
            poll.graph.bot_threads.add(number)
        text = f"{item.get('title') or ''}\n{item.get('body') or ''}"
        poll.graph.add(number, find_refs(text, self.repo), by_bot=bot)

    async def _comment_page(self, poll: _Poll, items: list[dict[str, Any]]) -> list[Event]:
        comments: list[tuple[int, dict[str, Any]]] = []
        for comment in items:
            number = issue_number(comment.get("issue_url"))
            if number is None or "id" not in comment:
                continue
            comments.append((number, comment))
            poll.graph.add(
                number,
                find_refs(cap(comment.get("body")), self.repo),
                by_bot=is_bot(comment.get("user")),
            )
        events: list[Event] = []
        for run in self.runs:
            newly = await self._retrack(poll, run)
            for number in sorted(newly):
                events += await self._ensure_issue(poll, run, number)
            tracked = poll.tracking[run.slug].tracked
            for number, comment in comments:
                if number in tracked and self._wanted(run, comment):
                    state = await self._state_of(poll, run, number)
                    context = await self._context_of(poll, run, number)
                    events.append(
                        comment_event(run.slug, self.repo, number, comment, state, context)
                    )
        return events

    @staticmethod
    def _wanted(run: RunConfig, item: dict[str, Any]) -> bool:
        if is_own(item):
            return False  # our own ops-log comment, read back
        return run.github_include_bots or not is_bot(item.get("user"))

    async def _retrack(self, poll: _Poll, run: RunConfig) -> set[int]:
        """Recompute the run's tracked set; threads tracked for the first time (no stored
        description yet) are queued for a comment backfill. Returns the newly tracked ones."""
        tracking = poll.tracking[run.slug]
        others = {
            number
            for other in self.runs
            if other.slug != run.slug
            for number in (*poll.tracking[other.slug].primary, *other.github_issues)
        }
        computed = compute_tracked(run, tracking.primary, poll.graph, others)
        newly = computed - tracking.tracked
        tracking.tracked |= computed
        for number in newly:
            if await self._stored_state(poll, run.slug, number) is _MISSING:
                tracking.pending.add(number)
        return newly

    async def _stored_state(self, poll: _Poll, slug: str, number: int) -> object:
        key = (slug, number)
        if key not in poll.known:
            event = await self.store.events.get_by_external(slug, SOURCE, f"issue:{number}")
            if event is None:
                return _MISSING
            poll.known[key] = event.state
            poll.contexts[key] = thread_context_of(event)
        return poll.known[key]

    async def _state_of(self, poll: _Poll, run: RunConfig, number: int) -> str | None:
        if number in poll.states:
            return poll.states[number]
        stored = await self._stored_state(poll, run.slug, number)
        return None if stored is _MISSING else stored  # type: ignore[return-value]

    async def _context_of(self, poll: _Poll, run: RunConfig, number: int) -> GithubComment:
        """The thread's title, prefix, labels and kind, recorded on its comments and reviews."""
        if number in poll.seen:
            return thread_context(poll.seen[number])
        await self._stored_state(poll, run.slug, number)
        return poll.contexts.get((run.slug, number), GithubComment())

    async def _issue_events(self, poll: _Poll, run: RunConfig, item: dict[str, Any]) -> list[Event]:
        """The description event, plus a state event when the state changed since stored."""
        number = int(item["number"])
        if is_bot(item.get("user")) and not (
            run.github_include_bots or number in run.github_issues
        ):
            return []
        event = issue_event(run.slug, self.repo, item)
        events = [event]
        before = await self._stored_state(poll, run.slug, number)
        state = event.state or "open"
        if before is _MISSING:
            # First sighting: an already-closed thread is history, unless it closed since the
            # last poll began (then the close is news).
            changed_at = parse_time(state_changed_at(item, state))
            if (
                state != "open"
                and poll.issues_since is not None
                and changed_at is not None
                and changed_at > poll.issues_since
            ):
                events.append(state_event(run.slug, self.repo, item, state))
        elif before != state:
            events.append(state_event(run.slug, self.repo, item, state))
        poll.known[(run.slug, number)] = state
        if item.get("pull_request") is not None and item.get("updated_at"):
            poll.reviews[number] = str(item["updated_at"])
        return events

    async def _ensure_issue(self, poll: _Poll, run: RunConfig, number: int) -> list[Event]:
        """The description of a thread that just became tracked, read once if not seen."""
        if await self._stored_state(poll, run.slug, number) is not _MISSING:
            return []
        item = poll.seen.get(number)
        if item is None:
            page = await self.http.get(
                self.http.url(f"issues/{number}"), what=f"issue #{number}", thread_level=True
            )
            if page.missing or not page.items:
                log.info("GitHub %s: #%d is referenced but does not exist", self.repo, number)
                poll.tracking[run.slug].pending.discard(number)
                return []
            item = page.items[0]
            self._learn_issue(poll, item)
        events = await self._issue_events(poll, run, item)
        for other in sorted(await self._retrack(poll, run)):  # its own mentions may add threads
            events += await self._ensure_issue(poll, run, other)
        return events

    # --- backfill and reviews ------------------------------------------------------------------

    async def _backfill(self, poll: _Poll) -> None:
        """Earlier comments of threads that became tracked after they were written."""
        done = 0
        while done < MAX_BACKFILL:
            todo = sorted(set().union(*(t.pending for t in poll.tracking.values())))
            if not todo:
                return
            number = todo[0]
            done += 1
            comments = await self._fetch_all(
                self.http.url(f"issues/{number}/comments"), f"comments of #{number}"
            )
            for comment in comments:
                poll.graph.add(
                    number,
                    find_refs(cap(comment.get("body")), self.repo),
                    by_bot=is_bot(comment.get("user")),
                )
            events: list[Event] = []
            for run in self.runs:
                tracking = poll.tracking[run.slug]
                if number in tracking.pending:
                    events += await self._ensure_issue(poll, run, number)
                    state = await self._state_of(poll, run, number)
                    context = await self._context_of(poll, run, number)
                    events += [
                        comment_event(run.slug, self.repo, number, comment, state, context)
                        for comment in comments
                        if "id" in comment and self._wanted(run, comment)
                    ]
                    tracking.pending.discard(number)
                for other in sorted(await self._retrack(poll, run)):
                    events += await self._ensure_issue(poll, run, other)
            await self._commit(poll, events)

    async def _fetch_all(self, url: str, what: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params: dict[str, str] | None = {"per_page": str(self.per_page)}
        next_url: str | None = url
        while next_url is not None:
            page = await self.http.get(next_url, params, what=what, thread_level=True)
            if page.missing:
                return items
            items += page.items
            next_url, params = page.next_url, None
        return items

    async def _reviews(self, poll: _Poll) -> None:
        """Reviews with text, for tracked PRs whose `updated_at` moved since last read."""
        for number, updated_at in sorted(poll.reviews.items()):
            runs = [run for run in self.runs if number in poll.tracking[run.slug].tracked]
            if not runs:
                continue
            key = self._reviews_key(number)
            seen_at, etag = await self.store.cursors.get(SOURCE, key)
            if seen_at is not None and not _after(updated_at, seen_at):
                continue
            url: str | None = self.http.url(f"pulls/{number}/reviews")
            params: dict[str, str] | None = {"per_page": str(self.per_page)}
            reviews: list[dict[str, Any]] = []
            first: Page | None = None
            while url is not None:
                page = await self.http.get(
                    url,
                    params,
                    etag=etag if first is None else None,
                    what=f"reviews of #{number}",
                    thread_level=True,
                )
                first = first or page
                if page.not_modified or page.missing:
                    break
                reviews += page.items
                url, params = page.next_url, None
            assert first is not None
            if first.missing:
                await self._commit(poll, [], (key, updated_at, None))
                continue
            single = first.next_url is None and not first.not_modified
            new_etag = first.etag if (first.not_modified or single) else None
            events = [
                review_event(
                    run.slug,
                    self.repo,
                    number,
                    review,
                    await self._state_of(poll, run, number),
                    await self._context_of(poll, run, number),
                )
                for run in runs
                for review in reviews
                if "id" in review
                and review.get("submitted_at")
                and (review.get("body") or "").strip()
                and self._wanted(run, review)
            ]
            await self._commit(poll, events, (key, updated_at, new_etag))


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


def _after(value: str | None, than: str | None) -> bool:
    """Is GitHub timestamp `value` later than `than` (None is the beginning of time)?"""
    left, right = parse_time(value), parse_time(than)
    if left is None:
        return False
    return right is None or left > right


def _latest(values: Any) -> str | None:
    best: str | None = None
    for value in values:
        if value and (best is None or _after(value, best)):
            best = value
    return best
