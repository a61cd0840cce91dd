"""WandbSource against the fake W&B server, through the real `wandb` 0.31 package and its
wandb-core process (started once for the module), with a real SQLite store per test."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.config.settings import MetricKeys, RunConfig, Settings
from bot.models import NEW_RUN, RESTORE, Event, Restart, RunInfo
from bot.sources.base import SourceUnavailable
from bot.sources.poller import PollSession, poll_once
from bot.sources.wandb import (
    HistoryCursor,
    WandbSource,
    build_wandb_client,
    build_wandb_sources,
)
from bot.sources.wandb_client import WandbClient, default_api_factory, http_probe
from bot.store import Store
from tests.fakes.wandb import FakeWandb

T0 = datetime(2026, 8, 20, tzinfo=UTC)
EVERY = timedelta(minutes=2)


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def wandb_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """wandb's files in a temp dir; wandb-core gives up on a failing server after one retry,
    waiting a second before it. wandb-core reads the wait settings as whole seconds (it
    truncates them) and takes 0 as "unset": a fraction of a second falls back to its defaults
    (2 s, growing to 60 s), so one second is the shortest wait there is."""
    root = tmp_path_factory.mktemp("wandb")
    values = {
        "WANDB_DIR": str(root),
        "WANDB_CACHE_DIR": str(root / "cache"),
        "WANDB_CONFIG_DIR": str(root / "config"),
        "WANDB_DATA_DIR": str(root / "data"),
        "WANDB_SILENT": "true",
        "WANDB_ERROR_REPORTING": "false",
        "WANDB__GRAPHQL_RETRY_MAX": "1",
        "WANDB__GRAPHQL_RETRY_WAIT_MIN_SECONDS": "1",
        "WANDB__GRAPHQL_RETRY_WAIT_MAX_SECONDS": "1",
    }
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    yield root
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def server(wandb_env: Path) -> Iterator[FakeWandb]:
    fake = FakeWandb().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def client(server: FakeWandb, wandb_env: Path) -> Iterator[WandbClient]:
    """One Api (one wandb-core session) for the whole module."""
    factory = default_api_factory(
        base_url=server.base_url, api_key=server.api_key, entity="ent", timeout=5
    )
    shared = WandbClient(factory, poll_timeout=60)
    yield shared
    asyncio.run(shared.aclose())


@pytest.fixture
def fake(server: FakeWandb) -> FakeWandb:
    server.reset()
    return server


def config(
    runs: list[str],
    *,
    slug: str = "hero",
    pattern: str | None = None,
    step: str = "_step",
    tokens: str | None = "throughput/total_tokens",
) -> RunConfig:
    return RunConfig(
        slug=slug,
        name="Hero 70B",
        wandb_runs=runs,
        wandb_run_pattern=pattern,
        metrics=MetricKeys(step=step, tokens=tokens, loss="train/loss"),
    )


async def make_source(store: Store, client: WandbClient, cfg: RunConfig) -> WandbSource:
    await store.runs.upsert(RunInfo(slug=cfg.slug, name=cfg.name))
    return WandbSource(store, cfg, client)


async def events(store: Store, slug: str = "hero", kind: str | None = None) -> list[Event]:
    found = await store.events.timeline(slug, newsworthy_only=False, limit=1000)
    found.sort(key=lambda e: (e.at, e.id or 0))
    return [e for e in found if kind is None or e.kind == kind]


def history_rows(fake: FakeWandb) -> int:
    return sum(r.rows for r in fake.requests if r.operation == "SampledHistoryPage")


# ----------------------------------------------------------------------------- scenarios


async def test_history_replayed_over_weeks_transfers_only_new_rows(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    path = "ent/weeks/hero-1"
    fake.add_run(path, display_name="hero-1", created_at=T0)
    source = await make_source(store, client, config([path]))
    total = 0
    clock = T0
    for week in range(6):
        count = 500 + 100 * week
        fake.log(path, count, start=clock, every=EVERY)
        clock += EVERY * count
        total += count
        fake.clear_log()
        result = await source.poll(clock)
        assert result.points == count
        # loss scan (+1 row re-read to check continuity after the first week) + tokens scan
        assert history_rows(fake) == 2 * count + (1 if week else 0)
        assert "RunHistoryKeys" not in fake.operations()
        points = await store.metrics.points("hero")
        assert len(points) == total
        assert len({(p.step, p.at) for p in points}) == total
        assert [p.step for p in points] == list(range(total))

    last = points[-1]
    assert last.loss is not None and last.tokens == 4_000_000 * total
    assert last.at == T0 + EVERY * (total - 1)
    snapshot = await store.snapshots.get("hero", path)
    assert snapshot is not None and snapshot.last_step == total - 1
    assert snapshot.summary["_step"] == total - 1 and "train/loss" in snapshot.summary
    cursor = HistoryCursor.load((await store.cursors.get("wandb", f"{path}:history"))[0])
    assert cursor.step == total - 1 and cursor.value == total - 1

    # An idle cycle: one Run query, no history scan at all.
    fake.clear_log()
    result = await source.poll(clock + timedelta(minutes=5))
    assert (result.points, result.events) == (0, 0)
    assert fake.operations() == ["Run"]
    # Only one state event (the first observation) in six weeks of running.
    assert [e.external_id.split(":")[0] for e in await events(store)] == ["state"]
    assert fake.unknown_operations == []


async def test_idempotent_polls_add_nothing(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    path = "ent/idem/run-a"
    fake.add_run(path, created_at=T0)
    fake.log(path, 50, start=T0)
    source = await make_source(store, client, config([path]))
    first = await source.poll(T0 + timedelta(hours=2))
    assert first.points == 50 and first.events == 1
    before = await events(store)
    fake.clear_log()
    for minutes in (3, 6):
        again = await source.poll(T0 + timedelta(hours=2, minutes=minutes))
        assert (again.points, again.events) == (0, 0)
    assert fake.operations() == ["Run", "Run"]
    assert [(e.id, e.content_hash) for e in await events(store)] == [
        (e.id, e.content_hash) for e in before
    ]
    assert len(await store.metrics.points("hero")) == 50


async def test_crash_then_resume_from_earlier_checkpoint_in_the_same_run(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """W&B rewind (`resume_from=run?_step=N`): history is rewritten from step N. Polled after the
    run has logged past its old last step, so only a continuity check can notice."""
    path = "ent/crash/aurora-b"
    fake.add_run(path, display_name="aurora-b", created_at=T0)
    fake.log(path, 1000, start=T0)  # steps 0..999
    source = await make_source(store, client, config([path]))
    now = T0 + EVERY * 1000
    await source.poll(now)

    fake.set_state(path, "crashed")
    now += timedelta(minutes=30)
    await source.poll(now)

    resumed_at = now + timedelta(minutes=47)
    fake.rewind(path, 900)
    fake.log(path, 300, start=resumed_at)  # steps 900..1199, later timestamps
    fake.set_state(path, "running")
    now = resumed_at + EVERY * 300
    fake.clear_log()
    result = await source.poll(now)
    assert result.points == 300

    restarts = await events(store, kind="restart")
    assert len(restarts) == 1
    restart = restarts[0]
    assert restart.external_id == f"restart:restore:{path}:900:{resumed_at.isoformat()}"
    assert restart.title == (
        "W&B run aurora-b resumed from step 900 after 1 d 2 h "
        "(last step before: 999; 100 steps recomputed)"
    )
    # The one typed record every surface reads: the last step before the crash (999, logged at
    # 30 s a row from T0) to the first step after the restore, and the 99 steps done twice.
    stopped_at = T0 + 999 * timedelta(seconds=30)
    assert Restart.of_event(restart) == Restart(
        at=resumed_at,
        kind=RESTORE,
        wandb_run=path,
        from_step=999,
        to_step=900,
        stopped_at=stopped_at,
        resumed_at=resumed_at,
        interval=1,
    )
    assert restart.extra["down_seconds"] == (resumed_at - stopped_at).total_seconds()
    # Steps 900..999 were each trained twice: 100 (resumed after the checkpoint at 899).
    assert restart.extra["recomputed_steps"] == 100
    assert restart.at == resumed_at and restart.ref == "aurora-b"
    assert restart.url == f"{fake.base_url}/ent/crash/runs/aurora-b"
    assert restart.author is None and restart.state == "running"
    states = [
        (e.extra["from_state"], e.extra["to_state"]) for e in await events(store, kind="state")
    ]
    assert states == [(None, "running"), ("running", "crashed"), ("crashed", "running")]

    # Both versions of steps 900..999 are kept (different times), nothing twice.
    points = await store.metrics.points("hero")
    assert len(points) == 1300
    assert len({(p.step, p.at) for p in points}) == 1300
    assert max(p.step for p in points) == 1199

    # The next cycles are ordinary again: one continuity row + new rows.
    fake.log(path, 10, start=now)
    fake.clear_log()
    assert (await source.poll(now + timedelta(minutes=30))).points == 10
    # + 2: W&B's runtime on either side of the silence since the last row (a pause, not a stop)
    assert history_rows(fake) == 2 * 10 + 1 + 2
    assert len(await events(store, kind="restart")) == 1


@pytest.mark.parametrize(
    ("every", "checkpoint", "reached"),
    [(1, 524, 999), (25, 525, 1000)],
    ids=["every step", "every 25th step"],
)
async def test_rewind_counts_every_recomputed_step(
    every: int,
    checkpoint: int,
    reached: int,
    fake: FakeWandb,
    client: WandbClient,
    store: Store,
) -> None:
    """Resumed from the checkpoint at step S after reaching step F, with rows S+k, S+2k, …
    (k = the logging interval): F - S steps are trained twice, the first new row's included
    (it was counted as F - (S+k): 450 for 475 when logging every 25th step)."""
    path = f"ent/rewind/every-{every}"
    fake.add_run(path, display_name="run-k", created_at=T0)

    def rows(first_row: int, first_step: int, count: int, start: datetime) -> list[dict[str, Any]]:
        return [
            {
                "_step": first_row + i,
                "_timestamp": (start + EVERY * i).timestamp(),
                "train/loss": 2.0,
                "train/step": first_step + every * i,
            }
            for i in range(count)
        ]

    count = reached // every + (1 if every == 1 else 0)  # steps 0..999, or 25..1000
    fake.append_rows(path, rows(0, reached - every * (count - 1), count, T0))
    source = await make_source(store, client, config([path], step="train/step", tokens=None))
    await source.poll(T0 + EVERY * count)
    kept = next(i for i, r in enumerate(fake.runs[path].rows) if r["train/step"] > checkpoint)
    fake.rewind(path, kept)  # `resume_from=run?_step=…`: rows after the checkpoint's dropped
    back = T0 + EVERY * count + timedelta(hours=1)
    fake.append_rows(path, rows(kept, checkpoint + every, 40, back))  # S+k, S+2k, …
    assert (await source.poll(back + EVERY * 40)).points == 40

    (event,) = await events(store, kind="restart")
    restart = Restart.of_event(event)
    assert (restart.from_step, restart.to_step) == (reached, checkpoint + every)
    assert restart.recomputed_steps == 475 == event.extra["recomputed_steps"]
    assert restart.interval == every and restart.checkpoint_step == checkpoint
    assert event.body is not None and "repeats 475 steps" in event.body
    points = await store.metrics.points("hero")
    assert sorted(p.step for p in points if p.at >= back) == [
        checkpoint + every * (i + 1) for i in range(40)
    ]  # every new row stored, the first one included


async def test_rewind_seen_before_the_run_catches_up(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    path = "ent/rewind/run-r"
    fake.add_run(path, display_name="run-r", created_at=T0)
    fake.log(path, 2000, start=T0)
    source = await make_source(store, client, config([path]))
    await source.poll(T0 + timedelta(days=3))
    fake.rewind(path, 1500)
    later = T0 + timedelta(days=3, hours=1)
    fake.log(path, 20, start=later)  # steps 1500..1519: still below the old 1999
    assert (await source.poll(later + timedelta(hours=1))).points == 20
    (restart,) = await events(store, kind="restart")
    assert (restart.extra["from_step"], restart.extra["to_step"]) == (1999, 1500)
    fake.log(path, 600, start=later + timedelta(hours=2))  # 1520..2119: past the old end
    fake.clear_log()
    assert (await source.poll(later + timedelta(days=1))).points == 600
    # no second rewind search; + 2: the runtime on either side of the silence before 1,520
    assert history_rows(fake) == 2 * 600 + 1 + 2
    assert len(await events(store, kind="restart")) == 1


async def test_trainer_step_going_back_with_monotonic_wandb_step(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """`resume="allow"` on the same run id: `_step` keeps increasing, the trainer's own step
    (the configured step key) restarts from the checkpoint."""
    path = "ent/trainer/run-t"
    fake.add_run(path, display_name="run-t", created_at=T0)
    fake.log(path, 100, start=T0, step_key="train/step", first_value=41_771)  # ..41,870
    source = await make_source(store, client, config([path], step="train/step"))
    await source.poll(T0 + timedelta(hours=4))
    back = T0 + timedelta(hours=5)
    fake.log(path, 50, start=back, step_key="train/step", first_value=40_000)
    await source.poll(back + timedelta(hours=2))
    (restart,) = await events(store, kind="restart")
    assert restart.title == (
        "W&B run run-t resumed from step 40,000 after 4 h 10 min "
        "(last step before: 41,870; 1,871 steps recomputed)"
    )
    assert (restart.extra["from_step"], restart.extra["to_step"]) == (41_870, 40_000)
    snapshot = await store.snapshots.get("hero", path)
    assert snapshot is not None and snapshot.last_step == 40_049


async def test_new_chain_member_discovered_by_pattern(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    first = "ent/chain/hero-a1"
    fake.add_run(first, display_name="hero-a1", created_at=T0)
    fake.log(first, 300, start=T0)
    fake.add_run("ent/chain/abl-1", display_name="ablation-lr", created_at=T0 + timedelta(hours=1))
    source = await make_source(store, client, config([first], pattern="^hero-"))
    await source.poll(T0 + timedelta(hours=12))
    assert [e.kind for e in await events(store)] == ["state"]

    fake.set_state(first, "crashed")
    created = T0 + timedelta(hours=13)
    second = "ent/chain/x7k2p9"
    fake.add_run(second, display_name="hero-a2", created_at=created)
    fake.log(second, 120, start=created + timedelta(minutes=5))  # its own _step from 0
    fake.clear_log()
    now = T0 + timedelta(hours=20)
    result = await source.poll(now)
    assert result.points == 120
    runs_requests = [r for r in fake.requests if r.operation == "Runs"]
    assert len(runs_requests) == 1
    filters = json.loads(runs_requests[0].variables["filters"])
    assert filters == {"createdAt": {"$gte": "2026-08-20T01:00:00"}}  # newest run examined

    (restart,) = await events(store, kind="restart")
    assert restart.external_id == f"restart:new-run:{second}"
    assert restart.at == created and restart.ref == "x7k2p9"
    # hero-a1 logged steps 0..299 every 30 s from T0, then crashed; hero-a2 logged its first
    # step 5 min after it was created.
    assert Restart.of_event(restart) == Restart(
        at=created,
        kind=NEW_RUN,
        wandb_run=second,
        previous_run=first,
        from_step=299,
        to_step=0,
        stopped_at=T0 + 299 * timedelta(seconds=30),
        resumed_at=created + timedelta(minutes=5),
        cause="W&B run hero-a1 crashed",
        interval=1,
    )
    assert (
        restart.extra["down_seconds"]
        == (created + timedelta(minutes=5) - (T0 + 299 * timedelta(seconds=30))).total_seconds()
    )
    assert "hero-a2" in (restart.title or "") and "299" in (restart.title or "")
    chain = json.loads((await store.cursors.get("wandb", "hero:chain"))[0])
    assert chain["members"] == [first, second]
    assert list(chain["discovered"]) == [second]

    # A third member; the chain order stays listed-then-by-creation, nothing repeats.
    third = "ent/chain/hero-a3"
    fake.add_run(third, display_name="hero-a3", created_at=created + timedelta(days=2))
    await source.poll(now + timedelta(days=3))
    await source.poll(now + timedelta(days=3, minutes=5))
    chain = json.loads((await store.cursors.get("wandb", "hero:chain"))[0])
    assert chain["members"] == [first, second, third]
    restarts = await events(store, kind="restart")
    assert [e.external_id for e in restarts] == [
        f"restart:new-run:{second}",
        f"restart:new-run:{third}",
    ]
    # hero-a3 has no history yet: the event is refined once its first step is known.
    assert restarts[1].extra["to_step"] is None
    fake.log(third, 5, start=created + timedelta(days=3, hours=1))
    await source.poll(now + timedelta(days=4))
    restarts = await events(store, kind="restart")
    assert len(restarts) == 2 and restarts[1].extra["to_step"] == 0
    assert restarts[1].extra["from_step"] == 119


async def test_fork_starting_at_an_earlier_step(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    parent, fork = "ent/fork/base-1", "ent/fork/base-1-fork"
    fake.add_run(parent, display_name="base-1", created_at=T0)
    fake.log(parent, 2000, start=T0)  # 0..1999
    fake.set_state(parent, "crashed")
    forked_at = T0 + EVERY * 2000 + timedelta(hours=1)
    fake.add_run(fork, display_name="base-1-fork", created_at=forked_at)
    # W&B fork_from="base-1?_step=1500": the fork's history continues at 1501.
    fake.append_rows(
        fork,
        [
            {
                "_step": 1501 + i,
                "_timestamp": (forked_at + EVERY * (i + 1)).timestamp(),
                "train/loss": 2.5,
                "throughput/total_tokens": 4e6 * (1502 + i),
            }
            for i in range(400)
        ],
    )
    source = await make_source(store, client, config([parent, fork]))
    result = await source.poll(forked_at + timedelta(days=1))
    assert result.points == 2400
    (restart,) = await events(store, kind="restart")
    assert (restart.extra["from_step"], restart.extra["to_step"]) == (1999, 1501)
    assert restart.title == (
        "W&B run base-1-fork continues the chain after base-1 starting at step 1,501 "
        "(last step before: 1,999)"
    )
    states = {e.extra["wandb_run"]: e.extra["to_state"] for e in await events(store, kind="state")}
    assert states == {parent: "crashed", fork: "running"}

    try:
        from bot.analysis.progress import NEW_RUN, detect_restarts
    except ImportError:  # pragma: no cover - the analysis module lands separately
        return
    found = detect_restarts(await store.metrics.points("hero"), [parent, fork])
    assert [(r.kind, r.from_step, r.to_step) for r in found] == [(NEW_RUN, 1999, 1501)]


async def test_state_changes_recorded_once_each(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    path = "ent/states/run-s"
    fake.add_run(path, display_name="run-s", created_at=T0)
    fake.log(path, 10, start=T0)
    source = await make_source(store, client, config([path]))
    now = T0 + timedelta(hours=1)
    beats = []
    for state in ("running", "running", "crashed", "crashed", "running", "running", "finished"):
        # W&B's heartbeat moves while the run lives; a stopped run keeps its last one.
        if state != "crashed" or not beats or beats[-1][1] != "crashed":
            beats.append((now - timedelta(minutes=3), state))
        fake.set_state(path, state, heartbeat_at=beats[-1][0])
        await source.poll(now)
        now += timedelta(minutes=5)
    found = await events(store, kind="state")
    assert [e.extra["to_state"] for e in found] == ["running", "crashed", "running", "finished"]
    crashed = found[1]
    # Dated by the run's heartbeat (its last sign of life), never by when it was observed.
    crash_at = T0 + timedelta(hours=1, minutes=7)
    assert crashed.at == crash_at and crashed.updated_at == T0 + timedelta(hours=1, minutes=10)
    assert crashed.external_id == f"state:{path}:crashed:{crash_at.isoformat()}"
    assert [e.at for e in found] == [
        T0 + timedelta(minutes=57),
        crash_at,
        T0 + timedelta(hours=1, minutes=17),
        T0 + timedelta(hours=1, minutes=27),
    ]
    assert crashed.title == "W&B run run-s went from running to crashed at step 9"
    assert crashed.state == "crashed" and crashed.ref == "run-s" and crashed.author is None
    assert len({e.external_id for e in found}) == 4


async def test_transient_5xx_is_retried_by_wandb_core(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    path = "ent/flaky/run-f"
    fake.add_run(path, created_at=T0)
    fake.log(path, 30, start=T0)
    source = await make_source(store, client, config([path]))
    fake.fail_next(1, 502)
    assert (await source.poll(T0 + timedelta(hours=1))).points == 30
    assert [r.status for r in fake.requests[:2]] == [502, 200]


async def test_process_killed_between_fetching_and_committing(
    fake: FakeWandb, client: WandbClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = "ent/kill/run-k"
    fake.add_run(path, display_name="run-k", created_at=T0)
    fake.log(path, 400, start=T0)
    source = await make_source(store, client, config([path]))
    await source.poll(T0 + timedelta(hours=14))
    fake.log(path, 100, start=T0 + timedelta(hours=14))

    # 1. Killed after the fetch, before the commit started.
    async def killed(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(source, "_commit", killed)
        with pytest.raises(KeyboardInterrupt):
            await source.poll(T0 + timedelta(hours=18))
    assert len(await store.metrics.points("hero")) == 400

    # 2. Killed in the middle of the commit (after the points, before the cursor).
    real_set = store.cursors.set

    async def dies(source_name: str, key: str, *args: Any, **kwargs: Any) -> None:
        if key.endswith(":history"):
            raise KeyboardInterrupt
        await real_set(source_name, key, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(store.cursors, "set", dies)
        with pytest.raises(KeyboardInterrupt):
            await source.poll(T0 + timedelta(hours=18))
    assert len(await store.metrics.points("hero")) == 400  # rolled back with the cursor

    # 3. The restarted process reads the same rows again and stores each once.
    fake.clear_log()
    result = await source.poll(T0 + timedelta(hours=19))
    assert result.points == 100
    assert history_rows(fake) == 2 * 100 + 1 + 2  # + 2: the runtime around the silence
    points = await store.metrics.points("hero")
    assert [p.step for p in points] == list(range(500))


async def test_listed_run_not_found_is_a_clear_fatal_error(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    fake.add_run("ent/missing/other", created_at=T0)
    source = await make_source(store, client, config(["ent/missing/typo"]))
    with pytest.raises(SourceUnavailable) as info:
        await source.poll(T0)
    assert info.value.fatal and "ent/missing/typo not found" in str(info.value)


@asynccontextmanager
async def wandb_sources(
    store: Store, settings: Settings, runs: list[RunConfig]
) -> AsyncIterator[list[WandbSource]]:
    """The W&B sources of `runs` on one client, as the wiring builds them; the client closed
    after (wandb-core kept for the module's other tests)."""
    client = build_wandb_client(settings, runs)
    try:
        yield build_wandb_sources(store, runs, client)
    finally:
        await client.aclose(teardown=False)


async def test_wrong_api_key_is_fatal_and_never_logged(
    server: FakeWandb, store: Store, wandb_env: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad_key = "wrong-key-" + "x" * 30
    settings = Settings(wandb_api_key=bad_key, wandb_base_url=server.base_url)
    cfg = config(["ent/auth/run-1"])
    await store.runs.upsert(RunInfo(slug=cfg.slug, name=cfg.name))
    async with wandb_sources(store, settings, [cfg]) as sources:
        report = await poll_once(store, sources, T0)
    assert "rejected the API key" in report.failures["wandb:hero"]
    assert bad_key not in caplog.text and bad_key not in report.failures["wandb:hero"]


@pytest.mark.parametrize("down", ["refused", "503", "502"])
async def test_wandb_unreachable_is_an_outage_not_a_wrong_key(
    down: str, server: FakeWandb, store: Store, wandb_env: Path
) -> None:
    """Connection refused, a 5xx or no answer: "unreachable", retried with the normal backoff
    (30 s first, never more than 2 min); the key is not blamed."""
    base_url = server.base_url
    if down == "refused":
        base_url = "http://127.0.0.1:9"  # the discard port: nothing listens
    else:
        server.set_down(int(down))
    settings = Settings(wandb_api_key=server.api_key, wandb_base_url=base_url)
    cfg = config(["ent/auth/run-1"])
    await store.runs.upsert(RunInfo(slug=cfg.slug, name=cfg.name))
    try:
        async with wandb_sources(store, settings, [cfg]) as sources:
            report = await poll_once(store, sources, T0, session=PollSession())
    finally:
        server.set_down(None)
    error = report.failures["wandb:hero"]
    assert "is unreachable" in error, error
    assert "API key" not in error and "WANDB_API_KEY" not in error, error
    expected = "connection refused" if down == "refused" else f"HTTP {down}"
    assert expected in error, error
    health = await store.health.get("wandb", "wandb:hero")
    assert health is not None and health.next_attempt_at == T0 + timedelta(seconds=30)


async def test_while_wandb_stays_down_polls_ask_the_probe_not_wandb_core(
    fake: FakeWandb, store: Store, wandb_env: Path
) -> None:
    """Once a poll found W&B unreachable, the next poll asks the probe first: while W&B still
    answers 503, wandb-core is never asked (its retries would hold the worker for their whole
    budget on every poll of an outage) and the poll fails with the same words. When W&B answers
    again, the poll goes through."""
    path = "ent/outage/run-o"
    fake.add_run(path, display_name="run-o", created_at=T0)
    fake.log(path, 5, start=T0)
    settings = Settings(wandb_api_key=fake.api_key, wandb_base_url=fake.base_url)
    cfg = config([path])
    await store.runs.upsert(RunInfo(slug=cfg.slug, name=cfg.name))
    fake.set_down(503)
    try:
        async with wandb_sources(store, settings, [cfg]) as sources:
            first = await poll_once(store, sources, T0, respect_backoff=False)
            assert "is unreachable (HTTP 503)" in first.failures["wandb:hero"], first
            assert len(fake.operations()) > 1  # wandb-core's own tries, then the probe

            fake.clear_log()
            second = await poll_once(store, sources, T0 + EVERY, respect_backoff=False)
            assert "is unreachable (HTTP 503)" in second.failures["wandb:hero"], second
            assert fake.operations() == ["Viewer"]

            fake.set_down(None)
            back = await poll_once(store, sources, T0 + 2 * EVERY, respect_backoff=False)
            assert back.results["wandb:hero"].points == 5, back
    finally:
        fake.set_down(None)


async def test_the_probe_says_no_answer_when_wandb_hangs(server: FakeWandb) -> None:
    server.delay(5)
    try:
        reach = await http_probe(server.base_url, server.api_key, timeout=0.2)()
    finally:
        server.delay(0)
    assert not reach.ok and not reach.rejected and "no answer within 0.2 s" in reach.detail
    assert (await http_probe(server.base_url, server.api_key)()).ok


@pytest.mark.parametrize("status", [401, 403])
async def test_only_401_and_403_say_the_key_is_wrong(
    status: int, server: FakeWandb, store: Store, wandb_env: Path
) -> None:
    key = server.api_key if status == 403 else "wrong-key-" + "y" * 30
    if status == 403:
        server.set_down(403)
    settings = Settings(wandb_api_key=key, wandb_base_url=server.base_url)
    cfg = config(["ent/auth/run-1"])
    await store.runs.upsert(RunInfo(slug=cfg.slug, name=cfg.name))
    try:
        async with wandb_sources(store, settings, [cfg]) as sources:
            report = await poll_once(store, sources, T0, session=PollSession())
    finally:
        server.set_down(None)
    error = report.failures["wandb:hero"]
    assert "rejected the API key (check WANDB_API_KEY)" in error and f"HTTP {status}" in error
    assert key not in error
    health = await store.health.get("wandb", "wandb:hero")
    # a refused key is tried again a minute later (a key given back access is seen at once)
    assert health is not None and health.next_attempt_at == T0 + timedelta(minutes=1)


async def test_missing_api_key_is_fatal(store: Store) -> None:
    client = build_wandb_client(Settings(wandb_api_key=None), [config(["e/p/r"])])
    source = await make_source(store, client, config(["e/p/r"]))
    with pytest.raises(SourceUnavailable) as info:
        await source.poll(T0)
    assert info.value.fatal and "WANDB_API_KEY" in str(info.value)
    await client.aclose()


async def test_wandb_unreachable_marks_health_not_the_run(store: Store, wandb_env: Path) -> None:
    """W&B goes away: the poll raises, the poller records the failure, freshness keeps the
    last success, and the run's last snapshot stays "running" with no state event added."""
    own = FakeWandb().start()
    path = "ent/down/run-d"
    own.add_run(path, display_name="run-d", created_at=T0)
    own.log(path, 20, start=T0)
    factory = default_api_factory(
        base_url=own.base_url, api_key=own.api_key, entity="ent", timeout=2
    )
    down_client = WandbClient(factory, poll_timeout=30)
    try:
        source = await make_source(store, down_client, config([path]))
        ok_at = T0 + timedelta(hours=1)
        report = await poll_once(store, [source], ok_at)
        assert report.ok
        own.stop()  # the port is closed now

        failed_at = ok_at + timedelta(minutes=5)
        report = await poll_once(store, [source], failed_at)
        assert list(report.failures) == ["wandb:hero"]
        health = await store.health.get("wandb", "hero")
        assert health is not None
        assert health.last_success_at == ok_at and health.consecutive_failures == 1
        backoff = await store.health.get("wandb", "wandb:hero")
        assert backoff is not None and backoff.next_attempt_at is not None
        snapshot = await store.snapshots.get("hero", path)
        assert snapshot is not None and snapshot.state == "running"
        assert snapshot.observed_at == ok_at
        assert [e.extra["to_state"] for e in await events(store, kind="state")] == ["running"]
        with pytest.raises(Exception):  # noqa: B017 - any W&B/transport error
            await source.poll(failed_at + timedelta(minutes=1))
    finally:
        own.stop()
        await down_client.aclose()


async def test_discovery_failure_does_not_stop_the_chain(
    fake: FakeWandb,
    client: WandbClient,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = "ent/nodisc/hero-n1"
    fake.add_run(path, display_name="hero-n1", created_at=T0)
    fake.log(path, 40, start=T0)
    source = await make_source(store, client, config([path], pattern="^hero-"))
    monkeypatch.setattr(fake, "_op_Runs", None, raising=False)  # the server lacks `Runs`
    assert (await source.poll(T0 + timedelta(hours=2))).points == 40
    assert fake.unknown_operations == ["Runs"]
    assert "could not list runs" in caplog.text
    chain = json.loads((await store.cursors.get("wandb", "hero:chain"))[0])
    assert chain["members"] == [path] and chain["since"] is None  # retried next poll


async def test_a_crash_before_install_is_dated_when_it_happened(
    fake: FakeWandb, client: WandbClient, store: Store
) -> None:
    """A chain whose first run crashed three days before Runscribe first looked: the crash, the
    resume and the first observation of the live run carry the run's own times."""
    first, second = "ent/old/hero-1", "ent/old/hero-2"
    now = T0 + timedelta(days=5)
    crashed_at = now - timedelta(days=3)
    fake.add_run(first, created_at=T0)
    fake.log(first, 100, start=crashed_at - 100 * EVERY, every=EVERY)  # last row: crash - 2 min
    fake.set_state(first, "crashed", heartbeat_at=crashed_at)
    fake.add_run(second, created_at=crashed_at + timedelta(minutes=40))
    fake.log(second, 50, start=now - 50 * EVERY, every=EVERY)
    source = await make_source(store, client, config([first, second]))
    await source.poll(now)
    by_run = {(e.kind, e.extra["wandb_run"]): e for e in await events(store)}
    crash = by_run[("state", first)]
    assert crash.state == "crashed" and crash.at == crashed_at
    assert crash.updated_at == now  # when it was seen is kept apart
    restart = by_run[("restart", second)]
    assert restart.at == crashed_at + timedelta(minutes=40)
    live = by_run[("state", second)]
    assert live.state == "running" and live.at == now - EVERY  # its heartbeat: the last row
    # The last 24 hours hold only the live run's observation, not the old crash.
    recent = await store.events.timeline("hero", since=now - timedelta(days=1), limit=100)
    assert [e.external_id for e in recent] == [live.external_id]
