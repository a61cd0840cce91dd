"""Reading a repository's issues or issue comments since a cursor (the listing job of
`bot.sources.github`): conditional requests whose URL repeats while the window after the
cursor is small (so an idle poll is answered 304), a cursor moved past a large window, and
every page committed with the cursor it justifies."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from bot.core.timeutil import parse_time
from bot.sources.github_threads import SOURCE
from bot.sources.github_tracking import PollState, ThreadTracker

MAX_ROUNDS = 3  # listing rounds per poll (a moved cursor costs one round to learn its ETag)


class RepoLister:
    """Reads the repository-wide `issues` and `issues/comments` listings into the tracker."""

    def __init__(self, threads: ThreadTracker, *, per_page: int, keep_window: int):
        self.threads = threads
        self.per_page = per_page
        self.keep_window = keep_window

    async def read(self, poll: PollState, kind: str, *, rescan: bool = False) -> None:
        """Read `issues` or `comments` since the cursor, page by page, committing each page."""
        key = self.threads.listing_key(kind)
        cursor, etag = (None, None) if rescan else await self.threads.store.cursors.get(SOURCE, key)
        if kind == "comments" and self._covered_by_listing(poll, parse_time(cursor)):
            etag = None  # the window must be read again now that those threads are tracked
        path = "issues" if kind == "issues" else "issues/comments"
        for _round in range(MAX_ROUNDS):
            query = {"state": "all"} if kind == "issues" else {}
            query.update(sort="updated", direction="asc", per_page=str(self.per_page))
            if cursor:
                query["since"] = cursor
            params: dict[str, str] | None = query
            url: str | None = self.threads.http.url(path)
            send_etag = etag
            page_count = 0
            seen_ids: set[Any] = set()
            churn = False
            first_max: str | None = None
            new_cursor = cursor
            settled = False
            while url is not None:
                page = await self.threads.http.get(url, params, etag=send_etag, what=kind)
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
                    events = await self.threads.issue_page(poll, page.items)
                else:
                    events = await self.threads.comment_page(poll, page.items)
                write: tuple[str, str | None, str | None] | None = None
                single = page_count == 1 and page.next_url is None
                if rescan:
                    write = None
                elif (
                    single
                    and len(page.items) < self.per_page
                    and (len(page.items) < self.keep_window or not later_than(page_max, cursor))
                ):
                    write = (key, cursor, page.etag)  # same URL next time: a 304 when idle
                    settled = True
                else:
                    # Past items are safe to skip only up to where no item can have shifted.
                    target = first_max if churn else _latest([new_cursor, page_max])
                    new_cursor = _latest([cursor, target])
                    write = (key, new_cursor, None)
                await self.threads.commit(poll, events, write)
                url, params, send_etag = page.next_url, None, None
            if rescan or settled or churn or new_cursor == cursor:
                return
            cursor, etag = new_cursor, None  # one more round learns the new URL's ETag

    def _covered_by_listing(self, poll: PollState, since: datetime | None) -> bool:
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


def later_than(value: str | None, than: str | None) -> bool:
    """Is GitHub timestamp `value` later than `than` (None is the beginning of time)?"""
    left, right = parse_time(value), parse_time(than)
    if left is None:
        return False
    return right is None or left > right


def _latest(values: Iterable[str | None]) -> str | None:
    best: str | None = None
    for value in values:
        if value and (best is None or later_than(value, best)):
            best = value
    return best
