"""The status page over HTTP: `/` (every run), `/runs/<slug>` and `/healthz`, from the store.

One aiohttp application (aiohttp comes with discord.py), used by `runscribe web` and, when
`RUNSCRIBE_WEB_PORT` is set, by the bot process itself. Pages are rendered at most once per poll
cycle: a cached page is reused while the poller has not finished a new cycle and the page is less
than one interval old. Responses carry `ETag` and `Last-Modified` and answer conditional requests
with 304. Only GET and HEAD exist, besides the push endpoints (`POST /hooks/…`, `bot.hooks`,
mounted when given); anything else is 405, unknown paths 404.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from aiohttp import web

from bot.core.errors import UserFacingError
from bot.core.timeutil import utcnow
from bot.outputs.statuspage import DEFAULT_DAYS, gather_index, gather_run_page, health_report
from bot.render.page import render_index, render_run_page
from bot.store import Store
from bot.web.guard import Guard, GuardedConnection, OneLineLogger

if TYPE_CHECKING:
    from bot.hooks.routes import HookEndpoints

log = logging.getLogger(__name__)

DEFAULT_PORT = 8080
SLUG_PATTERN = r"[a-z0-9][a-z0-9_-]{0,63}"
_META_CSP = re.compile(r'http-equiv="Content-Security-Policy" content="([^"]*)"')
# Added to every response; the page's own CSP (by hash) comes from its meta tag.
_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

Clock = Callable[[], datetime]


class CannotListen(UserFacingError):
    """The server could not bind its address; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Rendered:
    version: object
    rendered_at: datetime
    body: bytes
    etag: str
    csp: str


class PageCache:
    """Rendered pages by key, each valid for one poll cycle."""

    def __init__(self) -> None:
        self._pages: dict[str, Rendered] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.renders = 0  # how many times a page was actually rendered

    async def get(
        self,
        key: str,
        version: object,
        now: datetime,
        max_age: timedelta,
        render: Callable[[], Awaitable[str]],
    ) -> Rendered:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._pages.get(key)
            if (
                cached is not None
                and cached.version == version
                and timedelta(0) <= now - cached.rendered_at < max_age
            ):
                return cached
            text = await render()
            self.renders += 1
            body = text.encode("utf-8")
            match = _META_CSP.search(text)
            page = Rendered(
                version=version,
                rendered_at=now.replace(microsecond=0),
                body=body,
                etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
                csp=html.unescape(match.group(1)) if match else "default-src 'none'",
            )
            self._pages[key] = page
            return page


class StatusSite:
    """The request handlers over one store."""

    def __init__(
        self,
        store: Store,
        *,
        poll_interval: float,
        days: int = DEFAULT_DAYS,
        clock: Clock = utcnow,
        hooks: HookEndpoints | None = None,
    ):
        self.store = store
        self.hooks = hooks
        self.poll_interval = poll_interval
        self.days = days
        self.clock = clock
        self.started_at = clock()
        self.cache = PageCache()
        self.guard: Guard | None = None  # the connection guard, once serving (bot.web.guard)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_security_headers])
        app.router.add_get("/", self.index)
        app.router.add_get(f"/runs/{{slug:{SLUG_PATTERN}}}", self.run_page)
        app.router.add_get("/healthz", self.healthz)
        if self.hooks is not None:
            self.hooks.add_routes(app)
        return app

    async def _version(self) -> tuple[object, timedelta]:
        cycle = await self.store.cycles.last()
        interval = cycle.interval_seconds if cycle else self.poll_interval
        return (cycle.finished_at if cycle else None), timedelta(seconds=interval)

    async def index(self, request: web.Request) -> web.StreamResponse:
        now = self.clock()
        version, max_age = await self._version()

        async def render() -> str:
            entries = await gather_index(self.store, now, lambda slug: f"/runs/{slug}")
            # HTML of a long timeline is tens of ms of CPU: never on the event loop
            return await asyncio.to_thread(render_index, entries, now)

        page = await self.cache.get("/", version, now, max_age, render)
        return _conditional(request, page)

    async def run_page(self, request: web.Request) -> web.StreamResponse:
        slug = request.match_info["slug"]
        if await self.store.runs.get(slug) is None:
            raise web.HTTPNotFound(text=f"unknown run {slug!r}\n")
        now = self.clock()
        version, max_age = await self._version()

        async def render() -> str:
            page = await gather_run_page(
                self.store,
                slug,
                now,
                days=self.days,
                index_href="/",
                poll_interval=self.poll_interval,
            )
            return await asyncio.to_thread(render_run_page, page)

        page = await self.cache.get(f"/runs/{slug}", version, now, max_age, render)
        return _conditional(request, page)

    async def healthz(self, request: web.Request) -> web.StreamResponse:
        health = await health_report(
            self.store,
            self.clock(),
            poll_interval=self.poll_interval,
            watching_since=self.started_at,
        )
        body = health.body
        if self.hooks is not None:
            body = {**body, "hooks": self.hooks.health()}
        return web.Response(
            status=200 if health.ok else 503,
            text=json.dumps(body, indent=2) + "\n",
            content_type="application/json",
            headers={"Cache-Control": "no-store"},
        )


def _conditional(request: web.Request, page: Rendered) -> web.StreamResponse:
    headers = {
        "ETag": page.etag,
        "Last-Modified": _http_date(page.rendered_at),
        "Cache-Control": "no-cache",
        "Content-Security-Policy": page.csp + "; frame-ancestors 'none'",
    }
    match = request.headers.get("If-None-Match")
    if match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in match.split(",")}
        if page.etag in tags or "*" in tags:
            return web.Response(status=304, headers=headers)
    elif request.if_modified_since is not None and page.rendered_at <= request.if_modified_since:
        return web.Response(status=304, headers=headers)
    return web.Response(body=page.body, content_type="text/html", charset="utf-8", headers=headers)


def _http_date(value: datetime) -> str:
    return value.strftime("%a, %d %b %Y %H:%M:%S GMT")


@web.middleware
async def _security_headers(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        exc.headers.update(_HEADERS)
        raise
    response.headers.update(_HEADERS)
    return response


@asynccontextmanager
async def serve(
    store: Store,
    host: str,
    port: int,
    *,
    poll_interval: float,
    days: int = DEFAULT_DAYS,
    clock: Clock = utcnow,
    hooks: HookEndpoints | None = None,
    guard: Guard | None = None,
) -> AsyncIterator[tuple[StatusSite, int]]:
    """Serve the status site (and the push endpoints, `hooks`) until the block exits; yields
    the site and the bound port (so port 0 picks a free one)."""
    site = StatusSite(store, poll_interval=poll_interval, days=days, clock=clock, hooks=hooks)
    guard = guard or Guard()
    runner = web.AppRunner(
        site.app(),
        access_log=None,
        handle_signals=False,
        logger=OneLineLogger(logging.getLogger("aiohttp.server"), {}),
        lingering_time=guard.linger,
        shutdown_timeout=guard.grace,
    )
    await runner.setup()
    server: asyncio.Server | None = None
    try:
        handlers = runner.server
        assert handlers is not None
        try:  # each connection inside the guard: a cap, head and body timeouts (bot.web.guard)
            server = await asyncio.get_running_loop().create_server(
                lambda: GuardedConnection(guard, handlers), host, port, reuse_address=True
            )
        except OSError as exc:  # a port in use, an address this host does not have
            raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        bound = server.sockets[0].getsockname()[1] if server.sockets else port
        site.guard = guard
        log.info("status page on http://%s:%d/", host, bound)
        yield site, bound
    finally:
        if server is not None:
            server.close()
        # Requests in progress may finish; a connection with none (quiet, an unfinished head,
        # an unread body being drained) is closed now, not waited for.
        guard.close_quiet()
        await runner.cleanup()
