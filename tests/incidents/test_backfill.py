"""A backfill is history, never news: a condition the engine first finds long
over (a crash and its resume while Runscribe was down, a report read back after downtime) is
recorded and listed, never alerted. Through the real store and engine (`Scenario`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.incidents.engine import IncidentEngine
from bot.incidents.service import list_incidents
from bot.posts.incidents import IncidentPosts
from bot.store import Store
from tests.incidents.scenario import RUN_B, Scenario


class Down:
    """The engine while Runscribe is not running: nothing is judged."""

    async def detect(self, store: Store, now: datetime) -> int:
        return 0


async def test_a_crash_and_resume_while_runscribe_was_down_is_recorded_not_alerted(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(30)
    sc.engine = Down()  # type: ignore[assignment]
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(20)
    await sc.launch(RUN_B, 2_000)
    await sc.run_for(120)
    sc.engine = IncidentEngine(IncidentPosts())  # Runscribe is back: one cycle reads it all
    await sc.tick()
    await sc.run_for(5)

    assert await sc.outbox() == []  # nothing posted: no alert, no resolution
    [incident] = await store.incidents.find("hero")
    assert incident.status == "resolved" and incident.details.history
    assert incident.started_at < incident.resolved_at < sc.now - timedelta(hours=1)
    [listed] = await list_incidents(store, "hero")  # but /incidents has it
    assert listed.id == incident.id


async def test_a_report_read_back_after_downtime_is_history(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(240)
    live = sc.now
    sc.now = live - timedelta(hours=3)  # written three hours ago, read only now
    await sc.report("Hero is down: node r12n4 lost, double-bit ECC on GPU 3.", source="discord")
    sc.now = live
    await sc.run_for(5)
    assert await sc.alerts_posted() == []
    [incident] = await store.incidents.find("hero")
    assert incident.status == "resolved" and incident.details.history
