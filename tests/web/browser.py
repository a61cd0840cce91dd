"""Headless Chromium driven over the DevTools protocol (aiohttp's websocket client): navigate,
evaluate, click, emulate, screenshot. A missing browser fails the test: CI installs Debian's
`chromium` package (see .ci/run)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.waiting import PATIENCE

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def chromium() -> str:
    path = os.environ.get("RUNSCRIBE_CHROMIUM") or next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
    )
    if path is None:
        pytest.fail("headless Chromium is required: apt-get install -y chromium (.ci/run does)")
    return path


class Page:
    """One tab over its DevTools websocket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse):
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        await self.ws.send_json({"id": msg_id, "method": method, "params": params})
        while True:
            message = await asyncio.wait_for(self.ws.receive_json(), PATIENCE)
            if message.get("id") == msg_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self.events.append(message)

    async def wait_event(self, method: str, start: int = 0) -> dict[str, Any]:
        seen = start
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method:
                    return event
            seen = len(self.events)
            self.events.append(await asyncio.wait_for(self.ws.receive_json(), PATIENCE))

    async def goto(self, url: str) -> None:
        mark = len(self.events)
        await self.send("Page.navigate", url=url)
        await self.wait_event("Page.loadEventFired", mark)

    async def eval(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def screenshot(self) -> bytes:
        result = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        return base64.b64decode(result["data"])

    def requested(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def console(self) -> list[str]:
        return [
            str(e["params"]["entry"].get("text"))
            for e in self.events
            if e.get("method") == "Log.entryAdded"
        ]


@asynccontextmanager
async def browser(profile: Path, width: int = 1000, height: int = 1400) -> AsyncIterator[Page]:
    process = await asyncio.create_subprocess_exec(
        chromium(),
        *FLAGS,
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        f"--window-size={width},{height}",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        port = None
        while port is None:
            line = await asyncio.wait_for(process.stderr.readline(), PATIENCE)
            if not line:
                raise RuntimeError("chromium exited before DevTools was listening")
            match = re.search(rb"DevTools listening on ws://[^:]+:(\d+)/", line)
            port = int(match.group(1)) if match else None
        # Keep draining stderr so the browser never blocks on a full pipe.
        drain = asyncio.create_task(process.stderr.read())
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as response:
                targets = json.loads(await response.text())
            target = next(t for t in targets if t.get("type") == "page")
            async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                page = Page(ws)
                for domain in ("Page", "Runtime", "Network", "Log"):
                    await page.send(f"{domain}.enable")
                yield page
        drain.cancel()
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
