"""Which stored events answer a question: BM25 over the full-text index, a mild preference for
recent events, at most a few hits per thread, with the work bounded at millions of events.

Candidates. Each term is counted first, stopping at `budget` matches (cheap). Terms are taken
rarest first while their matches add up to at most `budget`, and only those are matched and
ranked in SQL (FTS5's `bm25()` costs a few µs per matching row, and a word found in half the
history says little about what a question is after). SQL hands over the best hundred events for
those rare terms, the events holding all of them, and those in a thread or on a day the question
names. When no term is rare enough, the newest events holding every word (then any word) are
the candidates: FTS5 reads those backwards from the end of the index and stops early.

Final order. The candidates are scored here with BM25 over every term of the question, the
common ones included (their IDF from a second, longer count), times the SQL boosts (recency,
thread descriptions, named threads and days), times how many of the question's words an event
holds. Then at most `per_thread` per thread, one event per link."""

from __future__ import annotations

import contextlib
import functools
import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.ask.query import Day, Query, Term, all_of, any_of
from bot.models import Event
from bot.store import Store
from bot.store.search import WEIGHTS, Boosts, Ranked

RANK_BUDGET = 1000  # matching rows BM25 may score for one question
PER_THREAD = 2  # hits from one GitHub thread or Discord channel
DEFAULT_LIMIT = 8
DAY_SLACK = timedelta(hours=6)
CANDIDATES = 40  # events SQL hands to the final scoring, per query
COVERAGE_FLOOR = 0.25  # the score of an event holding one of many question words, relatively
LENGTH_B = 0.5  # BM25's length normalisation (FTS5 uses 0.75, which buries long descriptions)
COMMON_CAP = 10_000  # a common word's second count stops here (its IDF is small beyond)


@dataclass(frozen=True, slots=True)
class Hit:
    event: Event
    score: float | None  # BM25 with recency (lower is better); None when found by recency only


def thread_key(event: Event) -> str:
    return event.thread or f"id:{event.id}"


def _on(event: Event, days: tuple[tuple[datetime, datetime], ...]) -> bool:
    return any(start <= event.at < end for start, end in days)


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


@dataclass(frozen=True, slots=True)
class Weighted:
    """A term scored in Python: its token sequences (one per spelling) and its IDF."""

    grams: tuple[tuple[str, ...], ...]
    idf: float
    pair: bool = False


_TOKEN = re.compile(r"[^\W_]+")


def _stem(token: str) -> str:
    """A rough stand-in for the index's Porter stemmer, for words scored in Python."""
    for suffix in ("ing", "ed", "es", "s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def tokens(text: str) -> list[str]:
    return [_stem(t) for t in _TOKEN.findall(text.lower())]


def _occurrences(words: list[str], gram: tuple[str, ...]) -> int:
    if not gram:
        return 0
    if len(gram) == 1:
        return words.count(gram[0])
    size = len(gram)
    return sum(1 for i in range(len(words) - size + 1) if tuple(words[i : i + size]) == gram)


def idf(total: int, df: int) -> float:
    """BM25's IDF as FTS5 computes it (never below a tiny positive floor)."""
    return max(1e-6, math.log((total - df + 0.5) / (df + 0.5)))


_FIELDS = ("title", "body", "summary", "ref", "author")


def _fields(event: Event) -> list[list[str]]:
    return [tokens(getattr(event, name) or "") for name in _FIELDS]


def rescore(
    candidates: list[tuple[Event, float, float]], terms: list[Weighted], words: int
) -> list[tuple[float, Event]]:
    """(score, event), lower is better: BM25 over every term of the question, computed here
    (k1 1.2 as in FTS5, a milder length penalty, the same column weights), times each event's
    boost (the second item of a candidate), times a coverage factor: an event holding more of
    the question's words ranks higher, so a long description that answers every part of a
    question is not buried under one-line messages sharing one rare word with it. An event
    whose terms only FTS5's stemmer matched keeps its SQL score (the third item), discounted."""
    docs = [(event, boost, sql, _fields(event)) for event, boost, sql in candidates]
    average = sum(sum(len(f) for f in fields) for *_, fields in docs) / max(len(docs), 1)
    out = []
    for event, boost, sql, fields in docs:
        length = sum(len(f) for f in fields) or 1
        score = 0.0
        matched = 0
        for term in terms:
            tf = sum(
                weight * _occurrences(field, gram)
                for weight, field in zip(WEIGHTS, fields, strict=True)
                for gram in term.grams
            )
            if tf:
                score += (
                    term.idf * tf * 2.2 / (tf + 1.2 * (1 - LENGTH_B + LENGTH_B * length / average))
                )
                matched += not term.pair
        if not score:  # FTS5's stemmer matched what the rough one here did not: trust SQL
            out.append((sql * boost * COVERAGE_FLOOR, event))
            continue
        coverage = matched / words if words else 1.0
        out.append((-score * boost * (COVERAGE_FLOOR + (1 - COVERAGE_FLOOR) * coverage), event))
    return out


def _boost(event: Event, boosts: Boosts, now: datetime) -> float:
    """The SQL ranking's multipliers, for events found by recency."""
    age = max(0.0, (now - event.at).total_seconds() / 86400)
    factor = 1.0 + boosts.recency / (1.0 + age / boosts.recency_days)
    opener = event.kind in ("issue", "pull")
    if opener:
        factor *= boosts.opener
    if (event.ref or "").lower() in boosts.refs:
        factor *= boosts.named_opener if opener else boosts.ref
    if _on(event, boosts.days):
        factor *= boosts.day
    return factor


async def _weights(
    store: Store, present: list[tuple[int, int, Term]], left: list[Term]
) -> list[Weighted]:
    """IDF for every term found: terms left out of the SQL ranking are counted again, further
    (to `COMMON_CAP`), so their weight reflects how common they really are."""
    total = max(await store.search.size(), 1)
    df = {term.text: count for count, _, term in present}
    recount = await store.search.match_counts([t.expression for t in left], cap=COMMON_CAP)
    df.update({t.text: count for t, count in zip(left, recount, strict=True)})
    return [
        Weighted(
            tuple(tuple(tokens(s)) for s in term.spellings), idf(total, df[term.text]), term.pair
        )
        for _, _, term in present
        if not (term.pair and df[term.text] > RANK_BUDGET)  # uncounted pairs: no weight known
    ]


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


def _within_budget(present: list[tuple[int, int, Term]], budget: int) -> list[Term]:
    """The rarest terms whose matches together stay within `budget`."""
    chosen: list[Term] = []
    total = 0
    for count, _, term in present:
        if total + count > budget:
            break
        chosen.append(term)
        total += count
    return chosen


async def _candidates(
    store: Store, run_slug: str, now: datetime, boosts: Boosts, chosen: list[Term], limit: int
) -> list[Ranked]:
    """The BM25 pool for the chosen terms, plus events with every rare word and events in a
    named thread or on a named day."""
    rank = functools.partial(
        store.search.ranked, run_slug=run_slug, now=now, boosts=boosts, per_thread=CANDIDATES
    )
    ranked, saturated = await rank(any_of(chosen), limit=CANDIDATES)
    if len(ranked) < limit and saturated:  # other runs crowded this one out of the pool
        ranked, _ = await rank(any_of(chosen), limit=CANDIDATES, scoped=True)
    rare = [t for t in chosen if not t.pair]
    if len(rare) > 1:  # events with every rare word, which BM25 alone may rank below
        ranked += (await rank(all_of(rare), limit=CANDIDATES // 2))[0]
    if boosts.refs or boosts.days:  # events in a named thread or on a named day
        ranked += (await rank(any_of(chosen), limit=CANDIDATES // 2, named_only=True))[0]
    return ranked


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
    chosen = _within_budget(present, budget)
    boosts = Boosts(refs=query.refs, days=day_ranges(query.days, zone, now))
    words = [term for _, _, term in present if not term.pair]
    left = [term for term in words if term not in chosen]
    weights = await _weights(store, present, left)
    hits: list[Hit] = []
    if chosen:
        ranked = await _candidates(store, run_slug, now, boosts, chosen, limit)
        candidates = {r.event.id: (r.event, r.boost, r.bm25) for r in ranked}
        scored = rescore(list(candidates.values()), weights, len(words))
        # A day the question names is a scope, not a hint: events on it come first.
        scored.sort(key=lambda item: (not _on(item[1], boosts.days), item[0], -(item[1].id or 0)))
        for score, event in scored:
            _add(hits, [event], limit, per_thread, score=score)
    if len(hits) < limit and left:
        # Only common words, or too few hits: the newest events with all of them (then any),
        # ranked among themselves the same way.
        fills = [all_of(words), any_of(words)] if len(words) > 1 else [any_of(words)]
        for expression in fills:
            window = limit * per_thread * 4
            found = await store.search.newest(expression, run_slug, limit=window)
            scored = rescore([(e, _boost(e, boosts, now), 0.0) for e in found], weights, len(words))
            scored.sort(key=lambda item: (not _on(item[1], boosts.days), item[0]))
            _add(hits, [event for _, event in scored], limit, per_thread)
            if len(hits) >= limit:
                break
    return hits[:limit]


__all__ = ["DEFAULT_LIMIT", "PER_THREAD", "RANK_BUDGET", "Hit", "retrieve", "thread_key"]
