"""The GitHub source against a local fake GitHub (tests/fakes/github.py) and a real SQLite file.

Request counts are read from the fake's request log, never from the source's own counters alone,
so a source that lies about its cost fails."""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.config.settings import RunConfig, Settings
from bot.sources.base import SourceUnavailable
from bot.sources.github import GitHubSource, build_github_sources
from bot.sources.github_threads import BODY_CAP, find_refs
from bot.sources.poller import poll_once
from bot.store import Database, Store
from tests.fakes.github import FakeGitHub, FakeRepo
from tests.waiting import until

REPO = "acme/rocket"
NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
async def gh() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub() as server:
        server.repo(REPO)
        yield server


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as http:
        yield http


class Sleeps:
    """Injected instead of asyncio.sleep: records the delays, waits for none of them."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def run(slug: str = "hero", repo: str = REPO, **fields: Any) -> RunConfig:
    fields.setdefault("github_labels", ["hero-run"])
    return RunConfig(slug=slug, name=slug.title(), github_repo=repo, **fields)


def settings(gh: FakeGitHub, token: str | None = None) -> Settings:
    return Settings(_env_file=None, github_api_url=gh.url, github_token=token)  # type: ignore[call-arg]


def source(
    store: Store,
    client: httpx.AsyncClient,
    gh: FakeGitHub,
    runs: list[RunConfig] | None = None,
    *,
    token: str | None = None,
    **options: Any,
) -> GitHubSource:
    options.setdefault("sleep", Sleeps())
    options.setdefault("timeout", 2.0)
    return GitHubSource(store, client, settings(gh, token), runs or [run()], **options)


async def rows(store: Store, slug: str = "hero") -> list[dict[str, Any]]:
    found = await store.db.fetchall(
        "SELECT id, external_id, kind, state, title, body, author, ref, url, thread, extra "
        "FROM events WHERE run_slug = ? ORDER BY external_id",
        (slug,),
    )
    return [dict(row) for row in found]


async def by_id(store: Store, slug: str = "hero") -> dict[str, dict[str, Any]]:
    return {row["external_id"]: row for row in await rows(store, slug)}


async def cycle(gh: FakeGitHub, src: GitHubSource) -> list[Any]:
    """Poll once; return the requests it made as the fake saw them."""
    start = len(gh.log)
    result = await src.poll(NOW)
    made = gh.requests(start)
    assert result.requests == len(made)
    assert result.not_modified == sum(1 for r in made if r.status == 304)
    return made


def seed(repo: FakeRepo) -> dict[str, int]:
    hero = repo.add_issue("Hero run: launch plan", "We launch on Monday.", labels=["hero-run"])
    noise = repo.add_issue("Docs typo", "Fix the README")
    repo.add_comment(hero, "Nodes are ready.")
    repo.add_comment(noise, "Thanks!")
    return {"hero": hero, "noise": noise}


# --- conditional requests ---------------------------------------------------------------------


async def test_idle_cycle_is_two_requests_both_304(gh, client, store) -> None:
    seed(gh.repo(REPO))
    src = source(store, client, gh)
    first = await cycle(gh, src)
    assert [r.status for r in first] == [200, 200]
    gh.advance(minutes=5)

    for _ in range(3):
        idle = await cycle(gh, src)
        assert [(r.path, r.status) for r in idle] == [
            (f"/repos/{REPO}/issues", 304),
            (f"/repos/{REPO}/issues/comments", 304),
        ]
        assert all(r.if_none_match for r in idle)
        # The same URL as the poll that stored the ETag: the cursor did not move.
        assert [r.query for r in idle] == [r.query for r in first]
    for request in gh.log:
        assert request.user_agent and request.user_agent.startswith("runscribe/")
        assert request.accept == "application/vnd.github+json"
        assert request.api_version == "2022-11-28"
        assert not request.authorized  # no token configured, none sent
    assert first[0].query == {
        "state": "all",
        "sort": "updated",
        "direction": "asc",
        "per_page": "100",
    }


async def test_active_cycle_costs_two_requests_then_idle_again(gh, client, store) -> None:
    repo = gh.repo(REPO)
    threads = seed(repo)
    src = source(store, client, gh)
    await cycle(gh, src)
    gh.advance(hours=1)

    repo.add_comment(threads["hero"], "Loss is flat at 2.1")
    active = await cycle(gh, src)
    assert [r.status for r in active] == [200, 200]
    stored = await rows(store)
    assert [r["body"] for r in stored if r["kind"] == "comment"] == [
        "Nodes are ready.",
        "Loss is flat at 2.1",
    ]
    gh.advance(minutes=1)
    assert [r.status for r in await cycle(gh, src)] == [304, 304]


async def test_token_is_sent_as_bearer(client, store) -> None:
    async with FakeGitHub(token="s3cret") as gh:
        seed(gh.repo(REPO))
        src = source(store, client, gh, token="s3cret")
        await cycle(gh, src)
        assert all(r.authorized for r in gh.log)
        assert [r.status for r in gh.log] == [200, 200]


async def test_link_pagination_across_pages(gh, client, store) -> None:
    repo = gh.repo(REPO)
    for i in range(35):
        number = repo.add_issue(f"Hero ablation {i}", labels=["hero-run"])
        repo.add_comment(number, f"result {i}")
        gh.advance(minutes=1)
    src = source(store, client, gh, per_page=10)
    made = await cycle(gh, src)
    issue_pages = [r.query.get("page") for r in made if r.path.endswith("/issues")]
    comment_pages = [r.query.get("page") for r in made if r.path.endswith("/comments")]
    # Four pages each, following rel="next", then one request at the moved cursor for its ETag.
    assert issue_pages == [None, "2", "3", "4", None]
    assert comment_pages == [None, "2", "3", "4", None]
    stored = await rows(store)
    assert sum(r["kind"] == "issue" for r in stored) == 35
    assert sum(r["kind"] == "comment" for r in stored) == 35
    gh.advance(minutes=5)
    assert [r.status for r in await cycle(gh, src)] == [304, 304]


# --- a history served over simulated weeks ----------------------------------------------------


@pytest.mark.parametrize("keep_window", [50, 1])
async def test_history_over_weeks_gives_exactly_one_event_per_fact(
    gh, client, store, keep_window: int
) -> None:
    rng = random.Random(7)
    repo = gh.repo(REPO)
    config = run(github_issues=[1], github_keywords=["hero run"])
    src = source(store, client, gh, [config], per_page=20, keep_window=keep_window)

    tracked: set[int] = set()
    noise: set[int] = set()
    comments: dict[int, int] = {}  # comment id -> thread
    transitions: list[tuple[int, str]] = []
    pulls: set[int] = set()

    tracked.add(repo.add_issue("Launch the 70B", "Tracking issue for the hero run."))
    for _ in range(3):
        noise.add(repo.add_issue("Unrelated chore", "Bump a dependency."))

    for day in range(56):  # eight weeks, one poll a day
        state_changed: set[int] = set()
        if day % 3 == 0:
            tracked.add(repo.add_issue(f"Spike on day {day}", "seen twice", labels=["hero-run"]))
        if day % 4 == 1:
            tracked.add(repo.add_issue(f"Day {day} eval", "Eval notes for the Hero Run."))
        if day % 6 == 2:
            number = repo.add_pull(f"Fix loader (day {day})", "Fixes #1 by sharding reads.")
            tracked.add(number)
            pulls.add(number)
        if day % 5 == 3:
            noise.add(repo.add_issue(f"Noise {day}", "nothing to see"))
        for _ in range(rng.randint(0, 4)):
            thread = rng.choice(sorted(tracked))
            comments[repo.add_comment(thread, f"update {day}-{rng.random():.4f}")] = thread
        for _ in range(rng.randint(0, 3)):
            repo.add_comment(rng.choice(sorted(noise)), "noise comment, no refs")
        if comments and day % 4 == 0:
            repo.edit_comment(rng.choice(sorted(comments)), f"edited on day {day}")
        if day % 5 == 4:
            open_ones = sorted(
                n
                for n in tracked - pulls
                if repo.issues[n].state == "open" and n not in state_changed
            )
            if open_ones:
                number = rng.choice(open_ones)
                repo.close(number)
                transitions.append((number, "closed"))
                state_changed.add(number)
        if day % 7 == 6:
            closed = sorted(
                n
                for n in tracked - pulls
                if repo.issues[n].state == "closed" and n not in state_changed
            )
            if closed:
                number = rng.choice(closed)
                repo.reopen(number)
                transitions.append((number, "open"))
                state_changed.add(number)
        if day % 6 == 4:
            number = max(pulls)
            if repo.issues[number].merged_at is None:
                repo.merge(number)
                transitions.append((number, "merged"))
        gh.advance(hours=rng.choice([6, 12, 24]))
        await src.poll(NOW)
        if day % 10 == 9:  # several idle polls in between: always two 304s
            assert [r.status for r in await cycle(gh, src)] == [304, 304]

    stored = await rows(store)
    issues = {int(r["ref"][1:]): r for r in stored if r["kind"] in ("issue", "pull")}
    assert set(issues) == tracked  # every description, nothing from the noise threads
    for number, row in issues.items():
        current = repo.issues[number]
        expected_state = "merged" if current.merged_at else current.state
        assert (row["title"], row["body"], row["state"]) == (
            current.title,
            current.body,
            expected_state,
        )
    stored_comments = {
        int(r["external_id"].split(":")[1]): r for r in stored if r["kind"] == "comment"
    }
    assert set(stored_comments) == set(comments)
    for comment_id, row in stored_comments.items():
        assert row["body"] == repo.comments[comment_id].body
    states = sorted((int(r["ref"][1:]), r["state"]) for r in stored if r["kind"] == "state")
    assert states == sorted(transitions)
    assert len(transitions) >= 10


# --- tracking ---------------------------------------------------------------------------------


async def test_thread_tracked_late_gets_earlier_comments_backfilled(gh, client, store) -> None:
    repo = gh.repo(REPO)
    hero = repo.add_issue("Hero run status", labels=["hero-run"])
    later = repo.add_issue("Tokenizer drift")
    mentioned = repo.add_issue("Checkpoint format")
    mentions_hero = repo.add_issue("Eval harness")
    two_hops = repo.add_issue("Unrelated infra")
    for number in (later, mentioned, mentions_hero):
        repo.add_comment(number, f"early comment on #{number}")
    repo.add_comment(mentioned, f"see #{two_hops} for the infra side")
    # Enough unrelated traffic that the comments cursor has moved past the early comments.
    for i in range(60):
        gh.advance(minutes=1)
        repo.add_comment(two_hops, f"chatter {i}")
    src = source(store, client, gh)
    await src.poll(NOW)
    assert {r["ref"] for r in await rows(store)} == {f"#{hero}"}

    gh.advance(days=1)
    repo.add_label(later, "hero-run")  # becomes tracked by label
    repo.add_comment(hero, f"Blocked on https://github.com/{REPO}/issues/{mentioned}")
    repo.add_comment(mentions_hero, f"this affects {REPO}#{hero}")
    made = await cycle(gh, src)
    stored = await by_id(store)
    bodies = {r["body"] for r in stored.values() if r["kind"] == "comment"}
    for number in (later, mentioned, mentions_hero):
        assert f"issue:{number}" in stored
        assert f"early comment on #{number}" in bodies
    assert f"see #{two_hops} for the infra side" in bodies
    assert f"issue:{two_hops}" not in stored  # one hop only
    assert not any("chatter" in body for body in bodies)
    backfills = sorted(
        r.path for r in made if re.fullmatch(r"/repos/.+/issues/\d+/comments", r.path)
    )
    assert backfills == sorted(
        f"/repos/{REPO}/issues/{n}/comments" for n in (later, mentioned, mentions_hero)
    )
    # Once backfilled, quiet again.
    gh.advance(minutes=5)
    assert [r.status for r in await cycle(gh, src)] == [304, 304]


async def test_tracked_set_survives_restart(gh, client, store) -> None:
    repo = gh.repo(REPO)
    hero = repo.add_issue("Hero run", labels=["hero-run"])
    other = repo.add_issue("Side quest", f"related to #{hero}")
    await source(store, client, gh).poll(NOW)
    gh.advance(hours=1)
    repo.add_comment(other, "a new comment on the referencing thread")
    await source(store, client, gh).poll(NOW)  # a new process: state comes from the store
    bodies = [r["body"] for r in await rows(store) if r["kind"] == "comment"]
    assert bodies == ["a new comment on the referencing thread"]


async def test_run_added_later_rescans_history_once(gh, client, store) -> None:
    repo = gh.repo(REPO)
    repo.add_issue("Hero run", labels=["hero-run"])
    ablation = repo.add_issue("Ablation: no warmup", labels=["ablation"])
    repo.add_comment(ablation, "warmup matters")
    for i in range(60):  # move both cursors past the ablation thread
        gh.advance(minutes=1)
        repo.add_comment(1, f"hero step {i}")
    await source(store, client, gh).poll(NOW)
    gh.advance(hours=1)

    both = [run(), run("abl", github_labels=["ablation"])]
    await source(store, client, gh, both).poll(NOW)
    stored = await by_id(store, "abl")
    assert set(stored) == {f"issue:{ablation}", f"comment:{min(repo.comments)}"}
    gh.advance(minutes=1)
    assert [r.status for r in await cycle(gh, source(store, client, gh, both))] == [304, 304]


async def test_bot_authors_are_ignored_unless_included(gh, client, store) -> None:
    repo = gh.repo(REPO)
    hero = repo.add_issue("Hero run", labels=["hero-run"])
    bot_pr = repo.add_pull("Bump torch", "Bumps torch", user="dependabot[bot]", labels=["hero-run"])
    victim = repo.add_issue("Untracked")
    repo.add_comment(hero, "human note")
    repo.add_comment(hero, f"CI passed, see #{victim}", user="github-actions[bot]")
    repo.add_comment(hero, "lockfile updated", user="renovate")
    runs = [run(), run("botty", github_include_bots=True)]
    await source(store, client, gh, runs).poll(NOW)
    plain = await rows(store, "hero")
    assert [(r["kind"], r["body"]) for r in plain if r["kind"] == "comment"] == [
        ("comment", "human note")
    ]
    assert {r["ref"] for r in plain} == {f"#{hero}"}  # neither the bot PR nor #victim
    with_bots = await by_id(store, "botty")
    assert f"issue:{bot_pr}" in with_bots
    assert f"issue:{victim}" in with_bots  # the bot comment's reference counts for this run
    assert sum(r["kind"] == "comment" for r in with_bots.values()) == 3


async def test_an_issue_an_alerting_bot_files_is_kept(gh, client, store) -> None:
    """Sentry's or a ticket sync's issue, routed to the run by its label, reports a failure:
    kept like a person's (its bot comments and a bot's pull still are not)."""
    repo = gh.repo(REPO)
    body = "**NCCLError**: `Watchdog caught collective operation timeout` on rank 1733, 312 events."
    title = "[Sentry] NCCLError: Watchdog caught collective operation timeout"
    sentry = repo.add_issue(title, body, user="sentry-io[bot]", labels=["hero-run"])
    repo.add_comment(sentry, "Regressed in release 2.4.1", user="sentry-io[bot]")
    repo.add_pull("Bump torch", "Bumps torch", user="dependabot[bot]", labels=["hero-run"])
    await source(store, client, gh, [run()]).poll(NOW)
    stored = await rows(store, "hero")
    assert [(r["kind"], r["ref"], r["author"], r["title"]) for r in stored] == [
        ("issue", f"#{sentry}", "sentry-io[bot]", title)
    ]


MONITOR = "hero-runbot[bot]"
SAVE_FAILED = (
    "❌ **checkpoint save failed** at step 96,000\n\n```\nOSError: [Errno 5] Input/output "
    "error: '/lus/hero/ckpt/step_096000/shard_0417.safetensors'\n```\n\nlast good save 95,000"
)


async def test_a_bots_comment_reporting_a_fault_is_kept_listed_or_backfilled(
    gh, client, store
) -> None:
    """A run monitor's "checkpoint save failed" is an alert: kept whether the comment listing
    brings it or the backfill of a thread tracked later does; the CI bot beside it is not."""
    repo = gh.repo(REPO)
    hero = repo.add_issue("Hero run log", labels=["hero-run"])
    repo.add_comment(hero, SAVE_FAILED, user=MONITOR)
    repo.add_comment(hero, "✅ **CI passed**: lint, unit (212 passed)", user="github-actions[bot]")
    later = repo.add_issue("Storage on /lus/hero")
    repo.add_comment(later, SAVE_FAILED.replace("96,000", "97,000"), user=MONITOR)
    repo.add_comment(later, "This issue is stale and will be closed.", user="stale[bot]")
    await source(store, client, gh).poll(NOW)
    gh.advance(hours=1)
    repo.add_comment(hero, f"same save error as in #{later}", user="dana")  # tracks #later
    await source(store, client, gh).poll(NOW)
    kept = [
        (r["ref"], r["author"], r["body"][:40]) for r in await rows(store) if r["kind"] == "comment"
    ]
    assert sorted(kept) == sorted(
        [
            (f"#{hero}", MONITOR, SAVE_FAILED[:40]),
            (f"#{hero}", "dana", f"same save error as in #{later}"[:40]),
            (f"#{later}", MONITOR, SAVE_FAILED.replace("96,000", "97,000")[:40]),
        ]
    )


async def test_runscribes_own_ops_log_comments_are_never_read_back(gh, client, store) -> None:
    repo = gh.repo(REPO)
    log = repo.add_issue("Hero run ops log", labels=["hero-run"])
    repo.add_comment(log, "Swapped the IB cable on r7.", user="ops-person")
    writeup = "## Write-up: incident #3\n\nW&B run crashed.\n\n<!-- runscribe:incident:3 -->\n"
    repo.add_comment(log, writeup, user="ops-person")  # a person's token posted it for us
    await source(store, client, gh, [run(), run("botty", github_include_bots=True)]).poll(NOW)
    for slug in ("hero", "botty"):
        said = [r["body"] for r in await rows(store, slug) if r["kind"] == "comment"]
        assert said == ["Swapped the IB cable on r7."]


def test_references() -> None:
    text = (
        "Fixes #12, see acme/rocket#13 and ACME/Rocket#14, not other/repo#15 or &#16; "
        "https://github.com/acme/rocket/pull/17 https://github.com/acme/rocket/issues/18#x "
        "https://github.com/other/repo/issues/19 color ## heading, issue#20"
    )
    assert find_refs(text, REPO) == {12, 13, 14, 17, 18}


# --- edits and states -------------------------------------------------------------------------


async def test_edited_comment_updates_in_place(gh, client, store) -> None:
    repo = gh.repo(REPO)
    hero = repo.add_issue("Hero run", labels=["hero-run"])
    comment = repo.add_comment(hero, "loss 2.3")
    src = source(store, client, gh)
    await src.poll(NOW)
    before = (await by_id(store))[f"comment:{comment}"]
    gh.advance(minutes=30)
    repo.edit_comment(comment, "loss 2.3 (typo: 2.03)")
    result = await src.poll(NOW)
    after = (await by_id(store))[f"comment:{comment}"]
    assert after["id"] == before["id"]
    assert after["body"] == "loss 2.3 (typo: 2.03)"
    assert result.events == 1
    assert len(await rows(store)) == 2


async def test_close_merge_reopen_become_state_events(gh, client, store) -> None:
    repo = gh.repo(REPO)
    hero = repo.add_issue("Hero run", labels=["hero-run"])
    pull = repo.add_pull("Fix loader", f"Fixes #{hero}")
    old = repo.add_issue("Old closed hero issue", labels=["hero-run"])
    repo.close(old)
    src = source(store, client, gh)
    await src.poll(NOW)
    stored = await by_id(store)
    assert stored[f"issue:{old}"]["state"] == "closed"
    assert not [k for k in stored if k.startswith("state:")]  # history, not news

    gh.advance(hours=1)
    repo.close(hero)
    await src.poll(NOW)
    gh.advance(hours=1)
    repo.reopen(hero)
    repo.merge(pull)
    await src.poll(NOW)
    await src.poll(NOW)  # idle: nothing new

    stored = await by_id(store)
    states = sorted((r["title"], r["state"]) for k, r in stored.items() if k.startswith("state:"))
    assert states == [
        (f"closed #{hero}", "closed"),
        (f"merged #{pull}", "merged"),
        (f"reopened #{hero}", "open"),
    ]
    assert stored[f"issue:{hero}"]["state"] == "open"
    assert stored[f"issue:{pull}"]["state"] == "merged"
    assert '"merged_at":"2026-09-01T11:00:00Z"' in stored[f"issue:{pull}"]["extra"]


async def test_new_thread_closed_since_last_poll_is_news(gh, client, store) -> None:
    repo = gh.repo(REPO)
    repo.add_issue("Hero run", labels=["hero-run"])
    for i in range(60):  # move the issues cursor forward
        repo.add_issue(f"noise {i}")
        gh.advance(minutes=1)
    src = source(store, client, gh)
    await src.poll(NOW)
    gh.advance(hours=1)
    quick = repo.add_issue("Hero run: quick fix", labels=["hero-run"])
    gh.advance(minutes=5)
    repo.close(quick)
    await src.poll(NOW)
    stored = await by_id(store)
    assert [k for k in stored if k.startswith("state:")] == [
        f"state:{quick}:closed:2026-09-01T11:05:00Z"  # 9:00 + 60 min + 1 h + 5 min
    ]


async def test_reviews_with_text_are_read_when_the_pr_moves(gh, client, store) -> None:
    repo = gh.repo(REPO)
    pull = repo.add_pull("Hero run: faster loader", labels=["hero-run"])
    good = repo.add_review(pull, "Looks right, but check the shard order.")
    repo.add_review(pull, "", state="APPROVED")
    src = source(store, client, gh)
    made = await cycle(gh, src)
    assert [r.path for r in made].count(f"/repos/{REPO}/pulls/{pull}/reviews") == 1
    stored = await by_id(store)
    assert [k for k in stored if k.startswith("review:")] == [f"review:{good}"]
    assert stored[f"review:{good}"]["kind"] == "review"

    gh.advance(minutes=10)
    repo.add_comment(pull, "rebased")  # the PR's updated_at moves; its reviews did not change
    made = await cycle(gh, src)
    reviews = [r for r in made if r.path.endswith("/reviews")]
    assert [(r.status, bool(r.if_none_match)) for r in reviews] == [(304, True)]
    assert [r.status for r in await cycle(gh, src)] == [304, 304]


async def test_huge_body_is_capped(gh, client, store) -> None:
    repo = gh.repo(REPO)
    repo.add_issue("Hero run", "x" * (BODY_CAP * 3) + "\x00", labels=["hero-run"])
    await source(store, client, gh).poll(NOW)
    (row,) = await rows(store)
    assert len(row["body"]) <= BODY_CAP + 1


# --- faults -----------------------------------------------------------------------------------


async def test_secondary_limit_with_retry_after_loses_nothing(gh, client, store) -> None:
    repo = gh.repo(REPO)
    threads = seed(repo)
    src = source(store, client, gh)
    await src.poll(NOW)
    gh.advance(hours=1)
    repo.add_comment(threads["hero"], "after the limit")
    gh.secondary_limit(retry_after=120)
    with pytest.raises(SourceUnavailable) as caught:
        await src.poll(NOW)
    assert caught.value.retry_after == 120
    assert not caught.value.fatal
    await src.poll(NOW)
    assert "after the limit" in {r["body"] for r in await rows(store)}


async def test_secondary_limit_without_retry_after_backs_off_a_minute_then_more(
    gh, client, store
) -> None:
    seed(gh.repo(REPO))
    src = source(store, client, gh)
    waits = []
    for _ in range(2):
        gh.secondary_limit()
        with pytest.raises(SourceUnavailable) as caught:
            await src.poll(NOW)
        waits.append(caught.value.retry_after)
    assert waits == [60, 120]
    await src.poll(NOW)
    gh.secondary_limit()
    with pytest.raises(SourceUnavailable) as caught:
        await src.poll(NOW)
    assert caught.value.retry_after == 60  # a good poll resets the backoff


async def test_a_short_rate_limit_is_waited_out_inside_the_poll(gh, client, store) -> None:
    """retry-after ≤ 60 s: the poll sleeps and carries on instead of failing the source."""
    repo = gh.repo(REPO)
    threads = seed(repo)
    sleeps = Sleeps()
    src = source(store, client, gh, sleep=sleeps)
    await src.poll(NOW)
    repo.add_comment(threads["hero"], "after the short limit")
    gh.advance(hours=1)
    gh.secondary_limit(retry_after=20)
    await src.poll(NOW)  # does not raise
    assert sleeps.delays == [20]
    assert "after the short limit" in {r["body"] for r in await rows(store)}

    # A limit that keeps coming back fails after two waits, with its retry-after.
    gh.secondary_limit(retry_after=20, count=3)
    with pytest.raises(SourceUnavailable) as caught:
        await src.poll(NOW)
    assert caught.value.retry_after == 20 and sleeps.delays == [20, 20, 20]


async def test_a_primary_window_about_to_reset_is_waited_out(gh, client, store) -> None:
    seed(gh.repo(REPO))
    waited: list[float] = []

    async def sleep(delay: float) -> None:  # the fake's clock moves as we wait
        waited.append(delay)
        gh.advance(seconds=delay)

    gh.advance(minutes=59, seconds=30)
    gh.exhaust()
    await source(store, client, gh, sleep=sleep).poll(NOW)
    assert waited == [pytest.approx(30, abs=1)]
    assert len(await rows(store)) == 2


async def test_primary_exhaustion_waits_until_reset(gh, client, store) -> None:
    seed(gh.repo(REPO))
    gh.advance(minutes=20)
    gh.exhaust()
    with pytest.raises(SourceUnavailable) as caught:
        await source(store, client, gh).poll(NOW)
    # The fake's window resets an hour after it started; 20 minutes of it are gone.
    assert caught.value.retry_after == pytest.approx(40 * 60, abs=1)


async def test_502_then_success_within_one_poll(gh, client, store) -> None:
    seed(gh.repo(REPO))
    sleeps = Sleeps()
    src = source(store, client, gh, sleep=sleeps)
    gh.fail_next(2, 502)
    made = await cycle(gh, src)
    assert [r.status for r in made] == [502, 502, 200, 200]
    assert sleeps.delays == [0.5, 1.0]
    assert len(await rows(store)) == 2


async def test_persistent_5xx_fails_the_poll_after_capped_retries(gh, client, store) -> None:
    seed(gh.repo(REPO))
    sleeps = Sleeps()
    src = source(store, client, gh, sleep=sleeps, retries=5)
    gh.fail_next(5, 503)
    with pytest.raises(SourceUnavailable, match="HTTP 503 after 5 tries"):
        await src.poll(NOW)
    assert sleeps.delays == [0.5, 1.0, 2.0, 4.0]
    assert await rows(store) == []


async def test_timeout_is_retried(gh, client, store) -> None:
    seed(gh.repo(REPO))
    src = source(store, client, gh, timeout=0.1)
    gh.slow_next(0.5)
    await src.poll(NOW)
    assert len(await rows(store)) == 2

    gh.slow_next(0.5, count=3)
    with pytest.raises(SourceUnavailable, match="timed out"):
        await source(store, client, gh, timeout=0.1).poll(NOW)


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("401", f"token invalid or lacks access to {REPO}"),
        ("404", "repository acme/missing not found or private"),
    ],
)
async def test_auth_and_missing_repo_are_fatal_and_isolated(
    client, store, caplog, fault: str, message: str
) -> None:
    async with FakeGitHub(token="good") as gh:
        seed(gh.repo(REPO))
        seed(gh.repo("acme/other"))
        if fault == "401":
            broken = source(store, client, gh, [run()], token="expired")
        else:
            broken = source(store, client, gh, [run(repo="acme/missing")], token="good")
        healthy = source(store, client, gh, [run("side", repo="acme/other")], token="good")

        with pytest.raises(SourceUnavailable) as caught:
            await broken.poll(NOW)
        assert caught.value.fatal
        assert message in str(caught.value)
        assert "good" not in str(caught.value) and "expired" not in str(caught.value)

        caplog.set_level(logging.INFO)
        caplog.clear()
        report = await poll_once(store, [broken, healthy], NOW)
        assert list(report.failures) == [broken.key]
        assert list(report.results) == [healthy.key]
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and message in errors[0]
        assert "expired" not in caplog.text
        health = await store.health.get("github", broken.key)
        assert health is not None and health.next_attempt_at is not None
        assert await store.health.get("github", "side") is not None
        assert len(await rows(store, "side")) == 2


# --- crash safety -----------------------------------------------------------------------------


async def _final_rows(store: Store) -> list[tuple[Any, ...]]:
    return [(r["external_id"], r["kind"], r["state"], r["body"]) for r in await rows(store)]


def _history(gh: FakeGitHub) -> None:
    repo = gh.repo(REPO)
    hero = repo.add_issue("Hero run", labels=["hero-run"])
    for i in range(30):
        repo.add_comment(hero, f"step {i}")
        gh.advance(minutes=1)
    repo.close(hero)


async def test_killed_between_fetch_and_commit_refetches(
    gh, client, store, tmp_path: Path, monkeypatch
) -> None:
    """The same history polled into two databases at the same moments; one process dies
    after fetching and before committing, restarts, and must end with identical rows."""
    async with Database.open(tmp_path / "control.db") as control_db:
        control = Store(control_db)
        _history(gh)
        src = source(store, client, gh, per_page=10)
        await src.poll(NOW)  # a first sync, so the crash happens on an incremental poll
        await source(control, client, gh, per_page=10).poll(NOW)
        gh.advance(hours=1)
        repo = gh.repo(REPO)
        repo.reopen(1)
        for i in range(15):
            repo.add_comment(1, f"after restart {i}")

        real = store.events.upsert_many
        calls = 0

        async def dying(events):  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += 1
            if calls == 1:
                raise OSError("killed")
            return await real(events)

        monkeypatch.setattr(store.events, "upsert_many", dying)
        cursors = "SELECT key, value, etag FROM source_cursors ORDER BY key"
        cursors_before = [tuple(r) for r in await store.db.fetchall(cursors)]
        rows_before = await _final_rows(store)
        with pytest.raises(OSError):
            await src.poll(NOW)
        assert [tuple(r) for r in await store.db.fetchall(cursors)] == cursors_before
        assert await _final_rows(store) == rows_before
        await source(store, client, gh, per_page=10).poll(NOW)  # the restarted process
        await source(control, client, gh, per_page=10).poll(NOW)

        expected = await _final_rows(control)
        got = await _final_rows(store)
    assert got == expected
    assert len(got) == len({row[0] for row in got})  # no duplicates
    assert sum(row[1] == "comment" for row in got) == 45
    assert [row[0].split(":")[2] for row in got if row[0].startswith("state:")] == ["open"]


async def test_cancelled_mid_poll_loses_nothing(gh, client, store) -> None:
    _history(gh)
    src = source(store, client, gh, per_page=10)
    gh.slow_next(0.5)
    task = asyncio.create_task(src.poll(NOW))
    await until(lambda: not gh.faults, "the slow request in flight", every=0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await src.poll(NOW)
    got = await _final_rows(store)
    assert sum(row[1] == "comment" for row in got) == 30
    assert len(got) == len({row[0] for row in got})


# --- wiring -----------------------------------------------------------------------------------


async def test_build_github_sources_groups_runs_by_repository(gh, client, store) -> None:
    runs = [
        run("a"),
        run("b", repo="acme/other"),
        run("c"),
        RunConfig(slug="d", name="D", wandb_runs=["e/p/r"]),
    ]
    sources = build_github_sources(store, client, settings(gh), runs)
    assert [(s.key, s.run_slugs) for s in sources] == [
        (f"github:{REPO}", ["a", "c"]),
        ("github:acme/other", ["b"]),
    ]
    assert all(s.name == "github" for s in sources)


async def test_an_outage_is_probed_and_polled_as_soon_as_github_answers(
    gh: FakeGitHub, client: httpx.AsyncClient, store: Store
) -> None:
    """GitHub answers 502 (the source's own three tries each poll): it backs off, and while
    it does the poller asks `GET /rate_limit` each cycle; the cycle after GitHub is back polls
    it, inside the stored backoff."""
    from datetime import timedelta

    from bot.models import RunInfo
    from bot.sources.poller import PollSession, poll_once

    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    src = source(store, client, gh, token="t0ken")
    session = PollSession()
    gh.fail_next(6, status=502)
    first = await poll_once(store, [src], NOW, session=session)
    assert "502" in first.failures["github:acme/rocket"]
    second = await poll_once(store, [src], NOW + timedelta(seconds=30), session=session)
    assert "github:acme/rocket" in second.failures  # the rest of the 502s
    health = await store.health.get("github", "github:acme/rocket")
    assert health is not None and health.next_attempt_at == NOW + timedelta(seconds=90)
    probes = [r for r in gh.log if r.path == "/rate_limit"]
    assert probes == []  # due both times: no probe needed
    back = await poll_once(store, [src], NOW + timedelta(seconds=60), session=session)
    assert back.probed == ["github:acme/rocket"] and "github:acme/rocket" in back.results
    assert [r.status for r in gh.log if r.path == "/rate_limit"] == [200]
    assert src.credential and src.credential != source(store, client, gh).credential


async def test_a_reference_never_pulls_another_runs_thread_in(gh, client, store) -> None:
    """Two runs on one repository (issue 41): the ladder's issue links the hero run's burndown,
    and the burndown links the ladder's issue; neither run's card gets the other's thread,
    while a third thread that mentions the ladder's issue still follows it."""
    repo = gh.repo(REPO)
    burndown = repo.add_issue("Next hero run burndown", labels=["hero-run"])
    ladder_issue = repo.add_issue("Ladder rung 7 results")
    follows = repo.add_issue("Rung 7 eval rerun")
    repo.add_comment(ladder_issue, f"compare with the hero burndown in #{burndown}")
    repo.add_comment(burndown, f"the ladder's numbers are in #{ladder_issue}")
    repo.add_comment(follows, f"rerunning the evals of #{ladder_issue}")
    hero = run()
    ladder = run("ladder", github_labels=[], github_issues=[ladder_issue])
    src = source(store, client, gh, [hero, ladder])
    await src.poll(NOW)
    gh.advance(minutes=5)
    await src.poll(NOW)
    ladder_threads = {
        r["external_id"] for r in await rows(store, "ladder") if r["kind"] != "comment"
    }
    hero_threads = {r["external_id"] for r in await rows(store, "hero") if r["kind"] != "comment"}
    assert f"issue:{burndown}" not in ladder_threads
    assert f"issue:{ladder_issue}" not in hero_threads
    assert {f"issue:{ladder_issue}", f"issue:{follows}"} <= ladder_threads
    assert f"issue:{burndown}" in hero_threads
