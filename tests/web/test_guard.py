"""The status server's guard (`bot.web.guard`) against real sockets: slowloris connections are
closed once their head is late, sockets that send nothing are closed and evicted for new
connections (the cap is held only by requests in progress), the shutdown waits for no quiet
client, a malformed request is one log line without a traceback, and normal requests work."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

import aiohttp
import pytest

from bot.hooks.routes import ALERTMANAGER_MAX_BODY, HookEndpoints
from bot.store import Store
from bot.web.guard import Guard
from bot.web.server import serve
from tests.fakes.alertmanager import Alert, message, post
from tests.waiting import PATIENCE, until
from tests.web.seed import seed_run

TOKEN = "alertmanager-token-0123456789"


async def closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sent until it closed the connection."""
    return await asyncio.wait_for(reader.read(), PATIENCE)


async def slowloris(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection whose request head is never finished."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: status\r\nX-Slow: 1\r\n")
    await writer.drain()
    return reader, writer


async def test_slow_heads_are_cut(
    store: Store, now: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    await seed_run(store, now)
    guard = Guard(head_timeout=0.3, idle_timeout=PATIENCE)
    async with serve(store, "127.0.0.1", 0, poll_interval=60, guard=guard) as (_site, port):
        streams = [await slowloris(port) for _ in range(3)]
        assert [await closed(reader) for reader, _ in streams] == [b""] * 3  # nothing served
        assert guard.timed_out == 3 and guard.active == 0
        for _, writer in streams:
            writer.close()
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/healthz") as response,
        ):
            assert response.status in (200, 503) and "runs" in await response.json()
    assert any("no complete request head within 0.3 s" in r.getMessage() for r in caplog.records)


async def test_unfinished_heads_are_evicted_oldest_first_for_new_connections(
    store: Store, now: datetime
) -> None:
    await seed_run(store, now)
    guard = Guard(max_connections=20, head_timeout=PATIENCE, idle_timeout=PATIENCE)
    async with serve(store, "127.0.0.1", 0, poll_interval=60, guard=guard) as (_site, port):
        streams = []
        for n in range(30):
            streams.append(await slowloris(port))
            opened = min(n + 1, 20)
            await until(
                lambda opened=opened: (
                    guard.active == opened  # type: ignore[misc]
                    and all(c.partial_since is not None for c in guard.open)
                )
            )
        oldest = [await closed(reader) for reader, _ in streams[:10]]
        assert oldest == [b""] * 10  # closed, nothing served, no 503
        assert guard.evicted == 10 and guard.refused == 0 and guard.active == 20
        assert all(not reader.at_eof() for reader, _ in streams[10:])
        for _, writer in streams:
            writer.close()


async def test_only_requests_in_progress_hold_the_cap(store: Store, now: datetime) -> None:
    """Connections whose request is being read are never evicted: past the cap, a new one is
    answered 503 and closed."""
    await seed_run(store, now)
    hooks = HookEndpoints(store, github_secret=None, token=TOKEN)
    guard = Guard(max_connections=5, idle_timeout=60.0)
    async with serve(store, "127.0.0.1", 0, poll_interval=60, hooks=hooks, guard=guard) as (
        _site,
        port,
    ):
        busy = []
        for _ in range(5):  # authenticated posts whose body is still on its way
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(post_head(port, 1000) + b'{"version": "4"')
            await writer.drain()
            busy.append((reader, writer))
        await until(lambda: [c.state() for c in guard.open] == ["busy"] * 5)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert (await closed(reader)).startswith(b"HTTP/1.1 503")
        writer.close()
        assert guard.refused == 1 and guard.evicted == 0
        for _, writer in busy:
            writer.close()


@pytest.mark.parametrize("idle", [100, 1000])
async def test_idle_sockets_never_lock_out_healthz_or_the_webhooks(
    store: Store, now: datetime, idle: int
) -> None:
    """Sockets that connect and send nothing: the cap stays at 100, the newest connections
    (the probes) are served, and /healthz and an Alertmanager POST are answered."""
    await seed_run(store, now)
    hooks = HookEndpoints(store, github_secret=None, token=TOKEN)
    guard = Guard(idle_timeout=PATIENCE)  # they would hold their places for the whole test
    async with (
        serve(store, "127.0.0.1", 0, poll_interval=60, hooks=hooks, guard=guard) as (_s, port),
        aiohttp.ClientSession() as http,
    ):
        sockets = [await asyncio.open_connection("127.0.0.1", port) for _ in range(idle)]
        await until(lambda: guard.active + guard.evicted == idle)
        assert guard.active == min(idle, guard.max_connections)
        async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status in (200, 503) and "runs" in await response.json()
        alert = Alert(labels={"alertname": "NodeDown", "run": "hero"}, starts_at=now)
        url = f"http://127.0.0.1:{port}/hooks/alertmanager"
        status, answer = await post(http, url, message([alert]), TOKEN)
        assert status == 200 and answer["stored"] == 1
        assert guard.refused == 0 and guard.active <= guard.max_connections
        for _, writer in sockets:
            writer.close()


async def test_a_socket_that_never_sends_a_byte_is_closed(store: Store, now: datetime) -> None:
    await seed_run(store, now)
    guard = Guard(idle_timeout=0.3)
    async with serve(store, "127.0.0.1", 0, poll_interval=60, guard=guard) as (_site, port):
        quiet = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        assert [await closed(reader) for reader, _ in quiet] == [b""] * 3
        assert guard.idled_out == 3 and guard.active == 0
        # so is a keep-alive connection left quiet after its answer
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: status\r\n\r\n")
        answer = await closed(reader)
        assert answer.split(b" ")[1] in (b"200", b"503") and b'"runs"' in answer
        assert guard.idled_out == 4
        writer.close()
        for _, quiet_writer in quiet:
            quiet_writer.close()


async def test_shutdown_does_not_wait_for_a_client_that_sends_and_reads_nothing(
    store: Store, now: datetime
) -> None:
    """Issue 39: after a 413 the server drained the unread body for aiohttp's lingering time
    (10 s) and its shutdown waited for it (docker stop's SIGKILL comes after 10 s). Here the
    server would drain, and give requests in progress, longer than the test's patience: the
    shutdown must not wait for a connection whose request was answered."""
    await seed_run(store, now)
    hooks = HookEndpoints(store, github_secret=None, token=TOKEN)
    guard = Guard(linger=10 * PATIENCE, grace=10 * PATIENCE)
    exited = asyncio.Event()

    async def server_then_exit(ready: asyncio.Future[int], stop: asyncio.Event) -> None:
        async with serve(store, "127.0.0.1", 0, poll_interval=60, hooks=hooks, guard=guard) as (
            _site,
            port,
        ):
            ready.set_result(port)
            await stop.wait()
        exited.set()

    ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    task = asyncio.create_task(server_then_exit(ready, stop))
    port = await ready
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(post_head(port, 50 * ALERTMANAGER_MAX_BODY) + b"x" * 65_536)
    await writer.drain()
    assert (await reader.readline()).startswith(b"HTTP/1.1 413")
    await until(lambda: [c.state() for c in guard.open] != ["busy"])  # answered, draining
    stop.set()  # the client neither sends the rest of its body nor reads, nor closes
    await asyncio.wait_for(task, PATIENCE)  # a hang guard: the old server waited for the client
    assert exited.is_set() and await closed(reader) is not None
    writer.close()


def post_head(port: int, length: int) -> bytes:
    return (
        "POST /hooks/alertmanager HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


async def test_a_malformed_request_is_one_line_without_a_traceback(
    store: Store, now: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    await seed_run(store, now)
    with caplog.at_level(logging.DEBUG, logger="aiohttp"):
        async with serve(store, "127.0.0.1", 0, poll_interval=60) as (_site, port):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: status\r\nthis is not a header\r\n\r\n")
            await writer.drain()
            answer = await closed(reader)
            writer.close()
    assert answer.split(b" ")[1] == b"400", answer
    errors = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert errors[0].exc_info is None and "\n" not in errors[0].getMessage()
    assert "Error handling request" in errors[0].getMessage()
