"""Detection never stops because one detector or one incident's save fails (issue 35): the rest
of the round goes on, each cause is logged once, and `/healthz` (a real server over the same
store) answers 503 "detection failing" until a round goes through again."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import datetime

import aiohttp
import pytest

from bot.incidents.detectors import DETECTORS, Detection, DetectorSpec, RunData
from bot.store import Store
from bot.web.server import serve
from tests.incidents.scenario import RUN_A, Scenario, content

INTERVAL = 60.0


def explode(data: RunData) -> Detection:
    raise RuntimeError("probe exploded")


@pytest.fixture
def broken_detector() -> Iterator[DetectorSpec]:
    spec = DETECTORS.register(DetectorSpec("broken-probe", explode, "wandb"))
    try:
        yield spec
    finally:
        if any(s.fingerprint == spec.fingerprint for s in DETECTORS):
            DETECTORS.unregister(spec.fingerprint)


@asynccontextmanager
async def healthz(sc: Scenario) -> AsyncIterator[aiohttp.ClientSession]:
    async with (
        serve(sc.store, "127.0.0.1", 0, poll_interval=INTERVAL, clock=lambda: sc.now) as (_, port),
        aiohttp.ClientSession(base_url=f"http://127.0.0.1:{port}") as http,
    ):
        yield http


async def probe(sc: Scenario, http: aiohttp.ClientSession) -> tuple[int, dict[str, object]]:
    await sc.store.cycles.record(sc.now, sc.now, INTERVAL)  # the poll loop's heartbeat
    async with http.get("/healthz") as response:
        return response.status, await response.json()


async def test_a_raising_detector_does_not_stop_the_others(
    store: Store, now: datetime, broken_detector: DetectorSpec, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.incidents.engine")
    sc = Scenario(store, now)
    await sc.start(RUN_A)
    async with healthz(sc) as http:
        await sc.run_for(30)
        status, body = await probe(sc, http)
        assert status == 503
        assert body["problems"] == ["hero: detection failing"]
        detection = body["detection"]
        assert isinstance(detection, dict)
        assert detection["hero"]["ok"] is False
        assert (
            "the broken-probe detector failed: RuntimeError: probe exploded"
            in (detection["hero"]["error"])
        )
        # the crash detector beside it still alerts
        sc.training = sc.beating = False
        await sc.tick()
        await sc.set_state("crashed")
        await sc.run_for(10)
        alerts = await sc.alerts_posted()
        assert len(alerts) == 1 and "crashed" in content(alerts[0])
        # 41 failing rounds, one log record with the traceback
        said = [r for r in caplog.records if "probe exploded" in r.getMessage()]
        assert len(said) == 1 and said[0].levelno == logging.ERROR and said[0].exc_info

        DETECTORS.unregister(broken_detector.fingerprint)
        await sc.tick()
        status, body = await probe(sc, http)
        assert status == 200, body
        assert body["problems"] == []
    assert any("works again" in r.getMessage() for r in caplog.records)


async def test_one_incident_that_cannot_be_saved_does_not_stop_the_round(
    store: Store, now: datetime
) -> None:
    """The store refuses one condition's incident (a trigger standing in for a damaged index):
    another condition in the same rounds still alerts, and once the store takes the first, it
    is recorded."""
    await store.db.conn.execute(
        "CREATE TEMP TRIGGER refuse_heartbeat BEFORE INSERT ON incidents "
        "WHEN new.fingerprint = 'heartbeat' BEGIN SELECT RAISE(ABORT, 'page damaged'); END"
    )
    sc = Scenario(store, now)
    await sc.start(RUN_A)
    async with healthz(sc) as http:
        await sc.run_for(30)
        sc.beating = False  # heartbeats stop reaching W&B; steps still arrive
        await sc.run_for(20)
        sc.loss_override = float("inf")
        await sc.run_for(3)
        status, body = await probe(sc, http)
        assert status == 503
        assert body["problems"] == ["hero: detection failing"]
        alerts = await sc.alerts_posted()
        assert len(alerts) == 1 and "Loss is inf" in content(alerts[0])
        assert [i.fingerprint for i in await store.incidents.find("hero")] == ["loss-nan"]

        await store.db.conn.execute("DROP TRIGGER refuse_heartbeat")
        await sc.tick()
        status, body = await probe(sc, http)
        assert status == 200, body
    incidents = await store.incidents.find("hero")
    assert sorted(i.fingerprint for i in incidents) == ["heartbeat", "loss-nan"]
