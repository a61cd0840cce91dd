"""What people are discussing, chosen by how much they discuss it, not by how new it is.

A discussion is one GitHub thread (issue or pull request) ranked by its activity in the last
days: the posts in it (comments, reviews, the description, state changes) and the distinct people
who wrote them, plus chat messages that name it (`#8833`). For each, the narrative learns its
state (an open pull request is a proposal still undecided), who drives it (the most active
person, its opener on a tie), what it was last about, and the last value someone changed in it
("from 0.05 to 0.02", found in the comments' words; edits are stored in place, so a changed
description says it in its own words or not at all). Pure: the caller reads the store."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.models import SOURCE_SPECS, Event, GithubComment, GithubReview

DISCUSSION_WINDOW = timedelta(days=3)  # "active": posts in this window count
MAX_DISCUSSIONS = 4
RECENT_DAY = timedelta(days=1)  # a post in the last day counts fully, older ones half
PERSON_WEIGHT = 1.5  # each distinct person counts this much beyond their posts
THREAD_KINDS = ("issue", "pull", "comment", "review", "state")
CHANGE_CHARS = 220  # the sentence that says what changed, at most

_NUMBER = r"[-+]?(?:\d+(?:[.,]\d+)*|\.\d+)(?:e-?\d+)?\s?%?"
#: "from 0.05 to 0.02", "0.05 → 0.02", "0.05 -> 0.02", "0.02 (was 0.05)".
_CHANGES = (
    re.compile(
        rf"\bfrom\s+(?P<before>{_NUMBER})\s+(?:(?:down|up|back)\s+)?to\s+(?P<after>{_NUMBER})"
    ),
    re.compile(rf"(?P<before>{_NUMBER})\s*(?:→|->|=>)\s*(?P<after>{_NUMBER})"),
    re.compile(
        rf"(?P<after>{_NUMBER})\s*\(\s*(?:was|previously|instead of)\s+(?P<before>{_NUMBER})\)"
    ),
)
_REF = re.compile(r"(?<![\w/#])#(\d{1,7})\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")


@dataclass(slots=True, frozen=True)
class Change:
    """A value someone changed in a thread, in their words: `before` → `after`, and the
    sentence that says it."""

    before: str
    after: str
    said: str
    author: str | None
    at: datetime
    url: str | None = None


@dataclass(slots=True, frozen=True)
class Discussion:
    """One thread under discussion, as of `last_at`."""

    ref: str  # "#8833"
    title: str
    kind: str | None  # issue | pull (None: its description was never read)
    state: str | None  # open | closed | merged (None: unknown)
    url: str | None
    opened_by: str | None
    opened_at: datetime | None
    driver: str | None  # who drives it: the most posts in the window, its opener on a tie
    people: tuple[str, ...]  # everyone who posted in the window, most active first
    posts: int  # posts in the window (chat messages naming it included)
    last_at: datetime
    latest: str | None = None  # the newest post's summary
    latest_by: str | None = None
    latest_url: str | None = None
    change: Change | None = None
    score: float = 0.0

    @property
    def open(self) -> bool:
        return self.state == "open"

    @property
    def proposal(self) -> bool:
        """An open pull request: a change proposed and not yet decided."""
        return self.kind == "pull" and self.open


def _person(author: str | None) -> str | None:
    name = (author or "").strip()
    return None if not name or name.endswith("[bot]") else name


def thread_ref(event: Event) -> str | None:
    """The GitHub thread an event belongs to ("#8833"), or None."""
    if event.source == "github" and event.kind in THREAD_KINDS and event.ref:
        return event.ref
    return None


def mentioned_refs(event: Event) -> set[str]:
    """The thread references a chat message names ("#8833")."""
    if not SOURCE_SPECS.is_chat(event.source):
        return set()
    text = f"{event.body} {event.summary or ''}"
    return {f"#{n}" for n in _REF.findall(text)}


def find_change(text: str | None) -> tuple[str, str, str] | None:
    """(before, after, the sentence that says it) for the last value change `text` names. Read
    line by line: a table row or a code line is data, not a sentence saying what changed, and
    a sentence longer than `CHANGE_CHARS` is not quoted."""
    if not text:
        return None
    found: tuple[str, str, str] | None = None
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line or line.startswith(("|", "```", "    ")) or " | " in line:
            continue
        for part in _SENTENCE.split(line):
            if len(part) > CHANGE_CHARS:
                continue
            for pattern in _CHANGES:
                for match in pattern.finditer(part):
                    before, after = match["before"].strip(), match["after"].strip()
                    if before != after:
                        found = (before, after, part)
    return found


_TOKENS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _tokens(name: str) -> set[str]:
    """ "ClassicLarry" → {classic, larry}; "jo-lindqvist" → {jo, lindqvist}."""
    return {t.lower() for t in _TOKENS.findall(name)}


def _same_people(events: Sequence[Event]) -> dict[str, str]:
    """Chat display names that are one of the thread's GitHub logins ("Larry" posting as
    "ClassicLarry", "Jo" as "jo-lindqvist"): a display name whose first word is a word of
    exactly one login. The same person is counted once, by their login."""
    logins = {p for e in events if e.source == "github" and (p := _person(e.author))}
    names: dict[str, str] = {}
    for e in events:
        name = _person(e.author)
        if e.source == "github" or not name or name in logins:
            continue
        first = name.split()[0].lower()
        matches = [login for login in logins if first in _tokens(login)]
        if len(matches) == 1:
            names[name] = matches[0]
    return names


def _change_of(event: Event) -> Change | None:
    for text in (event.summary, event.body):
        found = find_change(text)
        if found is not None:
            before, after, said = found
            return Change(before, after, said, _person(event.author), event.at, event.url)
    return None


def _weight(event: Event, now: datetime) -> float:
    return 1.0 if now - event.at <= RECENT_DAY else 0.5


def _driver(posts: Counter[str], opened_by: str | None, last_by: list[str]) -> str | None:
    if not posts:
        return opened_by
    top = max(posts.values())
    leaders = [p for p, n in posts.items() if n == top]
    if opened_by in leaders:
        return opened_by
    return next((p for p in reversed(last_by) if p in leaders), leaders[0])


def _state(own: Sequence[Event], described: Event | None) -> str | None:
    """The thread's state now: a state change newer than its description, else the
    description's (updated in place), else what its newest comment recorded."""
    changes = [e for e in own if e.kind == "state" and e.state]
    if changes and (described is None or changes[-1].at >= described.at):
        return changes[-1].state
    if described is not None:
        return described.state
    return next((e.state for e in reversed(own) if e.state), None)


def _context(own: Sequence[Event]) -> GithubComment | None:
    """What the thread's newest comment recorded of it (title, issue or pull)."""
    for e in reversed(own):
        if e.kind in GithubComment.KINDS or e.kind in GithubReview.KINDS:
            return (GithubReview if e.kind == "review" else GithubComment).of(e)
    return None


def _discussion(
    ref: str, events: list[Event], described: Event | None, now: datetime
) -> Discussion:
    events.sort(key=lambda e: e.at)
    posts: Counter[str] = Counter()
    order: list[str] = []
    same = _same_people(events)
    for e in events:
        if person := _person(e.author):
            person = same.get(person, person)
            posts[person] += 1
            order.append(person)
    own = [e for e in events if thread_ref(e) == ref]
    said = [e for e in events if (e.summary or "").strip()]
    latest = said[-1] if said else None
    context = _context(own)
    opened_by = _person(described.author) if described is not None else None
    return Discussion(
        ref=ref,
        title=(described.title if described else None)
        or (context.thread_title if context else None)
        or ref,
        kind=described.kind if described else context.thread_kind if context else None,
        state=_state(own, described),
        url=described.url if described is not None else None,
        opened_by=opened_by,
        opened_at=described.at if described is not None else None,
        driver=_driver(posts, opened_by, order),
        people=tuple(sorted(posts, key=lambda p: (-posts[p], order.index(p)))),
        posts=len(events),
        last_at=events[-1].at,
        latest=(latest.summary or "").strip() if latest else None,
        latest_by=same.get(who, who) if latest and (who := _person(latest.author)) else None,
        latest_url=latest.url if latest else None,
        change=next((c for e in reversed(events) if (c := _change_of(e)) is not None), None),
        score=sum(_weight(e, now) for e in events) + PERSON_WEIGHT * len(posts),
    )


def select_discussions(
    events: Sequence[Event],
    now: datetime,
    described: Mapping[str, Event] | None = None,
    *,
    window: timedelta = DISCUSSION_WINDOW,
    limit: int = MAX_DISCUSSIONS,
) -> list[Discussion]:
    """The `limit` threads most discussed in the last `window`: posts (a day old or newer count
    1, older ones 0.5) plus `PERSON_WEIGHT` for each distinct person, so a weeks-old thread
    many people argue in today comes before yesterday's quiet one. `described`: the threads'
    description events by reference (their state, title, opener), when the caller read them.
    Most discussed first; ties by the latest post."""
    described = described or {}
    by_ref: dict[str, list[Event]] = {}
    for e in events:
        if e.deleted or e.at > now or now - e.at > window:
            continue
        refs = {ref} if (ref := thread_ref(e)) else mentioned_refs(e)
        for r in refs:
            by_ref.setdefault(r, []).append(e)
    # a chat message naming a thread nobody posted in is not a discussion of it
    threads = [
        _discussion(ref, list(found), described.get(ref), now)
        for ref, found in by_ref.items()
        if any(thread_ref(e) == ref for e in found)
    ]
    threads.sort(key=lambda d: (-d.score, -d.last_at.timestamp()))
    return threads[:limit]


def discussion_events(events: Sequence[Event], discussions: Sequence[Discussion]) -> list[Event]:
    """The events that carry each discussion's story, in discussion order: the one that says
    what changed, then the newest summarised post. At most two per discussion, no repeats."""
    chosen: list[Event] = []
    seen: set[int] = set()
    for d in discussions:
        own = sorted(
            (e for e in events if thread_ref(e) == d.ref and (e.summary or "").strip()),
            key=lambda e: e.at,
            reverse=True,
        )
        changed = next(
            (
                e
                for e in own
                if d.change is not None and e.at == d.change.at and _change_of(e) is not None
            ),
            None,
        )
        for e in (changed, own[0] if own else None):
            if e is not None and id(e) not in seen:
                seen.add(id(e))
                chosen.append(e)
    return chosen
