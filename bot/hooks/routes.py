"""`POST /hooks/github` and `POST /hooks/alertmanager` on the status site's server
(`bot.web.server`).

Each handler answers within a request's time and stores before it answers: a GitHub delivery is
kept by its delivery id for the GitHub source (which filters it to tracked threads as a poll
would, `bot.hooks.ingest`); Alertmanager's alerts become events of their runs at once. Then the
doorbell rings, so the process reads, judges and posts them now rather than at its next poll.

Refusals store nothing: 404 while the hook's secret is unset (the endpoint does not exist), 401
for a bad signature or token, 413 for a body over the limit (refused by its `Content-Length`, or
as soon as more than the limit has arrived), 400 for a body that is not what the sender sends
(nested too deep included). Who sent it is checked before the body is read: Alertmanager's
bearer token is a header; GitHub's HMAC needs the body, so a request without a well-formed
`X-Hub-Signature-256` is refused unread, and a signed body is read streaming up to the limit.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from bot.config.settings import RunConfig, Settings
from bot.core.timeutil import utcnow
from bot.hooks import github as gh
from bot.hooks.alertmanager import (
    SOURCE,
    Alert,
    MalformedMessage,
    alert_event,
    episode_id,
    owners,
    parse_message,
)
from bot.hooks.auth import bearer_ok, github_signed, signature_well_formed
from bot.hooks.doorbell import Doorbell
from bot.hooks.jsonbody import TooDeep, load_json
from bot.models import AlertData
from bot.store import Store

log = logging.getLogger(__name__)

GITHUB = gh.HOOK
ALERTMANAGER = "alertmanager"
HOOKS = (GITHUB, ALERTMANAGER)
#: Alertmanager messages over this are refused (the issue's limit: 1 MB).
ALERTMANAGER_MAX_BODY = 1_000_000
#: GitHub caps its own payloads at 25 MB, but a thread's text is capped at 65,536 characters:
#: the deliveries Runscribe reads are tens of kilobytes. Read only once the signature header is
#: well formed, streaming, never more than this.
GITHUB_MAX_BODY = 1_000_000
CHUNK = 64 * 1024


class TooLarge(Exception):
    pass


async def read_body(request: web.Request, limit: int) -> bytes:
    """The raw body, never more than `limit` bytes of it read (`TooLarge` past it)."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise TooLarge
    body = bytearray()
    while True:
        chunk = await request.content.read(CHUNK)
        if not chunk:
            return bytes(body)
        body += chunk
        if len(body) > limit:
            raise TooLarge


def _json(status: int, **body: Any) -> web.Response:
    return web.json_response(body, status=status, headers={"Cache-Control": "no-store"})


def _refused(status: int, **body: Any) -> web.Response:
    """A refusal answered with the body (or its rest) unread: the connection is closed after
    the answer (`Connection: close`), so what the client still sends is drained only briefly
    (`bot.web.guard.Guard.linger`) and never read as a next request."""
    response = _json(status, **body)
    response.force_close()
    return response


class HookEndpoints:
    """The two push endpoints over the writer store. `last_delivery` is when each hook last
    took a valid delivery (authenticated and well formed), shown on /healthz."""

    def __init__(
        self,
        store: Store,
        *,
        github_secret: str | None,
        token: str | None,
        doorbell: Doorbell | None = None,
        clock: Callable[[], datetime] = utcnow,
    ):
        self.store = store
        self._github_secret = github_secret or None
        self._token = token or None
        self.doorbell = doorbell or Doorbell()
        self.clock = clock
        self.last_delivery: dict[str, datetime | None] = dict.fromkeys(HOOKS)
        self._logged: set[str] = set()
        self._runs: tuple[tuple[int, str | None], list[RunConfig]] | None = None

    @classmethod
    def from_settings(
        cls, store: Store, settings: Settings, doorbell: Doorbell | None = None
    ) -> HookEndpoints:
        secret, token = settings.github_webhook_secret, settings.runscribe_hook_token
        return cls(
            store,
            github_secret=secret.get_secret_value() if secret else None,
            token=token.get_secret_value() if token else None,
            doorbell=doorbell,
        )

    @property
    def enabled(self) -> dict[str, bool]:
        return {GITHUB: self._github_secret is not None, ALERTMANAGER: self._token is not None}

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/hooks/github", self.github)
        app.router.add_post("/hooks/alertmanager", self.alertmanager)

    def health(self) -> dict[str, Any]:
        """For /healthz: each hook, whether it is enabled and when it last took a delivery."""
        return {
            hook: {
                "enabled": self.enabled[hook],
                "last_delivery_at": _iso(self.last_delivery[hook]),
            }
            for hook in HOOKS
        }

    async def runs(self) -> list[RunConfig]:
        """The recorded runs, parsed again only when one changed (a burst of deliveries reads
        one cheap version row each, not every run's configuration)."""
        reader = self.store.reader
        version = await reader.runs.version()
        if self._runs is None or self._runs[0] != version:
            self._runs = (version, [run.config for run in await reader.runs.all()])
        return self._runs[1]

    def _log_once(self, key: str, message: str, *args: object) -> None:
        if key not in self._logged:
            self._logged.add(key)
            log.warning(message, *args)

    # --- GitHub ------------------------------------------------------------------------------

    async def github(self, request: web.Request) -> web.StreamResponse:
        secret = self._github_secret
        if secret is None:
            raise web.HTTPNotFound(text="no GitHub webhook here (GITHUB_WEBHOOK_SECRET is unset)\n")
        signature = request.headers.get("X-Hub-Signature-256")
        if not signature_well_formed(signature):  # refused before a byte of the body is read
            return _refused(401, error="bad or missing X-Hub-Signature-256")
        try:
            body = await read_body(request, GITHUB_MAX_BODY)
        except TooLarge:
            return _refused(413, error=f"the body is over {GITHUB_MAX_BODY:,} bytes")
        if not github_signed(secret, body, signature):
            return _json(401, error="bad or missing X-Hub-Signature-256")
        event = request.headers.get("X-GitHub-Event", "").strip()
        try:
            payload = _github_payload(body, request.content_type)
        except ValueError as exc:
            return _json(400, error=str(exc))
        now = self.clock()
        self.last_delivery[GITHUB] = now
        if event == "ping":
            return _json(200, ok=True, zen=str(payload.get("zen") or ""))
        if event not in gh.EVENTS:
            return _json(202, ignored=f"event {event or '(none)'} is not read")
        repo = gh.repository_of(payload)
        if repo is None:
            return _json(400, error="no repository.full_name in the payload")
        configured = {run.github_repo.lower() for run in await self.runs() if run.github_repo}
        if repo.lower() not in configured:
            self._log_once(
                f"repo:{repo.lower()}", "GitHub webhook for %s, which no run tracks: ignored", repo
            )
            return _json(202, ignored=f"no run tracks {repo}")
        delivery = request.headers.get("X-GitHub-Delivery", "").strip()[:100]
        if not delivery:  # GitHub always sends one; a hand-made delivery is keyed by its body
            delivery = "sha256:" + hashlib.sha256(body).hexdigest()
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        if not await self.store.hooks.record(GITHUB, delivery, event, text, now):
            return _json(200, duplicate=True, delivery=delivery)
        self.doorbell.ring()
        return _json(202, accepted=True, delivery=delivery)

    # --- Alertmanager ------------------------------------------------------------------------

    async def alertmanager(self, request: web.Request) -> web.StreamResponse:
        token = self._token
        if token is None:
            raise web.HTTPNotFound(
                text="no Alertmanager receiver here (RUNSCRIBE_HOOK_TOKEN is unset)\n"
            )
        if not bearer_ok(token, request.headers.get("Authorization")):
            return _refused(401, error="bad or missing bearer token")  # the body is never read
        try:
            body = await read_body(request, ALERTMANAGER_MAX_BODY)
        except TooLarge:
            return _refused(413, error=f"the body is over {ALERTMANAGER_MAX_BODY:,} bytes")
        try:
            alerts = parse_message(body)
        except MalformedMessage as exc:
            return _json(400, error=f"not an Alertmanager webhook message: {exc}")
        self.last_delivery[ALERTMANAGER] = self.clock()
        runs = await self.runs()
        events = []
        unknown = 0
        for alert in alerts:
            slugs = owners(alert, runs)
            if not slugs:
                unknown += 1
                key = alert.labels.get("run") or alert.alertname
                self._log_once(
                    f"alert:{key}",
                    "Alertmanager alert %s (run label %r) matches no run: ignored",
                    alert.alertname,
                    alert.labels.get("run"),
                )
                continue
            for slug in slugs:
                unseen = await _never_fired(self.store, slug, alert)
                events.append(alert_event(slug, alert, unseen=unseen))
        if not events:
            return _json(202, stored=0, unknown=unknown)
        result = await self.store.events.upsert_many(events)
        if result.changed:
            self.doorbell.ring()
        return _json(200, stored=len(result.changed), unchanged=result.unchanged, unknown=unknown)


async def _never_fired(store: Store, slug: str, alert: Alert) -> bool:
    """Whether a `resolved` alert is one Runscribe never saw firing (no event of its episode,
    or one already marked so)."""
    if alert.status != "resolved":
        return False
    stored = await store.events.get_by_external(slug, SOURCE, episode_id(alert))
    return stored is None or AlertData.of(stored).unseen is True


def _github_payload(body: bytes, content_type: str) -> dict[str, Any]:
    """The delivery's JSON, sent as `application/json` or form-encoded (`payload=…`)."""
    try:
        text = body.decode("utf-8")
        if content_type == "application/x-www-form-urlencoded":
            text = parse_qs(text).get("payload", [""])[0]
        payload = load_json(text)
    except TooDeep:
        raise
    except (UnicodeDecodeError, ValueError):
        raise ValueError("the body is not a GitHub webhook payload (JSON)") from None
    if not isinstance(payload, dict):
        raise ValueError("the payload is not a JSON object")
    return payload


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None
