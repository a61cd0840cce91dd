"""The status server's guard (`bot.webguard`) against real sockets: slowloris connections are
closed once their head is late, connections over the cap are answered 503 and closed, a
malformed request is one log line without a traceback, and normal requests still work."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

import aiohttp
import pytest

from bot.store import Store
from bot.web import serve
from bot.webguard import Guard
from tests.waiting import PATIENCE
from tests.web.seed import seed_run


async def closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sent until it closed the connection."""
    return await asyncio.wait_for(reader.read(), PATIENCE)


async def test_slow_heads_are_cut_and_connections_over_the_cap_refused(
    store: Store, now: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    await seed_run(store, now)
    guard = Guard(max_connections=20, head_timeout=0.3, body_timeout=5.0)
    async with serve(store, "127.0.0.1", 0, poll_interval=60, guard=guard) as (_site, port):
        streams = []
        for _ in range(30):  # a slowloris: the head is never finished
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: status\r\nX-Slow: 1\r\n")
            await writer.drain()
            streams.append((reader, writer))
        answers = [await closed(reader) for reader, _ in streams]
        refused = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
        assert len(refused) == 10, answers
        assert all(a == b"" for a in answers if a not in refused)  # cut, nothing served
        assert guard.timed_out == 20 and guard.refused == 10
        for _, writer in streams:
            writer.close()
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/healthz") as response,
        ):
            assert response.status in (200, 503) and "runs" in await response.json()
    assert any("no complete request head within 0.3 s" in r.getMessage() for r in caplog.records)


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
