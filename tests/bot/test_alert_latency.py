"""An alert is posted as soon as a loop round has queued it, not at the outbox loop's next tick:
measured end to end (bench/bench_incidents.py), the outbox's interval was a fixed share of every
alert's latency."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from bot.app import LoopIntervals
from bot.config.settings import RunsFile, Settings
from bot.models import OutboxItem
from bot.outbox.lanes import DrainReport
from bot.outbox.payload import make_payload
from bot.outbox.poster import OutboxPoster
from bot.process.pipeline import WANDB, CycleSummary
from bot.process.runtime import Runtime
from bot.sources.poller import CycleReport
from bot.store import Store
from tests.bot.conftest import Seed, StartBot, fake_settings
from tests.fakes.discord import FakeDiscord
from tests.waiting import PATIENCE

HOUR = 3600.0


class AlertingServices:
    """What the bot needs from a Runtime (`bot.app.BotServices`); once armed, its W&B round
    queues one alert in the outbox, as incident detection does when a run has crashed."""

    def __init__(self, runtime: Runtime, channel: int):
        self.runtime = runtime
        self.channel = channel
        self.armed = False

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def runs(self) -> RunsFile:
        return self.runtime.runs

    @property
    def store(self) -> Store:
        return self.runtime.store

    async def cycle(self, now: datetime) -> CycleSummary:
        return CycleSummary(poll=CycleReport())

    async def poll(self, family: str, now: datetime) -> CycleSummary:
        summary = CycleSummary(poll=CycleReport())
        if family == WANDB and self.armed:
            self.armed = False
            item = OutboxItem(
                channel_id=self.channel,
                kind="alert",
                payload=make_payload("🔴 **Incident #1**: hero-1 crashed at step 99"),
                dedup_key="crash:hero-1",
            )
            assert await self.store.outbox.enqueue(item) is not None
            summary.alerts_queued = 1
        return summary

    async def enrich(self, now: datetime) -> CycleSummary:
        return CycleSummary(poll=CycleReport())

    async def reload(self, runs: RunsFile) -> AlertingServices:
        return self


async def test_an_alert_queued_by_a_poll_round_is_posted_without_waiting_for_the_outbox_tick(
    start_bot: StartBot,
    fake: FakeDiscord,
    seed: Seed,
    seeded_store: Store,
    db_file: Path,
    runs: RunsFile,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drains: list[DrainReport] = []
    drain = OutboxPoster.drain

    async def counted(self: OutboxPoster) -> DrainReport:
        report = await drain(self)
        drains.append(report)
        return report

    monkeypatch.setattr(OutboxPoster, "drain", counted)
    channel = int(seed.config["alerts_channel"])
    runtime = Runtime(settings=fake_settings(fake, db_file), runs=runs, store=seeded_store)
    services = AlertingServices(runtime, channel)
    bot = await start_bot(
        runtime=services,  # type: ignore[arg-type]
        intervals=LoopIntervals(poll=HOUR, outbox=HOUR, digest=HOUR, narrative=HOUR),
    )
    # The outbox loop's first round at start is over: it now waits an hour for its next one.
    await fake.wait_for(lambda: drains)
    before = len(fake.posted(channel))

    services.armed = True
    summary = await bot.poll_family(WANDB)  # one W&B round, as its loop runs it
    assert isinstance(summary, CycleSummary) and summary.alerts_queued == 1

    await fake.wait_for(lambda: len(fake.posted(channel)) > before, within=PATIENCE)
    posted = fake.posted(channel)[before:]
    assert [str(m["content"]).split("\u2063")[0] for m in posted] == [
        "🔴 **Incident #1**: hero-1 crashed at step 99"
    ]
    await fake.wait_for(lambda: len(drains) == 2)  # the start round and the one the alert woke
    assert len(drains[1].sent) == 1, drains[1]
    assert await seeded_store.outbox.pending_count() == 0
