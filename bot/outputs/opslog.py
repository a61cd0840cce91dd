"""The runs' ops logs on GitHub (runs-file `github_ops_issue`): each resolved incident's write-up
as one comment on the run's ops-log issue, edited in place when the write-up changes.

Store first, as every post: `queue_ops_comments` writes what each comment should say
(`store.opslog`); `OpsLogWriter` then makes GitHub hold it. A comment's body ends with a marker
naming the incident, so a process killed between GitHub's answer and the row's update finds its
comment again on the issue (never a second one). A token that may not write issues (401, 403,
404) is told once per row, in its `last_error` and the log; nothing else is tried that cycle.
`OpsLogDetector` runs both after each incident detection."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import httpx
from pydantic import SecretStr

from bot.incidents.writeup import RECENT, WriteupPen, gather_writeup
from bot.posts.writeup import writeup_markdown
from bot.sources.github_threads import OWN_MARKER
from bot.store import Store
from bot.store.opslog import OpsComment, body_hash

log = logging.getLogger(__name__)

#: Incidents resolved this recently are written (and kept up to date) in the ops log.
LOOKBACK = RECENT
MARKER = OWN_MARKER + "incident:{id} -->"  # the GitHub source never reads it back
PAGES = 10  # pages of the issue's comments read to find a comment posted before a crash
#: How much earlier than the row's time a comment posted for it is looked for (GitHub's clock
#: against ours, and a post that took long).
SKEW = timedelta(hours=1)
API_VERSION = "2022-11-28"


#: "@name" as GitHub would notify it (a quoted post's "@dave", a chat name): a word joiner after
#: the "@" keeps the text and drops the ping. Addresses (a@b.c) and URLs (…/@x) are left alone.
_GITHUB_MENTION = re.compile(r"(?<![\w/`])@(?=[A-Za-z0-9])")


def comment_body(markdown: str, incident_id: int) -> str:
    """The comment: the write-up, pinging nobody on GitHub, then the incident's marker."""
    text = _GITHUB_MENTION.sub("@\u2060", markdown.rstrip())
    return f"{text}\n\n{MARKER.format(id=incident_id)}\n"


async def queue_ops_comments(store: Store, now: datetime, pen: WriteupPen | None = None) -> int:
    """Store the comment each recently resolved incident should have on its run's ops-log
    issue; returns how many changed. With a `pen` (a model key), the comment is the write-up
    the model stored for the incident's present facts, once it is stored."""
    changed = 0
    for run in await store.runs.all():
        issue, repo = run.config.github_ops_issue, run.config.github_repo
        if issue is None or repo is None:
            continue
        for incident in await store.incidents.find(run.slug, since=now - LOOKBACK):
            details = incident.details
            if incident.status != "resolved" or not details.fired or details.history:
                continue
            assert incident.id is not None
            facts = await gather_writeup(store, run, incident)
            prose = await pen.stored(store, facts) if pen is not None else None
            if pen is not None and prose is None:
                continue  # not written yet for these facts: the comment keeps what it says
            body = comment_body(writeup_markdown(facts, prose), incident.id)
            changed += await store.opslog.want(incident.id, run.slug, repo, issue, body, now)
    return changed


class Refused(Exception):
    """GitHub will not let this token write the issue's comments."""


@dataclass(slots=True)
class OpsLogWriter:
    """Makes GitHub hold what `store.opslog` says, through the REST API."""

    client: httpx.AsyncClient
    base_url: str
    token: SecretStr

    def _headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.token.get_secret_value()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
        }

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        url = f"{self.base_url.rstrip('/')}{path}"
        response = await self.client.request(method, url, headers=self._headers(), **kwargs)
        if response.status_code in (401, 403, 404):
            said = response.json().get("message", "") if response.content else ""
            raise Refused(f"GitHub answered {response.status_code} {said}".strip())
        response.raise_for_status()
        return response

    async def _find(self, row: OpsComment) -> dict[str, Any] | None:
        """The comment an earlier attempt posted (its marker), if GitHub has it."""
        marker = MARKER.format(id=row.incident_id)
        since = (row.wanted_at - SKEW).isoformat().replace("+00:00", "Z")
        for page in range(1, PAGES + 1):
            response = await self._call(
                "GET",
                f"/repos/{row.repo}/issues/{row.issue}/comments",
                params={"since": since, "per_page": 100, "page": page},
            )
            items = response.json()
            for item in items:
                if marker in (item.get("body") or ""):
                    return dict(item)
            if len(items) < 100:
                return None
        return None

    async def write_one(self, store: Store, row: OpsComment, now: datetime) -> None:
        comment_id = row.comment_id
        held: str | None = None
        if comment_id is None:
            found = await self._find(row)
            if found is not None:
                comment_id, held = int(found["id"]), str(found.get("body") or "")
        if comment_id is None:
            response = await self._call(
                "POST", f"/repos/{row.repo}/issues/{row.issue}/comments", json={"body": row.body}
            )
            comment_id = int(response.json()["id"])
        elif held != row.body:
            await self._call(
                "PATCH", f"/repos/{row.repo}/issues/comments/{comment_id}", json={"body": row.body}
            )
        await store.opslog.posted(row.incident_id, comment_id, body_hash(row.body), now)

    async def write(self, store: Store, now: datetime) -> int:
        written = 0
        for row in await store.opslog.due():
            try:
                await self.write_one(store, row, now)
                written += 1
            except Refused as exc:
                said = f"{row.repo}#{row.issue}: {exc}; the token may not write issues"
                if row.last_error != said:
                    log.warning("ops log not written: %s", said)
                    await store.opslog.failed(row.incident_id, said)
                return written
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                log.warning("ops log comment for incident %s not written: %s", row.incident_id, exc)
                await store.opslog.failed(row.incident_id, str(exc)[:300])
        return written


class Detector(Protocol):
    """What the pipeline calls each cycle (`bot.process.pipeline.Detector`, said again here so the
    ops log does not import the pipeline it is plugged into)."""

    async def detect(self, store: Store, now: datetime) -> int: ...


@dataclass(slots=True)
class OpsLogDetector:
    """The pipeline's `Detector`: incident detection, then the ops logs brought up to date."""

    engine: Detector
    writer: OpsLogWriter | None
    pen: WriteupPen | None = None

    async def detect(self, store: Store, now: datetime) -> int:
        queued = await self.engine.detect(store, now)
        try:
            await queue_ops_comments(store, now, self.pen)
            if self.writer is not None:
                await self.writer.write(store, now)
        except asyncio.CancelledError:
            raise
        except Exception:  # the ops log never stops detection
            log.exception("ops log update failed")
        return queued
