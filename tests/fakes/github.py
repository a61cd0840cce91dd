"""A local GitHub REST server for tests and benchmarks, built on `aiohttp.web`.

It holds one or more in-memory repositories that a test mutates between polls (add an issue or
comment, edit, label, close, merge, reopen, review) on a fake clock, and speaks the parts of the
real protocol Runscribe relies on: `since` filtering on `updated_at` (inclusive), `sort` and
`direction`, `per_page` + `page` with `Link` headers (`next`, `last`, `prev`, `first`), a strong
ETag per response body with `304 Not Modified` on `If-None-Match` (a 304 does not count against
the rate limit), `x-ratelimit-*` headers, and injected faults (5xx, secondary limits with or
without `retry-after`, primary exhaustion, slow responses, 401, 404). Every request is logged.

    async with FakeGitHub() as gh:
        repo = gh.repo("acme/rocket")
        n = repo.add_issue("Launch plan", labels=["hero-run"])
        ...  # point GITHUB_API_URL at gh.url
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

START = datetime(2026, 9, 1, 9, 0, 0, tzinfo=UTC)
WEB = "https://github.com"


def iso(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def user(login: str) -> dict[str, Any]:
    bot = login.endswith("[bot]")
    return {
        "login": login,
        "id": abs(hash(login)) % 10_000_000,
        "type": "Bot" if bot else "User",
        "site_admin": False,
    }


@dataclass
class Issue:
    number: int
    id: int
    title: str
    body: str | None
    user: str
    created_at: datetime
    updated_at: datetime
    labels: list[str] = field(default_factory=list)
    state: str = "open"
    closed_at: datetime | None = None
    is_pull: bool = False
    merged_at: datetime | None = None
    comments: int = 0
    association: str = "MEMBER"  # GitHub's author_association of the opener


@dataclass
class Comment:
    id: int
    number: int
    body: str
    user: str
    created_at: datetime
    updated_at: datetime
    association: str = "MEMBER"


@dataclass
class Review:
    id: int
    number: int
    body: str
    user: str
    state: str
    submitted_at: datetime
    association: str = "MEMBER"


@dataclass
class Fault:
    """What the next matching request gets. kind: status | secondary | exhausted | slow."""

    kind: str
    status: int = 502
    retry_after: int | None = None
    delay: float = 0.0
    path: str | None = None  # only requests whose path contains this


@dataclass
class Logged:
    method: str
    path: str
    query: dict[str, str]
    status: int
    if_none_match: str | None
    user_agent: str | None
    accept: str | None
    api_version: str | None
    authorized: bool


class FakeRepo:
    """One repository. Mutations stamp `updated_at` with the server's fake clock, like GitHub
    (a new comment or review also bumps the thread's `updated_at`)."""

    def __init__(self, server: FakeGitHub, full_name: str):
        self.server = server
        self.full_name = full_name
        self.issues: dict[int, Issue] = {}
        self.comments: dict[int, Comment] = {}
        self.reviews: dict[int, Review] = {}
        self._next_number = 1

    @property
    def now(self) -> datetime:
        return self.server.now

    def _touch(self, issue: Issue) -> None:
        issue.updated_at = self.now

    def add_issue(
        self,
        title: str,
        body: str | None = "",
        *,
        user: str = "alice",
        labels: Iterable[str] = (),
        pull: bool = False,
        association: str = "MEMBER",
    ) -> int:
        number = self._next_number
        self._next_number += 1
        self.issues[number] = Issue(
            number=number,
            id=self.server.new_id(),
            title=title,
            body=body,
            user=user,
            created_at=self.now,
            updated_at=self.now,
            labels=list(labels),
            is_pull=pull,
            association=association,
        )
        return number

    def add_pull(self, title: str, body: str | None = "", **kwargs: Any) -> int:
        return self.add_issue(title, body, pull=True, **kwargs)

    def edit_issue(self, number: int, *, title: str | None = None, body: str | None = None) -> None:
        issue = self.issues[number]
        if title is not None:
            issue.title = title
        if body is not None:
            issue.body = body
        self._touch(issue)

    def add_label(self, number: int, label: str) -> None:
        issue = self.issues[number]
        issue.labels.append(label)
        self._touch(issue)

    def close(self, number: int) -> None:
        issue = self.issues[number]
        issue.state, issue.closed_at = "closed", self.now
        self._touch(issue)

    def reopen(self, number: int) -> None:
        issue = self.issues[number]
        issue.state, issue.closed_at = "open", None
        self._touch(issue)

    def merge(self, number: int) -> None:
        issue = self.issues[number]
        assert issue.is_pull, "only pull requests merge"
        issue.state, issue.closed_at, issue.merged_at = "closed", self.now, self.now
        self._touch(issue)

    def add_comment(
        self, number: int, body: str, *, user: str = "bob", association: str = "MEMBER"
    ) -> int:
        comment = Comment(
            id=self.server.new_id(),
            number=number,
            body=body,
            user=user,
            created_at=self.now,
            updated_at=self.now,
            association=association,
        )
        self.comments[comment.id] = comment
        issue = self.issues[number]
        issue.comments += 1
        self._touch(issue)
        return comment.id

    def edit_comment(self, comment_id: int, body: str) -> None:
        comment = self.comments[comment_id]
        comment.body = body
        comment.updated_at = self.now

    def add_review(
        self,
        number: int,
        body: str,
        *,
        user: str = "carol",
        state: str = "COMMENTED",
        association: str = "MEMBER",
    ) -> int:
        review = Review(
            id=self.server.new_id(),
            number=number,
            body=body,
            user=user,
            state=state,
            submitted_at=self.now,
            association=association,
        )
        self.reviews[review.id] = review
        self._touch(self.issues[number])
        return review.id

    # --- JSON like GitHub's -------------------------------------------------------------------

    def issue_json(self, issue: Issue) -> dict[str, Any]:
        api = f"{self.server.url}/repos/{self.full_name}"
        kind = "pull" if issue.is_pull else "issues"
        data: dict[str, Any] = {
            "url": f"{api}/issues/{issue.number}",
            "repository_url": api,
            "comments_url": f"{api}/issues/{issue.number}/comments",
            "html_url": f"{WEB}/{self.full_name}/{kind}/{issue.number}",
            "id": issue.id,
            "node_id": f"I_{issue.id}",
            "number": issue.number,
            "title": issue.title,
            "user": user(issue.user),
            "labels": [
                {"id": abs(hash(name)) % 10**9, "name": name, "color": "ededed"}
                for name in issue.labels
            ],
            "state": issue.state,
            "locked": False,
            "comments": issue.comments,
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "closed_at": iso(issue.closed_at),
            "author_association": issue.association,
            "body": issue.body,
            "state_reason": "completed" if issue.state == "closed" else None,
        }
        if issue.is_pull:
            data["pull_request"] = {
                "url": f"{api}/pulls/{issue.number}",
                "html_url": f"{WEB}/{self.full_name}/pull/{issue.number}",
                "diff_url": f"{WEB}/{self.full_name}/pull/{issue.number}.diff",
                "patch_url": f"{WEB}/{self.full_name}/pull/{issue.number}.patch",
                "merged_at": iso(issue.merged_at),
            }
        return data

    def comment_json(self, comment: Comment) -> dict[str, Any]:
        api = f"{self.server.url}/repos/{self.full_name}"
        issue = self.issues[comment.number]
        kind = "pull" if issue.is_pull else "issues"
        return {
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": f"{WEB}/{self.full_name}/{kind}/{comment.number}#issuecomment-{comment.id}",
            "issue_url": f"{api}/issues/{comment.number}",
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "user": user(comment.user),
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.updated_at),
            "author_association": comment.association,
            "body": comment.body,
        }

    def review_json(self, review: Review) -> dict[str, Any]:
        api = f"{self.server.url}/repos/{self.full_name}"
        return {
            "id": review.id,
            "node_id": f"PRR_{review.id}",
            "user": user(review.user),
            "body": review.body,
            "state": review.state,
            "html_url": f"{WEB}/{self.full_name}/pull/{review.number}"
            f"#pullrequestreview-{review.id}",
            "pull_request_url": f"{api}/pulls/{review.number}",
            "submitted_at": iso(review.submitted_at),
            "commit_id": "0" * 40,
            "author_association": review.association,
        }

    # --- webhook deliveries, as GitHub sends them ----------------------------------------------

    def repository_json(self) -> dict[str, Any]:
        owner, name = self.full_name.split("/")
        return {
            "id": abs(hash(self.full_name)) % 10**9,
            "node_id": "R_kgDO",
            "name": name,
            "full_name": self.full_name,
            "private": False,
            "owner": user(owner),
            "html_url": f"{WEB}/{self.full_name}",
            "url": f"{self.server.url}/repos/{self.full_name}",
            "default_branch": "main",
        }

    def pull_json(self, issue: Issue) -> dict[str, Any]:
        """A pull request as `pull_request` and `pull_request_review` deliveries carry it (the
        pulls API's shape, not the issues listing's)."""
        api = f"{self.server.url}/repos/{self.full_name}"
        assert issue.is_pull
        return {
            "url": f"{api}/pulls/{issue.number}",
            "id": issue.id,
            "node_id": f"PR_{issue.id}",
            "html_url": f"{WEB}/{self.full_name}/pull/{issue.number}",
            "diff_url": f"{WEB}/{self.full_name}/pull/{issue.number}.diff",
            "patch_url": f"{WEB}/{self.full_name}/pull/{issue.number}.patch",
            "issue_url": f"{api}/issues/{issue.number}",
            "number": issue.number,
            "state": issue.state,
            "locked": False,
            "title": issue.title,
            "user": user(issue.user),
            "body": issue.body,
            "labels": [
                {"id": abs(hash(name)) % 10**9, "name": name, "color": "ededed"}
                for name in issue.labels
            ],
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "closed_at": iso(issue.closed_at),
            "merged_at": iso(issue.merged_at),
            "merge_commit_sha": None,
            "draft": False,
            "author_association": issue.association,
            "merged": issue.merged_at is not None,
            "comments": issue.comments,
            "head": {"ref": "feature", "sha": "1" * 40},
            "base": {"ref": "main", "sha": "2" * 40},
        }

    def delivery(
        self,
        event: str,
        action: str | None = None,
        *,
        number: int | None = None,
        comment_id: int | None = None,
        review_id: int | None = None,
        sender: str = "octo",
    ) -> dict[str, Any]:
        """The payload of one delivery of `event` (`issues`, `issue_comment`, `pull_request`,
        `pull_request_review`, `ping`, or any other name with just the repository)."""
        payload: dict[str, Any] = {}
        if action is not None:
            payload["action"] = action
        if event == "ping":
            payload.update(
                zen="Keep it logically awesome.",
                hook_id=1,
                hook={"type": "Repository", "id": 1, "name": "web", "active": True,
                      "events": ["issues", "issue_comment"], "config": {"content_type": "json"}},
            )  # fmt: skip
        elif event in ("issues", "issue_comment"):
            assert number is not None
            payload["issue"] = self.issue_json(self.issues[number])
            if comment_id is not None:
                payload["comment"] = self.comment_json(self.comments[comment_id])
        elif event in ("pull_request", "pull_request_review"):
            assert number is not None
            payload["number"] = number
            payload["pull_request"] = self.pull_json(self.issues[number])
            if review_id is not None:
                review = self.review_json(self.reviews[review_id])
                # webhooks spell a review's state in lower case ("approved"); REST in upper
                payload["review"] = dict(review, state=review["state"].lower())
        payload["repository"] = self.repository_json()
        payload["sender"] = user(sender)
        return payload


def signed_delivery(
    event: str, payload: dict[str, Any], secret: str | None, *, delivery_id: str | None = None
) -> tuple[dict[str, str], bytes]:
    """Headers and body as GitHub's hookshot posts them (`secret` None: unsigned)."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = {
        "User-Agent": "GitHub-Hookshot/8a3f1c2",
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "1",
        "X-GitHub-Hook-Installation-Target-Type": "repository",
        "X-GitHub-Hook-Installation-Target-ID": "1",
    }
    if secret is not None:
        key = secret.encode()
        headers["X-Hub-Signature"] = "sha1=" + hmac.new(key, body, hashlib.sha1).hexdigest()
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
    return headers, body


class FakeGitHub:
    """The server. `url` is the API base to use as GITHUB_API_URL once started."""

    def __init__(self, *, token: str | None = None, rate_limit: int = 5000):
        self.token = token  # when set, requests must carry `Authorization: Bearer <token>`
        # whether the token may write issues (comment, edit a comment): GitHub answers a token
        # without that permission 403 "Resource not accessible by personal access token"
        self.may_write = True
        self.now = START
        self.repos: dict[str, FakeRepo] = {}
        self.faults: list[Fault] = []
        self.log: list[Logged] = []
        self.rate_limit = rate_limit
        self.remaining = rate_limit
        self.reset_at = self.now + timedelta(hours=1)
        self.url = ""
        self._ids = 1000
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> str:
        self._closing = asyncio.Event()  # a new one per start: set when it closes
        app = web.Application()
        app.router.add_get("/repos/{owner}/{name}/issues", self._list_issues)
        app.router.add_get("/repos/{owner}/{name}/issues/comments", self._list_comments)
        app.router.add_get(r"/repos/{owner}/{name}/issues/{number:\d+}", self._get_issue)
        app.router.add_get(
            r"/repos/{owner}/{name}/issues/{number:\d+}/comments", self._issue_comments
        )
        app.router.add_get(r"/repos/{owner}/{name}/pulls/{number:\d+}/reviews", self._reviews)
        app.router.add_post(
            r"/repos/{owner}/{name}/issues/{number:\d+}/comments", self._create_comment
        )
        app.router.add_patch(
            r"/repos/{owner}/{name}/issues/comments/{comment_id:\d+}", self._update_comment
        )
        app.router.add_get("/rate_limit", self._rate_limit)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            self._closing.set()
            await self._runner.cleanup()
            self._runner = None

    async def _pause(self, seconds: float) -> None:
        """A scripted slow answer: `seconds`, or less once the server closes (the client has
        long given up; a sleeping handler would hold the shutdown for its whole timeout)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)

    async def __aenter__(self) -> FakeGitHub:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- test controls -------------------------------------------------------------------------

    def repo(self, full_name: str) -> FakeRepo:
        if full_name not in self.repos:
            self.repos[full_name] = FakeRepo(self, full_name)
        return self.repos[full_name]

    def new_id(self) -> int:
        self._ids += 1
        return self._ids

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        if self.now >= self.reset_at:
            self.remaining = self.rate_limit
            self.reset_at = self.now + timedelta(hours=1)
        return self.now

    def fail_next(self, count: int = 1, status: int = 502, *, path: str | None = None) -> None:
        self.faults += [Fault("status", status=status, path=path) for _ in range(count)]

    def secondary_limit(self, *, retry_after: int | None = None, count: int = 1) -> None:
        self.faults += [Fault("secondary", retry_after=retry_after) for _ in range(count)]

    def exhaust(self) -> None:
        """Spend the primary limit: requests get 403 with remaining 0 until the reset."""
        self.remaining = 0

    def slow_next(self, delay: float, count: int = 1) -> None:
        self.faults += [Fault("slow", delay=delay) for _ in range(count)]

    def requests(self, since: int = 0) -> list[Logged]:
        return self.log[since:]

    # --- protocol ------------------------------------------------------------------------------

    def _rate_headers(self) -> dict[str, str]:
        used = self.rate_limit - self.remaining
        return {
            "x-ratelimit-limit": str(self.rate_limit),
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-used": str(used),
            "x-ratelimit-reset": str(int(self.reset_at.timestamp())),
            "x-ratelimit-resource": "core",
            "Date": format_datetime(self.now, usegmt=True),
        }

    def _record(self, request: web.Request, status: int) -> None:
        self.log.append(
            Logged(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                status=status,
                if_none_match=request.headers.get("If-None-Match"),
                user_agent=request.headers.get("User-Agent"),
                accept=request.headers.get("Accept"),
                api_version=request.headers.get("X-GitHub-Api-Version"),
                authorized="Authorization" in request.headers,
            )
        )

    def _error(
        self, request: web.Request, status: int, message: str, **headers: str
    ) -> web.Response:
        self._record(request, status)
        body = json.dumps({"message": message, "documentation_url": "https://docs.github.com/rest"})
        return web.Response(
            status=status,
            text=body,
            content_type="application/json",
            headers={**self._rate_headers(), **headers},
        )

    async def _gate(self, request: web.Request) -> web.Response | None:
        """Faults, auth, rate limit: a response when the request does not get through."""
        fault = next((f for f in self.faults if f.path is None or f.path in request.path), None)
        if fault is not None:
            self.faults.remove(fault)
            if fault.kind == "slow":
                await self._pause(fault.delay)
            elif fault.kind == "status":
                if fault.status == 401:
                    return self._error(request, 401, "Bad credentials")
                if fault.status == 404:
                    return self._error(request, 404, "Not Found")
                return self._error(request, fault.status, "Server Error")
            elif fault.kind == "secondary":
                extra = {} if fault.retry_after is None else {"retry-after": str(fault.retry_after)}
                return self._error(
                    request,
                    403,
                    "You have exceeded a secondary rate limit. Please wait a few minutes "
                    "before you try again.",
                    **extra,
                )
        if not request.headers.get("User-Agent"):
            return self._error(request, 403, "Request forbidden by administrative rules.")
        if self.token is not None:
            auth = request.headers.get("Authorization", "")
            if auth not in (f"Bearer {self.token}", f"token {self.token}"):
                return self._error(request, 401, "Bad credentials")
        if self.remaining <= 0:
            return self._error(request, 403, "API rate limit exceeded for user.")
        return None

    async def _rate_limit(self, request: web.Request) -> web.Response:
        """GET /rate_limit: GitHub answers it even when the limit is used up, and it does not
        count against it."""
        fault = next((f for f in self.faults if f.path is None or f.path in request.path), None)
        if fault is not None and fault.kind == "status":
            self.faults.remove(fault)
            return self._error(request, fault.status, "Server Error")
        rate = {
            "limit": self.rate_limit,
            "remaining": self.remaining,
            "reset": int(self.now.timestamp()) + 3600,
            "used": self.rate_limit - self.remaining,
        }
        self._record(request, 200)
        return web.json_response({"resources": {"core": rate}, "rate": rate})

    def _repo(self, request: web.Request) -> FakeRepo | None:
        return self.repos.get(f"{request.match_info['owner']}/{request.match_info['name']}")

    def _respond(self, request: web.Request, data: Any, headers: dict[str, str] | None = None):
        body = json.dumps(data, separators=(",", ":"))
        etag = '"' + hashlib.sha256(body.encode()).hexdigest()[:40] + '"'
        base = {**(headers or {}), "ETag": etag, "Cache-Control": "private, max-age=60"}
        if request.headers.get("If-None-Match") == etag:
            self._record(request, 304)
            return web.Response(status=304, headers={**self._rate_headers(), **base})
        self.remaining -= 1
        self._record(request, 200)
        return web.Response(
            status=200,
            text=body,
            content_type="application/json",
            charset="utf-8",
            headers={**self._rate_headers(), **base},
        )

    def _paged(self, request: web.Request, items: list[Any]) -> web.Response:
        try:
            per_page = max(1, min(int(request.query.get("per_page", "30")), 100))
            page = max(1, int(request.query.get("page", "1")))
        except ValueError:
            return self._error(request, 422, "Validation Failed")
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []

        def link(number: int, rel: str) -> str:
            query = dict(request.query)
            query["page"] = str(number)
            return f'<{self.url}{request.path}?{urlencode(query)}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return self._respond(request, chunk, {"Link": ", ".join(links)} if links else None)

    @staticmethod
    def _since(request: web.Request) -> datetime | None:
        value = request.query.get("since")
        return parse_iso(value) if value else None

    @staticmethod
    def _order(request: web.Request, items: list[Any], default_sort: str, default_dir: str):
        sort = request.query.get("sort", default_sort)
        direction = request.query.get("direction", default_dir)
        key = {
            "created": lambda x: (x.created_at, x.id),
            "updated": lambda x: (x.updated_at, x.id),
            "comments": lambda x: (getattr(x, "comments", 0), x.id),
        }.get(sort, lambda x: (x.created_at, x.id))
        return sorted(items, key=key, reverse=direction == "desc")

    async def _list_issues(self, request: web.Request) -> web.Response:
        if (blocked := await self._gate(request)) is not None:
            return blocked
        repo = self._repo(request)
        if repo is None:
            return self._error(request, 404, "Not Found")
        state = request.query.get("state", "open")
        since = self._since(request)
        items = [
            i
            for i in repo.issues.values()
            if (state == "all" or i.state == state) and (since is None or i.updated_at >= since)
        ]
        items = self._order(request, items, "created", "desc")
        return self._paged(request, [repo.issue_json(i) for i in items])

    async def _list_comments(self, request: web.Request) -> web.Response:
        if (blocked := await self._gate(request)) is not None:
            return blocked
        repo = self._repo(request)
        if repo is None:
            return self._error(request, 404, "Not Found")
        since = self._since(request)
        items = [c for c in repo.comments.values() if since is None or c.updated_at >= since]
        items = self._order(request, items, "created", "asc")
        return self._paged(request, [repo.comment_json(c) for c in items])

    async def _get_issue(self, request: web.Request) -> web.Response:
        if (blocked := await self._gate(request)) is not None:
            return blocked
        repo = self._repo(request)
        issue = repo.issues.get(int(request.match_info["number"])) if repo else None
        if repo is None or issue is None:
            return self._error(request, 404, "Not Found")
        return self._respond(request, repo.issue_json(issue))

    async def _issue_comments(self, request: web.Request) -> web.Response:
        if (blocked := await self._gate(request)) is not None:
            return blocked
        repo = self._repo(request)
        number = int(request.match_info["number"])
        if repo is None or number not in repo.issues:
            return self._error(request, 404, "Not Found")
        since = self._since(request)
        items = [
            c
            for c in repo.comments.values()
            if c.number == number and (since is None or c.updated_at >= since)
        ]
        items.sort(key=lambda c: (c.created_at, c.id))
        return self._paged(request, [repo.comment_json(c) for c in items])

    async def _writable(self, request: web.Request) -> tuple[FakeRepo | None, web.Response | None]:
        if (blocked := await self._gate(request)) is not None:
            return None, blocked
        if not self.may_write:
            return None, self._error(
                request, 403, "Resource not accessible by personal access token"
            )
        repo = self._repo(request)
        if repo is None:
            return None, self._error(request, 404, "Not Found")
        return repo, None

    async def _create_comment(self, request: web.Request) -> web.Response:
        """POST /repos/{owner}/{repo}/issues/{number}/comments: 201 and the new comment."""
        repo, refused = await self._writable(request)
        if refused is not None or repo is None:
            return refused or self._error(request, 404, "Not Found")
        number = int(request.match_info["number"])
        body = (await request.json()).get("body")
        if number not in repo.issues:
            return self._error(request, 404, "Not Found")
        if not isinstance(body, str) or not body:
            return self._error(request, 422, "Validation Failed")
        comment_id = repo.add_comment(number, body, user="runscribe[bot]", association="NONE")
        self._record(request, 201)
        data = json.dumps(repo.comment_json(repo.comments[comment_id]))
        return web.Response(status=201, text=data, content_type="application/json")

    async def _update_comment(self, request: web.Request) -> web.Response:
        """PATCH /repos/{owner}/{repo}/issues/comments/{id}: 200 and the edited comment."""
        repo, refused = await self._writable(request)
        if refused is not None or repo is None:
            return refused or self._error(request, 404, "Not Found")
        comment_id = int(request.match_info["comment_id"])
        body = (await request.json()).get("body")
        if comment_id not in repo.comments:
            return self._error(request, 404, "Not Found")
        if not isinstance(body, str) or not body:
            return self._error(request, 422, "Validation Failed")
        repo.edit_comment(comment_id, body)
        self._record(request, 200)
        data = json.dumps(repo.comment_json(repo.comments[comment_id]))
        return web.Response(status=200, text=data, content_type="application/json")

    async def _reviews(self, request: web.Request) -> web.Response:
        if (blocked := await self._gate(request)) is not None:
            return blocked
        repo = self._repo(request)
        number = int(request.match_info["number"])
        issue = repo.issues.get(number) if repo else None
        if repo is None or issue is None or not issue.is_pull:
            return self._error(request, 404, "Not Found")
        items = sorted((r for r in repo.reviews.values() if r.number == number), key=lambda r: r.id)
        return self._paged(request, [repo.review_json(r) for r in items])
