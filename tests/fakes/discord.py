"""A local fake of Discord's gateway (websocket) and REST API, enough for discord.py 2.7 to log
in, sync commands, receive interactions and messages, answer, post, edit, open threads and read
history, on 127.0.0.1 with an ephemeral port.

What it does like Discord, because discord.py depends on it:
- JSON responses carry `Content-Type: application/json` exactly (discord.py parses nothing else);
- the gateway speaks HELLO → IDENTIFY → READY (with `resume_gateway_url`) → GUILD_CREATE, answers
  heartbeats, and honours RESUME on the resume URL, replaying events missed while disconnected;
- 429s carry a `Via` header and a JSON body with a small `retry_after`, so discord.py retries them;
- `POST /interactions/{id}/{token}/callback?with_response=1` returns the callback JSON;
- `nonce` + `enforce_nonce` dedup message creates per channel, as Discord does for a few minutes;
- `GET /channels/{id}/messages` pages like Discord: at most `limit` (1-100, default 50) messages,
  always newest first; with `before` the newest ones older than it, with `after` the *oldest* ones
  newer than it (still listed newest first, which is why discord.py pages on with the first id);
- active threads arrive in GUILD_CREATE and from `GET /guilds/{id}/threads/active`;
- a token refused at IDENTIFY (or `reject_identify`) closes the gateway with 4004;
- messages are edited (`PATCH`, multipart with files too: `attachments` lists the ones kept, new
  files are added; without it every attachment stays), deleted (`DELETE`), and pinned or
  unpinned at `/channels/{id}/messages/pins/{message_id}` (discord.py 2.7's route) and the older
  `/channels/{id}/pins/{message_id}`, which needs Manage Messages or Pin Messages
  (`bot_permissions`; Discord answers 403 code 50013 without); an `attachment://name` embed image
  is resolved to the attachment's URL, or dropped when the message has no such attachment;
- a message that does not exist answers 404 code 10008 (Unknown Message);
- a channel can be made to refuse (`refuse`), as Discord does when the bot loses a permission:
  403 `{"message": "Missing Permissions", "code": 50013}` for posts there and in its threads
  (Send Messages removed), or for every request (`methods=None`: View Channel removed, 50001
  Missing Access), until `allow`.

Everything it receives is recorded (`requests`, `messages`, `callbacks`) for assertions, and
failures can be injected (`inject(...)`) per method and path pattern.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

from tests.waiting import PATIENCE

DISCORD_EPOCH_MS = 1420070400000
JSON = "application/json"
# View Channel, Send Messages, Embed Links, Attach Files, Read Message History
EVERYONE_PERMISSIONS = 0x400 | 0x800 | 0x4000 | 0x8000 | 0x10000
MANAGE_MESSAGES = 0x2000
PIN_MESSAGES = 1 << 51


def snowflake(counter: itertools.count[int] = itertools.count(1)) -> int:
    """A realistic, increasing snowflake (timestamp in the high bits)."""
    now_ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
    return (now_ms << 22) | (next(counter) & 0x3FFFFF)


def snowflake_at(when: datetime, counter: itertools.count[int] = itertools.count(1)) -> int:
    """A snowflake whose timestamp is `when` (a message written then)."""
    ms = int(when.timestamp() * 1000) - DISCORD_EPOCH_MS
    return (ms << 22) | (next(counter) & 0x3FFFFF)


def iso_now() -> str:
    return datetime.now(UTC).isoformat()


def _json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=json.dumps(data).encode(), status=status, content_type=JSON, headers=headers or {}
    )


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    json: Any
    files: list[tuple[str, bytes]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 0


@dataclass
class Injection:
    method: str
    pattern: re.Pattern[str]
    status: int
    count: int
    retry_after: float = 0.05
    hang: float | None = None  # record the request, then wait this long before answering
    record_first: bool = False  # apply the effect (e.g. create the message) before failing


@dataclass
class Refusal:
    status: int
    message: str
    code: int
    methods: frozenset[str] | None  # None: every request about the channel


@dataclass
class Interaction:
    id: int
    token: str
    payload: dict[str, Any]
    callback: asyncio.Future[dict[str, Any]]
    received_at: float
    answered_at: float | None = None
    finished_at: float | None = None  # the answer itself: a direct reply or the first followup
    followups: list[dict[str, Any]] = field(default_factory=list)
    original: dict[str, Any] | None = None  # the message the response created or edited
    files: list[tuple[str, bytes]] = field(default_factory=list)


class FakeDiscord:
    def __init__(
        self,
        *,
        guild_id: int = 900_000_000_000_000_001,
        app_id: int = 900_000_000_000_000_002,
        bot_id: int = 900_000_000_000_000_002,
        owner_id: int = 900_000_000_000_000_003,
        channels: dict[int, str] | None = None,
        token: str = "fake-token",
    ):
        self.guild_id = guild_id
        self.app_id = app_id
        self.bot_id = bot_id
        self.owner_id = owner_id
        self.token = token
        self.channels: dict[int, dict[str, Any]] = {}
        for cid, name in (channels or {}).items():
            self.add_channel(cid, name)
        self.requests: list[Recorded] = []
        self.messages: dict[int, list[dict[str, Any]]] = {}
        self.commands: dict[int | None, list[dict[str, Any]]] = {}
        self.interactions: dict[int, Interaction] = {}
        self.injections: list[Injection] = []
        self.in_flight: dict[str, int] = {}  # requests being answered, by path
        self.max_in_flight: dict[str, int] = {}  # the most ever answered at once, by path
        self.no_threads: set[int] = set()  # channels where thread creation is forbidden
        self.refusals: dict[int, Refusal] = {}  # channels that refuse the bot (`refuse`)
        self.nonces: dict[tuple[int, str], dict[str, Any]] = {}
        self.honor_nonce = True  # False: test the history-marker check on its own
        # The bot's permissions for pinning: @everyone's by default (no Manage Messages).
        self.bot_permissions = EVERYONE_PERMISSIONS
        self.threads: dict[
            int, dict[str, Any]
        ] = {}  # threads by id (archived ones too, as their metadata says)
        self.roles: list[dict[str, Any]] = []  # guild roles besides @everyone
        self.pins: dict[int, dict[str, str]] = {}  # channel → pinned message id → when
        self.uploads: dict[str, bytes] = {}  # attachment id → the file's bytes
        self.reject_identify = False  # True: close the gateway with 4004 at IDENTIFY
        # True: the gateway answers the websocket upgrade with 503, as Discord does in an outage
        self.gateway_refused = False
        self.identifies: list[dict[str, Any]] = []
        self.resumes: list[dict[str, Any]] = []
        self.session_id = "fake-session-1"
        self.seq = 0
        self._backlog: list[dict[str, Any]] = []  # dispatched events, for RESUME replay
        self._ws: web.WebSocketResponse | None = None
        self._ws_ready = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.changed = asyncio.Condition()
        self._closing = asyncio.Event()

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_get("/", self._gateway)
        app.router.add_get("/resume", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)  # 0: any free port
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr,attr-defined]
        return self

    async def close(self) -> None:
        self._closing.set()
        if self._ws is not None and not self._ws.closed:
            await self._ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeDiscord:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    # --- fixtures -------------------------------------------------------------------------------

    def add_channel(self, channel_id: int, name: str, type: int = 0) -> None:
        self.channels[channel_id] = {
            "id": str(channel_id),
            "type": type,
            "name": name,
            "guild_id": str(self.guild_id),
            "position": len(self.channels),
            "permission_overwrites": [],
            "nsfw": False,
            "parent_id": None,
            "topic": None,
            "last_message_id": None,
            "rate_limit_per_user": 0,
        }

    def add_thread(self, thread_id: int, parent_id: int, name: str) -> dict[str, Any]:
        """An active public thread under `parent_id` (no gateway event: use it for threads that
        exist before the bot connects or appear while it is away)."""
        thread = {
            "id": str(thread_id),
            "type": 11,
            "guild_id": str(self.guild_id),
            "parent_id": str(parent_id),
            "owner_id": "42",
            "name": name,
            "message_count": 0,
            "member_count": 1,
            "rate_limit_per_user": 0,
            "last_message_id": None,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": iso_now(),
                "locked": False,
            },
        }
        self.threads[thread_id] = thread
        self.messages.setdefault(thread_id, [])
        return thread

    def add_role(self, role_id: int, name: str, *, permissions: int = 0) -> None:
        self.roles.append(
            {
                "id": str(role_id),
                "name": name,
                "permissions": str(permissions),
                "position": len(self.roles) + 1,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            }
        )

    def user(self, user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
        return {
            "id": str(user_id),
            "username": name,
            "global_name": name,
            "discriminator": "0",
            "avatar": None,
            "bot": bot,
        }

    def member(
        self,
        user_id: int,
        name: str,
        *,
        permissions: int = 0x400 | 0x800,
        roles: list[int] | None = None,
    ) -> dict[str, Any]:
        return {
            "user": self.user(user_id, name),
            "roles": [str(role) for role in roles or []],
            "joined_at": "2026-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
            "flags": 0,
            "permissions": str(permissions),
            "nick": None,
        }

    def _guild(self) -> dict[str, Any]:
        return {
            "id": str(self.guild_id),
            "name": "Fake Lab",
            "icon": None,
            "owner_id": str(self.owner_id),
            "unavailable": False,
            "member_count": 2,
            "features": [],
            "roles": [
                {
                    "id": str(self.guild_id),
                    "name": "@everyone",
                    "permissions": str(EVERYONE_PERMISSIONS),
                    "position": 0,
                    "color": 0,
                    "hoist": False,
                    "managed": False,
                    "mentionable": False,
                    "flags": 0,
                },
                *self.roles,
            ],
            "channels": list(self.channels.values()),
            "threads": [t for t in self.threads.values() if not _archived(t)],
            "members": [self.member(self.bot_id, "Runscribe")],
            "emojis": [],
            "stickers": [],
            "voice_states": [],
            "presences": [],
        }

    def message(
        self,
        channel_id: int,
        content: str,
        *,
        author_id: int | None = None,
        author_name: str = "Runscribe",
        bot: bool = False,
        embeds: list[dict[str, Any]] | None = None,
        message_id: int | None = None,
        extra: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        author_id = author_id or self.bot_id
        if message_id is None and at is not None:
            message_id = snowflake_at(at)
        data = {
            "id": str(message_id or snowflake()),
            "channel_id": str(channel_id),
            "guild_id": str(self.guild_id),
            "type": 0,
            "content": content,
            "author": self.user(author_id, author_name, bot=bot or author_id == self.bot_id),
            "timestamp": at.isoformat() if at is not None else iso_now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": embeds or [],
            "pinned": False,
            "flags": 0,
            "components": [],
        }
        data.update(extra or {})
        return data

    # --- failure injection ----------------------------------------------------------------------

    def inject(
        self,
        method: str,
        pattern: str,
        status: int,
        count: int = 1,
        *,
        retry_after: float = 0.05,
        hang: float | None = None,
        record_first: bool = False,
    ) -> Injection:
        """Answer the next `count` matching requests with `status` (429 gets `Via` and a JSON
        body so discord.py retries; 5xx a JSON error). `hang` delays the answer instead."""
        injection = Injection(
            method.upper(), re.compile(pattern), status, count, retry_after, hang, record_first
        )
        self.injections.append(injection)
        return injection

    def refuse(
        self,
        channel_id: int,
        *,
        status: int = 403,
        message: str = "Missing Permissions",
        code: int = 50013,
        methods: tuple[str, ...] | None = ("POST",),
    ) -> None:
        """Refuse the bot in a channel and its threads until `allow`: by default posts (Send
        Messages removed); `methods=None` every request (View Channel removed)."""
        chosen = frozenset(m.upper() for m in methods) if methods is not None else None
        self.refusals[channel_id] = Refusal(status, message, code, chosen)

    def allow(self, channel_id: int) -> None:
        self.refusals.pop(channel_id, None)

    def _refusal(self, method: str, path: str) -> Refusal | None:
        match = re.match(r"^/channels/(\d+)", path)
        if match is None or not self.refusals:
            return None
        channel = int(match.group(1))
        thread = self.threads.get(channel)
        if thread is not None and channel not in self.refusals:
            channel = int(thread["parent_id"])
        refusal = self.refusals.get(channel)
        if refusal is None or (refusal.methods is not None and method not in refusal.methods):
            return None
        return refusal

    def _injection(self, method: str, path: str) -> Injection | None:
        for injection in self.injections:
            if (
                injection.count > 0
                and injection.method == method
                and injection.pattern.search(path)
            ):
                injection.count -= 1
                return injection
        return None

    # --- gateway --------------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        if self.gateway_refused:
            return web.Response(status=503, text="gateway unavailable")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        previous, self._ws = self._ws, ws
        if previous is not None and not previous.closed:
            await previous.close(code=4000)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            frame = json.loads(msg.data)
            op = frame.get("op")
            if op == 1:
                await ws.send_str(json.dumps({"op": 11}))
            elif op == 2:
                await self._identify(ws, frame["d"])
            elif op == 6:
                await self._resume(ws, frame["d"])
        if self._ws is ws:
            self._ws = None
            self._ws_ready.clear()
        return ws

    async def _identify(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> None:
        self.identifies.append(data)
        if self.reject_identify or data.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        self.session_id = f"fake-session-{len(self.identifies)}"
        self.seq = 0
        self._backlog.clear()
        ready = {
            "v": 10,
            "user": {**self.user(self.bot_id, "Runscribe", bot=True), "verified": True},
            "guilds": [{"id": str(self.guild_id), "unavailable": True}],
            "session_id": self.session_id,
            "resume_gateway_url": f"ws://127.0.0.1:{self.port}/resume",
            "application": {"id": str(self.app_id), "flags": 0},
            "private_channels": [],
        }
        await self._send(ws, "READY", ready)
        await self._send(ws, "GUILD_CREATE", self._guild())
        self._ws_ready.set()

    async def _resume(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> None:
        self.resumes.append(data)
        if data.get("session_id") != self.session_id or data.get("token") != self.token:
            await ws.send_str(json.dumps({"op": 9, "d": False}))
            return
        for frame in self._backlog:
            if frame["s"] > int(data.get("seq") or 0):
                await ws.send_str(json.dumps(frame))
        await self._send(ws, "RESUMED", {})
        self._ws_ready.set()

    async def _send(self, ws: web.WebSocketResponse | None, event: str, data: Any) -> None:
        self.seq += 1
        frame = {"op": 0, "t": event, "s": self.seq, "d": data}
        if event not in ("READY", "RESUMED"):
            self._backlog.append(frame)
        if ws is not None and not ws.closed:
            await ws.send_str(json.dumps(frame))

    async def wait_connected(self, within: float = PATIENCE) -> None:
        await asyncio.wait_for(self._ws_ready.wait(), within)

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a gateway event now, or buffer it for the RESUME replay while disconnected."""
        await self._send(self._ws if self._ws_ready.is_set() else None, event, data)

    async def say(
        self,
        channel_id: int,
        content: str,
        *,
        author_id: int = 42,
        author_name: str = "dana",
        bot: bool = False,
        gateway: bool = True,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """A member posts in a channel or thread: the message joins its history and, unless
        `gateway` is False (an event the gateway never delivers), MESSAGE_CREATE is dispatched
        (or buffered for a RESUME while the bot is disconnected, and lost on a new session).
        `at`: when it was written (its snowflake and timestamp), default now."""
        message = self.message(
            channel_id, content, author_id=author_id, author_name=author_name, bot=bot, at=at
        )
        self._channel_messages(channel_id).append(message)
        if gateway:
            await self.dispatch("MESSAGE_CREATE", message)
        return message

    async def edit(
        self, channel_id: int, message_id: str, content: str, *, gateway: bool = True
    ) -> dict[str, Any]:
        """A member edits their message: history shows the new text and `edited_timestamp`."""
        for message in self._channel_messages(channel_id):
            if message["id"] == message_id:
                message["content"] = content
                message["edited_timestamp"] = iso_now()
                if gateway:
                    await self.dispatch("MESSAGE_UPDATE", dict(message))
                return message
        raise KeyError(message_id)

    async def drop_websocket(self, code: int = 4000) -> None:
        """Close the gateway connection the way a network blip or a Discord restart does; the
        client should reconnect to `resume_gateway_url` and RESUME."""
        ws, self._ws = self._ws, None
        self._ws_ready.clear()
        if ws is not None:
            await ws.close(code=code)

    # --- interactions ---------------------------------------------------------------------------

    async def slash(
        self,
        name: str,
        options: list[dict[str, Any]] | None = None,
        *,
        user_id: int = 800_000_000_000_000_001,
        user_name: str = "alice",
        permissions: int = 0x400 | 0x800,
        channel_id: int | None = None,
        subcommand: str | None = None,
        roles: list[int] | None = None,
    ) -> Interaction:
        """Dispatch a CHAT_INPUT interaction for `/name` and return its record; await
        `record.callback` for the initial response. `roles`: the member's role ids."""
        command = next(
            (c for cmds in self.commands.values() for c in cmds if c["name"] == name), None
        )
        opts = options or []
        if subcommand is not None:
            opts = [{"name": subcommand, "type": 1, "options": opts}]
        data = {
            "id": command["id"] if command else str(snowflake()),
            "name": name,
            "type": 1,
            "options": opts,
        }
        if command and command.get("guild_id"):
            data["guild_id"] = command["guild_id"]
        return await self._interaction(
            2, data, user_id, user_name, permissions, channel_id, roles=roles
        )

    async def click(
        self,
        message: dict[str, Any],
        custom_id: str,
        *,
        user_id: int = 800_000_000_000_000_001,
        user_name: str = "alice",
    ) -> Interaction:
        data = {"custom_id": custom_id, "component_type": 2}
        return await self._interaction(
            3, data, user_id, user_name, 0x400 | 0x800, int(message["channel_id"]), message
        )

    async def _interaction(
        self,
        type_: int,
        data: dict[str, Any],
        user_id: int,
        user_name: str,
        permissions: int,
        channel_id: int | None,
        message: dict[str, Any] | None = None,
        *,
        roles: list[int] | None = None,
    ) -> Interaction:
        channel_id = channel_id or next(iter(self.channels), 1)
        interaction_id = snowflake()
        token = f"itoken-{interaction_id}"
        payload: dict[str, Any] = {
            "id": str(interaction_id),
            "application_id": str(self.app_id),
            "type": type_,
            "token": token,
            "version": 1,
            "attachment_size_limit": 10 * 1024 * 1024,
            "guild_id": str(self.guild_id),
            "channel_id": str(channel_id),
            "channel": self.channels.get(channel_id)
            or self.threads.get(channel_id, {"id": str(channel_id), "type": 0}),
            "member": self.member(user_id, user_name, permissions=permissions, roles=roles),
            "app_permissions": str(0x7FFFFFFFFF),
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": str(self.guild_id)},
            "context": 0,
            "data": data,
        }
        if message is not None:
            payload["message"] = message
        record = Interaction(
            interaction_id,
            token,
            payload,
            asyncio.get_running_loop().create_future(),
            time.monotonic(),
        )
        self.interactions[interaction_id] = record
        await self.dispatch("INTERACTION_CREATE", payload)
        return record

    # --- REST -----------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        body: Any = None
        files: list[tuple[str, bytes]] = []
        if request.content_type.startswith("multipart/"):
            reader = await request.multipart()
            async for part in reader:
                if part.name == "payload_json":  # type: ignore[union-attr]
                    body = json.loads(await part.text())  # type: ignore[union-attr]
                else:
                    files.append((part.filename or "", bytes(await part.read())))  # type: ignore[union-attr]
        elif request.can_read_body:
            raw = await request.read()
            body = json.loads(raw) if raw else None
        recorded = Recorded(
            request.method, path, dict(request.query), body, files, dict(request.headers)
        )
        self.requests.append(recorded)
        self.in_flight[path] = self.in_flight.get(path, 0) + 1
        self.max_in_flight[path] = max(self.max_in_flight.get(path, 0), self.in_flight[path])
        try:
            return await self._answer(request, path, recorded)
        finally:
            self.in_flight[path] -= 1

    async def _answer(self, request: web.Request, path: str, recorded: Recorded) -> web.Response:
        refusal = self._refusal(request.method, path)
        if refusal is not None:
            recorded.status = refusal.status
            async with self.changed:
                self.changed.notify_all()
            return _json_response(
                {"message": refusal.message, "code": refusal.code}, refusal.status
            )
        injection = self._injection(request.method, path)
        if injection is not None:
            effect: web.Response | None = None
            if injection.record_first:  # the request takes effect, then the answer fails
                effect = await self._route(request.method, path, recorded)
            if injection.hang is not None:
                try:  # ends early when the server closes, so teardown never waits on it
                    await asyncio.wait_for(self._closing.wait(), injection.hang)
                except TimeoutError:
                    pass
            if injection.status:
                recorded.status = injection.status
                return self._failure(injection)
            if effect is not None:
                recorded.status = effect.status
                return effect
        try:
            response = await self._route(request.method, path, recorded)
        except _HTTPError as exc:
            response = _json_response({"message": exc.message, "code": exc.code}, exc.status)
        recorded.status = response.status
        async with self.changed:
            self.changed.notify_all()
        return response

    def _failure(self, injection: Injection) -> web.Response:
        if injection.status == 429:
            return _json_response(
                {"message": "You are being rate limited.", "retry_after": injection.retry_after,
                 "global": False},
                429,
                {"Via": "1.1 google", "Retry-After": str(injection.retry_after),
                 "X-RateLimit-Scope": "user"},
            )  # fmt: skip
        return _json_response({"message": "injected failure", "code": 0}, injection.status)

    async def _route(self, method: str, path: str, req: Recorded) -> web.Response:
        for route_method, pattern, handler in self._ROUTES:
            if route_method != method:
                continue
            match = re.fullmatch(pattern, path)
            if match:
                return await handler(self, req, *match.groups())
        raise _HTTPError(404, f"no fake route for {method} {path}", 0)

    async def _me(self, req: Recorded) -> web.Response:
        if req.headers.get("Authorization") != f"Bot {self.token}":
            raise _HTTPError(401, "401: Unauthorized", 0)
        return _json_response(self.user(self.bot_id, "Runscribe", bot=True))

    async def _app_info(self, req: Recorded) -> web.Response:
        return _json_response(
            {
                "id": str(self.app_id),
                "name": "Runscribe",
                "description": "",
                "icon": None,
                "bot_public": False,
                "bot_require_code_grant": False,
                "owner": self.user(self.owner_id, "owner"),
                "verify_key": "0" * 64,
                "flags": 0,
                "interactions_endpoint_url": None,
            }
        )

    async def _put_commands(
        self, req: Recorded, app_id: str, guild_id: str | None = None
    ) -> web.Response:
        out = []
        for command in req.json or []:
            stored = dict(command)
            stored.setdefault("id", str(snowflake()))
            stored["application_id"] = app_id
            stored.setdefault("description", "")
            stored.setdefault("type", 1)
            stored["version"] = str(snowflake())
            if guild_id:
                stored["guild_id"] = guild_id
            out.append(stored)
        self.commands[int(guild_id) if guild_id else None] = out
        return _json_response(out)

    async def _put_guild_commands(self, req: Recorded, app_id: str, guild_id: str) -> web.Response:
        return await self._put_commands(req, app_id, guild_id)

    async def _get_commands(
        self, req: Recorded, app_id: str, guild_id: str | None = None
    ) -> web.Response:
        return _json_response(self.commands.get(int(guild_id) if guild_id else None, []))

    async def _callback(self, req: Recorded, interaction_id: str, token: str) -> web.Response:
        record = self.interactions.get(int(interaction_id))
        if record is None or record.token != token:
            raise _HTTPError(404, "Unknown interaction", 10062)
        if record.callback.done():
            raise _HTTPError(400, "Interaction has already been acknowledged.", 40060)
        body = req.json or {}
        record.answered_at = time.monotonic()
        record.files = req.files
        kind = body.get("type")
        response: dict[str, Any] = {
            "interaction": {"id": str(record.id), "type": record.payload["type"]},
        }
        data = body.get("data") or {}
        channel_id = int(record.payload["channel_id"])
        if kind == 4:
            record.finished_at = record.answered_at
            message = self._webhook_message(channel_id, data, record)
            record.original = message
            response["interaction"]["response_message_id"] = message["id"]
            response["resource"] = {"type": 4, "message": message}
        elif kind == 7 and "message" in record.payload:
            message = dict(record.payload["message"])
            message.update(
                {k: v for k, v in data.items() if k in ("content", "embeds", "components")}
            )
            record.original = message
            response["resource"] = {"type": 7, "message": message}
        elif kind in (5, 6):
            response["interaction"]["response_message_loading"] = kind == 5
            response["resource"] = {"type": kind}
        if not record.callback.done():
            record.callback.set_result(body)
        return _json_response(response)

    def _webhook_message(
        self, channel_id: int, data: dict[str, Any], record: Interaction | None
    ) -> dict[str, Any]:
        message = self.message(
            channel_id,
            data.get("content") or "",
            embeds=data.get("embeds") or [],
            extra={
                "components": data.get("components") or [],
                "flags": data.get("flags") or 0,
                "webhook_id": str(self.app_id),
                "application_id": str(self.app_id),
            },
        )
        if record is not None:
            message["interaction_metadata"] = {
                "id": str(record.id),
                "type": record.payload["type"],
                "user": record.payload["member"]["user"],
                "authorizing_integration_owners": {},
            }
        return message

    def _interaction_by_token(self, token: str) -> Interaction:
        for record in self.interactions.values():
            if record.token == token:
                return record
        raise _HTTPError(404, "Unknown Webhook", 10015)

    async def _followup(self, req: Recorded, app_id: str, token: str) -> web.Response:
        record = self._interaction_by_token(token)
        message = self._webhook_message(int(record.payload["channel_id"]), req.json or {}, record)
        if record.finished_at is None:
            record.finished_at = time.monotonic()
        record.followups.append(message)
        if req.files:
            record.files.extend(req.files)
        return _json_response(message)

    async def _edit_original(
        self, req: Recorded, app_id: str, token: str, message_id: str
    ) -> web.Response:
        record = self._interaction_by_token(token)
        if message_id == "@original":
            base = record.original or self._webhook_message(
                int(record.payload["channel_id"]), {}, record
            )
            base.update(
                {
                    k: v
                    for k, v in (req.json or {}).items()
                    if k in ("content", "embeds", "components")
                }
            )
            record.original = base
            if req.files:
                record.files.extend(req.files)
            return _json_response(base)
        for message in record.followups:
            if message["id"] == message_id:
                message.update(req.json or {})
                return _json_response(message)
        raise _HTTPError(404, "Unknown Message", 10008)

    async def _get_original(
        self, req: Recorded, app_id: str, token: str, message_id: str
    ) -> web.Response:
        record = self._interaction_by_token(token)
        if record.original is None:
            raise _HTTPError(404, "Unknown Message", 10008)
        return _json_response(record.original)

    def _channel_messages(self, channel_id: int) -> list[dict[str, Any]]:
        known = (
            channel_id in self.channels
            or channel_id in self.threads
            or any(m["id"] == str(channel_id) for ms in self.messages.values() for m in ms)
        )
        if not known:
            raise _HTTPError(404, "Unknown Channel", 10003)
        return self.messages.setdefault(channel_id, [])

    async def _post_message(self, req: Recorded, channel_id: str) -> web.Response:
        cid = int(channel_id)
        messages = self._channel_messages(cid)
        body = req.json or {}
        nonce = body.get("nonce")
        if self.honor_nonce and nonce and body.get("enforce_nonce") and (cid, nonce) in self.nonces:
            return _json_response(self.nonces[(cid, nonce)])
        content = body.get("content") or ""
        if len(content) > 2000:
            raise _HTTPError(400, "Invalid Form Body: content too long", 50035)
        embeds = body.get("embeds") or []
        if len(embeds) > 10 or sum(_embed_size(e) for e in embeds) > 6000:
            raise _HTTPError(400, "Invalid Form Body: embed too large", 50035)
        for embed in embeds:
            _check_embed(embed)
        if not content and not embeds and not req.files:
            raise _HTTPError(400, "Cannot send an empty message", 50006)
        thread = self.threads.get(cid)
        if thread is not None and _archived(thread):
            # Discord: a post unarchives an archived thread, unless it is locked
            if thread["thread_metadata"].get("locked"):
                raise _HTTPError(400, "Thread is locked", 50083)
            thread["thread_metadata"]["archived"] = False
        message = self.message(cid, content, embeds=embeds)
        message["components"] = body.get("components") or []
        message["nonce"] = nonce
        message["attachments"] = [self._upload(name, data) for name, data in req.files]
        _resolve_images(message)
        message["_allowed_mentions"] = body.get("allowed_mentions")
        messages.append(message)
        if nonce:
            self.nonces[(cid, nonce)] = message
        return _json_response(message)

    async def _get_messages(self, req: Recorded, channel_id: str) -> web.Response:
        """Discord's paging: newest first always; `after` selects the oldest `limit` messages
        newer than it, `before` the newest `limit` older than it."""
        messages = sorted(self._channel_messages(int(channel_id)), key=lambda m: int(m["id"]))
        limit = int(req.query.get("limit", 50))
        if not 1 <= limit <= 100:
            raise _HTTPError(400, "Invalid Form Body: limit", 50035)
        if "around" in req.query:
            raise _HTTPError(400, "the fake does not serve 'around'", 0)
        if "before" in req.query:
            older = [m for m in messages if int(m["id"]) < int(req.query["before"])]
            page = older[-limit:]
        elif "after" in req.query:
            newer = [m for m in messages if int(m["id"]) > int(req.query["after"])]
            page = newer[:limit]
        else:
            page = messages[-limit:]
        return _json_response(list(reversed(page)))

    async def _active_threads(self, req: Recorded, guild_id: str) -> web.Response:
        if int(guild_id) != self.guild_id:
            raise _HTTPError(404, "Unknown Guild", 10004)
        active = [t for t in self.threads.values() if not t["thread_metadata"]["archived"]]
        return _json_response({"threads": active, "members": []})

    def _upload(self, name: str, data: bytes) -> dict[str, Any]:
        """A file uploaded with a message: its attachment object (the bytes in `uploads`)."""
        attachment_id = snowflake()
        url = f"https://cdn.fake/attachments/{attachment_id}/{name}"
        self.uploads[str(attachment_id)] = data
        return {"id": str(attachment_id), "filename": name, "size": len(data), "url": url,
                "proxy_url": url}  # fmt: skip

    def _find_message(self, channel_id: str, message_id: str) -> dict[str, Any]:
        for message in self._channel_messages(int(channel_id)):
            if message["id"] == message_id:
                return message
        raise _HTTPError(404, "Unknown Message", 10008)

    async def _patch_message(self, req: Recorded, channel_id: str, message_id: str) -> web.Response:
        """Edit Message: `attachments` (when given) lists the attachments to keep by id, new
        files are added; without it every attachment stays and new files are appended."""
        message = self._find_message(channel_id, message_id)
        thread = self.threads.get(int(channel_id))
        if thread is not None and _archived(thread):
            # Discord refuses to change anything in an archived thread (50083); a bot that
            # created it may unarchive it first (Modify Channel, `archived: false`)
            raise _HTTPError(400, "Thread is archived", 50083)
        body = req.json or {}
        for key in ("content", "embeds", "components"):
            if key in body:
                message[key] = body[key] or ("" if key == "content" else [])
        if "attachments" in body:
            keep = {str(a.get("id")) for a in body["attachments"] or []}
            message["attachments"] = [a for a in message["attachments"] if a["id"] in keep]
        message["attachments"] = message["attachments"] + [
            self._upload(name, data) for name, data in req.files
        ]
        _resolve_images(message)
        message["edited_timestamp"] = iso_now()
        message["_allowed_mentions"] = body.get("allowed_mentions")
        message["_edits"] = message.get("_edits", 0) + 1
        return _json_response(message)

    async def _delete_message(
        self, req: Recorded, channel_id: str, message_id: str
    ) -> web.Response:
        self.remove_message(int(channel_id), message_id)
        return web.Response(status=204)

    def remove_message(self, channel_id: int, message_id: str) -> dict[str, Any]:
        """The message is gone (deleted by the bot or a person); its pin goes with it."""
        message = self._find_message(str(channel_id), message_id)
        self.messages[channel_id].remove(message)
        self.pins.get(channel_id, {}).pop(message_id, None)
        return message

    async def delete_message(self, channel_id: int, message_id: str) -> None:
        """A person deletes a message: gone from history, MESSAGE_DELETE dispatched."""
        self.remove_message(channel_id, message_id)
        await self.dispatch(
            "MESSAGE_DELETE",
            {"id": message_id, "channel_id": str(channel_id), "guild_id": str(self.guild_id)},
        )

    @property
    def may_pin(self) -> bool:
        return bool(self.bot_permissions & (MANAGE_MESSAGES | PIN_MESSAGES))

    async def _pin(self, req: Recorded, channel_id: str, message_id: str) -> web.Response:
        message = self._find_message(channel_id, message_id)
        if not self.may_pin:
            raise _HTTPError(403, "Missing Permissions", 50013)
        pins = self.pins.setdefault(int(channel_id), {})
        if message_id not in pins and len(pins) >= 250:
            raise _HTTPError(400, "Maximum number of pins reached (250)", 30003)
        pins[message_id] = iso_now()
        message["pinned"] = True
        return web.Response(status=204)

    async def _unpin(self, req: Recorded, channel_id: str, message_id: str) -> web.Response:
        message = self._find_message(channel_id, message_id)
        if not self.may_pin:
            raise _HTTPError(403, "Missing Permissions", 50013)
        self.pins.get(int(channel_id), {}).pop(message_id, None)
        message["pinned"] = False
        return web.Response(status=204)

    async def _get_pins(self, req: Recorded, channel_id: str) -> web.Response:
        """`GET /channels/{id}/messages/pins`: newest pin first, `{"items", "has_more"}`."""
        pinned = self.pinned(int(channel_id))
        items = [{"pinned_at": self.pins[int(channel_id)][m["id"]], "message": m} for m in pinned]
        return _json_response({"items": items, "has_more": False})

    async def _get_pins_legacy(self, req: Recorded, channel_id: str) -> web.Response:
        return _json_response(self.pinned(int(channel_id)))

    def pinned(self, channel_id: int) -> list[dict[str, Any]]:
        """The channel's pinned messages, newest pin first."""
        self._channel_messages(channel_id)
        pins = self.pins.get(channel_id, {})
        by_id = {m["id"]: m for m in self.messages.get(channel_id, [])}
        order = sorted(pins, key=lambda m: pins[m], reverse=True)
        return [by_id[m] for m in order if m in by_id]

    async def _message_thread(
        self, req: Recorded, channel_id: str, message_id: str
    ) -> web.Response:
        cid = int(channel_id)
        if cid in self.no_threads:
            raise _HTTPError(403, "Missing Permissions", 50013)
        if not any(m["id"] == message_id for m in self._channel_messages(cid)):
            raise _HTTPError(404, "Unknown Message", 10008)
        if int(message_id) in self.messages:
            raise _HTTPError(400, "A thread has already been created for this message", 160004)
        self.messages[int(message_id)] = []
        body = req.json or {}
        thread = {
            "id": message_id,
            "type": 11,
            "guild_id": str(self.guild_id),
            "parent_id": channel_id,
            "name": body.get("name", "thread"),
            "owner_id": str(self.bot_id),
            "message_count": 0,
            "member_count": 1,
            "rate_limit_per_user": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": body.get("auto_archive_duration", 1440),
                "archive_timestamp": iso_now(),
                "locked": False,
            },
        }
        self.threads[int(message_id)] = thread
        return _json_response(thread)

    async def _channel_thread(self, req: Recorded, channel_id: str) -> web.Response:
        cid = int(channel_id)
        if cid in self.no_threads:
            raise _HTTPError(403, "Missing Permissions", 50013)
        thread_id = snowflake()
        self.messages[thread_id] = []
        thread = {
            "id": str(thread_id),
            "type": 11,
            "guild_id": str(self.guild_id),
            "parent_id": channel_id,
            "name": (req.json or {}).get("name", "thread"),
            "owner_id": str(self.bot_id),
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": iso_now(),
                "locked": False,
            },
        }
        self.threads[thread_id] = thread
        return _json_response(thread)

    async def _patch_channel(self, req: Recorded, channel_id: str) -> web.Response:
        """Modify Channel: for a thread `name`, `archived`, `locked`, `auto_archive_duration`
        (`archived: true` is how a bot closes a thread); for a channel its name and topic."""
        body = req.json or {}
        thread = self.threads.get(int(channel_id))
        if thread is not None:
            meta = thread["thread_metadata"]
            for key in ("archived", "locked", "auto_archive_duration"):
                if key in body:
                    meta[key] = body[key]
            if "archived" in body:
                meta["archive_timestamp"] = iso_now()
            if "name" in body:
                thread["name"] = body["name"]
            return _json_response(thread)
        channel = self.channels.get(int(channel_id))
        if channel is None:
            raise _HTTPError(404, "Unknown Channel", 10003)
        for key in ("name", "topic"):
            if key in body:
                channel[key] = body[key]
        return _json_response(channel)

    async def _get_channel(self, req: Recorded, channel_id: str) -> web.Response:
        channel = self.channels.get(int(channel_id)) or self.threads.get(int(channel_id))
        if channel is None:
            raise _HTTPError(404, "Unknown Channel", 10003)
        return _json_response(channel)

    _ROUTES: list[tuple[str, str, Callable[..., Any]]] = [
        ("GET", r"/users/@me", _me),
        ("GET", r"/oauth2/applications/@me", _app_info),
        ("PUT", r"/applications/(\d+)/commands", _put_commands),
        ("GET", r"/applications/(\d+)/commands", _get_commands),
        ("PUT", r"/applications/(\d+)/guilds/(\d+)/commands", _put_guild_commands),
        ("GET", r"/applications/(\d+)/guilds/(\d+)/commands", _get_commands),
        ("POST", r"/interactions/(\d+)/([^/]+)/callback", _callback),
        ("POST", r"/webhooks/(\d+)/([^/]+)", _followup),
        ("PATCH", r"/webhooks/(\d+)/([^/]+)/messages/([^/]+)", _edit_original),
        ("GET", r"/webhooks/(\d+)/([^/]+)/messages/([^/]+)", _get_original),
        ("POST", r"/channels/(\d+)/messages", _post_message),
        ("GET", r"/channels/(\d+)/messages", _get_messages),
        ("PATCH", r"/channels/(\d+)/messages/(\d+)", _patch_message),
        ("DELETE", r"/channels/(\d+)/messages/(\d+)", _delete_message),
        ("PUT", r"/channels/(\d+)/messages/pins/(\d+)", _pin),
        ("DELETE", r"/channels/(\d+)/messages/pins/(\d+)", _unpin),
        ("GET", r"/channels/(\d+)/messages/pins", _get_pins),
        ("PUT", r"/channels/(\d+)/pins/(\d+)", _pin),
        ("DELETE", r"/channels/(\d+)/pins/(\d+)", _unpin),
        ("GET", r"/channels/(\d+)/pins", _get_pins_legacy),
        ("POST", r"/channels/(\d+)/messages/(\d+)/threads", _message_thread),
        ("POST", r"/channels/(\d+)/threads", _channel_thread),
        ("GET", r"/channels/(\d+)", _get_channel),
        ("PATCH", r"/channels/(\d+)", _patch_channel),
        ("GET", r"/guilds/(\d+)/threads/active", _active_threads),
    ]

    # --- assertions and waiting -----------------------------------------------------------------

    def posted(self, channel_id: int) -> list[dict[str, Any]]:
        """Messages created in a channel (or thread) through REST, oldest first."""
        return list(self.messages.get(channel_id, []))

    def archived(self, thread_id: int) -> bool:
        """Whether the thread is archived now."""
        return _archived(self.threads[thread_id])

    def message_requests(self) -> list[Recorded]:
        """Every request that creates or edits a message (channel posts, interaction replies,
        followups, edits)."""
        creating = re.compile(
            r"^/(channels/\d+/messages(/\d+)?|interactions/\d+/[^/]+/callback|webhooks/\d+/[^/]+"
            r"(/messages/[^/]+)?)$"
        )
        return [
            r for r in self.requests if r.method in ("POST", "PATCH") and creating.match(r.path)
        ]

    async def wait_for(self, predicate: Callable[[], Any], within: float = PATIENCE) -> Any:
        """Wait until `predicate()` is truthy (re-checked on every request and every 50 ms)."""
        deadline = time.monotonic() + within
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("condition not met in time")
            async with self.changed:
                try:
                    await asyncio.wait_for(self.changed.wait(), min(remaining, 0.05))
                except TimeoutError:
                    pass


def _resolve_images(message: dict[str, Any]) -> None:
    """As Discord does: an embed's `attachment://name` image shows that attachment of the
    message (its URL in the answer); with no such attachment the embed has no image."""
    files = {a["filename"]: a for a in message.get("attachments") or []}
    for embed in message.get("embeds") or []:
        image = embed.get("image") or {}
        url = str(image.get("url") or "")
        if url.startswith("attachment://"):
            found = files.get(url.removeprefix("attachment://"))
            if found is None:
                embed.pop("image", None)
            else:
                embed["image"] = {"url": found["url"], "proxy_url": found["url"]}


def _archived(thread: dict[str, Any]) -> bool:
    return bool(thread["thread_metadata"].get("archived"))


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, code: int):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def _embed_size(embed: dict[str, Any]) -> int:
    size = len(embed.get("title") or "") + len(embed.get("description") or "")
    size += sum(
        len(f.get("name") or "") + len(f.get("value") or "") for f in embed.get("fields") or []
    )
    size += len((embed.get("footer") or {}).get("text") or "")
    size += len((embed.get("author") or {}).get("name") or "")
    return size


def _check_embed(embed: dict[str, Any]) -> None:
    limits = {"title": 256, "description": 4096}
    for key, limit in limits.items():
        if len(embed.get(key) or "") > limit:
            raise _HTTPError(400, f"Invalid Form Body: embed {key} too long", 50035)
    fields = embed.get("fields") or []
    if len(fields) > 25:
        raise _HTTPError(400, "Invalid Form Body: too many fields", 50035)
    for f in fields:
        if len(f.get("name") or "") > 256 or len(f.get("value") or "") > 1024:
            raise _HTTPError(400, "Invalid Form Body: field too long", 50035)
        if not (f.get("name") or "").strip() or not (f.get("value") or "").strip():
            raise _HTTPError(400, "Invalid Form Body: empty field", 50035)
    if len((embed.get("footer") or {}).get("text") or "") > 2048:
        raise _HTTPError(400, "Invalid Form Body: footer too long", 50035)
