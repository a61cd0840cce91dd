"""The e2e deployment the incident tests share: W&B and GitHub state served by their fakes,
polled by a real Runtime (`open_runtime`: wandb-core, httpx, SQLite, the incident engine), queued
in the outbox, and delivered by a real RunscribeBot to the fake Discord; the fixtures, what the
trainer logs, and how to read what Discord received.

Time is simulated: each poll cycle runs at an explicit `now` that matches the timestamps the
fakes serve (W&B history and heartbeats, the fake GitHub's clock). The bot gets the same clock,
and its own poll loop goes through the same lock as the cycles the test drives, so detection
happens one cycle at a time, as in a process running `runscribe poll --once` beside the bot.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import discord
import pytest
from pydantic import SecretStr

from bot.app import LoopIntervals, RunscribeBot, apply_endpoints
from bot.config.settings import RunsFile, Settings, parse_runs
from bot.process.pipeline import WANDB, CycleSummary
from bot.process.runtime import Runtime
from bot.process.wiring import open_runtime
from bot.store import Store
from tests.fakes.discord import FakeDiscord
from tests.fakes.github import FakeGitHub, FakeRepo
from tests.fakes.wandb import FakeWandb
from tests.slow_callbacks import no_slow_callbacks
from tests.sources.test_wandb import wandb_env
from tests.waiting import PATIENCE, until

# the W&B environment fixture is the W&B source tests' own (wandb-core quiet, one retry)
__all__ = ["wandb_env"]

ALERTS = 1_300_000_000_000_000_001
FIRST = "ent/proj/hero-1"
RESUMED = "ent/proj/hero-2"
REPO = "lab/model"
MIN = timedelta(minutes=1)
MARKER = "\u2063"  # the outbox's invisible dedup marker starts here


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wandb_server(wandb_env: Path) -> Iterator[FakeWandb]:
    server = FakeWandb().start()
    yield server
    server.stop()


@pytest.fixture
def wb(wandb_server: FakeWandb) -> FakeWandb:
    wandb_server.reset()
    return wandb_server


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the developer's environment (an LLM key, a GitHub token) leaks in."""
    for name in list(os.environ):
        if name.startswith(("RUNSCRIBE_", "DISCORD_", "GITHUB_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    for name in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_ENTITY", "WANDB_PROJECT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def fake_discord(clean_env: None) -> AsyncIterator[FakeDiscord]:
    async with no_slow_callbacks(), FakeDiscord(channels={ALERTS: "training-alerts"}) as server:
        yield server


@pytest.fixture(autouse=True)
def discord_endpoints() -> Iterator[None]:
    """discord.py keeps both URLs in class attributes; put them back after each test."""
    base = discord.http.Route.BASE
    gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    yield
    discord.http.Route.BASE = base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = gateway


# --- the deployment: a polling runtime and the bot that delivers its posts ----------------------


class SimClock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Services:
    """What RunscribeBot needs from a Runtime (`bot.app.BotServices`), over a real one. The
    bot's poll loop and the test's cycles take turns, so time never runs backwards."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self.settings: Settings = runtime.settings
        self.runs: RunsFile = runtime.runs
        self.store: Store = runtime.store
        self.lock = asyncio.Lock()
        self.polled = asyncio.Event()  # set once a cycle has run (the bot's first, at start)

    async def cycle(self, now: datetime) -> CycleSummary:
        async with self.lock:
            summary = await self.runtime.cycle(now)
        self.polled.set()
        return summary

    async def poll(self, family: str, now: datetime) -> CycleSummary:
        async with self.lock:
            summary = await self.runtime.poll(family, now)
        if family == WANDB:
            self.polled.set()
        return summary

    async def enrich(self, now: datetime) -> CycleSummary:
        async with self.lock:
            return await self.runtime.enrich(now)

    async def judge(self, now: datetime) -> CycleSummary:
        async with self.lock:
            return await self.runtime.judge(now)

    @property
    def pen(self) -> object:
        return self.runtime.pen

    async def write_writeups(self, now: datetime) -> int:
        return await self.runtime.write_writeups(now)  # the model's call: no lock held


@dataclass
class Deployment:
    services: Services
    bot: RunscribeBot
    clock: SimClock
    discord: FakeDiscord
    t0: datetime = field(init=False)  # the clock's time when deployed

    def __post_init__(self) -> None:
        self.t0 = self.clock.now

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def store(self) -> Store:
        return self.services.store

    async def cycle(self, at: datetime, *, wandb_up: bool = True) -> CycleSummary:
        """One poll + detect cycle at `at`, then wait until the bot has delivered the outbox."""
        assert at >= self.clock.now, "simulated time only moves forward"
        self.clock.now = at
        summary = await self.services.cycle(at)
        if wandb_up:  # every source answered (a misconfigured fake fails here, not later)
            assert "wandb:hero" in summary.poll.results, summary.poll
            assert not summary.poll.failures and not summary.poll.skipped, summary.poll
        assert not summary.errors, summary.errors
        await self.delivered()
        return summary

    async def delivered(self, within: float = PATIENCE) -> None:
        async def drained() -> bool:
            return not await self.store.outbox.pending_count()

        await until(drained, "the bot draining the outbox", within=within)
        await self.bot.drain_outbox()  # one more pass: nothing left that a drain would post

    def channel(self) -> list[dict[str, Any]]:
        return self.discord.posted(ALERTS)

    def thread(self, head: dict[str, Any]) -> list[dict[str, Any]]:
        thread_id = int(head["id"])  # a thread started from a message shares its id
        assert thread_id in self.discord.messages, "the alert opened no thread"
        return self.discord.posted(thread_id)


@asynccontextmanager
async def deployed(
    settings: Settings, runs: RunsFile, clock: SimClock, fake: FakeDiscord
) -> AsyncIterator[Deployment]:
    """A Runtime (sources, store, engine) and a RunscribeBot on it, logged in to the fake
    Discord; returns once the bot's own first poll (at the clock's time) is done."""
    async with open_runtime(settings, runs) as runtime:
        assert runtime.detector is not None
        assert (runtime.llm is None) == (settings.anthropic_api_key is None)
        services = Services(runtime)
        apply_endpoints(settings)
        bot = RunscribeBot(
            services,
            clock=clock,
            intervals=LoopIntervals(
                poll=3600, outbox=0.05, digest=3600, narrative=3600, writeups=0.05
            ),
            outbox_backoff=0.05,
            guild_ready_timeout=0,
        )
        # Charts in a thread of this process, as the bot tests draw them (tests/bot/conftest.py
        # says why): these tests are about alerts and what Discord receives.
        bot.charting.drawer.in_process = True
        assert settings.discord_token is not None
        task = asyncio.create_task(bot.start(settings.discord_token.get_secret_value()))
        try:
            await asyncio.wait_for(bot.wait_until_ready(), PATIENCE)
            await asyncio.wait_for(services.polled.wait(), PATIENCE)
            deployment = Deployment(services, bot, clock, fake)
            await deployment.delivered()
            yield deployment
        finally:
            await bot.close()
            try:
                await asyncio.wait_for(task, PATIENCE)
            except (asyncio.CancelledError, TimeoutError):
                pass


def make_settings(
    tmp_path: Path, fake: FakeDiscord, wb: FakeWandb, github: FakeGitHub | None = None
) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        discord_token=SecretStr(fake.token),
        discord_api_base=fake.api_base,
        discord_gateway_url=fake.gateway_url,
        discord_guild_id=None,
        github_api_url=github.url if github is not None else "http://127.0.0.1:9",
        wandb_base_url=wb.base_url,
        wandb_api_key=SecretStr(wb.api_key),
        anthropic_api_key=None,
        runscribe_db=tmp_path / "runscribe.db",
        runscribe_config=tmp_path / "runscribe.toml",
    )


def make_runs(**extra: Any) -> RunsFile:
    config: dict[str, Any] = {
        "slug": "hero",
        "name": "Hero 70B",
        "wandb_runs": [FIRST],
        "wandb_run_pattern": "^hero-",
        "total_steps": 10_000,
        "alerts_channel": ALERTS,
        "metrics": {"step": "_step", "tokens": "throughput/total_tokens", "loss": "train/loss"},
        **extra,
    }
    return parse_runs({"runs": [config]})


# --- what the trainer logs ----------------------------------------------------------------------


def rows(first_step: int, count: int, start: datetime) -> list[dict[str, Any]]:
    """One row a minute from `start`, `_step` from `first_step`; a slowly falling loss."""
    return [
        {
            "_step": first_step + i,
            "_timestamp": (start + i * MIN).timestamp(),
            "train/loss": round(2.5 - 0.001 * (first_step + i), 6),
            "throughput/total_tokens": 4_000_000.0 * (first_step + i + 1),
        }
        for i in range(count)
    ]


def healthy_run(wb: FakeWandb, t0: datetime) -> None:
    """hero-1 has trained for 100 minutes: steps 0..99, the last one at t0 - 1 min."""
    wb.add_run(FIRST, created_at=t0 - 101 * MIN)
    wb.append_rows(FIRST, rows(0, 100, t0 - 100 * MIN))
    wb.set_state(FIRST, "running")


def resume(wb: FakeWandb, created: datetime, first_step: int, count: int) -> None:
    """A new chain run (matched by `wandb_run_pattern`) restored from an earlier checkpoint."""
    wb.add_run(RESUMED, created_at=created)
    wb.append_rows(RESUMED, rows(first_step, count, created + 3 * MIN))
    wb.set_state(RESUMED, "running")


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


# --- reading what Discord received ---------------------------------------------------------------


def visible(message: dict[str, Any]) -> str:
    return str(message["content"]).split(MARKER)[0]


def full_text(message: dict[str, Any]) -> str:
    parts = [visible(message)]
    for embed in message.get("embeds") or []:
        parts += [embed.get("title") or "", embed.get("description") or "", embed.get("url") or ""]
        for item in embed.get("fields") or []:
            parts += [item.get("name") or "", item.get("value") or ""]
        parts.append((embed.get("footer") or {}).get("text") or "")
    return "\n".join(parts)


def assert_head_resolved(head: dict[str, Any]) -> None:
    """The alert message was edited in place to its resolved state: text and embed both say
    so, and the Acknowledge button is gone."""
    assert head["edited_timestamp"], "the alert message was never edited"
    assert visible(head).startswith("✅ **Resolved** · Incident #"), visible(head)
    assert "🔴" not in visible(head)
    assert head["components"] == [], head["components"]
    [embed] = head["embeds"]
    assert embed["title"].startswith("✅"), embed["title"]
    # Times reach Discord as Discord timestamps (each reader's own zone), never as raw stamps;
    # one downtime figure, with what it measures.
    assert re.search(
        r"^✅ Resolved <t:\d+:f> · down \d[^:]*: last step before the crash → first step after the "
        r"restore$",
        embed["description"],
        re.M,
    ), embed["description"]
    assert "\ue000" not in full_text(head)


def assert_thread_closed(d: Deployment, head: dict[str, Any]) -> None:
    """The thread's last post is the short closing line, and the thread is archived."""
    closing = visible(d.thread(head)[-1])
    assert re.fullmatch(r"✅ Resolved <t:\d+:t>; closing this thread\.", closing), closing
    assert d.discord.archived(int(head["id"]))
    patches = [
        r for r in d.discord.requests
        if r.method == "PATCH" and r.path == f"/channels/{head['id']}"
    ]  # fmt: skip
    assert [r.json for r in patches] == [{"archived": True}]


WATCHED = 1_300_000_000_000_000_002
ONCALL = 1_300_000_000_000_000_077


@pytest.fixture
async def watched_discord(clean_env: None) -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(channels={ALERTS: "training-alerts", WATCHED: "hero-run"}) as server:
        server.add_role(ONCALL, "oncall")
        yield server


async def cli(settings: Settings, cwd: Path, *args: str) -> tuple[int, str, str]:
    """The real CLI as a process on the deployment's database: exit code, stdout, stderr."""
    env = {**os.environ, "RUNSCRIBE_DB": str(settings.runscribe_db)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def run_cli(settings: Settings, cwd: Path, *args: str) -> dict[str, Any]:
    """The real CLI's JSON output (it must succeed)."""
    code, out, err = await cli(settings, cwd, *args)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


# --- the common story: a healthy run deployed, a crash alerted, a resolution ------------------


@asynccontextmanager
async def healthy_deployment(
    tmp_path: Path,
    wb: FakeWandb,
    fake: FakeDiscord,
    *,
    behind: timedelta = timedelta(hours=2),
    runs: RunsFile | None = None,
) -> AsyncIterator[Deployment]:
    """hero-1 healthy (`healthy_run`) up to `d.t0`, `behind` the wall clock, and deployed with
    the clock at `d.t0`."""
    t0 = now_utc() - behind
    healthy_run(wb, t0)
    settings = make_settings(tmp_path, fake, wb)
    async with deployed(settings, runs or make_runs(), SimClock(t0), fake) as d:
        yield d


@asynccontextmanager
async def github_deployment(
    tmp_path: Path, wb: FakeWandb, fake: FakeDiscord
) -> AsyncIterator[tuple[Deployment, FakeGitHub, FakeRepo]]:
    """`healthy_deployment` beside a fake GitHub on the same clock, whose `REPO` the run tracks
    by its "hero-run" label (an unrelated issue is there before the bot's first poll)."""
    t0 = now_utc() - timedelta(hours=2)
    healthy_run(wb, t0)
    async with FakeGitHub() as github:
        github.advance(seconds=(t0 - github.now).total_seconds())  # one clock for every fake
        repo = github.repo(REPO)
        repo.add_issue("Tokenizer docs", "Unrelated to the run.", labels=["docs"])
        settings = make_settings(tmp_path, fake, wb, github)
        runs = make_runs(github_repo=REPO, github_labels=["hero-run"])
        async with deployed(settings, runs, SimClock(t0), fake) as d:
            yield d, github, repo


async def crash(d: Deployment, wb: FakeWandb) -> dict[str, Any]:
    """hero-1 crashes a minute after `d.t0`; the cycle at +5 min alerts: the alert's head."""
    wb.set_state(FIRST, "crashed", heartbeat_at=d.t0 + MIN)
    await d.cycle(d.t0 + 5 * MIN)
    [head] = d.channel()
    return head


async def assert_resolved_once(d: Deployment, head: dict[str, Any]) -> None:
    """The head edited to resolved, its thread closed, and the one incident resolved."""
    assert_thread_closed(d, head)
    assert_head_resolved(head)
    [incident] = await d.store.incidents.find("hero")
    assert incident.status == "resolved"
