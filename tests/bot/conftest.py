"""Fixtures for the Discord bot tests: a store seeded with the bundled sample run (a real SQLite
file), the local fake Discord, and a RunscribeBot started in-process against it."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import discord
import pytest
import yarl

from bot.app import LoopIntervals, RunscribeBot, apply_endpoints
from bot.config.settings import RunsFile, Settings, parse_runs
from bot.core.timeutil import utcnow
from bot.process.demo import replay_into, sample_runs_file
from bot.process.runtime import Runtime
from bot.sources.replay import SampleRun, load_sample
from bot.store import Database, Store
from bot.store.errors import BUSY_SECONDS
from tests.fakes.discord import FakeDiscord
from tests.slow_callbacks import no_slow_callbacks
from tests.waiting import PATIENCE


@dataclass
class Seed:
    path: Path
    sample: SampleRun
    now: datetime

    @property
    def slug(self) -> str:
        return str(self.sample.run_config["slug"])

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.sample.run_config)


@pytest.fixture(scope="session")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    """The sample run replayed once per session into a template database file."""
    now = utcnow()
    sample = load_sample(now)
    path = tmp_path_factory.mktemp("seed") / "seed.db"

    async def build() -> None:
        async with Database.open(path) as db:
            await replay_into(Store(db), sample)

    asyncio.run(build())
    return Seed(path, sample, now)


@pytest.fixture
def db_file(seed: Seed, tmp_path: Path) -> Path:
    target = tmp_path / "runscribe.db"
    shutil.copy(seed.path, target)
    return target


@pytest.fixture
def busy_timeout() -> float:
    """The bot's busy timeout; a test that waits out a held lock parametrizes a short one."""
    return BUSY_SECONDS


@pytest.fixture
async def seeded_store(db_file: Path, busy_timeout: float) -> AsyncIterator[Store]:
    # As `runscribe run` opens it: commands read through their own read-only connections.
    async with Database.open(db_file, readers=2, busy_timeout=busy_timeout) as db:
        yield Store(db)


@pytest.fixture
def runs(seed: Seed) -> RunsFile:
    """The sample run with its daily digest 13 hours ago (local): past the scheduler's 12-hour
    catch-up, so no digest is due while a test runs, whatever the time of day. (At the sample's
    own 09:00 Stockholm, a bot started between 09:00 and 21:00 there queued one.) Tests that want
    one due take `digest_due_now`."""
    sample = sample_runs_file(seed.sample)
    local = (utcnow() - timedelta(hours=13)).astimezone(sample.runs[0].zone)
    return with_config(sample, digest_time=local.strftime("%H:%M"))


@pytest.fixture
async def fake(seed: Seed) -> AsyncIterator[FakeDiscord]:
    """The fake Discord; a callback that blocks the loop for seconds fails the test."""
    async with (
        no_slow_callbacks(),
        FakeDiscord(
            guild_id=seed.sample.discord_guild_id or 900_000_000_000_000_001,
            channels=seed.sample.discord_channels,
        ) as server,
    ):
        yield server


@pytest.fixture
def endpoints() -> Any:
    """discord.py keeps both URLs in class attributes; put them back after each test."""
    base = discord.http.Route.BASE
    gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    yield
    discord.http.Route.BASE = base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = gateway
    assert isinstance(gateway, yarl.URL)


def fake_settings(fake: FakeDiscord, db: Path, *, guild: bool = True) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        discord_token=fake.token,
        discord_api_base=fake.api_base,
        discord_gateway_url=fake.gateway_url,
        discord_guild_id=fake.guild_id if guild else None,
        runscribe_db=db,
        runscribe_config=db.parent / "runscribe.toml",
    )


def with_config(runs: RunsFile, **changes: Any) -> RunsFile:
    data = runs.runs[0].model_dump(mode="json")
    data.update(changes)
    return parse_runs({"runs": [data]})


def digest_due_now(runs: RunsFile, now: datetime) -> RunsFile:
    """The sample run with its digest time one minute ago (local), so it is due at start."""
    zone = runs.runs[0].zone
    local = (now - timedelta(minutes=1)).astimezone(zone)
    return with_config(runs, digest_time=local.strftime("%H:%M"))


StartBot = Callable[..., Awaitable[RunscribeBot]]


@pytest.fixture
async def start_bot(
    fake: FakeDiscord, seeded_store: Store, db_file: Path, runs: RunsFile, endpoints: Any
) -> AsyncIterator[StartBot]:
    """Start a RunscribeBot in-process against the fake; returns it once READY."""
    started: list[tuple[RunscribeBot, asyncio.Task[None]]] = []

    async def start(
        *,
        runs_file: RunsFile | None = None,
        guild: bool = True,
        runtime: Runtime | None = None,
        chart_process: bool = False,
        **options: Any,
    ) -> RunscribeBot:
        settings = fake_settings(fake, db_file, guild=guild)
        if runtime is None:
            runtime = Runtime(settings=settings, runs=runs_file or runs, store=seeded_store)
        apply_endpoints(runtime.settings)
        options.setdefault(
            "intervals", LoopIntervals(poll=3600, outbox=0.05, digest=0.1, narrative=3600)
        )
        options.setdefault("outbox_backoff", 0.05)
        # Tests see a cold chart cache unless they ask for the start's warm-up (timing-free).
        options.setdefault("warm_charts", False)
        bot = RunscribeBot(runtime, guild_ready_timeout=0, **options)
        # Charts drawn in a thread of this process: a test about what the bot answers or posts
        # needs the PNG, not the child process, whose start (matplotlib's import) would be most
        # of the test's CPU time. The child is tested in tests/render/test_drawer.py, and with
        # the bot by the tests that pass `chart_process=True`.
        bot.charting.drawer.in_process = not chart_process
        task = asyncio.create_task(bot.start(fake.token))
        started.append((bot, task))
        await asyncio.wait_for(bot.wait_until_ready(), PATIENCE)
        if bot.run_loops:
            # The poll loop's first cycle runs at start; while it runs, commands defer first.
            # Tests see the bot after it, so an answer's shape does not depend on timing.
            await fake.wait_for(lambda: bot.cycles >= 1)
        return bot

    yield start
    for bot, task in started:
        await bot.close()
        try:
            await asyncio.wait_for(task, PATIENCE)
        except (asyncio.CancelledError, TimeoutError):
            pass
