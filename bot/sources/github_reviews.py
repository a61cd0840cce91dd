"""The comments and reviews of tracked threads beyond the repository listings (the
comments and reviews job of `bot.sources.github`): earlier comments of a thread that became
tracked after they were written (a backfill from `/issues/{n}/comments`), and the reviews with
text of a tracked pull request whose `updated_at` moved."""

from __future__ import annotations

from typing import Any

from bot.config.settings import RunConfig
from bot.models import Event
from bot.sources.github_http import Page
from bot.sources.github_listing import later_than
from bot.sources.github_threads import SOURCE, cap, comment_event, find_refs, is_bot, review_event
from bot.sources.github_tracking import PollState, ThreadTracker

MAX_BACKFILL = 200  # threads backfilled per poll; the rest wait for the next one


class Conversations:
    """Backfilled comments and pull-request reviews, through the tracker."""

    def __init__(self, threads: ThreadTracker, *, per_page: int):
        self.threads = threads
        self.per_page = per_page

    async def backfill(self, poll: PollState) -> None:
        """Earlier comments of threads that became tracked after they were written."""
        done = 0
        while done < MAX_BACKFILL:
            todo = sorted(set().union(*(t.pending for t in poll.tracking.values())))
            if not todo:
                return
            number = todo[0]
            done += 1
            comments = await self._fetch_all(
                self.threads.http.url(f"issues/{number}/comments"), f"comments of #{number}"
            )
            for comment in comments:
                poll.graph.add(
                    number,
                    find_refs(cap(comment.get("body")), self.threads.repo),
                    by_bot=is_bot(comment.get("user")),
                )
            events: list[Event] = []
            for run in self.threads.runs:
                tracking = poll.tracking[run.slug]
                if number in tracking.pending:
                    events += await self.threads.ensure_issue(poll, run, number)
                    state = await self.threads.state_of(poll, run, number)
                    context = await self.threads.context_of(poll, run, number)
                    for comment in comments:
                        if "id" not in comment:
                            continue
                        event = comment_event(
                            run.slug, self.threads.repo, number, comment, state, context
                        )
                        if self.threads.wanted(run, comment, event):
                            events.append(event)
                    tracking.pending.discard(number)
                for other in sorted(await self.threads.retrack(poll, run)):
                    events += await self.threads.ensure_issue(poll, run, other)
            await self.threads.commit(poll, events)

    async def _fetch_all(self, url: str, what: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params: dict[str, str] | None = {"per_page": str(self.per_page)}
        next_url: str | None = url
        while next_url is not None:
            page = await self.threads.http.get(next_url, params, what=what, thread_level=True)
            if page.missing:
                return items
            items += page.items
            next_url, params = page.next_url, None
        return items

    async def reviews(self, poll: PollState) -> None:
        """Reviews with text, for tracked PRs whose `updated_at` moved since last read."""
        for number, updated_at in sorted(poll.reviews.items()):
            runs = [run for run in self.threads.runs if number in poll.tracking[run.slug].tracked]
            if not runs:
                continue
            key = self.threads.reviews_key(number)
            seen_at, etag = await self.threads.store.cursors.get(SOURCE, key)
            if seen_at is not None and not later_than(updated_at, seen_at):
                continue
            url: str | None = self.threads.http.url(f"pulls/{number}/reviews")
            params: dict[str, str] | None = {"per_page": str(self.per_page)}
            reviews: list[dict[str, Any]] = []
            first: Page | None = None
            while url is not None:
                page = await self.threads.http.get(
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
                await self.threads.commit(poll, [], (key, updated_at, None))
                continue
            single = first.next_url is None and not first.not_modified
            new_etag = first.etag if (first.not_modified or single) else None
            events = [
                event
                for run in runs
                for review in reviews
                if "id" in review
                and review.get("submitted_at")
                and (review.get("body") or "").strip()
                for event in [await self._review_event(poll, run, number, review)]
                if self.threads.wanted(run, review, event)
            ]
            await self.threads.commit(poll, events, (key, updated_at, new_etag))

    async def pushed_review(
        self, poll: PollState, issue: dict[str, Any], review: dict[str, Any]
    ) -> list[Event]:
        """A review as `_reviews` reads it: with text, on a tracked pull request."""
        number = int(issue["number"])
        if not (review.get("submitted_at") and (review.get("body") or "").strip()):
            return []
        return [
            event
            for run in self.threads.runs
            if number in poll.tracking[run.slug].tracked
            for event in [await self._review_event(poll, run, number, review)]
            if self.threads.wanted(run, review, event)
        ]

    async def _review_event(
        self, poll: PollState, run: RunConfig, number: int, review: dict[str, Any]
    ) -> Event:
        return review_event(
            run.slug,
            self.threads.repo,
            number,
            review,
            await self.threads.state_of(poll, run, number),
            await self.threads.context_of(poll, run, number),
        )
