"""Which threads of a repository each run tracks, and the events they make (the listing and
tracking job of `bot.sources.github`): issue and comment pages read by a poll or pushed by the
webhook become description, state, comment and review events; listed issues, labels and
keywords seed a run's threads, and the reference graph (`RefGraph`, stored with the tracking)
pulls in the threads they mention or that mention them.

Cursors (table `source_cursors`, source "github"): `<repo>:refs` the graph,
`<repo>:tracked:<slug>` a run's tracking, `<repo>:issues` and `<repo>:comments` the listings,
`<repo>:reviews:<n>` a pull request's reviews."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.config.settings import RunConfig
from bot.core.timeutil import parse_time
from bot.enrich.rules import reports_a_fault
from bot.models import Event, GithubComment, RunInfo
from bot.sources.github_http import GitHubHTTP
from bot.sources.github_threads import (
    SOURCE,
    RefGraph,
    Tracking,
    cap,
    comment_event,
    compute_tracked,
    find_refs,
    is_bot,
    is_bot_pull,
    is_own,
    is_seed,
    issue_event,
    issue_number,
    state_changed_at,
    state_event,
    thread_context,
    thread_context_of,
    thread_state,
)
from bot.store import Store

log = logging.getLogger(__name__)

_MISSING = object()


@dataclass(slots=True)
class PollState:
    """What one poll (or one pushed batch) knows beyond the store."""

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


class ThreadTracker:
    """The tracked threads of every run on one repository, and their events."""

    def __init__(self, store: Store, http: GitHubHTTP, repo: str, runs: Sequence[RunConfig]):
        self.store = store
        self.http = http
        self.repo = repo
        self.runs = list(runs)
        self._runs_recorded = False

    def listing_key(self, kind: str) -> str:
        return f"{self.repo}:{kind}"

    def _tracking_key(self, slug: str) -> str:
        return f"{self.repo}:tracked:{slug}"

    def _graph_key(self) -> str:
        return f"{self.repo}:refs"

    def reviews_key(self, number: int) -> str:
        return f"{self.repo}:reviews:{number}"

    async def record_runs(self) -> None:
        """Events reference `runs`; make sure each run has a row (the caller's row wins)."""
        if self._runs_recorded:
            return
        for run in self.runs:
            if await self.store.runs.get(run.slug) is None:
                await self.store.runs.upsert(RunInfo.from_config(run))
        self._runs_recorded = True

    async def load(self) -> PollState:
        graph_text, _ = await self.store.cursors.get(SOURCE, self._graph_key())
        tracking = {}
        for run in self.runs:
            text, _ = await self.store.cursors.get(SOURCE, self._tracking_key(run.slug))
            tracking[run.slug] = Tracking.from_json(text)
        since, etag = await self.store.cursors.get(SOURCE, self.listing_key("issues"))
        return PollState(
            graph=RefGraph.from_json(graph_text),
            tracking=tracking,
            issues_since=parse_time(since),
            listed_before=since is not None or etag is not None,
        )

    async def commit(
        self,
        poll: PollState,
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

    async def issue_page(self, poll: PollState, items: list[dict[str, Any]]) -> list[Event]:
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
                if is_seed(run, item):
                    tracking.primary.add(int(item["number"]))
            newly = await self.retrack(poll, run)
            on_page = set()
            for item in numbers:
                number = int(item["number"])
                if number in tracking.tracked:
                    on_page.add(number)
                    events += await self._issue_events(poll, run, item)
            for number in sorted(newly - on_page):
                events += await self.ensure_issue(poll, run, number)
        return events

    def _learn_issue(self, poll: PollState, item: dict[str, Any]) -> None:
        number = int(item["number"])
        bot = is_bot(item.get("user"))
        item = dict(item, body=cap(item.get("body")))
        poll.seen[number] = item
        poll.states[number] = thread_state(item)
        if is_bot_pull(item):
            poll.graph.bot_threads.add(number)
        else:
            poll.graph.bot_threads.discard(number)  # a graph stored before bots' issues counted
        text = f"{item.get('title') or ''}\n{item.get('body') or ''}"
        poll.graph.add(number, find_refs(text, self.repo), by_bot=bot)

    async def comment_page(self, poll: PollState, items: list[dict[str, Any]]) -> list[Event]:
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
            newly = await self.retrack(poll, run)
            for number in sorted(newly):
                events += await self.ensure_issue(poll, run, number)
            tracked = poll.tracking[run.slug].tracked
            for number, comment in comments:
                if number in tracked:
                    state = await self.state_of(poll, run, number)
                    context = await self.context_of(poll, run, number)
                    event = comment_event(run.slug, self.repo, number, comment, state, context)
                    if self.wanted(run, comment, event):
                        events.append(event)
        return events

    @staticmethod
    def wanted(run: RunConfig, item: dict[str, Any], event: Event) -> bool:
        """Whether a thread's comment or review (`item`, read as `event`) is stored. Never our
        own ops-log comment read back. A bot's (CI results, stale notices, previews) only when
        the run keeps bots, or when it reports a fault of the run now: a run monitor posting
        "checkpoint save failed" into the run's log issue is an alert, and left out it is lost."""
        if is_own(item):
            return False
        if run.github_include_bots or not is_bot(item.get("user")):
            return True
        return reports_a_fault(event)

    async def retrack(self, poll: PollState, run: RunConfig) -> set[int]:
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

    async def _stored_state(self, poll: PollState, slug: str, number: int) -> object:
        key = (slug, number)
        if key not in poll.known:
            event = await self.store.events.get_by_external(slug, SOURCE, f"issue:{number}")
            if event is None:
                return _MISSING
            poll.known[key] = event.state
            poll.contexts[key] = thread_context_of(event)
        return poll.known[key]

    async def state_of(self, poll: PollState, run: RunConfig, number: int) -> str | None:
        if number in poll.states:
            return poll.states[number]
        stored = await self._stored_state(poll, run.slug, number)
        return None if stored is _MISSING else stored  # type: ignore[return-value]

    async def context_of(self, poll: PollState, run: RunConfig, number: int) -> GithubComment:
        """The thread's title, prefix, labels and kind, recorded on its comments and reviews."""
        if number in poll.seen:
            return thread_context(poll.seen[number])
        await self._stored_state(poll, run.slug, number)
        return poll.contexts.get((run.slug, number), GithubComment())

    async def _issue_events(
        self, poll: PollState, run: RunConfig, item: dict[str, Any]
    ) -> list[Event]:
        """The description event, plus a state event when the state changed since stored."""
        number = int(item["number"])
        if is_bot_pull(item) and not (run.github_include_bots or number in run.github_issues):
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

    async def ensure_issue(self, poll: PollState, run: RunConfig, number: int) -> list[Event]:
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
        for other in sorted(await self.retrack(poll, run)):  # its own mentions may add threads
            events += await self.ensure_issue(poll, run, other)
        return events
