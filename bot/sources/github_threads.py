"""Pure helpers for the GitHub source: which threads a run tracks, the reference graph, bot
detection, and turning GitHub JSON into events. No I/O here, so all of it is testable alone."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from bot.config.runsfile import RunConfig
from bot.core.timeutil import parse_time
from bot.enrich.context import thread_data
from bot.models import Event, GithubComment, GithubThread

SOURCE = "github"
BODY_CAP = 20_000  # characters kept of a description, comment or review
TITLE_CAP = 1_000
REFS_PER_ITEM = 200  # a hostile body cannot grow the graph without bound

BOT_LOGINS = frozenset(
    {"dependabot", "dependabot-preview", "renovate", "renovate-bot", "github-actions"}
)

# `#123` not preceded by a word character, `/`, `#` or `&` (so `repo#1`, `&#123;` and `##` do not
# count), `owner/repo#123`, and issue/PR URLs on any host (GitHub Enterprise has its own).
_HASH_REF = re.compile(r"(?<![\w/#&])#(\d{1,7})\b")
_REPO_REF = re.compile(r"(?<![\w.\-/])([A-Za-z0-9][\w.\-]*)/([\w.\-]+)#(\d{1,7})\b")
_URL_REF = re.compile(r"https?://[^\s/]+/([\w.\-]+)/([\w.\-]+)/(?:issues|pull|pulls)/(\d{1,7})\b")
_ISSUE_URL_NUMBER = re.compile(r"/issues/(\d+)/?$")


def cap(text: str | None, limit: int = BODY_CAP) -> str:
    """Untrusted text stays data: length-capped, NUL bytes replaced."""
    if not text:
        return ""
    if len(text) > limit:
        text = text[:limit] + "…"
    return text.replace("\x00", "\ufffd")


#: How Runscribe's own GitHub comments end (the ops log's write-ups, `bot.outputs.opslog`): never
#: read back as a person's post, whoever's token wrote them.
OWN_MARKER = "<!-- runscribe:"


def is_own(item: dict[str, Any]) -> bool:
    return OWN_MARKER in str(item.get("body") or "")


def is_bot(user: dict[str, Any] | None) -> bool:
    if not user:
        return False
    login = str(user.get("login") or "").lower()
    return user.get("type") == "Bot" or login.endswith("[bot]") or login in BOT_LOGINS


def is_bot_pull(item: dict[str, Any]) -> bool:
    """A pull request a bot opened (a dependency bump, a lockfile refresh): left out unless the
    run keeps bots. An issue a bot opens is kept like anyone's: it is how Sentry, Datadog or a
    ticket sync reports a failure, and the run's labels or keywords routed it there."""
    return "pull_request" in item and is_bot(item.get("user"))


def find_refs(text: str | None, repo: str) -> set[int]:
    """Thread numbers of `repo` that `text` mentions: `#123`, `owner/repo#123`, issue/PR URLs."""
    if not text:
        return set()
    found: set[int] = set()
    wanted = repo.lower()
    for match in _URL_REF.finditer(text):
        if f"{match.group(1)}/{match.group(2)}".lower() == wanted:
            found.add(int(match.group(3)))
    for match in _REPO_REF.finditer(text):
        if f"{match.group(1)}/{match.group(2)}".lower() == wanted:
            found.add(int(match.group(3)))
    for match in _HASH_REF.finditer(text):
        found.add(int(match.group(1)))
        if len(found) >= REFS_PER_ITEM:
            break
    found.discard(0)
    return set(sorted(found)[:REFS_PER_ITEM])


def issue_number(url: str | None) -> int | None:
    """The thread number at the end of a comment's `issue_url`."""
    match = _ISSUE_URL_NUMBER.search(url or "")
    return int(match.group(1)) if match else None


def thread_state(item: dict[str, Any]) -> str:
    """open | closed | merged. A PR's merge time lives in `pull_request.merged_at`."""
    pull = item.get("pull_request") or {}
    if pull.get("merged_at"):
        return "merged"
    return "closed" if item.get("state") == "closed" else "open"


def state_changed_at(item: dict[str, Any], state: str) -> str | None:
    """When the thread entered `state`, as GitHub wrote it (stable across later edits)."""
    if state == "merged":
        return (item.get("pull_request") or {}).get("merged_at") or item.get("closed_at")
    if state == "closed":
        return item.get("closed_at") or item.get("updated_at")
    return item.get("updated_at")  # GitHub keeps no reopened_at


#: Bumped when the tracking rules change, so every run re-scans its repository once (2: issues
#: opened by bots count as threads).
TRACKING_RULES = 2


def run_fingerprint(run: RunConfig) -> str:
    """Changes when what decides tracking changes, so the repository is re-scanned once."""
    data = [
        TRACKING_RULES,
        sorted(run.github_issues),
        sorted(label.casefold() for label in run.github_labels),
        sorted(keyword.casefold() for keyword in run.github_keywords),
        run.github_include_bots,
    ]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16]


def is_seed(run: RunConfig, item: dict[str, Any]) -> bool:
    """A thread the run tracks by itself: listed, labelled, or mentioning a keyword."""
    number = int(item["number"])
    if number in run.github_issues:
        return True
    if is_bot_pull(item) and not run.github_include_bots:
        return False
    wanted = {label.casefold() for label in run.github_labels}
    labels = {str(label.get("name", "")).casefold() for label in item.get("labels") or []}
    if wanted & labels:
        return True
    if run.github_keywords:
        text = f"{item.get('title') or ''}\n{item.get('body') or ''}".casefold()
        return any(keyword.casefold() in text for keyword in run.github_keywords)
    return False


@dataclass(slots=True)
class RefGraph:
    """Who mentions whom, for the whole repository (descriptions and comments of every thread,
    tracked or not), so a thread that becomes tracked later pulls in its neighbours. Mentions by
    bots are kept apart so runs that ignore bots ignore them too."""

    human: dict[int, set[int]] = field(default_factory=dict)
    bot: dict[int, set[int]] = field(default_factory=dict)
    bot_threads: set[int] = field(default_factory=set)  # pulls opened by a bot (`is_bot_pull`)

    def add(self, source: int, targets: Iterable[int], *, by_bot: bool) -> bool:
        targets = set(targets) - {source}
        if not targets:
            return False
        edges = (self.bot if by_bot else self.human).setdefault(source, set())
        before = len(edges)
        edges |= targets
        return len(edges) != before

    def to_json(self) -> str:
        return json.dumps(
            {
                "human": {str(k): sorted(v) for k, v in sorted(self.human.items())},
                "bot": {str(k): sorted(v) for k, v in sorted(self.bot.items())},
                "bot_threads": sorted(self.bot_threads),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None) -> RefGraph:
        if not text:
            return cls()
        data = json.loads(text)
        return cls(
            human={int(k): set(v) for k, v in data.get("human", {}).items()},
            bot={int(k): set(v) for k, v in data.get("bot", {}).items()},
            bot_threads=set(data.get("bot_threads", [])),
        )


@dataclass(slots=True)
class Tracking:
    """A run's tracked threads on one repository, kept in `source_cursors` as JSON.
    `primary` are its own threads (listed, labelled, keyword); `tracked` adds one hop of
    references; `pending` are newly tracked threads whose earlier comments still need fetching;
    `fingerprint` is the config that produced `primary` (a change triggers a re-scan)."""

    primary: set[int] = field(default_factory=set)
    tracked: set[int] = field(default_factory=set)
    pending: set[int] = field(default_factory=set)
    fingerprint: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "fingerprint": self.fingerprint,
                "primary": sorted(self.primary),
                "tracked": sorted(self.tracked),
                "pending": sorted(self.pending),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None) -> Tracking:
        if not text:
            return cls()
        data = json.loads(text)
        return cls(
            primary=set(data.get("primary", [])),
            tracked=set(data.get("tracked", [])),
            pending=set(data.get("pending", [])),
            fingerprint=data.get("fingerprint"),
        )


def compute_tracked(
    run: RunConfig,
    primary: set[int],
    graph: RefGraph,
    others: set[int] | frozenset[int] = frozenset(),
) -> set[int]:
    """Primary threads plus ONE hop: threads they mention and threads that mention them.
    `others` are other runs' own threads on the same repository: a reference never pulls one
    of them into this run (a ladder issue that links the hero run's burndown stays the ladder's)."""
    listed = set(run.github_issues)
    roots_before = primary | listed
    excluded = set() if run.github_include_bots else graph.bot_threads - listed
    excluded |= set(others) - roots_before
    roots = roots_before - excluded
    tracked = set(roots)
    edge_sets = [graph.human, graph.bot] if run.github_include_bots else [graph.human]
    for edges in edge_sets:
        for source, targets in edges.items():
            if source in roots:
                tracked |= targets
            elif targets & roots:
                tracked.add(source)
    return tracked - excluded


@dataclass(frozen=True, slots=True)
class Pushed:
    """One thread pushed by GitHub's webhook, in the shapes a poll reads (`bot.hooks.github`):
    the thread as the issues listing shows it, and the comment or review it brings."""

    repo: str  # owner/name as GitHub spells it
    issue: dict[str, Any]
    comment: dict[str, Any] | None = None
    review: dict[str, Any] | None = None


def _login(user: dict[str, Any] | None) -> str | None:
    return str(user["login"]) if user and user.get("login") else None


def _time(value: str | None, fallback: datetime | None = None) -> datetime:
    parsed = parse_time(value)
    if parsed is None:
        if fallback is None:
            raise ValueError("GitHub item without a timestamp")
        return fallback
    return parsed


def thread_key(repo: str, number: int) -> str:
    return f"github:{repo}#{number}"


def issue_event(slug: str, repo: str, item: dict[str, Any]) -> Event:
    number = int(item["number"])
    pull = item.get("pull_request")
    created = _time(item.get("created_at"))
    return Event(
        run_slug=slug,
        source=SOURCE,
        external_id=f"issue:{number}",
        kind="pull" if pull is not None else "issue",
        at=created,
        updated_at=parse_time(item.get("updated_at")),
        author=_login(item.get("user")),
        ref=f"#{number}",
        url=item.get("html_url"),
        state=thread_state(item),
        title=cap(item.get("title"), TITLE_CAP),
        body=cap(item.get("body")),
        thread=thread_key(repo, number),
        extra=GithubThread(
            labels=tuple(str(label.get("name")) for label in item.get("labels") or []),
            merged_at=(pull or {}).get("merged_at"),
            author_association=_association(item),
        ).to_json(),
    )


def _association(item: dict[str, Any]) -> str | None:
    value = item.get("author_association")
    return str(value) if value else None


def thread_context(item: dict[str, Any]) -> GithubComment:
    """What a comment or review records about its thread, from the thread's issue JSON."""
    return thread_data(
        cap(item.get("title"), TITLE_CAP),
        [str(label.get("name")) for label in item.get("labels") or []],
        pull=item.get("pull_request") is not None,
    )


def thread_context_of(event: Event) -> GithubComment:
    """The same, from a stored description event (``issue_event``'s output)."""
    return thread_data(event.title, GithubThread.of(event).labels, pull=event.kind == "pull")


_STATE_VERBS = {"closed": "closed", "merged": "merged", "open": "reopened"}


def state_event(slug: str, repo: str, item: dict[str, Any], state: str) -> Event:
    number = int(item["number"])
    when = state_changed_at(item, state)
    closed_by = item.get("closed_by") if state != "open" else None
    return Event(
        run_slug=slug,
        source=SOURCE,
        external_id=f"state:{number}:{state}:{when}",
        kind="state",
        at=_time(when, _time(item.get("updated_at"))),
        updated_at=parse_time(when),
        author=_login(closed_by),
        ref=f"#{number}",
        url=item.get("html_url"),
        state=state,
        title=f"{_STATE_VERBS.get(state, state)} #{number}",
        body=cap(item.get("title"), TITLE_CAP),
        thread=thread_key(repo, number),
    )


def comment_event(
    slug: str,
    repo: str,
    number: int,
    comment: dict[str, Any],
    state: str | None,
    context: GithubComment | None = None,
) -> Event:
    """A comment, with its thread's context (``thread_context``) recorded in its data."""
    return Event(
        run_slug=slug,
        source=SOURCE,
        external_id=f"comment:{comment['id']}",
        kind="comment",
        at=_time(comment.get("created_at")),
        updated_at=parse_time(comment.get("updated_at")),
        author=_login(comment.get("user")),
        ref=f"#{number}",
        url=comment.get("html_url"),
        state=state,
        body=cap(comment.get("body")),
        thread=thread_key(repo, number),
        extra=replace(
            context or GithubComment(), author_association=_association(comment)
        ).to_json(),
    )


def review_event(
    slug: str,
    repo: str,
    number: int,
    review: dict[str, Any],
    state: str | None,
    context: GithubComment | None = None,
) -> Event:
    submitted = _time(review.get("submitted_at"))
    return Event(
        run_slug=slug,
        source=SOURCE,
        external_id=f"review:{review['id']}",
        kind="review",
        at=submitted,
        updated_at=submitted,
        author=_login(review.get("user")),
        ref=f"#{number}",
        url=review.get("html_url"),
        state=state,
        body=cap(review.get("body")),
        thread=thread_key(repo, number),
        extra=replace(context or GithubComment(), author_association=_association(review))
        .reviewed(review.get("state"))
        .to_json(),
    )
