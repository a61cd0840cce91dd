"""`bot.web.server` as a real aiohttp server on 127.0.0.1 (an ephemeral port) over a real store."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import aiohttp
import pytest

from bot.store import Store
from bot.web.server import CannotListen, StatusSite, serve
from tests.web.seed import SLUG, seed_run

INTERVAL = 60.0


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Server:
    site: StatusSite
    url: str
    http: aiohttp.ClientSession
    clock: Clock
    store: Store


@pytest.fixture
async def server(store: Store, now: datetime) -> AsyncIterator[Server]:
    await seed_run(store, now)
    await store.cycles.record(now - timedelta(seconds=5), now - timedelta(seconds=2), INTERVAL)
    clock = Clock(now)
    async with (
        serve(store, "127.0.0.1", 0, poll_interval=INTERVAL, clock=clock) as (site, port),
        aiohttp.ClientSession() as http,
    ):
        yield Server(site, f"http://127.0.0.1:{port}", http, clock, store)


async def test_index_and_run_page(server: Server) -> None:
    async with server.http.get(server.url + "/") as response:
        assert response.status == 200
        assert response.content_type == "text/html"
        body = await response.text()
    assert "Hero 70B" in body and 'href="/runs/hero"' in body
    async with server.http.get(server.url + f"/runs/{SLUG}") as response:
        assert response.status == 200
        body = await response.text()
        csp = response.headers["Content-Security-Policy"]
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "step 640 of 1,000" in body and 'href="/"' in body
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp
    assert "frame-ancestors 'none'" in csp
    async with server.http.head(server.url + f"/runs/{SLUG}") as response:
        assert response.status == 200
        assert await response.read() == b""
        assert response.headers["ETag"]


async def test_conditional_requests_and_one_render_per_cycle(server: Server) -> None:
    path = server.url + f"/runs/{SLUG}"
    async with server.http.get(path) as response:
        etag = response.headers["ETag"]
        modified = response.headers["Last-Modified"]
        first = await response.read()
    assert server.site.cache.renders == 1
    async with server.http.get(path, headers={"If-None-Match": etag}) as response:
        assert response.status == 304
        assert await response.read() == b""
        assert response.headers["ETag"] == etag
    async with server.http.get(path, headers={"If-Modified-Since": modified}) as response:
        assert response.status == 304
    async with server.http.get(path, headers={"If-None-Match": '"other"'}) as response:
        assert response.status == 200
        assert await response.read() == first
    assert server.site.cache.renders == 1  # same cycle: served from the cache

    # The poller finishes another cycle: the next request renders again, with a new ETag.
    server.clock.now += timedelta(seconds=50)
    await server.store.cycles.record(server.clock.now, server.clock.now, INTERVAL)
    async with server.http.get(path, headers={"If-None-Match": etag}) as response:
        assert response.status == 200
        assert response.headers["ETag"] != etag
    assert server.site.cache.renders == 2

    # No new cycle, but a whole interval later: rendered once more so relative times stay true.
    server.clock.now += timedelta(seconds=INTERVAL)
    async with server.http.get(path) as response:
        assert response.status == 200
    assert server.site.cache.renders == 3


async def test_unknown_paths_and_methods(server: Server) -> None:
    for path in ("/runs/nope", "/nope", "/runs/", "/runs/hero/extra", "/index.html"):
        async with server.http.get(server.url + path) as response:
            assert response.status == 404, path
    for method, path in (("POST", "/"), ("PUT", "/healthz"), ("DELETE", f"/runs/{SLUG}")):
        async with server.http.request(method, server.url + path) as response:
            assert response.status == 405, (method, path)
            assert set(response.headers["Allow"].split(",")) == {"GET", "HEAD"}


async def test_healthz(server: Server) -> None:
    async with server.http.get(server.url + "/healthz") as response:
        assert response.status == 200
        body = await response.json()
    assert body["status"] == "ok" and body["stuck"] is False
    assert body["last_cycle_at"] == "2026-09-02T11:59:58Z"
    hero = body["runs"][SLUG]
    assert hero["wandb"]["ok"] is True and hero["github"]["ok"] is True
    assert hero["discord"] is None  # no watched channels configured

    # A configured source failing: 503 naming it.
    await server.store.health.record_failure(
        "github", SLUG, server.clock.now, "401 Bad credentials", None
    )
    async with server.http.get(server.url + "/healthz") as response:
        assert response.status == 503
        body = await response.json()
    assert body["runs"][SLUG]["github"] == {
        "ok": False,
        "error": "401 Bad credentials",
        "consecutive_failures": 1,
        "last_success_at": "2026-09-02T11:59:30Z",
        "last_attempt_at": "2026-09-02T12:00:00Z",
    }
    assert body["problems"] == [f"{SLUG}: github failing"]
    await server.store.health.record_success("github", SLUG, server.clock.now)

    # The loop stuck: no cycle for more than three intervals.
    server.clock.now += timedelta(seconds=3 * INTERVAL - 3)
    async with server.http.get(server.url + "/healthz") as response:
        assert response.status == 200
    server.clock.now += timedelta(seconds=2)
    async with server.http.get(server.url + "/healthz") as response:
        assert response.status == 503
        body = await response.json()
    assert body["stuck"] is True and body["problems"] == [
        "no poll cycle since 2026-09-02T11:59:58Z"
    ]


async def test_healthz_before_any_cycle(store: Store, now: datetime) -> None:
    """A new process gets three intervals for its first cycle before it counts as stuck."""
    await seed_run(store, now)
    clock = Clock(now)
    async with (
        serve(store, "127.0.0.1", 0, poll_interval=INTERVAL, clock=clock) as (_site, port),
        aiohttp.ClientSession() as http,
    ):
        async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200
            assert (await response.json())["last_cycle_at"] is None
        clock.now += timedelta(seconds=3 * INTERVAL + 1)
        async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 503
            assert (await response.json())["problems"] == ["no poll cycle recorded yet"]


async def test_a_taken_port_is_one_clear_error(store: Store) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CannotListen, match=f"cannot listen on 127.0.0.1:{port}: "):
            async with serve(store, "127.0.0.1", port, poll_interval=INTERVAL):
                pass


async def test_pages_are_rendered_off_the_event_loop(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HTML of a long timeline is CPU work: it runs in a worker thread, never on the loop
    that serves /healthz, the hooks and (in `runscribe run`) the bot."""
    import threading

    import bot.web.server

    seen: list[str] = []
    for name in ("render_index", "render_run_page"):
        real = getattr(bot.web.server, name)

        def spy(*args: object, _real: object = real) -> str:
            seen.append(threading.current_thread().name)
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(bot.web.server, name, spy)
    for path in ("/", f"/runs/{SLUG}"):
        async with server.http.get(server.url + path) as response:
            assert response.status == 200
    assert len(seen) == 2
    assert threading.main_thread().name not in seen
