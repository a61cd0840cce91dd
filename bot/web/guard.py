"""What stands between the status server and the network: a connection cap that sockets
sending nothing cannot hold, time limits on a quiet connection, a request's head and a whole
request, and one log line (never a traceback) per malformed request.

aiohttp has a keep-alive timeout but none for a client that connects and sends nothing, or sends
its request slowly. Each connection here is wrapped (`GuardedConnection`) and is in one of three
states: quiet (connected or answered, no byte of a next request yet), in its head (some bytes, no
complete head) or busy (a complete head: the request is being read or answered).

- A quiet connection is closed after `idle_timeout`, whether or not it ever sent a byte; a head
  not complete `head_timeout` after its first byte, or a request still unfinished after
  `body_timeout`, closes the connection with one log line.
- At `max_connections` open, a new connection first evicts the quiet connection quiet for
  longest, else the oldest unfinished head; only when every connection is busy is it answered
  503 and closed. So the cap is held only by requests in progress.
- `close_quiet()` closes every connection not busy at once: the server's shutdown then waits
  only for requests in progress, never for a client that sends or reads nothing (aiohttp would
  otherwise keep draining an unread body for its lingering time).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("bot.web.server")

IDLE_TIMEOUT = 10.0  # seconds a connection may stay quiet (connected or answered, nothing sent)
HEAD_TIMEOUT = 10.0  # seconds from a request's first byte to its complete head
BODY_TIMEOUT = 30.0  # seconds for a whole request (head, body, answer)
LINGER = 1.0
GRACE = 5.0
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
    idle_timeout: float = IDLE_TIMEOUT
    #: seconds an unread request body (a refusal's) is drained after the answer, so the client
    #: can read the answer before the connection closes; `close_quiet` cuts it short
    linger: float = LINGER
    #: seconds requests in progress get to finish at shutdown (docker stop kills after 10)
    grace: float = GRACE
    active: int = 0
    refused: int = 0  # answered 503: every open connection was busy
    timed_out: int = 0  # a head or a request too slow
    idled_out: int = 0  # quiet too long
    evicted: int = 0  # closed to make room for a new connection
    open: set[GuardedConnection] = field(default_factory=set)

    def victim(self) -> GuardedConnection | None:
        """The connection to close for a new one: the longest quiet, else the oldest
        unfinished head; None when every connection has a request in progress."""
        quiet = [c for c in self.open if c.state() == "quiet"]
        if quiet:
            return min(quiet, key=lambda c: c.quiet_since)
        heads = [c for c in self.open if c.state() == "head"]
        return min(heads, key=lambda c: c.partial_since or 0.0) if heads else None

    def close_quiet(self) -> int:
        """Close every connection without a request in progress (at shutdown); returns how
        many."""
        quiet = [c for c in self.open if c.state() != "busy"]
        for connection in quiet:
            connection.close()
        return len(quiet)


class GuardedConnection(asyncio.Protocol):
    """One client connection: aiohttp's handler inside, the guard's limits around it."""

    def __init__(self, guard: Guard, inner: Callable[[], Any]):
        self.guard = guard
        self.inner: Any = None
        self._make = inner
        self.transport: asyncio.Transport | None = None
        self._counted = False  # counted in the guard's `active` and `open`
        self.quiet_since = 0.0  # since when no byte of a next request came
        self.partial_since: float | None = None  # first byte of an unfinished head
        self._request_since: float | None = None  # a complete head: the request's own clock
        self._timer: asyncio.TimerHandle | None = None

    def state(self) -> str:
        """'busy' (a request in progress), 'head' (an unfinished head) or 'quiet'."""
        inner = self.inner
        if self._request_since is not None:
            if getattr(inner, "_request_in_progress", False) or getattr(inner, "_messages", None):
                return "busy"
            self._request_since = None  # answered: quiet until the next request
            self.quiet_since = asyncio.get_running_loop().time()
        return "head" if self.partial_since is not None else "quiet"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        guard = self.guard
        if guard.active >= guard.max_connections:
            victim = guard.victim()
            if victim is None:
                self._refuse(transport)
                return
            guard.evicted += 1
            if guard.evicted in (1, 10, 100) or guard.evicted % 1000 == 0:
                log.warning(
                    "%d connections open: closing quiet ones for new ones (%d so far)",
                    guard.active,
                    guard.evicted,
                )
            victim.close()
        guard.active += 1
        guard.open.add(self)
        self._counted = True
        self.quiet_since = asyncio.get_running_loop().time()
        self.inner = self._make()
        self.inner.connection_made(transport)
        self._arm()

    def _refuse(self, transport: asyncio.Transport) -> None:
        guard = self.guard
        guard.refused += 1
        if guard.refused in (1, 10, 100) or guard.refused % 1000 == 0:
            log.warning(
                "refusing connections: %d requests in progress (%d refused so far)",
                guard.active,
                guard.refused,
            )
        transport.write(_BUSY)
        transport.close()

    def close(self) -> None:
        """Close the connection now; it stops counting against the cap at once."""
        self._uncount()
        if self.transport is not None:
            self.transport.close()

    def _uncount(self) -> None:
        if self._counted:
            self._counted = False
            self.guard.active -= 1
            self.guard.open.discard(self)

    def data_received(self, data: bytes) -> None:
        if self.inner is None:
            return
        loop = asyncio.get_running_loop()
        before = getattr(self.inner, "_request_count", 0)
        self.inner.data_received(data)
        after = getattr(self.inner, "_request_count", 0)
        if after != before:
            self.partial_since = None  # a head is complete: the request's own clock runs
            self._request_since = loop.time()
        elif self.partial_since is None and data and self.state() != "busy":
            self.partial_since = loop.time()

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
        if self.inner is None:
            return
        self._uncount()
        self.inner.connection_lost(exc)

    def _arm(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(_TICK, self._tick)

    def _tick(self) -> None:
        now = asyncio.get_running_loop().time()
        guard = self.guard
        state = self.state()
        why = None
        if state == "busy" and now - (self._request_since or now) > guard.body_timeout:
            why = f"request not finished within {guard.body_timeout:g} s"
        elif state == "head" and now - (self.partial_since or now) > guard.head_timeout:
            why = f"no complete request head within {guard.head_timeout:g} s"
        elif state == "quiet" and now - self.quiet_since > guard.idle_timeout:
            guard.idled_out += 1  # a quiet client is not news: counted, not logged
            self.close()
            return
        if why is not None and self.transport is not None:
            guard.timed_out += 1
            peer = self.transport.get_extra_info("peername")
            log.warning("closing the connection from %s: %s", peer[0] if peer else "?", why)
            self.close()
            return
        self._arm()
