"""The bundled sample, replayed day by day through the real pipeline with the engine: one alert
and one resolution per real incident, and every person's report attached to its incident."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.incidents.engine import IncidentEngine
from bot.incidents.service import incident_stats, list_incidents
from bot.posts.incidents import IncidentPosts
from bot.process.demo import ReplayStats, replay_into
from bot.sources.replay import load_sample
from bot.store import Database, Store
from tests.incidents.scenario import FAR

END = datetime(2026, 3, 23, 13, 10, tzinfo=UTC)


@pytest.fixture(scope="module")
def replayed(
    tmp_path_factory: pytest.TempPathFactory, empty_database: Path
) -> tuple[Path, ReplayStats]:
    """The sample replayed with the engine into a new store, once for the module (the replay
    is the slow part): the database file and what the replay said. Tests open a copy."""
    path = tmp_path_factory.mktemp("replayed") / "runscribe.db"
    shutil.copy(empty_database, path)

    async def build() -> ReplayStats:
        async with Database.open(path) as db:
            engine = IncidentEngine(IncidentPosts())
            return await replay_into(Store(db), load_sample(END), detector=engine)

    return path, asyncio.run(build())


@pytest.fixture
async def replayed_store(replayed: tuple[Path, ReplayStats], db_path: Path) -> AsyncIterator[Store]:
    """A copy of the replayed database, this test's own."""
    shutil.copy(replayed[0], db_path)
    async with Database.open(db_path) as db:
        yield Store(db)


async def test_sample_yields_one_alert_and_one_resolution_per_incident(
    replayed: tuple[Path, ReplayStats], replayed_store: Store
) -> None:
    store, stats = replayed_store, replayed[1]
    items = await store.outbox.due(FAR, limit=1000)
    alerts = [i for i in items if i.kind == "alert"]
    resolved = [i for i in items if i.kind == "resolved" and i.reply_to is None]
    # lost node (03-04), NVLink/ECC (03-06), host OOM + restore from 40k (03-09),
    # ECC crash then a hung restore (03-16, one incident). The fork is not an incident, and the
    # loss spike (+22 %) stays under the default 25 % threshold.
    assert len(alerts) == 4
    assert len(resolved) == 4
    assert stats.alerts == len(items)
    texts = [i.payload["content"] for i in resolved]
    meaning = "last step before the crash → first step after the restore"
    assert f"Down 55 min: {meaning}." in texts[0]
    # who acted is said before what brought training back
    assert re.search(
        r'\. \w+ at \d\d:\d\d CES?T: "swapping in spare r15n1"\. Training resumed', texts[0]
    )
    assert "Training resumed from step 8,000 in run aurora-main; 736 steps recomputed." in texts[0]
    assert "from step 21,000" in texts[1]
    assert f"Down 1 h 10 min: {meaning}" in texts[2]
    assert "from step 40,000 in run aurora-main; 2,000 steps" in texts[2]
    assert f"Down 2 h 32 min: {meaning}" in texts[3]
    assert "from step 76,000 in run aurora-main-wd; 225 steps" in texts[3]
    for text in texts:  # one downtime figure, said once
        assert text.count("Down ") == 1 and " down" not in text and "just now" not in text
    views = await list_incidents(store, "aurora")
    assert all(not v.open for v in views)
    hang = views[0]
    assert {"crash", "hang", "restore-failed"} <= set(hang.kinds)
    count, healed, *_ = await incident_stats(store, "aurora")
    assert (count, healed) == (4, 1)  # the NVLink fault: the scheduler failed over on its own


async def test_a_new_engine_after_the_replay_posts_nothing_new(replayed_store: Store) -> None:
    store = replayed_store
    before = len(await store.outbox.due(FAR, limit=1000))
    assert await IncidentEngine(IncidentPosts()).detect(store, END) == 0
    assert len(await store.outbox.due(FAR, limit=1000)) == before
