"""The run's ops log on GitHub: each resolved incident's write-up is one comment on the issue the
runs file names (`github_ops_issue`), through real HTTP to the fake GitHub. Stored first; after
a process dies between GitHub's answer and the store's update, the next finds its comment (one
comment, never two); a changed write-up is edited in place; a token that may not write issues
writes nothing and says why. `check-config` says why nothing is written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from bot.models import RunInfo
from bot.outputs.opslog import OpsLogDetector, OpsLogWriter
from bot.store import Store
from tests.cli.test_check_config import GOOD, check
from tests.fakes.github import FakeGitHub, FakeRepo
from tests.incidents.test_writeup import crash_and_requeue


@pytest.fixture
async def github() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub() as server:
        yield server


async def log_issue(store: Store, github: FakeGitHub) -> tuple[FakeRepo, int]:
    github.now = datetime.now(UTC)  # GitHub's clock is its own: the post is stamped by it
    repo = github.repo("lab/hero")
    number = repo.add_issue("Hero ops log")
    run = await store.runs.get("hero")
    assert run is not None
    config = run.config.model_copy(update={"github_ops_issue": number})
    await store.runs.upsert(RunInfo.from_config(config))
    return repo, number


def comments(repo: FakeRepo, number: int) -> list[Any]:
    return [c for c in repo.comments.values() if c.number == number]


async def test_one_comment_even_when_the_process_dies_after_posting_it(
    store: Store, now: datetime, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    sc, incident_id = await crash_and_requeue(store, now)
    repo, number = await log_issue(store, github)
    async with httpx.AsyncClient() as client:
        writer = OpsLogWriter(client, github.url, SecretStr("token"))

        async def killed(*args: object, **kwargs: object) -> None:
            raise RuntimeError("killed before the store heard GitHub's answer")

        monkeypatch.setattr(store.opslog, "posted", killed)
        sc.engine = OpsLogDetector(sc.engine, writer)
        await sc.tick()
        assert len(comments(repo, number)) == 1  # GitHub has it; the store does not know
        monkeypatch.undo()
        row = await store.opslog.get(incident_id)
        assert row is not None and row.comment_id is None
        sc.engine = OpsLogDetector(sc.engine.engine, writer)  # a new process
        await sc.run_for(3)
    [comment] = comments(repo, number)
    row = await store.opslog.get(incident_id)
    assert row is not None and row.comment_id == comment.id and not row.due
    assert f"Write-up: incident \\#{incident_id}" in comment.body
    assert "900 steps (900M tokens) recomputed" in comment.body
    assert f"<!-- runscribe:incident:{incident_id} -->" in comment.body


async def test_a_changed_writeup_edits_the_comment_in_place(
    store: Store, now: datetime, github: FakeGitHub
) -> None:
    sc, _ = await crash_and_requeue(store, now)
    repo, number = await log_issue(store, github)
    async with httpx.AsyncClient() as client:
        sc.engine = OpsLogDetector(sc.engine, OpsLogWriter(client, github.url, SecretStr("t")))
        await sc.tick()
        [first] = comments(repo, number)
        assert "issues/77" not in first.body
        await sc.report(
            "The hero run crashed because node r7 lost its IB link; the cable is swapped.",
            author="erin",
            number=77,
        )
        await sc.run_for(2)
    [comment] = comments(repo, number)
    assert comment.id == first.id and "https://github.com/lab/hero/issues/77" in comment.body


async def test_a_token_that_may_not_write_issues_writes_nothing(
    store: Store, now: datetime, github: FakeGitHub
) -> None:
    sc, incident_id = await crash_and_requeue(store, now)
    repo, number = await log_issue(store, github)
    github.may_write = False
    async with httpx.AsyncClient() as client:
        sc.engine = OpsLogDetector(sc.engine, OpsLogWriter(client, github.url, SecretStr("t")))
        await sc.run_for(2)
    assert comments(repo, number) == []
    row = await store.opslog.get(incident_id)
    assert row is not None and row.comment_id is None
    assert row.last_error is not None and "the token may not write issues" in row.last_error
    assert "403" in row.last_error


def test_check_config_says_why_nothing_is_written(tmp_path: Path) -> None:
    without = check(tmp_path, GOOD)
    assert "hero: incident write-ups stay in Discord: no github_ops_issue" in without.stdout
    configured = GOOD.replace(
        "github_issues = [8435]", "github_issues = [8435]\ngithub_ops_issue = 8506"
    )
    no_token = check(tmp_path, configured)
    assert "are not written to lab/model#8506: GITHUB_TOKEN is not set" in no_token.stdout
    with_token = check(tmp_path, configured, GITHUB_TOKEN="ghp_example")
    assert "go to lab/model#8506, one comment each, if GITHUB_TOKEN may write" in (
        with_token.stdout
    )


async def test_the_runtime_writes_the_ops_log_only_with_a_token_and_an_issue(
    store: Store, tmp_path: Path
) -> None:
    from contextlib import AsyncExitStack

    from bot.config.runsfile import RunConfig
    from bot.config.settings import Settings
    from bot.incidents.engine import IncidentEngine
    from bot.posts.incidents import IncidentPosts
    from bot.process.wiring import LiveSources, with_ops_log

    engine = IncidentEngine(IncidentPosts())
    logged = RunConfig(slug="hero", name="Hero", github_repo="lab/hero", github_ops_issue=8)
    plain = RunConfig(slug="hero", name="Hero", github_repo="lab/hero")
    token = Settings(_env_file=None, github_token="t")  # type: ignore[call-arg]
    tokenless = Settings(_env_file=None, github_token=None)  # type: ignore[call-arg]
    async with AsyncExitStack() as stack:
        live = LiveSources(store, token, stack)
        wrapped = await with_ops_log(engine, [logged], token, live)
        assert isinstance(wrapped, OpsLogDetector) and wrapped.engine is engine
        assert await with_ops_log(engine, [plain], token, live) is engine
        assert await with_ops_log(engine, [logged], tokenless, live) is engine


def test_the_comment_pings_nobody_on_github() -> None:
    from bot.outputs.opslog import comment_body

    body = comment_body("dave wrote: “@amara @org/infra see a@b.io https://x.org/@c”", 4)
    assert "@amara" not in body and "@org/infra" not in body
    assert "@\u2060amara" in body and "a@b.io" in body and "https://x.org/@c" in body
    assert body.endswith("<!-- runscribe:incident:4 -->\n")
