"""Incident alerts benchmark (not part of the test run).

    python bench/bench_incidents.py [--poll 5] [--trials 6] [--quick]

1. Alert latency, end to end. The bot runs in its own process exactly as deployed
   (`python -m bot run`), against the fake W&B, GitHub, Anthropic and Discord servers of
   tests/fakes, served from this process. Each trial changes what the fake W&B serves at a random
   moment: a run's state becomes `crashed`; a loss spike is logged; a run's last heartbeat turns
   15 min old (the threshold). Measured: from that moment to the alert's arrival at the fake
   Discord (`POST /channels/{alerts}/messages`, seen by the fake). The poll interval is SET BY
   THIS HARNESS (`--poll`, RUNSCRIBE_POLL_INTERVAL, default 5 s so trials are quick; deployed it
   is 60 s): a latency scales with it, so each is also given as a fraction of it. Each trial
   uses its own W&B run (one slug each), one trial at a time.

   Four deployments, each a fresh process and database, each run at the same time as its
   baseline (so both see the same load on the machine):
   - quiet: the bot has nothing else to do (crash, spike and heartbeat trials);
   - quiet, baseline `timer`: the same with the outbox posting on its 2 s tick only (a periodic
     outbox poller, the common design; the bot wakes its poster when an alert is queued): crash
     trials;
   - loaded: a GitHub backfill behind a slow GitHub (every request answered after `--github-delay`
     s; `--backfill` old threads labelled for the run at once, then one more every 6 s, each
     backfilled with one request) and a slow LLM (every request answered after `--llm-delay` s,
     enrichment at once): crash trials;
   - loaded, baseline `gathered`: what a competent engineer writes for a poller of several
     sources: one loop whose cycle polls every source family at once (`asyncio.gather`, each
     detecting as it finishes), then one bounded enrichment round, then sleeps the interval; so
     a W&B round waits for the cycle's slowest source before the next starts. (The bot gives
     each family its own loop.) `--sequential` adds the one-source-after-the-other loop the bot
     had before, which is not a fair baseline.

2. detect() cost per cycle on a run with 400,000 metric points and 1,000,000 events (rows
   inserted through SQL: the repositories are not what is measured there). The filled store is
   kept in bench/results/ and reused by later runs: filling it takes minutes here.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from bot.config.settings import parse_runs  # noqa: E402
from bot.core.timeutil import to_db  # noqa: E402
from bot.incidents.engine import IncidentEngine  # noqa: E402
from bot.models import MetricPoint, RunSnapshot  # noqa: E402
from bot.outbox.markers import find_markers  # noqa: E402
from bot.posts.incidents import IncidentPosts  # noqa: E402
from bot.process.runtime import record_runs  # noqa: E402
from bot.store import Database, Store, StoreError  # noqa: E402
from tests.fakes.anthropic import FakeAnthropic, Recorded, Reply, auto_reply, slow  # noqa: E402
from tests.fakes.discord import FakeDiscord  # noqa: E402
from tests.fakes.github import FakeGitHub  # noqa: E402
from tests.fakes.wandb import FakeWandb  # noqa: E402

SLUG = "hero"
RUN = "lab/pretrain/hero-a"
CHANNEL = 1213463398226931745
POLL = 60.0  # the detect() cost part's simulated poll interval
CACHE = ROOT / "bench" / "results"  # the detect() cost part's filled store, kept between runs

ALERTS = 1_300_000_000_000_000_001
PROJECT = "ent/bench"
REPO = "lab/model"
LABEL = "hero-run"
EVERY = timedelta(seconds=20)  # the trainer logs a row every 20 s
HISTORY = 360  # rows each run has logged before the bot starts (2 h)
LOSS, TOKENS = "train/loss", "throughput/total_tokens"
# What the alert's title says for each trial kind (the message is "… — <run name>: <title>").
KINDS = {"crash": "crashed", "spike": "Loss spike", "heartbeat": "No heartbeat"}
HEARTBEAT_MINUTES = 15  # the default threshold (Thresholds.heartbeat_minutes)


def loss_at(step: int) -> float:
    return round(3.0 * (1 + 1 / (1 + step / 1000)), 6)


# --- one deployment: the bot process and what the fakes serve it ------------------------------


@dataclass
class Trial:
    kind: str
    path: str
    name: str
    latency: float | None = None  # seconds from the change to the post
    arrived: datetime | None = None  # when the post arrived (wall clock)
    content: str = ""
    after_round: float | None = None  # seconds from the start of the round that caught it


@dataclass
class Deployment:
    label: str
    mode: str  # "run": `python -m bot run`; else a baseline variant (`serve_variant`)
    trials: list[Trial]
    loaded: bool
    results: list[Trial] = field(default_factory=list)
    github_requests: int = 0
    llm_requests: int = 0
    seconds: float = 0.0


def runs_toml(deployment: Deployment) -> str:
    lines = []
    for n, trial in enumerate(deployment.trials):
        lines += [
            "[[runs]]",
            f'slug = "t{n:02d}"',
            f'name = "{trial.name}"',
            f'wandb_runs = ["{trial.path}"]',
            f"alerts_channel = {ALERTS}",
            "[runs.metrics]",
            f'step = "_step"\ntokens = "{TOKENS}"\nloss = "{LOSS}"',
            "",
        ]
    if deployment.loaded:  # the threads (and their enrichment) belong to a run of their own
        lines += [
            "[[runs]]",
            'slug = "notes"',
            'name = "Lab notes"',
            f'github_repo = "{REPO}"',
            f'github_labels = ["{LABEL}"]',
            "",
        ]
    return "\n".join(lines)


def bot_env(
    work: Path, wb: FakeWandb, discord: FakeDiscord, poll: float, **extra: str
) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RUNSCRIBE_", "DISCORD_", "GITHUB_", "ANTHROPIC_", "WANDB_"))
    }
    env.update(
        DISCORD_TOKEN=discord.token,
        DISCORD_API_BASE=discord.api_base,
        DISCORD_GATEWAY_URL=discord.gateway_url,
        WANDB_BASE_URL=wb.base_url,
        WANDB_API_KEY=wb.api_key,
        WANDB_DIR=str(work / "wandb"),
        WANDB_CACHE_DIR=str(work / "wandb" / "cache"),
        WANDB_CONFIG_DIR=str(work / "wandb" / "config"),
        WANDB_DATA_DIR=str(work / "wandb" / "data"),
        RUNSCRIBE_DB=str(work / "runscribe.db"),
        RUNSCRIBE_CONFIG=str(work / "runscribe.toml"),
        RUNSCRIBE_POLL_INTERVAL=str(poll),
        RUNSCRIBE_LOG_LEVEL="INFO",
        GITHUB_API_URL="http://127.0.0.1:9",
    )
    env.update(extra)
    return env


class Load:
    """A slow GitHub with a backfill, and a slow LLM. The repository holds `threads` old
    unlabelled issues with comments, read by the bot's first poll while GitHub is still fast.
    Then `backfill` of them get the run's label at once, and one more every few seconds: each
    newly tracked thread's earlier comments are backfilled (one request each), and every
    request is answered after `github_delay` seconds; every LLM request after `llm_delay`."""

    def __init__(self, github: FakeGitHub, anthropic: FakeAnthropic, github_delay: float,
                 llm_delay: float):  # fmt: skip
        self.github = github
        self.anthropic = anthropic
        self.github_delay = github_delay
        self.repo = github.repo(REPO)
        self.unlabelled: list[int] = []

        def slow_reply(request: Recorded) -> Reply:
            return slow(llm_delay, auto_reply(request))

        anthropic.handler = slow_reply

    def sync_clock(self) -> None:
        """The fake GitHub's clock (its timestamps and Date header) follows the wall clock."""
        self.github.advance(seconds=(datetime.now(UTC) - self.github.now).total_seconds())

    def seed(self, threads: int) -> None:
        self.github.now = datetime.now(UTC) - timedelta(days=2)
        for n in range(threads):
            number = self.repo.add_issue(
                f"Hero run: data mix note {n}",
                "We may lower the learning rate after the next eval; the data mix stays.",
                user="dana",
            )
            self.repo.add_comment(number, "Agreed, after the eval.", user="sam")
            self.repo.add_comment(number, "Noted in the run log.", user="lee")
            self.unlabelled.append(number)
            self.github.advance(minutes=1)
        self.sync_clock()

    def first_poll_done(self) -> bool:
        """The bot has started a second GitHub round, so its first (fast) one is over."""
        listings = [
            r for r in self.github.log
            if r.path == f"/repos/{REPO}/issues" and r.query.get("page") in (None, "1")
        ]  # fmt: skip
        return len(listings) >= 2

    def label_next(self) -> None:
        if self.unlabelled:
            self.sync_clock()
            self.repo.add_label(self.unlabelled.pop(0), LABEL)

    def backfill(self, threads: int) -> None:
        self.github.slow_next(self.github_delay, count=100_000)  # every request from now on
        for _ in range(threads):
            self.label_next()

    async def stream(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            self.label_next()


async def trainer(wb: FakeWandb, live: dict[str, bool]) -> None:
    """Each run still training logs a row every 20 s (W&B cycles see new rows, not only idle)."""
    while True:
        await asyncio.sleep(EVERY.total_seconds())
        now = datetime.now(UTC)
        for path, alive in live.items():
            if alive:
                wb.log(path, 1, start=now, every=EVERY, loss_at=loss_at)


def seed_runs(wb: FakeWandb, trials: list[Trial]) -> None:
    now = datetime.now(UTC)
    for trial in trials:
        created = now - EVERY * (HISTORY + 5)
        wb.add_run(trial.path, display_name=trial.name, created_at=created)
        wb.log(trial.path, HISTORY, start=now - EVERY * HISTORY, every=EVERY, loss_at=loss_at)


def polled_twice(wb: FakeWandb, trials: list[Trial]) -> bool:
    """Every trial run has been read by two W&B rounds (its history imported, then re-read)."""
    seen: dict[str, int] = {}
    for request in list(wb.requests):
        if request.operation == "Run":
            name = str(request.variables.get("name"))
            seen[name] = seen.get(name, 0) + 1
    return all(seen.get(t.path.rsplit("/", 1)[1], 0) >= 2 for t in trials)


def alert_for(discord: FakeDiscord, trial: Trial) -> dict[str, Any] | None:
    for message in discord.posted(ALERTS):
        if f"— {trial.name}:" in str(message.get("content") or ""):
            return message
    return None


def trigger(wb: FakeWandb, trial: Trial) -> float:
    """Change what the fake W&B serves; returns the monotonic time the condition became true."""
    now = datetime.now(UTC)
    if trial.kind == "crash":
        wb.set_state(trial.path, "crashed")
        return time.monotonic()
    if trial.kind == "spike":
        # three rows (loss_spike_points) at twice the trend, the last one logged now
        wb.log(trial.path, 3, start=now - timedelta(seconds=2), every=timedelta(seconds=1),
               loss_at=lambda step: 2 * loss_at(step))  # fmt: skip
        return time.monotonic()
    # The trainer stopped 15 min ago: the heartbeat's age passes the threshold at the next whole
    # second (W&B serves whole seconds), which is when the condition becomes true.
    due = (now + timedelta(seconds=1)).replace(microsecond=0)
    wb.set_state(trial.path, "running", heartbeat_at=due - timedelta(minutes=HEARTBEAT_MINUTES))
    return time.monotonic() + (due - now).total_seconds()


async def deploy(
    deployment: Deployment,
    wb: FakeWandb,
    work: Path,
    args: argparse.Namespace,
    rng: random.Random,
) -> Deployment:
    await asyncio.to_thread(work.mkdir, parents=True)
    await asyncio.to_thread((work / "runscribe.toml").write_text, runs_toml(deployment))
    seed_runs(wb, deployment.trials)
    live = {t.path: True for t in deployment.trials}
    background: list[asyncio.Task[None]] = [asyncio.create_task(trainer(wb, live))]
    started = time.monotonic()
    async with (
        FakeDiscord(channels={ALERTS: "training-alerts"}) as discord,
        FakeGitHub() as github,
        FakeAnthropic() as anthropic,
    ):
        extra: dict[str, str] = {}
        load = None
        if deployment.loaded:
            load = Load(github, anthropic, args.github_delay, args.llm_delay)
            load.seed(200)
            extra = {
                "GITHUB_API_URL": github.url,
                "ANTHROPIC_API_KEY": "sk-ant-fake",
                "ANTHROPIC_BASE_URL": anthropic.base_url,
                "RUNSCRIBE_ENRICH_WINDOW": "0",  # every queued event is sent to the LLM at once
            }
        argv = [sys.executable, "-m", "bot", "run"]
        if deployment.mode != "run":
            argv = [sys.executable, str(HERE), "--serve-variant", deployment.mode]
        log_path = work / "bot.log"
        with log_path.open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=work, env=bot_env(work, wb, discord, args.poll, **extra),
                stdout=log, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            try:
                await discord.wait_connected(60)
                deadline = time.monotonic() + 120
                while not polled_twice(wb, deployment.trials):
                    if process.returncode is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"the bot did not poll W&B; see {log_path}")
                    await asyncio.sleep(0.1)
                if load is not None:  # both are busy before the first trial
                    await discord.wait_for(load.first_poll_done, 60)
                    before = len(github.log)
                    load.backfill(args.backfill)
                    background.append(asyncio.create_task(load.stream(args.stream)))
                    await discord.wait_for(
                        lambda: anthropic.message_requests and len(github.log) >= before + 2, 120
                    )
                    github_before, llm_before = len(github.log), len(anthropic.message_requests)
                trials_started = time.monotonic()
                for trial in deployment.trials:
                    assert alert_for(discord, trial) is None, f"{trial.name} alerted early"
                    await asyncio.sleep(rng.uniform(0, args.poll))  # a random moment
                    live[trial.path] = trial.kind == "spike"
                    since = trigger(wb, trial)
                    message = await discord.wait_for(
                        lambda trial=trial: alert_for(discord, trial), args.timeout
                    )
                    trial.latency = time.monotonic() - since
                    trial.arrived = datetime.now(UTC)
                    trial.content = content = str(message.get("content"))
                    assert KINDS[trial.kind] in content, (trial.kind, content)
                    deployment.results.append(trial)
                    who = f"{deployment.label} {deployment.mode}"
                    print(f"  {who:<18} {trial.kind:<10} {trial.latency:6.2f} s", flush=True)
                deployment.seconds = time.monotonic() - trials_started
                await rounds(work / "runscribe.db", deployment.results)
                if load is not None:
                    deployment.github_requests = len(github.log) - github_before
                    deployment.llm_requests = len(anthropic.message_requests) - llm_before
            finally:
                for task in background:
                    task.cancel()
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
                    try:
                        await asyncio.wait_for(process.wait(), 20)
                    except TimeoutError:
                        process.kill()
                        await process.wait()
    print(f"  ({deployment.label} {deployment.mode}: {time.monotonic() - started:.0f} s with start "
          "and stop)")  # fmt: skip
    return deployment


async def rounds(path: Path, trials: list[Trial]) -> None:
    """Each alert's time from the start of the W&B round that queued it (the outbox row's
    `created_at` is the round's clock), read from the bot's database through the store API."""
    async with Database.open(path, migrate=False) as db:
        store = Store(db)
        for trial in trials:
            [marker, *_] = find_markers(trial.content)
            item = await store.outbox.get(marker.item_id)
            assert item is not None and item.created_at is not None and trial.arrived is not None
            trial.after_round = (trial.arrived - item.created_at).total_seconds()


def serve_variant(variant: str) -> int:
    """A baseline bot: `runscribe run` with one change, in the child process this bench starts.
    `timer`: the outbox posts on its 2 s tick only (no wake-up when an alert is queued), as
    before; `gathered`: one loop polls every family at once, then enriches once (bounded as
    now), then sleeps the interval, instead of a loop per source family and one for enrichment;
    `sequential`: the same loop polling the families one after the other."""
    from bot import app, cli
    from bot.process.pipeline import FAMILIES

    class TimerBot(app.RunscribeBot):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.loops.delivered_soon = lambda result: result  # type: ignore[method-assign]

    class SequentialBot(app.RunscribeBot):
        def start_loops(self) -> None:
            every, rounds = self.intervals, self.rounds
            spawn = functools.partial(self.loops.spawn, probe=self.store.db.came_back)
            spawn("outbox", every.outbox, self.drain_outbox, wake=self.loops.outbox_due)
            spawn("cycle", every.poll, self.sequential_cycle)
            spawn("digest", every.digest, self.schedule_digests)
            if rounds.narrative is not None:
                spawn("narrative", every.narrative, rounds.refresh_narratives)

        async def sequential_cycle(self) -> None:
            for family in FAMILIES:  # W&B first, as run_cycle does
                await self.poll_family(family)
            await self.enrich_once()

    class GatheredBot(SequentialBot):
        async def sequential_cycle(self) -> None:
            await asyncio.gather(*(self.poll_family(family) for family in FAMILIES))
            await self.enrich_once()

    bots: dict[str, type[app.RunscribeBot]] = {
        "timer": TimerBot,
        "sequential": SequentialBot,
        "gathered": GatheredBot,
    }
    app.RunscribeBot = bots[variant]  # type: ignore[misc]
    return cli.main(["run"])


# --- reporting -----------------------------------------------------------------------------------


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def report(deployments: list[Deployment], args: argparse.Namespace) -> dict[str, Any]:
    poll = args.poll
    print()
    print(f"Alert latency end to end (W&B change -> post in the fake Discord), poll interval "
          f"{poll:g} s (set by this harness: latencies scale with it); outbox woken by a queued "
          f"alert, else every 2 s")  # fmt: skip
    print(f"  {'deployment':<22}{'kind':<11}{'n':>3}{'median':>9}{'p95':>8}{'max':>8}"
          f"{'median/P':>10}{'max/P':>7}{'round->post':>13}")  # fmt: skip
    figures: dict[str, Any] = {"poll_s": poll}
    for d in deployments:
        for kind in KINDS:
            values = [t.latency for t in d.results if t.kind == kind and t.latency is not None]
            if not values:
                continue
            med, p95, top = statistics.median(values), nearest_rank(values, 0.95), max(values)
            after = statistics.median(
                t.after_round for t in d.results if t.kind == kind and t.after_round is not None
            )
            print(f"  {d.label + ' (' + d.mode + ')':<22}{kind:<11}{len(values):>3}{med:>8.2f}s"
                  f"{p95:>7.2f}s{top:>7.2f}s{med / poll:>10.2f}{top / poll:>7.2f}"
                  f"{after:>12.2f}s")  # fmt: skip
            figures[f"{d.label}/{d.mode}:{kind}"] = dict(
                n=len(values), median=med, p95=p95, max=top, round_to_post=after
            )
    for d in deployments:
        if d.loaded and d.seconds:
            print(f"  load during '{d.label} ({d.mode})': {d.github_requests} GitHub requests "
                  f"(each answered after {args.github_delay:g} s), {d.llm_requests} LLM requests "
                  f"(each after {args.llm_delay:g} s) in {d.seconds:.0f} s")  # fmt: skip
    print("  round->post: median seconds from the start of the W&B round that caught the change")
    print("  to the post (the rest of the latency is waiting for that round to start)")
    print("  (p95 is the nearest rank: with fewer than 20 trials it is the largest or next one)")
    return figures


# --- detect() cost ------------------------------------------------------------------------------


async def setup_run(store: Store) -> None:
    runs = parse_runs(
        {
            "runs": [
                {
                    "slug": SLUG,
                    "name": "Hero",
                    "wandb_runs": [RUN],
                    "alerts_channel": CHANNEL,
                    "total_steps": 10_000_000,
                }
            ]
        }
    )
    await record_runs(store, runs)


async def snapshot(store: Store, state: str, now: datetime, heartbeat: datetime, step: int) -> None:
    await store.snapshots.upsert(
        SLUG,
        RunSnapshot(RUN, "hero-a", state, datetime(2026, 1, 1, tzinfo=UTC), heartbeat, step, now),
    )
    await store.health.record_success("wandb", SLUG, now)


async def fill(store: Store, points: int, events: int, now: datetime) -> None:
    """Bulk rows straight through SQL (the repositories are not what is measured here)."""
    start = now - timedelta(minutes=points)
    conn = store.db.conn
    async with store.db.transaction():
        batch = []
        for i in range(points):
            at = start + timedelta(minutes=i)
            batch.append((SLUG, RUN, i * 10, to_db(at), i * 10 * 4e6, 2.0 + 1 / (1 + i / 1e4)))
            if len(batch) >= 50_000:
                await conn.executemany("INSERT INTO metric_points VALUES (?, ?, ?, ?, ?, ?)", batch)
                batch = []
        if batch:
            await conn.executemany("INSERT INTO metric_points VALUES (?, ?, ?, ?, ?, ?)", batch)
    rng = random.Random(7)
    span = points * 60
    cols = (
        "run_slug, source, external_id, kind, at, author, ref, url, body, thread, extra, "
        "content_hash, incident, severity, tag, summary, enriched_hash"
    )
    async with store.db.transaction():
        batch2: list[tuple[object, ...]] = []
        for i in range(events):
            at = to_db(start + timedelta(seconds=rng.uniform(0, span)))
            source = "github" if i % 3 else "discord"
            incident = 1 if i % 500 == 0 else 0
            thread = f"github:lab/hero#{i % 2000}" if source == "github" else "discord:2"
            batch2.append(
                (SLUG, source, f"x:{i}", "comment", at, "someone", "#1", None, "text " * 20,
                 thread, "{}", f"h{i}", incident, "critical" if incident else None,
                 "incident" if incident else "other", "summary", f"h{i}")
            )  # fmt: skip
            if len(batch2) >= 50_000:
                await conn.executemany(
                    f"INSERT INTO events ({cols}) VALUES ({', '.join('?' * 17)})", batch2
                )
                batch2 = []
        if batch2:
            await conn.executemany(
                f"INSERT INTO events ({cols}) VALUES ({', '.join('?' * 17)})", batch2
            )
    await conn.execute("ANALYZE")


async def filled(path: Path, points: int, events: int, now: datetime) -> float:
    """The big store at `path`: a copy of the one an earlier run of these sizes kept in
    bench/results/ (migrated forward when the schema has moved on; the fill takes minutes on a
    loaded machine), else filled and kept there. Returns the seconds the fill took (0: reused)."""
    cached = CACHE / f"bench_incidents-{points}-{events}.db"
    if cached.exists():
        await asyncio.to_thread(shutil.copyfile, cached, path)
        try:
            async with Database.open(path):
                return 0.0
        except StoreError as exc:  # e.g. written by a newer schema on another branch
            print(f"not reusing {cached}: {exc}")
            await asyncio.to_thread(path.unlink)
    async with Database.open(path) as db:
        store = Store(db)
        await setup_run(store)
        t0 = time.perf_counter()
        await fill(store, points, events, now)
        seconds = time.perf_counter() - t0
    await asyncio.to_thread(CACHE.mkdir, parents=True, exist_ok=True)
    await asyncio.to_thread(shutil.copyfile, path, cached)
    return seconds


async def cost(path: Path, points: int, events: int, cycles: int) -> dict[str, float]:
    now = datetime(2026, 9, 1, tzinfo=UTC)
    fill_s = await filled(path, points, events, now)
    async with Database.open(path) as db:
        store = Store(db)
        engine = IncidentEngine(IncidentPosts())
        step = (points - 1) * 10
        await snapshot(store, "running", now, now, step)
        first_start = time.perf_counter()
        await engine.detect(store, now)  # first cycle: a brand-new engine's 6 h lookback
        first = time.perf_counter() - first_start
        times = []
        t = now
        for _ in range(cycles):
            t += timedelta(seconds=POLL)
            step += 10
            await store.metrics.add_points(SLUG, [MetricPoint(RUN, step, t, loss=2.0)])
            await snapshot(store, "running", t, t, step)
            started = time.perf_counter()
            await engine.detect(store, t)
            times.append(time.perf_counter() - started)
        # an open crash incident with grouping and thread follow-ups
        await snapshot(store, "crashed", t, t, step)
        open_times = []
        for _ in range(cycles):
            t += timedelta(seconds=POLL)
            await snapshot(store, "crashed", t, t - timedelta(minutes=1), step)
            started = time.perf_counter()
            await engine.detect(store, t)
            open_times.append(time.perf_counter() - started)
        times.sort()
        open_times.sort()
        return {
            "fill_s": fill_s,
            "first_ms": first * 1000,
            "median_ms": statistics.median(times) * 1000,
            "p95_ms": times[int(len(times) * 0.95) - 1] * 1000,
            "open_median_ms": statistics.median(open_times) * 1000,
            "open_p95_ms": open_times[int(len(open_times) * 0.95) - 1] * 1000,
        }


def plan(prefix: str, kinds: dict[str, int], rng: random.Random) -> list[Trial]:
    trials = [
        Trial(kind, f"{PROJECT}/{prefix}-{kind}-{n}", f"{prefix.title()} {kind} {n}")
        for kind, count in kinds.items()
        for n in range(1, count + 1)
    ]
    rng.shuffle(trials)
    return trials


async def latency(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    side = 1 if args.quick else args.side_trials
    trials = 3 if args.quick else args.trials
    baseline_trials = 3 if args.quick else args.baseline_trials
    deployments = [
        Deployment("quiet", "run", plan("quiet", {"crash": trials, "spike": side,
                                                   "heartbeat": side}, rng), loaded=False),
        Deployment("quiet", "timer", plan("timer", {"crash": trials}, rng), loaded=False),
        Deployment("loaded", "run", plan("loaded", {"crash": trials}, rng), loaded=True),
        Deployment("loaded", "gathered", plan("base", {"crash": baseline_trials}, rng),
                   loaded=True),
    ]  # fmt: skip
    if args.sequential:
        deployments.append(Deployment("loaded", "sequential", plan("seq", {"crash":
                                      baseline_trials}, rng), loaded=True))  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="bench-incidents-"))
    wb = FakeWandb().start()
    try:
        # Each deployment next to its baseline, at the same time (the same load on the machine).
        for pair in (deployments[:2], deployments[2:]):  # (the loaded ones: 2 or 3)
            await asyncio.gather(
                *(deploy(d, wb, work / f"{d.mode}-{d.label}", args, rng) for d in pair)
            )
    except BaseException:
        print(f"the bots' logs are kept in {work}")
        raise
    else:
        shutil.rmtree(work, ignore_errors=True)
    finally:
        wb.stop()
    return report(deployments, args)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poll", type=float, default=5.0, help="RUNSCRIBE_POLL_INTERVAL, s")
    parser.add_argument("--trials", type=int, default=5, help="crash trials per deployment")
    parser.add_argument("--side-trials", type=int, default=2, help="spike and heartbeat trials")
    parser.add_argument("--baseline-trials", type=int, default=3)
    parser.add_argument(
        "--sequential", action="store_true", help="also the one-after-the-other loop (unfair)"
    )
    parser.add_argument("--github-delay", type=float, default=1.5)
    parser.add_argument("--backfill", type=int, default=15, help="threads labelled at once")
    parser.add_argument("--stream", type=float, default=6.0, help="then one more every S s")
    parser.add_argument("--llm-delay", type=float, default=6.0)
    parser.add_argument("--timeout", type=float, default=240.0, help="per trial, s")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="3 crash trials each, 1 spike and 1 heartbeat, smaller detect() store",
    )
    parser.add_argument("--no-cost", action="store_true", help="skip the detect() cost part")
    parser.add_argument("--points", type=int, default=400_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--cycles", type=int, default=40)
    args = parser.parse_args()
    if args.quick:
        args.points, args.events, args.cycles = 100_000, 250_000, 20
    figures = await latency(args)
    if not args.no_cost:
        with tempfile.TemporaryDirectory() as tmp:
            stats = await cost(Path(tmp) / "big.db", args.points, args.events, args.cycles)
        print()
        how = (f"filled in {stats['fill_s']:.0f} s, kept in {CACHE} for the next run"
               if stats["fill_s"] else f"the store kept in {CACHE} by an earlier run")  # fmt: skip
        print(f"detect() per cycle, {args.points:,} points, {args.events:,} events ({how})")
        print(f"  {'case':<34}{'median ms':>10}{'p95 ms':>10}")
        print(f"  {'healthy run':<34}{stats['median_ms']:>10.1f}{stats['p95_ms']:>10.1f}")
        print(f"  {'open crash incident':<34}{stats['open_median_ms']:>10.1f}"
              f"{stats['open_p95_ms']:>10.1f}")  # fmt: skip
        print(f"  {'first cycle of a new engine':<34}{stats['first_ms']:>10.1f}")
        figures["detect"] = stats
    print(json.dumps(figures))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-variant"]:  # a baseline bot's own process (see `deploy`)
        raise SystemExit(serve_variant(sys.argv[2]))
    asyncio.run(main())
