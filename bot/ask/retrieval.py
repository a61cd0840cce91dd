"""Which stored events answer a question: BM25 over the full-text index, a mild preference for
recent events, at most a few hits per thread, with the work bounded at millions of events.

How the work stays bounded. Each term is counted first, stopping at `budget` matches (cheap).
Terms are then taken rarest first while their matches add up to at most `budget`, and only
those are ranked with BM25: rare words are the ones that say what a question is about, and a
word found in half the history adds little to the ranking but would cost a score per row. When
that leaves fewer hits than asked for, or no term is rare enough, the newest events containing
every word (then any word) fill the remaining places; FTS5 reads those backwards from the end
of the index and stops early, so common words cost little too."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.ask.query import Day, Query, Term, all_of, any_of
from bot.models import Event
from bot.store import Store
from bot.store.search import Boosts, Ranked

RANK_BUDGET = 2000  # matching rows BM25 may score for one question
PER_THREAD = 2  # hits from one GitHub thread or Discord channel
DEFAULT_LIMIT = 8
DAY_SLACK = timedelta(hours=6)


@dataclass(frozen=True, slots=True)
class Hit:
    event: Event
    score: float | None  # BM25 with recency (lower is better); None when found by recency only


def thread_key(event: Event) -> str:
    return event.thread or f"id:{event.id}"


def _on(event: Event, days: tuple[tuple[datetime, datetime], ...]) -> bool:
    return any(start <= event.at < end for start, end in days)


def _order(ranked: Ranked) -> tuple[float, int]:
    return (ranked.score, -(ranked.event.id or 0))


def day_ranges(
    days: tuple[Day, ...], zone: str, now: datetime
) -> tuple[tuple[datetime, datetime], ...]:
    """Each named day as a UTC range in the run's time zone, widened by `DAY_SLACK` on both
    sides ("the night of Sep 9" runs into the 10th). A day without a year is the latest one
    not after today; a day without a month ("the 16th") is that day in each of the last three
    months."""
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        tz = ZoneInfo("UTC")
    today = now.astimezone(tz).date()
    found: list[date] = []
    for d in days:
        if d.month is None:
            year, month = today.year, today.month
            for _ in range(3):
                with contextlib.suppress(ValueError):
                    if (candidate := date(year, month, d.day)) <= today:
                        found.append(candidate)
                year, month = (year, month - 1) if month > 1 else (year - 1, 12)
            continue
        for year in (d.year,) if d.year else (today.year, today.year - 1):
            with contextlib.suppress(ValueError):
                candidate = date(year, d.month, d.day)
                if d.year or candidate <= today:
                    found.append(candidate)
                    break
    ranges = []
    for day in dict.fromkeys(found):
        start = datetime.combine(day, time(0), tz).astimezone(UTC)
        ranges.append((start - DAY_SLACK, start + timedelta(days=1) + DAY_SLACK))
    return tuple(ranges)


def _add(
    hits: list[Hit], events: list[Event], limit: int, per_thread: int, score: float | None = None
) -> None:
    have = {h.event.id for h in hits}
    links = {h.event.url for h in hits if h.event.url}
    per: dict[str, int] = {}
    for hit in hits:
        per[thread_key(hit.event)] = per.get(thread_key(hit.event), 0) + 1
    for event in events:
        if len(hits) >= limit:
            return
        key = thread_key(event)
        if event.id in have or event.url in links or per.get(key, 0) >= per_thread:
            continue  # (a Discord conversation and its first message share one link)
        hits.append(Hit(event, score))
        have.add(event.id)
        if event.url:
            links.add(event.url)
        per[key] = per.get(key, 0) + 1


async def _counts(store: Store, terms: list[Term], budget: int) -> list[int]:
    """Matches per term, each counted no further than `budget` + 1. Words first; a pair of
    adjacent words is counted only when one of its words is rare, because matching a phrase of
    two common words reads both words' whole posting lists (tens of ms at a million events).
    Such a pair counts as common."""
    words = [t for t in terms if not t.pair]
    counted = dict(
        zip(
            (t.text for t in words),
            await store.search.match_counts([t.expression for t in words], cap=budget),
            strict=True,
        )
    )
    pairs = [
        t for t in terms if t.pair and min(counted.get(w, 0) for w in t.text.split()) <= budget
    ]
    counted.update(
        zip(
            (t.text for t in pairs),
            await store.search.match_counts([t.expression for t in pairs], cap=budget),
            strict=True,
        )
    )
    return [counted.get(t.text, budget + 1) for t in terms]


async def retrieve(
    store: Store,
    run_slug: str,
    query: Query,
    now: datetime,
    *,
    limit: int = DEFAULT_LIMIT,
    per_thread: int = PER_THREAD,
    budget: int = RANK_BUDGET,
    zone: str = "UTC",
) -> list[Hit]:
    """At most `limit` hits, best first."""
    terms = list(query.terms)
    counts = await _counts(store, terms, budget)
    present = sorted(
        (
            (count, index, term)
            for index, (term, count) in enumerate(zip(terms, counts, strict=True))
        ),
        key=lambda item: (item[0], item[1]),
    )
    present = [item for item in present if item[0] > 0]
    if not present:
        return []
    chosen: list[Term] = []
    total = 0
    for count, _, term in present:
        if total + count > budget:
            break
        chosen.append(term)
        total += count
    hits: list[Hit] = []
    if chosen:
        expression = any_of(chosen)
        boosts = Boosts(refs=query.refs, days=day_ranges(query.days, zone, now))
        # A few more than asked for: two events may share one link (see `_add`).
        rank = functools.partial(
            store.search.ranked,
            expression,
            run_slug,
            now,
            limit=limit * 2,
            per_thread=per_thread,
            boosts=boosts,
        )
        ranked, saturated = await rank()
        if len(ranked) < limit and saturated:  # other runs crowded this one out of the pool
            ranked, _ = await rank(scoped=True)
        if boosts.refs or boosts.days:
            # Same expression, so the same BM25 scale: events in a named thread or on a named
            # day compete with the rest even when they were outside the global pool.
            named, _ = await rank(named_only=True)
            merged = {r.event.id: r for r in [*ranked, *named]}.values()
            # A day the question names is a scope, not a hint: events on it come first.
            ranked = sorted(merged, key=lambda r: (not _on(r.event, boosts.days), *_order(r)))
        for r in ranked:
            _add(hits, [r.event], limit, per_thread, score=r.score)
    if len(hits) < limit and len(chosen) < len(present):
        words = [term for _, _, term in present if not term.pair] or [present[0][2]]
        fills = [all_of(words), any_of(words)] if len(words) > 1 else [any_of(words)]
        for expression in fills:
            window = limit * per_thread * 4
            _add(
                hits,
                await store.search.newest(expression, run_slug, limit=window),
                limit,
                per_thread,
            )
            if len(hits) >= limit:
                break
    return hits[:limit]


__all__ = ["DEFAULT_LIMIT", "PER_THREAD", "RANK_BUDGET", "Hit", "retrieve", "thread_key"]
