"""`runscribe demo`: the bundled sample run replayed through the live sources and the real poll
cycle, offline and without keys.

The sample (`bot.sources.replay`) is served as the services would serve it at a moving replay
clock: its W&B history through a stand-in for the `wandb.Api` that `WandbSource` reads, its
GitHub threads as GitHub's REST JSON through an `httpx.MockTransport` that `GitHubSource`
reads. So every W&B and GitHub event is built by the live sources' own code (restores, new runs
in the chain, state changes, issues, comments, reviews, closes), and
`bot.process.pipeline.run_cycle` polls, enriches and detects exactly as `runscribe poll` does.
Discord messages arrive by the gateway in production; here a small source stores the sample's
messages as they fall due.

The replay clock advances in steps (`STEP`), with extra polls just after each W&B state change
so that every change is observed, as a poller every minute would."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx

from bot.config.settings import RunConfig, RunsFile, Settings, parse_runs
from bot.core.timeutil import parse_time
from bot.models import MetricPoint
from bot.process.pipeline import Detector, Enricher, run_cycle
from bot.process.runtime import record_runs
from bot.sources.base import PollResult, Source
from bot.sources.github import build_github_sources
from bot.sources.replay import SampleRun, load_sample
from bot.sources.wandb import WandbSource
from bot.sources.wandb_client import WandbClient
from bot.store import Store

log = logging.getLogger(__name__)

STEP = timedelta(hours=12)  # the replay clock's stride between state changes
AFTER_CHANGE = (timedelta(minutes=2),)  # polls after each state change
GITHUB_BASE = "https://sample.github.invalid"
CURSOR = "demo"  # store.cursors source: the last replayed moment, per run


@dataclass(slots=True)
class ReplayStats:
    events: int = 0
    points: int = 0
    enriched: int = 0
    alerts: int = 0


class ReplayClock:
    """The replay's `now`, read by the stand-in services."""

    def __init__(self, at: datetime):
        self.now = at


# --- W&B: a stand-in for the slice of `wandb.Api` that WandbSource reads ---------------------


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


class _SampleRun:
    """One W&B run of the sample as the public API shows it at the replay clock."""

    def __init__(self, api: SampleWandbApi, path: str):
        self._api = api
        self.path = path
        self.entity, self.project, self.id = path.split("/")
        snapshot = next(s for s in api.sample.snapshots if s.wandb_run == path)
        self.name = snapshot.name or self.id
        self.created_at = snapshot.created_at
        self.url = f"https://wandb.ai/{self.entity}/{self.project}/runs/{self.id}"
        points = sorted((p for p in api.sample.points if p.wandb_run == path), key=lambda p: p.at)
        self._rows = [api.row(index, point) for index, point in enumerate(points)]
        self._points = points
        self._changes = [c for c in api.sample.state_history if c.wandb_run == path]

    def _visible(self) -> int:
        now = self._api.clock.now
        count = 0
        for point in self._points:
            if point.at > now:
                break
            count += 1
        return count

    @property
    def state(self) -> str:
        now = self._api.clock.now
        seen = [c for c in self._changes if c.at <= now]
        return seen[-1].state if seen else "pending"

    @property
    def _attrs(self) -> dict[str, Any]:
        now = self._api.clock.now
        seen = [c for c in self._changes if c.at <= now]
        heartbeat = seen[-1].heartbeat_at if seen else None
        if seen and seen[-1].state == "running":
            heartbeat = now  # a running process keeps beating
        visible = self._visible()
        summary: dict[str, Any] = {"_step": visible - 1} if visible else {}
        if visible:
            summary.update({k: v for k, v in self._rows[visible - 1].items() if k != "_step"})
        return {
            "createdAt": _iso(self.created_at),
            "heartbeatAt": _iso(heartbeat),
            "historyKeys": {"lastStep": visible - 1, "keys": {}},
            "summaryMetrics": summary,
        }

    def load(self, force: bool = False) -> None:
        """Attributes are computed at the replay clock; nothing to reload."""

    def scan_history(
        self, keys: Sequence[str], min_step: int, max_step: int, page_size: int = 1000
    ) -> Iterator[dict[str, Any]]:
        upto = min(max_step, self._visible())
        for row in self._rows[max(min_step, 0) : max(upto, 0)]:
            yield {k: row[k] for k in ("_step", *keys) if k in row}


class SampleWandbApi:
    """`api.run`, `api.runs`, `api.flush`: enough of `wandb.Api` for `WandbSource`."""

    def __init__(self, sample: SampleRun, run: RunConfig, clock: ReplayClock):
        self.sample = sample
        self.clock = clock
        self.step_key = run.metrics.step or "_step"
        self.loss_key = run.metrics.loss
        self.tokens_key = run.metrics.tokens
        paths = [s.wandb_run for s in sample.snapshots]
        self._runs = {path: _SampleRun(self, path) for path in paths}

    def row(self, index: int, point: MetricPoint) -> dict[str, Any]:
        row: dict[str, Any] = {"_step": index, "_timestamp": point.at.timestamp()}
        row[self.step_key] = point.step
        if self.loss_key and point.loss is not None:
            row[self.loss_key] = point.loss
        if self.tokens_key and point.tokens is not None:
            row[self.tokens_key] = point.tokens
        return row

    def _exists(self, run: _SampleRun) -> bool:
        return run.created_at is None or run.created_at <= self.clock.now

    def run(self, path: str) -> _SampleRun:
        run = self._runs.get(path)
        if run is None or not self._exists(run):
            raise ValueError(f"Could not find run {path}")
        return run

    def flush(self) -> None:
        """The real Api caches result sets; this one has none."""

    def runs(self, project: str, filters: dict[str, Any] | None = None, **_: Any) -> list[Any]:
        since = parse_time(((filters or {}).get("createdAt") or {}).get("$gte"))
        found = [
            run
            for run in self._runs.values()
            if self._exists(run)
            and f"{run.entity}/{run.project}" == project
            and (since is None or run.created_at is None or run.created_at >= since)
        ]
        return sorted(found, key=lambda r: (r.created_at or self.clock.now, r.path))


# --- GitHub: the sample's threads as GitHub's REST JSON ------------------------------------------


class SampleGitHub:
    """An `httpx.MockTransport` handler serving the sample repository at the replay clock: the
    listings (`issues`, `issues/comments`, with `since`), one issue, its comments, a pull's
    reviews. Times, states and edited bodies are as they were at that moment."""

    def __init__(self, sample: SampleRun, clock: ReplayClock):
        self.clock = clock
        self.shift = sample.shift
        self.repo = str(sample.github["repo"])
        self.items = {int(item["number"]): item for item in sample.github["items"]}

    def at(self, value: str | None) -> datetime | None:
        parsed = parse_time(value)
        return parsed + self.shift if parsed is not None else None

    def _seen(self, value: str | None) -> datetime | None:
        """The shifted time, if it has happened by the replay clock."""
        when = self.at(value)
        return when if when is not None and when <= self.clock.now else None

    def _user(self, login: str) -> dict[str, Any]:
        return {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}

    def _url(self, item: dict[str, Any]) -> str:
        kind = "pull" if item["kind"] == "pull" else "issues"
        return f"https://github.com/{self.repo}/{kind}/{item['number']}"

    def _version(self, comment: dict[str, Any]) -> tuple[datetime, str] | None:
        """(updated_at, body) of a comment as it read at the replay clock, or None."""
        created = self._seen(comment["created_at"])
        if created is None:
            return None
        version = (created, str(comment["body"]))
        for edit in comment.get("edits", []):
            edited = self._seen(edit["updated_at"])
            if edited is not None:
                version = (edited, str(edit["body"]))
        return version

    def _comments(self, item: dict[str, Any], kind: str) -> list[dict[str, Any]]:
        return [c for c in item["comments"] if c["kind"] == kind and self._version(c) is not None]

    def issue_json(self, item: dict[str, Any]) -> dict[str, Any] | None:
        created = self._seen(item["created_at"])
        if created is None:
            return None
        merged = self._seen(item.get("merged_at"))
        closed = self._seen(item.get("closed_at")) or merged
        activity = [created, *(v[0] for c in item["comments"] if (v := self._version(c)))]
        activity += [t for t in (closed, merged) if t is not None]
        data: dict[str, Any] = {
            "id": 10_000_000 + int(item["number"]),
            "number": int(item["number"]),
            "title": item["title"],
            "body": item["body"],
            "user": self._user(item["author"]),
            "labels": [{"name": name} for name in item["labels"]],
            "state": "closed" if closed is not None else "open",
            "created_at": _iso(created),
            "updated_at": _iso(max(activity)),
            "closed_at": _iso(closed),
            "html_url": self._url(item),
            "comments": len(self._comments(item, "comment")),
        }
        if item["kind"] == "pull":
            data["pull_request"] = {"html_url": self._url(item), "merged_at": _iso(merged)}
        return data

    def comment_json(self, item: dict[str, Any], comment: dict[str, Any]) -> dict[str, Any]:
        version = self._version(comment)
        assert version is not None
        return {
            "id": int(comment["id"]),
            "user": self._user(comment["author"]),
            "body": version[1],
            "created_at": comment_created(self, comment),
            "updated_at": _iso(version[0]),
            "html_url": f"{self._url(item)}#issuecomment-{comment['id']}",
            "issue_url": f"{GITHUB_BASE}/repos/{self.repo}/issues/{item['number']}",
        }

    def review_json(self, item: dict[str, Any], review: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": int(review["id"]),
            "user": self._user(review["author"]),
            "body": review["body"],
            "state": review.get("review_state") or "COMMENTED",
            "submitted_at": comment_created(self, review),
            "html_url": f"{self._url(item)}#pullrequestreview-{review['id']}",
        }

    # the endpoints

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """The answer, or 304 when it is the one the client already has (as GitHub does)."""
        response = self._answer(request)
        if response.status_code != 200:
            return response
        etag = '"' + hashlib.sha1(response.content).hexdigest() + '"'
        if request.headers.get("if-none-match") == etag:
            return httpx.Response(304, headers={"ETag": etag})
        return httpx.Response(200, content=response.content, headers={"ETag": etag})

    def _answer(self, request: httpx.Request) -> httpx.Response:
        prefix = f"/repos/{self.repo}/"
        path = request.url.path
        if request.method != "GET" or not path.startswith(prefix):
            return _not_found()
        parts = path[len(prefix) :].strip("/").split("/")
        since = parse_time(request.url.params.get("since"))
        if parts == ["issues"]:
            issues = [d for item in self.items.values() if (d := self.issue_json(item))]
            return _listing(issues, since)
        if parts == ["issues", "comments"]:
            comments = [
                self.comment_json(item, c)
                for item in self.items.values()
                for c in self._comments(item, "comment")
            ]
            return _listing(comments, since)
        if len(parts) >= 2 and parts[0] in ("issues", "pulls") and parts[1].isdigit():
            item = self.items.get(int(parts[1]))
            issue = self.issue_json(item) if item is not None else None
            if item is None or issue is None:
                return _not_found()
            if parts[0] == "issues" and len(parts) == 2:
                return httpx.Response(200, json=issue)
            if parts[0] == "issues" and parts[2:] == ["comments"]:
                found = self._comments(item, "comment")
                return httpx.Response(200, json=[self.comment_json(item, c) for c in found])
            if parts[0] == "pulls" and parts[2:] == ["reviews"]:
                found = self._comments(item, "review")
                return httpx.Response(200, json=[self.review_json(item, r) for r in found])
        return _not_found()


def comment_created(github: SampleGitHub, comment: dict[str, Any]) -> str | None:
    return _iso(github.at(comment["created_at"]))


def _not_found() -> httpx.Response:
    return httpx.Response(404, json={"message": "Not Found"})


def _listing(items: list[dict[str, Any]], since: datetime | None) -> httpx.Response:
    """A listing sorted by `updated_at`, from `since` on (as `sort=updated&direction=asc`)."""

    def updated(item: dict[str, Any]) -> datetime:
        value = parse_time(item["updated_at"])
        assert value is not None
        return value

    shown = [i for i in items if since is None or updated(i) >= since]
    return httpx.Response(200, json=sorted(shown, key=lambda i: (updated(i), i["id"])))


# --- Discord: messages as the gateway would have delivered them --------------------------------


class SampleDiscord:
    """A source for the sample's Discord messages (in production they arrive by the gateway,
    `cogs/watch.py`): each poll stores the messages, and the edits, that fell due."""

    name = "discord"

    def __init__(self, store: Store, sample: SampleRun, slug: str):
        self.store = store
        self.slug = slug
        self.pending = sorted(
            (e for e in (*sample.superseded, *sample.events) if e.source == "discord"),
            key=lambda e: e.updated_at or e.at,
        )

    @property
    def key(self) -> str:
        return f"discord:{self.slug}"

    @property
    def run_slugs(self) -> list[str]:
        return [self.slug]

    async def poll(self, now: datetime) -> PollResult:
        due = [e for e in self.pending if (e.updated_at or e.at) <= now]
        self.pending = self.pending[len(due) :]
        result = await self.store.events.upsert_many(due)
        return PollResult(events=len(result.changed))


# --- the replay -----------------------------------------------------------------------------------


def sample_runs_file(sample: SampleRun) -> RunsFile:
    return parse_runs({"runs": [sample.run_config]})


def load(now: datetime) -> SampleRun:
    return load_sample(now)


def replay_times(sample: SampleRun, step: timedelta = STEP) -> list[datetime]:
    """When the replay polls: every `step`, shortly after each W&B state change, and at the
    sample's end."""
    times = set()
    at = sample.start + step
    while at < sample.end:
        times.add(at)
        at += step
    for change in sample.state_history:
        for delay in AFTER_CHANGE:
            if change.at + delay < sample.end:
                times.add(change.at + delay)
    times.add(sample.end)
    # W&B answers from the first run's creation on (a listed run that does not exist yet would
    # be a configuration error, not something to replay).
    created = [s.created_at for s in sample.snapshots if s.created_at is not None]
    first = min(created, default=sample.start)
    return sorted(t for t in times if t > max(first, sample.start))


async def replay_into(
    store: Store,
    sample: SampleRun,
    *,
    enricher: Enricher | None = None,
    detector: Detector | None = None,
    step: timedelta = STEP,
) -> ReplayStats:
    """Replay the sample into the store through the live sources and `run_cycle`. Resumable
    and idempotent: the last replayed moment is kept (cursor "demo"), so replaying the same
    sample again polls nothing already polled and leaves the same rows."""
    runs = sample_runs_file(sample)
    await record_runs(store, runs)
    run = runs.runs[0]
    done, _ = await store.cursors.get(CURSOR, run.slug)
    replayed = parse_time(done)
    times = [t for t in replay_times(sample, step) if replayed is None or t > replayed]
    clock = ReplayClock(sample.start)
    api = SampleWandbApi(sample, run, clock)
    # The chain's later members join by the run's pattern as they appear, as they would live
    # (a listed run that does not exist yet would be a configuration error).
    first = run.model_copy(update={"wandb_runs": run.wandb_runs[:1]})
    wandb = WandbClient(lambda: api, describe="the sample's W&B")
    github = SampleGitHub(sample, clock)
    settings = Settings.model_construct(github_api_url=GITHUB_BASE, github_token=None)
    stats = ReplayStats()
    async with httpx.AsyncClient(transport=httpx.MockTransport(github)) as http:
        sources: list[Source] = [
            WandbSource(store, first, wandb),
            *build_github_sources(store, http, settings, [run]),
            SampleDiscord(store, sample, run.slug),
        ]
        try:
            for now in times:
                clock.now = now
                summary = await run_cycle(store, sources, now, enricher=enricher, detector=detector)
                for key, error in summary.poll.failures.items():
                    log.warning("demo: %s failed at %s: %s", key, now, error)
                stats.events += sum(r.events for r in summary.poll.results.values())
                stats.points += sum(r.points for r in summary.poll.results.values())
                stats.enriched += summary.enriched
                stats.alerts += summary.alerts_queued
                await store.cursors.set(CURSOR, run.slug, now.isoformat())
        finally:
            await wandb.aclose()
    return stats
