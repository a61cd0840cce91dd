"""`POST /hooks/github` through the real web server, a real SQLite store and the real GitHub
source against the fake GitHub: signed deliveries as GitHub sends them are read exactly as a poll
reads the same threads, and a poll before or after changes nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import httpx
import pytest

from bot.config.settings import RunConfig
from bot.hooks.ingest import ingest_github
from bot.hooks.routes import HookEndpoints
from bot.models import RunInfo
from bot.sources.github import GitHubSource
from bot.store import Database, Store
from bot.web.server import serve
from tests.fakes.github import FakeGitHub, FakeRepo, signed_delivery
from tests.sources.test_github import Sleeps, settings

REPO = "lab/hero"
SECRET = "It's a Secret to Everybody"
NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


def hero() -> RunConfig:
    return RunConfig(slug="hero", name="Hero", github_repo=REPO, github_labels=["hero-run"])


@dataclass
class Site:
    url: str
    http: aiohttp.ClientSession
    store: Store
    source: GitHubSource
    repo: FakeRepo
    hooks: HookEndpoints

    async def push(
        self,
        event: str,
        action: str | None = None,
        *,
        secret: str | None = SECRET,
        delivery_id: str | None = None,
        **what: Any,
    ) -> tuple[int, dict[str, Any]]:
        payload = self.repo.delivery(event, action, **what)
        headers, body = signed_delivery(event, payload, secret, delivery_id=delivery_id)
        return await self.post(headers, body)

    async def post(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        async with self.http.post(self.url + "/hooks/github", data=body, headers=headers) as r:
            text = await r.text()
            return r.status, (json.loads(text) if r.content_type == "application/json" else {})

    async def ingest(self) -> int:
        return await ingest_github(self.store, [self.source], NOW)

    async def poll(self) -> None:
        await self.source.poll(NOW)


async def events(store: Store) -> dict[str, tuple[int, str, str]]:
    rows = await store.db.fetchall(
        "SELECT external_id, id, content_hash, coalesce(updated_at, '') FROM events "
        "WHERE run_slug = 'hero'"
    )
    return {row[0]: (row[1], row[2], row[3]) for row in rows}


async def delivery_rows(store: Store) -> int:
    row = await store.db.fetchone("SELECT count(*) FROM hook_deliveries")
    assert row is not None
    return int(row[0])


@pytest.fixture
async def gh() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub() as server:
        yield server


@pytest.fixture
async def site(gh: FakeGitHub, tmp_path: Path) -> AsyncIterator[Site]:
    async with opened(gh, tmp_path / "pushed.db") as made:
        yield made


@asynccontextmanager
async def opened(gh: FakeGitHub, path: Path, *, secret: str | None = SECRET) -> AsyncIterator[Site]:
    run = hero()
    async with (
        Database.open(path) as db,
        httpx.AsyncClient() as client,
        aiohttp.ClientSession() as http,
    ):
        store = Store(db)
        await store.runs.upsert(RunInfo.from_config(run))
        source = GitHubSource(store, client, settings(gh), [run], sleep=Sleeps(), timeout=2.0)
        hooks = HookEndpoints(store, github_secret=secret, token=None)
        async with serve(store, "127.0.0.1", 0, poll_interval=60.0, hooks=hooks) as (_, port):
            yield Site(f"http://127.0.0.1:{port}", http, store, source, gh.repo(REPO), hooks)


# --- what is stored ---------------------------------------------------------------------------


async def test_a_pushed_comment_is_stored_at_once_and_a_poll_keeps_it_as_it_is(
    site: Site,
) -> None:
    repo = site.repo
    number = repo.add_issue("Hero run: loss plateau", labels=["hero-run"])
    comment = repo.add_comment(number, "Node r12n4 lost, GPU 3 ECC errors; requeued.")
    status, answer = await site.push("issue_comment", "created", number=number, comment_id=comment)
    assert status == 202 and answer["accepted"] is True
    assert await site.ingest() >= 2  # the thread and its comment
    stored = await site.store.events.get_by_external("hero", "github", f"comment:{comment}")
    assert stored is not None and stored.body.startswith("Node r12n4 lost")
    assert stored.ref == f"#{number}" and stored.author == "bob"
    timeline = await site.store.events.timeline("hero")
    assert f"comment:{comment}" in [e.external_id for e in timeline]

    # A comment nobody pushed (the delivery failed): the poll reads it, its cursor untouched.
    missed = repo.add_comment(number, "Resumed from step 54,000.")
    before = await events(site.store)
    await site.poll()
    after = await events(site.store)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing rewritten
    assert set(after) - set(before) == {f"comment:{missed}"}


async def test_polled_first_then_pushed_changes_nothing(site: Site) -> None:
    repo = site.repo
    number = repo.add_issue("Hero run checkpoints", labels=["hero-run"])
    comment = repo.add_comment(number, "Checkpoint 54k is corrupt, restoring 52k.")
    await site.poll()
    before = await events(site.store)
    assert f"comment:{comment}" in before
    assert (await site.push("issue_comment", "created", number=number, comment_id=comment))[
        0
    ] == 202
    assert await site.ingest() == 0
    assert await events(site.store) == before


async def test_deliveries_are_filtered_exactly_as_a_poll_filters(
    gh: FakeGitHub, tmp_path: Path
) -> None:
    """The same repository history read by pushes alone and by a poll alone gives the same
    events: tracked threads (label, and one hop of mentions), no untracked ones, no bots."""
    repo = gh.repo(REPO)
    tracked = repo.add_issue("Hero run: data loader stalls", labels=["hero-run"])
    other = repo.add_issue("Unrelated docs typo")
    mentions = repo.add_issue("Follow-up", "Split out of #1 so the loader fix can land first")
    pull = repo.add_pull("Fix the loader", f"Fixes #{tracked}")
    pushes: list[tuple[str, str, dict[str, Any]]] = [
        ("issues", "opened", {"number": tracked}),
        ("issues", "opened", {"number": other}),
        ("issues", "opened", {"number": mentions}),
        ("pull_request", "opened", {"number": pull}),
    ]
    for number, body, author in [
        (tracked, "Stall again at step 12,000 on node r3n7.", "amara"),
        (other, "Fixed the typo.", "bob"),
        (mentions, "Loader workers deadlock on the shard index.", "carol"),
        (tracked, "Dependencies updated.", "dependabot[bot]"),
        (pull, "Verified on the 1B ablation.", "dana"),
    ]:
        comment = repo.add_comment(number, body, user=author)
        pushes.append(("issue_comment", "created", {"number": number, "comment_id": comment}))
    review = repo.add_review(
        pull, "Looks right; the lock order matches the writer.", state="APPROVED"
    )
    pushes.append(("pull_request_review", "submitted", {"number": pull, "review_id": review}))
    repo.close(other)
    pushes.append(("issues", "closed", {"number": other}))

    async with opened(gh, tmp_path / "pushed.db") as pushed:
        for event, action, what in pushes:
            assert (await pushed.push(event, action, **what))[0] == 202
        await pushed.ingest()
        by_push = await events(pushed.store)
        authors = {row[0] for row in await pushed.store.db.fetchall("SELECT author FROM events")}
        await pushed.poll()  # the safety net finds nothing new, and rewrites nothing
        assert await events(pushed.store) == by_push
    async with opened(gh, tmp_path / "polled.db") as polled:
        await polled.poll()
        by_poll = await events(polled.store)

    assert sorted(by_push) == sorted(by_poll)
    assert {k: v[1] for k, v in by_push.items()} == {k: v[1] for k, v in by_poll.items()}
    assert f"issue:{other}" not in by_push and f"issue:{tracked}" in by_push
    assert f"issue:{mentions}" in by_push and f"review:{review}" in by_push
    assert "dependabot[bot]" not in authors and {"amara", "carol", "dana"} <= authors


async def test_a_redelivery_changes_nothing(site: Site) -> None:
    repo = site.repo
    number = repo.add_issue("Hero run", labels=["hero-run"])
    comment = repo.add_comment(number, "Throughput down 30% since the driver update.")
    first = await site.push(
        "issue_comment", "created", number=number, comment_id=comment, delivery_id="d-1"
    )
    assert first[0] == 202
    await site.ingest()
    before = await events(site.store)
    repo.edit_comment(comment, "edited later, but this is a redelivery of the old one")
    again = await site.push(
        "issue_comment", "created", number=number, comment_id=comment, delivery_id="d-1"
    )
    assert again == (200, {"duplicate": True, "delivery": "d-1"})
    assert await site.ingest() == 0
    assert await events(site.store) == before and await delivery_rows(site.store) == 1


# --- what is refused --------------------------------------------------------------------------


@pytest.mark.parametrize("forgery", ["unsigned", "wrong secret", "tampered body", "sha1 only"])
async def test_a_forged_delivery_is_refused_and_nothing_is_stored(site: Site, forgery: str) -> None:
    repo = site.repo
    number = repo.add_issue("Hero run", labels=["hero-run"])
    comment = repo.add_comment(number, "Node lost")
    payload = repo.delivery("issue_comment", "created", number=number, comment_id=comment)
    secret = {"unsigned": None, "wrong secret": "guess"}.get(forgery, SECRET)
    headers, body = signed_delivery("issue_comment", payload, secret)
    if forgery == "tampered body":
        body = body.replace(b"Node lost", b"Node LOST")
    if forgery == "sha1 only":
        del headers["X-Hub-Signature-256"]
    status, answer = await site.post(headers, body)
    assert status == 401 and "X-Hub-Signature-256" in answer["error"]
    assert await site.ingest() == 0
    assert await events(site.store) == {} and await delivery_rows(site.store) == 0
    assert site.hooks.last_delivery["github"] is None


async def test_without_a_secret_the_endpoint_does_not_exist(gh: FakeGitHub, tmp_path: Path) -> None:
    async with opened(gh, tmp_path / "off.db", secret=None) as off:
        number = off.repo.add_issue("Hero run", labels=["hero-run"])
        assert (await off.push("issues", "opened", number=number))[0] == 404
        assert off.hooks.health()["github"] == {"enabled": False, "last_delivery_at": None}
        assert await delivery_rows(off.store) == 0


async def test_ping_and_other_events_are_acknowledged_and_ignored(site: Site) -> None:
    status, answer = await site.push("ping")
    assert status == 200 and answer["zen"]
    status, answer = await site.push("push")
    assert status == 202 and "not read" in answer["ignored"]
    assert await delivery_rows(site.store) == 0
    assert site.hooks.health()["github"]["last_delivery_at"] is not None


async def test_a_repository_no_run_tracks_is_ignored(site: Site, gh: FakeGitHub) -> None:
    elsewhere = gh.repo("lab/other")
    number = elsewhere.add_issue("Hero run", labels=["hero-run"])
    payload = elsewhere.delivery("issues", "opened", number=number)
    status, answer = await site.post(*signed_delivery("issues", payload, SECRET))
    assert status == 202 and "no run tracks lab/other" in answer["ignored"]
    assert await delivery_rows(site.store) == 0


async def test_bad_json_and_oversize_bodies_are_refused(site: Site) -> None:
    headers, _ = signed_delivery("issues", {}, SECRET)
    junk = b"{not json"
    from bot.hooks.auth import github_signature

    headers["X-Hub-Signature-256"] = github_signature(SECRET, junk)
    assert (await site.post(headers, junk))[0] == 400
    big = b" " * 4_000_001
    headers["X-Hub-Signature-256"] = github_signature(SECRET, big)
    status, answer = await site.post(headers, big)
    assert status == 413 and "over" in answer["error"]
    assert await delivery_rows(site.store) == 0


async def test_form_encoded_deliveries_are_read_too(site: Site) -> None:
    repo = site.repo
    number = repo.add_issue("Hero run", labels=["hero-run"])
    payload = repo.delivery("issues", "opened", number=number)
    body = urlencode({"payload": json.dumps(payload)}).encode()
    from bot.hooks.auth import github_signature

    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": "form-1",
        "X-Hub-Signature-256": github_signature(SECRET, body),
    }
    assert (await site.post(headers, body))[0] == 202
    await site.ingest()
    assert f"issue:{number}" in await events(site.store)


async def test_deliveries_out_of_order_keep_the_newest_version(site: Site, gh: FakeGitHub) -> None:
    """GitHub does not promise order: an edit delivered before the creation it follows."""
    repo = site.repo
    number = repo.add_issue("Hero run", labels=["hero-run"])
    comment = repo.add_comment(number, "Loss spike at 41k, looking.")
    created = repo.delivery("issue_comment", "created", number=number, comment_id=comment)
    gh.advance(minutes=5)
    repo.edit_comment(comment, "Loss spike at 41k: a bad shard, skipped it.")
    edited = repo.delivery("issue_comment", "edited", number=number, comment_id=comment)
    for payload in (edited, created):  # one batch, newest first
        assert (await site.post(*signed_delivery("issue_comment", payload, SECRET)))[0] == 202
    await site.ingest()
    stored = await site.store.events.get_by_external("hero", "github", f"comment:{comment}")
    assert stored is not None and stored.body.endswith("a bad shard, skipped it.")
    # ... and in a later batch: the old one still does not overwrite it.
    assert (await site.post(*signed_delivery("issue_comment", created, SECRET)))[0] == 202
    await site.ingest()
    stored = await site.store.events.get_by_external("hero", "github", f"comment:{comment}")
    assert stored is not None and stored.body.endswith("a bad shard, skipped it.")


async def test_a_thread_labelled_later_brings_its_earlier_comments_at_once(site: Site) -> None:
    """Comments written while a thread was untracked (dropped by push and poll alike) arrive
    when a label makes it tracked, and the next poll neither misses nor rewrites any."""
    repo = site.repo
    old = repo.add_issue("Data loader notes")
    await site.poll()  # the cursors are past the thread's creation
    early = [repo.add_comment(old, f"Shard {n} reads slowly on r3n{n}.") for n in range(3)]
    for comment in early:
        await site.push("issue_comment", "created", number=old, comment_id=comment)
    await site.poll()  # untracked: nothing of it stored
    assert await site.ingest() == 0 and await events(site.store) == {}
    repo.add_label(old, "hero-run")
    assert (await site.push("issues", "labeled", number=old))[0] == 202
    await site.ingest()
    stored = await events(site.store)
    assert {f"comment:{c}" for c in early} <= set(stored) and f"issue:{old}" in stored
    await site.poll()
    assert await events(site.store) == stored


@pytest.mark.parametrize("signature", [None, "", "sha1=0123", "sha256=" + "z" * 64])
async def test_an_unsigned_delivery_is_refused_before_its_body_is_sent(
    site: Site, signature: str | None
) -> None:
    """GitHub's HMAC needs the body, but a request without a well-formed signature header is
    answered 401 while its body is still unsent."""
    host, port = site.url.split("//")[1].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = (
        "POST /hooks/github HTTP/1.1\r\n"
        f"Host: {host}\r\n"
        "Content-Type: application/json\r\n"
        "X-GitHub-Event: issues\r\n"
        + (f"X-Hub-Signature-256: {signature}\r\n" if signature is not None else "")
        + "Content-Length: 4000000\r\n\r\n"
    )
    writer.write(head.encode())
    await writer.drain()
    status = await reader.readline()
    writer.close()
    assert status.startswith(b"HTTP/1.1 401"), status
    assert await delivery_rows(site.store) == 0


async def test_a_signed_body_is_read_only_up_to_the_limit(site: Site) -> None:
    """Sent without a Content-Length (chunked), a signed body is read streaming and refused
    once it passes 1 MB."""
    from bot.hooks.auth import github_signature

    body = b" " * 1_000_001  # the issue's limit: 1 MB

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 65_536):
            yield body[start : start + 65_536]

    headers, _ = signed_delivery("issues", {}, SECRET)
    headers["X-Hub-Signature-256"] = github_signature(SECRET, body)
    try:
        async with site.http.post(site.url + "/hooks/github", data=chunks(), headers=headers) as r:
            assert r.status == 413
    except aiohttp.ClientError:
        pass  # closed while the client still sent: refused too
    assert await delivery_rows(site.store) == 0


@pytest.mark.parametrize("levels", [40, 100_000])
async def test_a_signed_body_nested_too_deep_is_a_400(site: Site, levels: int) -> None:
    from bot.hooks.auth import github_signature

    number = site.repo.add_issue("Hero run", labels=["hero-run"])
    payload = site.repo.delivery("issues", "opened", number=number)
    deep = "[" * levels + "]" * levels
    body = json.dumps(payload)[:-1].encode() + f', "extra": {deep}}}'.encode()
    headers, _ = signed_delivery("issues", payload, SECRET)
    headers["X-Hub-Signature-256"] = github_signature(SECRET, body)
    status, answer = await site.post(headers, body)
    assert status == 400 and "nests deeper" in answer["error"], answer
    assert await delivery_rows(site.store) == 0
