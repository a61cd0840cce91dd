"""A local fake of Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`)
on aiohttp.web, 127.0.0.1, an ephemeral port. Point the SDK at `fake.base_url`.

Replies are scripted: `fake.push(reply, ...)` queues replies served in order; `fake.handler` (a
function of the recorded request, sync or async, returning a Reply) answers when the queue is
empty; with neither, `auto_reply` answers: a forced enrichment tool gets one valid item per fenced
event id, anything else a short text. Every request is logged in `fake.requests` (headers, JSON
body, retry count, time).

Usage is ESTIMATED like a tokenizer would roughly count: input_tokens ≈ characters of the request's
system + messages + tools JSON / 4, output_tokens ≈ characters of the reply content / 4. The
benchmark relies on that estimate; real counts differ by a modest factor, ratios hold.

Prompt caching as the API does it: `cache_control` ({"type": "ephemeral", "ttl": "5m"|"1h"}) on
system text blocks or tools (at most 4 breakpoints; anything else is a 400). The prefix up to the
last breakpoint (tools, then system) is cached when it reaches the model's minimum cacheable length
(`CACHE_MINIMUM`, overridable with `fake.cache_minimum`); below it nothing is cached and nothing
fails. A cached prefix is reported as `cache_creation_input_tokens` on the first request and
`cache_read_input_tokens` while it lives (its TTL on `fake.clock`, refreshed by each read); those
tokens are not in `input_tokens`, as in the real usage object.

Response shapes follow the API: `{"id","type":"message","role":"assistant","model","content":[…],
"stop_reason","stop_sequence","usage":{input_tokens, output_tokens, cache_creation_input_tokens,
cache_read_input_tokens}}`; errors are `{"type":"error","error":{"type","message"}}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import itertools
import json
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}

# Minimum cacheable prefix in tokens, by model family (most specific first); others 1024.
CACHE_MINIMUM: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

_IDS = re.compile(r"<untrusted_data [^>]*\bid=\"(\d+)\"")


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass(slots=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    retry_count: int
    at: float

    @property
    def user_text(self) -> str:
        """All user-message text of the request, joined."""
        parts: list[str] = []
        for message in self.body.get("messages", []):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(b.get("text", "") for b in content if isinstance(b, dict))
        return "\n".join(parts)

    @property
    def input_chars(self) -> int:
        keys = ("system", "messages", "tools", "tool_choice")
        return len(json.dumps({k: self.body.get(k) for k in keys if k in self.body}))

    @property
    def event_ids(self) -> list[int]:
        return [int(i) for i in _IDS.findall(self.user_text)]


@dataclass(slots=True)
class Reply:
    status: int = 200
    content: list[dict[str, Any]] | None = None
    stop_reason: str = "end_turn"
    error_type: str | None = None
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: dict[str, int] | None = None


def text(value: str, **kw: Any) -> Reply:
    return Reply(content=[{"type": "text", "text": value}], **kw)


def tool_use(name: str, payload: Any, **kw: Any) -> Reply:
    block = {"type": "tool_use", "id": "toolu_fake", "name": name, "input": payload}
    return Reply(content=[block], stop_reason="tool_use", **kw)


def error(status: int, message: str = "scripted error", **kw: Any) -> Reply:
    return Reply(
        status=status, error_type=ERROR_TYPES.get(status, "api_error"), message=message, **kw
    )


def slow(seconds: float, reply: Reply | None = None) -> Reply:
    reply = reply or text("too late")
    reply.delay = seconds
    return reply


Handler = Callable[[Recorded], "Reply | Awaitable[Reply]"]


def enrich_items(ids: list[int], **overrides: Any) -> dict[str, Any]:
    return {
        "items": [
            {
                "id": i,
                "summary": overrides.get("summary", f"Event {i} explained in plain words."),
                "tag": overrides.get("tag", "training-dynamics"),
                "incident": overrides.get("incident", False),
                "live_report": overrides.get("live_report", overrides.get("incident", False)),
                "severity": overrides.get("severity", "info"),
                "newsworthy": overrides.get("newsworthy", True),
            }
            for i in ids
        ]
    }


def auto_reply(request: Recorded) -> Reply:
    choice = request.body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        return tool_use(choice["name"], enrich_items(request.event_ids))
    return text("Training is running. No incident is open.")


class FakeAnthropic:
    def __init__(self, *, require_key: bool = True):
        self.requests: list[Recorded] = []
        self.queue: deque[Reply] = deque()
        self.handler: Handler | None = None
        self.require_key = require_key
        self._ids = itertools.count(1)
        self.cache_minimum: int | None = None  # None: the model's own minimum
        self.clock: Callable[[], float] = time.monotonic  # for cache lifetimes
        self._cache: dict[str, float] = {}  # prefix digest -> expiry on `clock`
        self.usages: list[dict[str, Any]] = []  # the usage of every successful message reply
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self.base_url = ""

    def push(self, *replies: Reply) -> None:
        self.queue.extend(replies)

    @property
    def message_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/messages"]

    async def start(self) -> str:
        self._closing = asyncio.Event()  # a new one per start: set when it closes
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr,attr-defined]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            self._closing.set()
            await self._runner.cleanup()
            self._runner = None

    async def _pause(self, seconds: float) -> None:
        """A scripted slow answer: `seconds`, or less once the server closes (the client has
        long given up; a sleeping handler would hold the shutdown for its whole timeout)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)

    async def __aenter__(self) -> FakeAnthropic:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _auth_error(self, request: web.Request) -> web.Response | None:
        auth = request.headers.get("Authorization", "")
        key = request.headers.get("x-api-key", "")
        if self.require_key and not (auth.startswith("Bearer ") and len(auth) > 7) and not key:
            return self._error_response(error(401, "missing credentials"))
        if not request.headers.get("anthropic-version"):
            return self._error_response(error(400, "anthropic-version header is required"))
        return None

    async def _record(self, request: web.Request) -> Recorded:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = {}
        recorded = Recorded(
            path=request.path,
            headers=dict(request.headers),
            body=body if isinstance(body, dict) else {},
            retry_count=int(request.headers.get("x-stainless-retry-count", "0") or 0),
            at=time.monotonic(),
        )
        self.requests.append(recorded)
        return recorded

    async def _count_tokens(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        failure = self._auth_error(request)
        if failure is not None:
            return failure
        return web.json_response({"input_tokens": estimate_tokens("x" * recorded.input_chars)})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        failure = self._auth_error(request)
        if failure is not None:
            return failure
        body = recorded.body
        if not body.get("model") or not body.get("max_tokens") or not body.get("messages"):
            return self._error_response(error(400, "model, max_tokens and messages are required"))
        problem = _cache_control_problem(body)
        if problem:
            return self._error_response(error(400, problem))
        if self.queue:
            reply = self.queue.popleft()
        else:
            produced = (self.handler or auto_reply)(recorded)
            reply = await produced if inspect.isawaitable(produced) else produced
        if reply.delay:
            await self._pause(reply.delay)
        if reply.status != 200:
            return self._error_response(reply)
        content = reply.content or []
        usage = reply.usage or {
            "input_tokens": estimate_tokens("x" * recorded.input_chars),
            "output_tokens": estimate_tokens(json.dumps(content)),
        }
        if reply.usage is None:
            written, read = self._cache_use(body)
            usage["input_tokens"] = max(1, usage["input_tokens"] - written - read)
            usage.update(
                cache_creation_input_tokens=written,
                cache_read_input_tokens=read,
                cache_creation={
                    "ephemeral_5m_input_tokens": written,
                    "ephemeral_1h_input_tokens": 0,
                },
            )
        usage = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, **usage}
        self.usages.append(usage)
        payload = {
            "id": f"msg_fake_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        return web.json_response(payload, headers={"request-id": payload["id"], **reply.headers})

    def _cache_use(self, body: dict[str, Any]) -> tuple[int, int]:
        """(tokens written to the cache, tokens read from it) for this request's prefix."""
        prefix: list[Any] = []
        cached: list[Any] = []
        ttl = 0.0
        blocks = [*(body.get("tools") or [])]
        system = body.get("system")
        if isinstance(system, list):
            blocks += system
        elif isinstance(system, str):
            blocks.append({"type": "text", "text": system})
        for block in blocks:
            prefix.append(block)
            control = block.get("cache_control") if isinstance(block, dict) else None
            if control:
                cached = list(prefix)
                ttl = TTL_SECONDS[control.get("ttl", "5m")]
        if not cached:
            return 0, 0
        text = json.dumps(cached, sort_keys=True)
        tokens = estimate_tokens(text)
        model = str(body.get("model", ""))
        minimum = self.cache_minimum
        if minimum is None:
            minimum = next((n for p, n in CACHE_MINIMUM if model.startswith(p)), 1024)
        if tokens < minimum:
            return 0, 0
        key = hashlib.sha256(f"{model}\x1f{text}".encode()).hexdigest()
        now = self.clock()
        hit = self._cache.get(key, float("-inf")) > now
        self._cache[key] = now + ttl
        return (0, tokens) if hit else (tokens, 0)

    @staticmethod
    def _error_response(reply: Reply) -> web.Response:
        payload = {
            "type": "error",
            "error": {"type": reply.error_type or "api_error", "message": reply.message},
        }
        return web.json_response(payload, status=reply.status, headers=reply.headers)


def _cache_control_problem(body: dict[str, Any]) -> str | None:
    """The API's 400 for a malformed or excessive `cache_control`, else None."""
    controls: list[Any] = []
    system = body.get("system")
    for block in [*(body.get("tools") or []), *(system if isinstance(system, list) else [])]:
        if isinstance(block, dict) and "cache_control" in block:
            controls.append(block["cache_control"])
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and "cache_control" in block:
                controls.append(block["cache_control"])
    for control in controls:
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            return "cache_control: type must be 'ephemeral'"
        if set(control) - {"type", "ttl"} or control.get("ttl", "5m") not in TTL_SECONDS:
            return "cache_control: ttl must be '5m' or '1h'"
    if len(controls) > 4:
        return "A maximum of 4 blocks with cache_control may be provided."
    return None


__all__ = [
    "FakeAnthropic",
    "Recorded",
    "Reply",
    "auto_reply",
    "enrich_items",
    "error",
    "slow",
    "text",
    "tool_use",
]
