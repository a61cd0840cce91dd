"""GitHub REST over a shared `httpx.AsyncClient`: the headers GitHub asks for, conditional
requests, `Link` pagination, retries for 5xx and timeouts, and rate limits turned into
`SourceUnavailable` with the right `retry_after`. The token is sent only to the configured API
host and never logged."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from importlib import metadata
from typing import Any

import httpx
from pydantic import SecretStr

from bot.sources.base import SourceUnavailable

log = logging.getLogger(__name__)
PROBE_TIMEOUT = 10.0  # seconds the reachability probe waits for GitHub

API_VERSION = "2022-11-28"
SECONDARY_MIN_WAIT = 60.0  # GitHub: without retry-after, wait at least a minute
SECONDARY_MAX_WAIT = 3600.0
# A rate limit that lifts within a minute is waited out inside the cycle (at most twice per
# request) rather than failing the source and backing it off.
SHORT_RATE_WAIT = 60.0
SHORT_RATE_WAITS = 2


def _version() -> str:
    try:
        return metadata.version("runscribe")
    except metadata.PackageNotFoundError:
        return "0"


USER_AGENT = f"runscribe/{_version()}"

Sleep = Callable[[float], Awaitable[None]]


@dataclass(slots=True)
class Page:
    """One response. `items` is the JSON list (or a single object wrapped in a list)."""

    status: int  # 200, 304, or 404/410 for a missing thread
    items: list[dict[str, Any]] = field(default_factory=list)
    etag: str | None = None
    next_url: str | None = None

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    @property
    def missing(self) -> bool:
        return self.status in (404, 410)


class GitHubHTTP:
    """Requests for one repository. Counts requests and 304s for `PollResult`."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str,
        repo: str,
        token: SecretStr | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        retry_base: float = 0.5,
        retry_cap: float = 4.0,
        sleep: Sleep = asyncio.sleep,
    ):
        self.client = client
        self.base_url = base_url.rstrip("/")
        self.repo = repo
        self._token = token
        self.timeout = timeout
        self.retries = max(1, retries)
        self.retry_base = retry_base
        self.retry_cap = retry_cap
        self.sleep = sleep
        self.requests = 0
        self.not_modified = 0
        self.secondary_strikes = 0  # consecutive secondary limits; reset by a good poll
        self.short_waits: list[float] = []  # rate limits waited out inside a poll (seconds)
        self.rate_remaining: int | None = None
        self.rate_reset: float | None = None  # epoch seconds

    @property
    def token_value(self) -> str:
        return self._token.get_secret_value() if self._token is not None else ""

    async def answers(self) -> bool:
        """`GET /rate_limit` (free of rate limit): False on a transport error or a 5xx."""
        try:
            response = await self.client.get(
                f"{self.base_url}/rate_limit", headers=self._headers(None), timeout=PROBE_TIMEOUT
            )
        except httpx.HTTPError:
            return False
        return response.status_code < 500

    def url(self, path: str) -> str:
        return f"{self.base_url}/repos/{self.repo}/{path.lstrip('/')}"

    def _headers(self, etag: str | None) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        }
        if self._token is not None and self._token.get_secret_value():
            headers["Authorization"] = f"Bearer {self._token.get_secret_value()}"
        if etag:
            headers["If-None-Match"] = etag
        return headers

    async def get(
        self,
        url: str,
        params: dict[str, str] | None = None,
        *,
        etag: str | None = None,
        what: str,
        thread_level: bool = False,
    ) -> Page:
        """GET one page. `thread_level` requests (one issue, its comments, a PR's reviews)
        answer a missing thread with `Page(404)` instead of failing the whole source."""
        if not url.startswith(self.base_url + "/"):
            # A pagination link to another host: never send the token there.
            raise SourceUnavailable(f"GitHub {what} for {self.repo}: unexpected link to {url!r}")
        response = await self._send(url, params, etag, what)
        status = response.status_code
        if status == 304:
            self.not_modified += 1
            return Page(304, etag=response.headers.get("etag") or etag)
        if status in (404, 410) and thread_level:
            return Page(status)
        if status != 200:
            self._fail(response, what)
        try:
            data = response.json()
        except ValueError:
            raise SourceUnavailable(
                f"GitHub {what} for {self.repo}: response is not JSON"
            ) from None
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list):
            raise SourceUnavailable(f"GitHub {what} for {self.repo}: unexpected response shape")
        next_link = response.links.get("next", {}).get("url")
        return Page(
            200,
            items=[item for item in data if isinstance(item, dict)],
            etag=response.headers.get("etag"),
            next_url=str(next_link) if next_link else None,
        )

    async def _send(
        self, url: str, params: dict[str, str] | None, etag: str | None, what: str
    ) -> httpx.Response:
        headers = self._headers(etag)
        attempt = 0
        rate_waits = 0
        while True:
            attempt += 1
            self.requests += 1
            try:
                response = await self.client.get(
                    url, params=params, headers=headers, timeout=self.timeout
                )
            except httpx.TimeoutException:
                problem = f"timed out after {self.timeout:g} s"
            except httpx.TransportError as exc:
                problem = f"connection failed ({type(exc).__name__})"
            else:
                self._note_rate(response)
                short = self._short_rate_wait(response)
                if short is not None and rate_waits < SHORT_RATE_WAITS:
                    rate_waits += 1
                    self.short_waits.append(short)
                    log.info(
                        "GitHub %s for %s: rate limited; waiting %.0f s", what, self.repo, short
                    )
                    await self.sleep(short)
                    continue
                if response.status_code < 500:
                    return response
                problem = f"HTTP {response.status_code}"
            if attempt >= self.retries:
                raise SourceUnavailable(
                    f"GitHub {what} for {self.repo}: {problem} after {attempt} tries"
                )
            delay = min(self.retry_base * 2 ** (attempt - 1), self.retry_cap)
            log.warning(
                "GitHub %s for %s: %s; retrying in %.1f s (%d/%d)",
                what,
                self.repo,
                problem,
                delay,
                attempt,
                self.retries - 1,
            )
            await self.sleep(delay)

    def _short_rate_wait(self, response: httpx.Response) -> float | None:
        """Seconds to wait when a 403/429 is a rate limit that says it lifts within
        `SHORT_RATE_WAIT` (a `retry-after`, or an exhausted window about to reset), else None."""
        if response.status_code not in (403, 429):
            return None
        headers = response.headers
        wait = _float(headers.get("retry-after"))
        remaining = headers.get("x-ratelimit-remaining")
        if remaining is not None and remaining.strip() == "0":
            reset = _float(headers.get("x-ratelimit-reset"))
            if reset is None:
                return None
            wait = max(reset - self._server_now(response), wait or 0.0)
        if wait is None or wait > SHORT_RATE_WAIT:
            return None
        return max(wait, 1.0)

    def _note_rate(self, response: httpx.Response) -> None:
        remaining = response.headers.get("x-ratelimit-remaining")
        reset = response.headers.get("x-ratelimit-reset")
        if remaining is not None and remaining.strip().lstrip("-").isdigit():
            self.rate_remaining = int(remaining)
        if reset is not None:
            try:
                self.rate_reset = float(reset)
            except ValueError:
                pass

    @staticmethod
    def _server_now(response: httpx.Response) -> float:
        """GitHub's clock (the Date header) so a skewed local clock cannot shorten a wait."""
        date = response.headers.get("date")
        if date:
            try:
                return parsedate_to_datetime(date).timestamp()
            except (TypeError, ValueError):
                pass
        return time.time()

    def _fail(self, response: httpx.Response, what: str) -> None:
        status = response.status_code
        message = _message(response)
        repo = self.repo
        if status in (403, 429):
            wait = self._rate_wait(response, message)
            if wait is not None:
                raise SourceUnavailable(wait[1], retry_after=wait[0])
            raise SourceUnavailable(
                f"token lacks access to {repo} (HTTP 403: {message}); check GITHUB_TOKEN's "
                "permissions",
                fatal=True,
            )
        if status == 401:
            raise SourceUnavailable(
                f"token invalid or lacks access to {repo} (HTTP 401); check GITHUB_TOKEN",
                fatal=True,
            )
        if status in (404, 410):
            hint = (
                "or GITHUB_TOKEN cannot see it"
                if self._token is not None
                else "or private and GITHUB_TOKEN is not set"
            )
            raise SourceUnavailable(
                f"repository {repo} not found or private ({hint}; HTTP {status})", fatal=True
            )
        raise SourceUnavailable(f"GitHub {what} for {repo}: HTTP {status}: {message}")

    def _rate_wait(self, response: httpx.Response, message: str) -> tuple[float, str] | None:
        """(seconds, message) when the 403/429 is a rate limit, else None."""
        headers = response.headers
        retry_after = _float(headers.get("retry-after"))
        remaining = headers.get("x-ratelimit-remaining")
        if remaining is not None and remaining.strip() == "0":
            reset = _float(headers.get("x-ratelimit-reset"))
            wait = reset - self._server_now(response) if reset is not None else 3600.0
            wait = max(wait, retry_after or 0.0, 1.0)
            return wait, f"GitHub rate limit exhausted for {self.repo}; resets in {wait:.0f} s"
        if retry_after is not None:
            self.secondary_strikes += 1
            wait = max(retry_after, 1.0)
            return wait, f"GitHub secondary rate limit for {self.repo}; retry after {wait:.0f} s"
        lowered = message.lower()
        if response.status_code == 429 or "rate limit" in lowered or "abuse" in lowered:
            wait = min(SECONDARY_MIN_WAIT * 2**self.secondary_strikes, SECONDARY_MAX_WAIT)
            self.secondary_strikes += 1
            return wait, f"GitHub secondary rate limit for {self.repo}; backing off {wait:.0f} s"
        return None


def _float(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(data, dict):
        return str(data.get("message", ""))[:200]
    return ""
