"""The incident write-up by the model, through the real parts: the outage driven through the real
store, rules and incident engine (`tests.llm.writeup_corpus.outage`), the write-up loop's body
(`Runtime.write_writeups`) calling the real anthropic client against the local fake server, and
the engine's next round posting what was stored.

The model's answers are the corpus' (`tests/data/writeup_corpus/dev.jsonl`): a correct one is
posted with its citations linked and the code's cost line under it; each wrong one (a figure
from the wrong cost fact, the wrong person credited, a cause nobody stated, a sentence without
its citation) is refused twice (the retry) and the template posted instead. A slow or failing
model gives the template too. Nothing waits for the model: the resolution is queued before any
request is made. Stored first: a new process re-asks nothing and re-posts nothing; a write-up
whose facts change after it resolved is written again and edited in, never posted twice."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from bot.config.runsfile import RunConfig, RunsFile
from bot.config.settings import Settings
from bot.incidents.engine import IncidentEngine
from bot.incidents.writeup import latest_prose
from bot.llm.client import LLMClient
from bot.llm.writeup import ModelPen
from bot.models import OutboxItem
from bot.outputs.opslog import OpsLogDetector, OpsLogWriter
from bot.posts.incidents import IncidentPosts
from bot.posts.writeup import BY_MODEL, BY_RULES
from bot.process.runtime import Runtime
from bot.store import Database, Store
from tests.cli.inprocess import run_main
from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.github import FakeGitHub
from tests.incidents.scenario import Saved, Scenario, content, save
from tests.incidents.test_ops_log import comments, log_issue
from tests.incidents.test_writeup import issue
from tests.llm.conftest import MODEL
from tests.llm.writeup_corpus import DEV, load, outage

ANSWERS = {a["id"]: a for a in load(DEV)}
WRONG = [a for a in load(DEV) if a["error"] is not None]
GOOD = ANSWERS["dev-c1"]["text"]


def runtime(store: Store, pen: ModelPen | None) -> Runtime:
    runs = RunsFile(runs=[RunConfig(slug="hero", name="Hero", github_repo="lab/hero")])
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    return Runtime(settings=settings, runs=runs, store=store, pen=pen)


def by(item: OutboxItem) -> str:
    """Who the post says wrote it (the card's footer)."""
    return str(item.payload["card"]["footer"])


def writeups(items: list[OutboxItem], incident_id: int) -> list[OutboxItem]:
    return [i for i in items if i.dedup_key == f"incident:{incident_id}:writeup"]


def edits(items: list[OutboxItem], incident_id: int) -> list[OutboxItem]:
    return [i for i in items if i.dedup_key.startswith(f"incident:{incident_id}:writeup:edit:")]


@dataclass(frozen=True)
class Resolved:
    """The outage with a model key, as `outage` leaves it (`saved`), and its incident."""

    saved: Saved
    incident_id: int


@pytest.fixture(scope="module")
def resolved(tmp_path_factory: pytest.TempPathFactory, empty_database: Path) -> Resolved:
    """The outage driven once per module through the real store, rules and engine with a model
    key (the same replay for every test: each resumes from a copy of it). The pen has no server
    behind it: the alert and the resolution never wait on it, so it is never called."""

    async def drive(store: Store) -> tuple[Scenario, int]:
        llm = LLMClient(store, api_key="sk-test", base_url="http://127.0.0.1:9", model=MODEL)
        sc, incident_id = await outage(
            store, engine=IncidentEngine(IncidentPosts(), pen=ModelPen(llm))
        )
        assert llm._sdk is None  # the alert and the resolution never waited on the model
        return sc, incident_id

    path = tmp_path_factory.mktemp("outage") / "outage.db"
    return Resolved(*save(path, empty_database, drive))


@pytest.fixture
async def store(db_path: Path, resolved: Resolved) -> AsyncIterator[Store]:
    """A store holding the resolved outage (a copy of `resolved`'s database)."""
    shutil.copy(resolved.saved.path, db_path)
    async with Database.open(db_path) as db:
        yield Store(db)


@pytest.fixture
def pen(make_llm: Any) -> ModelPen:
    return ModelPen(make_llm())


async def resolved_with_model(
    store: Store, pen: ModelPen, fake: FakeAnthropic, resolved: Resolved
) -> tuple[Scenario, int]:
    """The outage with a model key: resolved, its resolution queued, and no request made."""
    engine = IncidentEngine(IncidentPosts(), pen=pen)
    sc, incident_id = resolved.saved.resume(store, engine), resolved.incident_id
    assert fake.message_requests == []  # the alert and the resolution never waited on it
    items = await sc.outbox()
    assert any(i.dedup_key == f"incident:{incident_id}:resolved" for i in items)
    assert writeups(items, incident_id) == []  # nothing written yet: nothing posted
    return sc, incident_id


async def test_the_model_writes_it_after_the_resolution_and_it_is_posted_once(
    store: Store, pen: ModelPen, fake: FakeAnthropic, resolved: Resolved
) -> None:
    sc, incident_id = await resolved_with_model(store, pen, fake, resolved)
    fake.push(text(GOOD))
    assert await runtime(store, pen).write_writeups(sc.now) == 1
    [request] = fake.message_requests
    assert "node r7 lost its IB link" in request.user_text  # the reporter's words, fenced
    assert "[5] downtime: training was down 26 min" in request.user_text
    await sc.tick()
    items = await sc.outbox()
    [post] = writeups(items, incident_id)
    closing = next(i for i in items if i.dedup_key == f"incident:{incident_id}:resolved:thread")
    assert post.reply_to == closing.reply_to  # in the incident's thread, after the closing line
    assert post.payload["archive_thread"] is True  # which it closes again
    said = content(post)
    # the model's prose, each citation a link to what it cites (numbered in order of use; a
    # computed figure has no page, so its marker goes)
    assert (
        "hero-a crashed at step 5,900, first noticed Sep 2, 2026, 1:01 p.m. UTC [\\[1\\]](" in said
    )
    assert "[\\[1\\]](https://wandb.ai/lab/pretrain/runs/hero-a)" in said
    assert "[\\[2\\]](https://discord.com/channels/1/2/1)" in said
    assert "dave drained r7 and requeued the job from the last checkpoint [\\[3\\]](" in said
    assert "[\\[3\\]](https://discord.com/channels/1/2/2)" in said
    assert "the last step before the interruption was 5,900 [\\[4\\]](" in said
    assert "[\\[4\\]](https://wandb.ai/lab/pretrain/runs/hero-b)" in said
    assert "It was down for 26 min." in said
    assert "**What happened.**" not in said
    # the figures stay the code's
    assert "**Cost.** 26 min down (last step before the interruption → first step after)" in said
    assert "1,400 steps (1.4B tokens) recomputed, 14 min at 0.6 s a step" in said
    assert "43 GPU-hours (64 GPUs × 40 min without new progress)" in said
    assert BY_MODEL in by(post) and BY_RULES not in by(post)
    # a new process over the same store: no second request, no second post
    again = ModelPen(pen.llm)
    sc.engine = IncidentEngine(IncidentPosts(), pen=again)
    assert await runtime(store, again).write_writeups(sc.now) == 0
    await sc.run_for(3)
    after = await sc.outbox()
    assert len(fake.message_requests) == 1
    assert len(writeups(after, incident_id)) == 1 and edits(after, incident_id) == []


@pytest.mark.parametrize("wrong", WRONG, ids=[a["id"] for a in WRONG])
async def test_a_wrong_answer_is_refused_and_the_template_posted(
    store: Store, pen: ModelPen, fake: FakeAnthropic, wrong: dict[str, Any], resolved: Resolved
) -> None:
    sc, incident_id = await resolved_with_model(store, pen, fake, resolved)
    fake.push(text(wrong["text"]), text(wrong["text"]))  # the same mistake after the retry
    await runtime(store, pen).write_writeups(sc.now)
    assert len(fake.message_requests) == 2
    await sc.tick()
    [post] = writeups(await sc.outbox(), incident_id)
    said = content(post)
    assert "**What happened.**" in said and "**Who acted.**" in said
    assert BY_RULES in by(post) and BY_MODEL not in by(post)
    assert wrong["mistake"] not in said
    rejected = await store.llm.latest("hero", "writeup.rejected")
    assert rejected is not None and "[grounding]" in rejected.content


async def test_a_retry_that_fixes_the_mistake_is_posted(
    store: Store, pen: ModelPen, fake: FakeAnthropic, resolved: Resolved
) -> None:
    sc, incident_id = await resolved_with_model(store, pen, fake, resolved)
    fake.push(text(ANSWERS["dev-w1"]["text"]), text(GOOD))
    await runtime(store, pen).write_writeups(sc.now)
    [_, retry] = fake.message_requests
    assert "14 minutes" in retry.user_text  # the problem was said
    await sc.tick()
    [post] = writeups(await sc.outbox(), incident_id)
    assert BY_MODEL in by(post) and "**What happened.**" not in content(post)


@pytest.mark.parametrize(
    "failure",
    [
        Reply(status=500, error_type="api_error", message="boom"),
        Reply(status=529, error_type="overloaded_error", message="overloaded"),
    ],
    ids=["error", "overloaded"],
)
async def test_a_failing_model_gives_the_template(
    store: Store, pen: ModelPen, fake: FakeAnthropic, failure: Reply, resolved: Resolved
) -> None:
    sc, incident_id = await resolved_with_model(store, pen, fake, resolved)
    fake.push(failure, failure, failure)  # every attempt of the client's
    await runtime(store, pen).write_writeups(sc.now)
    await sc.tick()
    [post] = writeups(await sc.outbox(), incident_id)
    assert BY_RULES in by(post) and "**Who acted.**" in content(post)


async def test_a_slow_model_gives_the_template(
    store: Store, make_llm: Any, fake: FakeAnthropic, resolved: Resolved
) -> None:
    slow = ModelPen(make_llm(timeout=30.0, max_retries=0), deadline=0.2)
    sc, incident_id = await resolved_with_model(store, slow, fake, resolved)
    fake.push(Reply(content=[{"type": "text", "text": GOOD}], delay=5.0))
    await runtime(store, slow).write_writeups(sc.now)
    await sc.tick()
    [post] = writeups(await sc.outbox(), incident_id)
    assert BY_RULES in by(post)
    stored = await latest_prose(store, incident_id)
    assert stored is not None and stored.by == "template"


async def test_changed_facts_are_written_again_and_edited_in(
    store: Store, pen: ModelPen, fake: FakeAnthropic, resolved: Resolved
) -> None:
    sc, incident_id = await resolved_with_model(store, pen, fake, resolved)
    fake.push(text(GOOD))
    await runtime(store, pen).write_writeups(sc.now)
    await sc.tick()
    [post] = writeups(await sc.outbox(), incident_id)
    # after it resolved, a follow-up is opened and named: the facts change
    await store.events.upsert_many([issue(91, sc.now, "r7 IB port flaps")])
    await sc.report(
        "The hero run crashed because node r7 lost its IB link; #91 tracks the IB port.",
        author="erin",
        number=77,
    )
    await sc.run_for(2)
    before = [i for i in edits(await sc.outbox(), incident_id) if BY_MODEL not in by(i)]
    assert before == []  # never the template over the model's words while the model writes
    later = GOOD + " The IB port is followed up in #91 [8]."
    fake.push(text(later))
    assert await runtime(store, pen).write_writeups(sc.now) == 1
    assert "r7 IB port flaps" in fake.message_requests[-1].user_text
    await sc.tick()
    items = await sc.outbox()
    assert len(writeups(items, incident_id)) == 1  # edited, never posted again
    last = edits(items, incident_id)[-1]
    assert last.payload["edit_of"] == post.id
    assert "The IB port is followed up in #91 [\\[5\\]](https://github.com/lab/hero/issues/91)" in (
        content(last)
    )
    assert BY_MODEL in by(last)


async def test_the_ops_log_gets_the_models_writeup_as_one_comment_edited_in_place(
    store: Store, pen: ModelPen, fake: FakeAnthropic, resolved: Resolved
) -> None:
    sc, _ = await resolved_with_model(store, pen, fake, resolved)
    async with FakeGitHub() as github, httpx.AsyncClient() as client:
        repo, number = await log_issue(store, github)
        writer = OpsLogWriter(client, github.url, SecretStr("token"))
        sc.engine = OpsLogDetector(sc.engine, writer, pen)
        await sc.tick()
        assert comments(repo, number) == []  # the model has not written it: nothing yet
        fake.push(text(GOOD))
        await runtime(store, pen).write_writeups(sc.now)
        await sc.tick()
        [comment] = comments(repo, number)
        assert "dave drained r7 and requeued the job from the last checkpoint" in comment.body
        assert f"Hero 70B · {BY_MODEL}." in comment.body
        assert "**Cost.** 26 min down" in comment.body
        await store.events.upsert_many([issue(91, sc.now, "r7 IB port flaps")])
        await sc.report("The crash: node r7 lost its IB link; #91 tracks it.", author="erin")
        await sc.run_for(2)
        fake.push(text(GOOD + " The IB port is followed up in #91 [8]."))
        assert await runtime(store, pen).write_writeups(sc.now) == 1
        await sc.tick()
        [edited] = comments(repo, number)  # the same comment, edited
        assert edited.id == comment.id
        assert "The IB port is followed up in #91" in edited.body


def test_runscribe_incident_prints_the_models_writeup_and_says_who_wrote_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runscribe.db"

    async def fill() -> int:
        async with FakeAnthropic() as fake, Database.open(db) as database:
            store = Store(database)
            llm = LLMClient(store, api_key="sk-test", base_url=fake.base_url, model=MODEL)
            pen = ModelPen(llm)
            sc, incident_id = await outage(store, engine=IncidentEngine(IncidentPosts(), pen=pen))
            fake.push(text(GOOD))
            await runtime(store, pen).write_writeups(sc.now)
            await llm.aclose()
            return incident_id

    incident_id = asyncio.run(fill())
    done = run_main(tmp_path, "incident", str(incident_id), env={"RUNSCRIBE_DB": str(db)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"## Write-up: incident \\#{incident_id}")
    assert done.stdout.count(BY_MODEL) == 1 and BY_RULES not in done.stdout
    assert "dave drained r7 and requeued the job from the last checkpoint [\\[3\\]](" in done.stdout
    assert "**What happened.**" not in done.stdout
    assert "**Cost.** 26 min down (last step before the interruption → first step after)" in (
        done.stdout
    )
