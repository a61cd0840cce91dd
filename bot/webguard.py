"""What stands between the status server and the network: a connection cap, a time limit on a
request's head and on its body, and one log line (never a traceback) per malformed request.

aiohttp has a keep-alive timeout but none for a client that sends its request slowly: 200
slowloris connections held 200 file descriptors for a minute. Each connection here is wrapped
(`GuardedConnection`): over `max_connections` open ones it is answered 503 and closed; a request
head not complete `head_timeout` seconds after its first byte, or a request (its body included)
still unfinished after `body_timeout`, closes the connection with one log line.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("bot.web")

HEAD_TIMEOUT = 10.0  # seconds from a request's first byte to its complete head
BODY_TIMEOUT = 30.0  # seconds for a whole request (head, body, answer)
MAX_CONNECTIONS = 100
_TICK = 0.25
_BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class OneLineLogger(logging.LoggerAdapter):  # type: ignore[type-arg,unused-ignore]
    """aiohttp's request handler logs "Error handling request" with a traceback for every
    malformed request; this says it in one line."""

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        error = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        text = str(msg) % args if args else str(msg)
        reason = f"{type(error).__name__}: {error}" if error is not None else "error"
        self.logger.warning("%s: %s", text, reason.splitlines()[0][:200])

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        kwargs.pop("exc_info", None)
        self.logger.debug(msg, *args, **kwargs)


@dataclass
class Guard:
    max_connections: int = MAX_CONNECTIONS
    head_timeout: float = HEAD_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    active: int = 0
    refused: int = 0
    timed_out: int = 0
    open: set[GuardedConnection] = field(default_factory=set)


class GuardedConnection(asyncio.Protocol):
    """One client connection: aiohttp's handler inside, the guard's limits around it."""

    def __init__(self, guard: Guard, inner: Callable[[], Any]):
        self.guard = guard
        self.inner: Any = None
        self._make = inner
        self.transport: asyncio.Transport | None = None
        self._refused = False
        self._count = 0
        self._partial_since: float | None = None
        self._request_since: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        guard = self.guard
        if guard.active >= guard.max_connections:
            self._refused = True
            guard.refused += 1
            if guard.refused in (1, 10, 100) or guard.refused % 1000 == 0:
                log.warning(
                    "refusing connections: %d already open (%d refused so far)",
                    guard.active,
                    guard.refused,
                )
            transport.write(_BUSY)
            transport.close()
            return
        guard.active += 1
        guard.open.add(self)
        self.inner = self._make()
        self.inner.connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._refused or self.inner is None:
            return
        loop = asyncio.get_running_loop()
        before = getattr(self.inner, "_request_count", 0)
        self.inner.data_received(data)
        after = getattr(self.inner, "_request_count", 0)
        if after != before:
            self._partial_since = None  # a head is complete: the request's own clock runs
            self._request_since = loop.time()
        elif self._partial_since is None and data:
            self._partial_since = loop.time()

    def eof_received(self) -> bool | None:
        if self.inner is None:
            return None
        result: bool | None = self.inner.eof_received()
        return result

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._refused or self.inner is None:
            return
        self.guard.active -= 1
        self.guard.open.discard(self)
        self.inner.connection_lost(exc)

    def _arm(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(_TICK, self._tick)

    def _tick(self) -> None:
        now = asyncio.get_running_loop().time()
        inner = self.inner
        busy = bool(getattr(inner, "_request_in_progress", False))
        if self._request_since is not None and not busy and not getattr(inner, "_messages", None):
            self._request_since = None  # answered: idle until the next request
        why = None
        if self._partial_since is not None and now - self._partial_since > self.guard.head_timeout:
            why = f"no complete request head within {self.guard.head_timeout:g} s"
        elif (
            self._request_since is not None and now - self._request_since > self.guard.body_timeout
        ):
            why = f"request not finished within {self.guard.body_timeout:g} s"
        if why is not None and self.transport is not None:
            self.guard.timed_out += 1
            peer = self.transport.get_extra_info("peername")
            log.warning("closing the connection from %s: %s", peer[0] if peer else "?", why)
            self.transport.close()
            return
        self._arm()
