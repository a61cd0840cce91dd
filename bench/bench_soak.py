"""Soak: an accelerated day of a busy run through the fake Discord, RSS sampled.

    python bench/bench_soak.py [--messages 5760] [--poll-every 4] [--command-every 40]
                               [--trace] [--unbounded]
    python bench/bench_soak.py --minutes 30 --rate 6 [--slope-minutes 10] [--trace]
    python bench/bench_soak.py --process --minutes 30 --rate 6 [--trace] [--env NAME=VALUE]
                               [--empty] [--no-dumps]

One process: the fake Discord and a RunscribeBot on a real SQLite file seeded with the bundled
sample run (opened with the command readers `run` opens). A simulated day: a member message every
15 s (5,760), a poll cycle (enrich, detect, outbox) every minute, `/status` and `/timeline` every
10 minutes, each as fast as the machine goes. RSS (resident set, after a garbage collection) is
sampled 20 times; the first quarter is warm-up (SQLite's page cache, the first chart). Goal: flat
within 10 % after warm-up. The fake's own records are trimmed as it goes, so only the bot is
measured.

`--minutes M --rate R`: in real time instead, the way the chaos check soaks the bot: R member
messages a second for M minutes, a poll cycle every minute, `/status` and `/timeline` every two
minutes; RSS sampled every 30 s, and the slope of the last `--slope-minutes` (least squares,
MB/min) printed. Goal: ≤ 0.05 MB/min. Where the memory is, every 30 s (`bot.core.heap`): Python's
small-object arenas and the blocks in use in them, SQLite's allocator, glibc's heap in use and
free (free but kept: fragmentation).

`--process`: the same in real time against `runscribe run` as its own process, the fake Discord,
W&B (a row every 30 s) and GitHub in this one: RSS from /proc/<pid>, the rest from the bot's own
memory dumps (SIGUSR1, `bot.core.heap`); `--env` adds to the bot's environment. `--empty`: the bot
starts on an empty database, as a new deployment does (on the sample's history SQLite's caches
are full from the start). `--no-dumps`: one dump at the start and one at the end only; each
dump runs a full garbage collection in the bot, so dumps every 30 s hide cyclic garbage.

`--unbounded`: the same day with the library's defaults, the baseline a competent engineer
starts from (discord.py's 1,000-message cache, every `/timeline` pager kept until its view's
timeout; a pager now holds one page and reads the others from the store, so what this baseline
measures is mostly the cache). `--trace`: the allocation sites (by traceback) that grew most
after warm-up (tracemalloc; with `--process`, snapshots the bot writes on SIGUSR2 under
PYTHONTRACEMALLOC). Tracing slows the bot several times over: at 6 messages a second it falls
behind, so its growth is then the backlog; use it at lower rates, and RSS figures only from runs
without it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_bot import fake_discord_settings

from bot.app import LoopIntervals, RunscribeBot
from bot.core.heap import memory_parts
from bot.core.timeutil import utcnow
from bot.process.demo import replay_into, sample_runs_file
from bot.process.runtime import Runtime
from bot.process.wiring import COMMAND_READERS
from bot.sources.replay import load_sample
from bot.store import Database, Store
from tests.fakes.discord import FakeDiscord
from tests.fakes.github import FakeGitHub
from tests.fakes.wandb import FakeWandb

PAGE = os.sysconf("SC_PAGE_SIZE")
WORDS = (
    "loss spiked at step {n} after the data shard swap; rolling back to the last checkpoint",
    "node {n} lost, the scheduler restarted the job",
    "eval numbers for checkpoint {n} look fine, MMLU up a bit",
    "anyone seeing NCCL timeouts on rack {n}?",
    "merged the fix for the tokenizer edge case (#{n})",
)


def rss_mb() -> float:
    gc.collect()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 1e6


async def soak(args: argparse.Namespace) -> tuple[list[tuple[int, float]], list[str]]:
    now = utcnow()
    sample = load_sample(now)
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    db = folder / "soak.db"
    async with Database.open(db) as database:
        await replay_into(Store(database), sample)
    guild = sample.discord_guild_id or 900_000_000_000_000_001
    async with FakeDiscord(guild_id=guild, channels=sample.discord_channels) as fake:
        settings = fake_discord_settings(fake, db, folder / "runscribe.toml")
        async with Database.open(db, readers=COMMAND_READERS) as database:
            store = Store(database)
            runtime = Runtime(settings=settings, runs=sample_runs_file(sample), store=store)
            options = {"max_messages": 1000} if args.unbounded else {}
            bot = RunscribeBot(
                runtime,
                guild_ready_timeout=0,
                intervals=LoopIntervals(poll=3600, outbox=0.5, digest=3600, narrative=3600),
                **options,
            )
            task = asyncio.create_task(bot.start(fake.token))
            await asyncio.wait_for(bot.wait_until_ready(), 30)
            if args.unbounded:  # every /timeline pager lives until its timeout
                bot.get_cog("Timeline").live_pagers = 10**9  # type: ignore[union-attr]
            channel = int(sample.run_config["watch_channels"][0])
            samples: list[tuple[int, float]] = []
            every = max(1, args.messages // 20)
            snapshot = None
            if args.minutes:
                samples = await timed_soak(args, bot, fake, channel)
                await bot.close()
                task.cancel()
                return samples, []
            for n in range(1, args.messages + 1):
                text = WORDS[n % len(WORDS)].format(n=n)
                await fake.say(channel, text, author_id=10_000 + n % 37, author_name=f"m{n % 37}")
                if n % args.poll_every == 0:
                    await bot.poll_once()
                    await bot.drain_outbox()
                if n % args.command_every == 0:
                    for name, options in (
                        ("status", []),
                        ("timeline", [{"name": "days", "type": 4, "value": 1}]),
                    ):
                        record = await fake.slash(name, options)
                        answer = await asyncio.wait_for(record.callback, 120)
                        if answer.get("type") == 5:  # deferred: the card follows
                            await fake.wait_for(
                                lambda r=record: r.followups or r.original, within=120
                            )
                if n % 200 == 0:  # the fake's own records are not the bot's memory
                    fake.requests.clear()
                    fake.interactions.clear()
                    fake.nonces.clear()
                    del fake._backlog[:]  # events kept for a RESUME replay
                    for messages in fake.messages.values():
                        del messages[:-200]
                if n % every == 0:
                    samples.append((n, rss_mb()))
                    if args.trace and len(samples) == 5:
                        snapshot = tracemalloc.take_snapshot()
            top: list[str] = []
            if snapshot is not None:
                stats = tracemalloc.take_snapshot().compare_to(snapshot, "lineno")
                top = [str(stat) for stat in stats[:10]]
            await bot.close()
            task.cancel()
    return samples, top


async def commands_once(fake: FakeDiscord) -> None:
    for name, options in (("status", []), ("timeline", [{"name": "days", "type": 4, "value": 1}])):
        record = await fake.slash(name, options)
        answer = await asyncio.wait_for(record.callback, 120)
        if answer.get("type") == 5:  # deferred: the card follows
            await fake.wait_for(lambda r=record: r.followups or r.original, within=120)


def trim(fake: FakeDiscord) -> None:
    """The fake's own records are not the bot's memory."""
    fake.requests.clear()
    fake.interactions.clear()
    fake.nonces.clear()
    del fake._backlog[:]
    for messages in fake.messages.values():
        del messages[:-200]


async def timed_soak(
    args: argparse.Namespace, bot: RunscribeBot, fake: FakeDiscord, channel: int
) -> list[tuple[int, float]]:
    """Real time: `rate` messages a second for `minutes`; samples are (elapsed s, RSS MB)."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    end = began + args.minutes * 60
    samples: list[tuple[int, float]] = [(0, rss_mb())]
    parts: list[dict[str, float]] = [memory_parts()]
    snapshot: tracemalloc.Snapshot | None = None
    warm = began + min(args.minutes * 60 / 3, 300)  # the snapshot the end is compared with
    n = 0
    next_poll, next_commands, next_sample = began + 60, began + 120, began + 30
    while (now := loop.time()) < end:
        due = int((now - began) * args.rate)
        while n < due:
            n += 1
            text = WORDS[n % len(WORDS)].format(n=n)
            await fake.say(channel, text, author_id=10_000 + n % 37, author_name=f"m{n % 37}")
            if n % 200 == 0:
                trim(fake)
        if now >= next_poll:
            await bot.poll_once()
            await bot.drain_outbox()
            next_poll += 60
        if now >= next_commands:
            await commands_once(fake)
            next_commands += 120
        if now >= next_sample:
            samples.append((int(now - began), rss_mb()))
            parts.append(memory_parts())
            next_sample += 30
        if args.trace and snapshot is None and now >= warm:
            gc.collect()
            snapshot = tracemalloc.take_snapshot()
        await asyncio.sleep(0.05)
    print(f"{n:,} messages in {args.minutes} min ({n / (args.minutes * 60):.1f}/s)")
    print_parts(parts)
    if snapshot is not None:
        gc.collect()
        later = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__),)
        )
        print(f"grew most since minute {(warm - began) / 60:.0f} (tracemalloc, by traceback):")
        for stat in later.compare_to(snapshot, "traceback")[:12]:
            print(f"  {stat.size_diff / 1e3:+.1f} kB in {stat.count_diff:+d} blocks")
            for line in stat.traceback.format()[-8:]:
                print("    " + line)
    return samples


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))  # a TOML basic string


def runs_toml(config: dict[str, object]) -> str:
    lines, tables = ["[[runs]]"], {}
    for key, value in config.items():
        if isinstance(value, dict):
            tables[key] = value
        else:
            lines.append(f"{key} = {toml_value(value)}")
    for key, table in tables.items():
        lines.append(f"[runs.{key}]")
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def process_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1e3
    raise RuntimeError(f"process {pid} has no VmRSS")


async def dumped(
    folder: Path, pid: int, *, snapshots: int = 0, lines: int = 1
) -> list[dict[str, object]]:
    """The bot's memory dumps (bot.core.heap: SIGUSR1 lines, SIGUSR2 ones with a snapshot) once
    `snapshots` snapshots are written, and at least one line. Signals sent close together may
    merge, so lines are not counted."""
    path = folder / f"runscribe-memory-{pid}.jsonl"
    for _ in range(600):
        if path.exists():
            records = [json.loads(line) for line in path.read_text().splitlines()]
            if len(records) >= lines and sum("snapshot" in r for r in records) >= snapshots:
                return records
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the bot wrote no memory dump with {snapshots} snapshot(s) to {path}")


async def process_soak(args: argparse.Namespace) -> None:
    """`runscribe run` as its own process (the way the chaos check soaks it), against the fake
    Discord, W&B and GitHub in this one: RSS read from /proc/<pid>, the bot's own figures from
    its memory dumps (SIGUSR1 every 30 s; with --trace, SIGUSR2 tracemalloc snapshots)."""
    now = utcnow()
    sample = load_sample(now)
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    db = folder / "soak.db"
    config = dict(sample.run_config)
    first_step = 1
    if not args.empty:  # else the bot starts on a database of its own making, no history
        async with Database.open(db) as database:
            store = Store(database)
            await replay_into(store, sample)
            points = await store.metrics.points(str(config["slug"]))
            first_step = max(points, key=lambda p: p.at).step + 1
    config.pop("github_issues", None)  # the fake repository numbers its own issues
    (folder / "runscribe.toml").write_text(runs_toml(config))
    metrics = dict(config["metrics"])  # type: ignore[call-overload]
    wandb = FakeWandb().start()
    paths = list(config["wandb_runs"])  # type: ignore[call-overload]
    for path in paths:
        wandb.add_run(path, created_at=now - timedelta(days=2))
    wandb.set_state(paths[0], "crashed")
    live, step = paths[-1], first_step
    guild = sample.discord_guild_id or 900_000_000_000_000_001
    async with (
        FakeDiscord(guild_id=guild, channels=sample.discord_channels) as fake,
        FakeGitHub() as github,
    ):
        repo = github.repo(str(config["github_repo"]))
        issue = repo.add_issue("Aurora main run: loss spike", "watching it", labels=["aurora-run"])
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("RUNSCRIBE_", "DISCORD_", "WANDB_", "GITHUB_", "ANTHROPIC_"))
        }
        env.update(
            DISCORD_TOKEN=fake.token,
            DISCORD_API_BASE=fake.api_base,
            DISCORD_GATEWAY_URL=fake.gateway_url,
            DISCORD_GUILD_ID=str(fake.guild_id),
            RUNSCRIBE_DB=str(db),
            RUNSCRIBE_CONFIG=str(folder / "runscribe.toml"),
            RUNSCRIBE_POLL_INTERVAL="60",
            GITHUB_API_URL=github.url,
            WANDB_BASE_URL=wandb.base_url,
            WANDB_API_KEY=wandb.api_key,
            WANDB_DIR=str(folder / "wandb"),
            WANDB_CACHE_DIR=str(folder / "wandb-cache"),
            WANDB_CONFIG_DIR=str(folder / "wandb-config"),
            WANDB_DATA_DIR=str(folder / "wandb-data"),
            WANDB_SILENT="true",
            WANDB_ERROR_REPORTING="false",
            PYTHONUNBUFFERED="1",
        )
        if args.trace:
            env["PYTHONTRACEMALLOC"] = "25"
        env.update(item.split("=", 1) for item in args.env)  # type: ignore[misc]
        logfile = (folder / "bot.log").open("wb")
        bot = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "run", cwd=folder, env=env,
            stdout=logfile, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        logfile.close()
        try:
            await asyncio.wait_for(fake._ws_ready.wait(), 600)
            await fake.wait_for(lambda: fake.commands, within=600)  # the tree is published
            channel = int(config["watch_channels"][0])  # type: ignore[index]
            loop = asyncio.get_running_loop()
            began = loop.time()
            end = began + args.minutes * 60
            rss = [(0, process_rss_mb(bot.pid))]
            bot.send_signal(signal.SIGUSR1)
            warm = began + min(args.minutes * 60 / 3, 600)
            warm_snapshot = None
            n = 0
            every_command = args.command_seconds or float("inf")
            next_row, next_commands = began, began + every_command
            next_sample = began + args.sample_seconds
            while (t := loop.time()) < end:
                due = int((t - began) * args.rate)
                while n < due:
                    n += 1
                    text = WORDS[n % len(WORDS)].format(n=n)
                    await fake.say(
                        channel, text, author_id=10_000 + n % 37, author_name=f"m{n % 37}"
                    )
                    if n % 200 == 0:
                        trim(fake)
                    if n % 900 == 0:
                        repo.add_comment(issue, f"checkpoint {n} written; loss looks fine")
                if t >= next_row:  # training logs a row every 30 s
                    wandb.log(
                        live, 1, start=utcnow(), step_key=metrics["step"], first_value=step,
                        loss_key=metrics["loss"], tokens_key=metrics["tokens"],
                    )  # fmt: skip
                    step += 1
                    next_row += 30
                if t >= next_commands:
                    await commands_once(fake)
                    next_commands += every_command
                if t >= next_sample:
                    rss.append((int(t - began), process_rss_mb(bot.pid)))
                    if not args.no_dumps:
                        bot.send_signal(signal.SIGUSR1)
                    next_sample += args.sample_seconds
                if args.trace and warm_snapshot is None and t >= warm:
                    bot.send_signal(signal.SIGUSR2)
                    records = await dumped(folder, bot.pid, snapshots=1)
                    warm_snapshot = next(r["snapshot"] for r in records if "snapshot" in r)
                await asyncio.sleep(0.05)
            if args.trace:
                bot.send_signal(signal.SIGUSR2)
            elif args.no_dumps:
                bot.send_signal(signal.SIGUSR1)
            records = await dumped(
                folder, bot.pid, snapshots=2 if args.trace else 0, lines=2 if args.no_dumps else 1
            )
        finally:
            if bot.returncode is None:
                bot.terminate()
                await bot.wait()
            wandb.stop()
    rate = n / (args.minutes * 60)
    rows = step - first_step
    print(f"runscribe run (pid {bot.pid}): {n:,} messages in {args.minutes} min ({rate:.1f}/s), "
          f"{rows} W&B rows; its log: {folder / 'bot.log'}")  # fmt: skip
    report(rss, [r for r in records if "snapshot" not in r], args)
    if args.trace and warm_snapshot is not None:
        final = [r["snapshot"] for r in records if "snapshot" in r][-1]
        later = tracemalloc.Snapshot.load(str(final))
        earlier = tracemalloc.Snapshot.load(str(warm_snapshot))
        print_growth(earlier, later, f"the snapshot at minute {(warm - began) / 60:.0f}")


def report(
    rss: list[tuple[int, float]], parts: list[dict[str, object]], args: argparse.Namespace
) -> None:
    print(f"RSS MB every {args.sample_seconds:g} s: " + " ".join(f"{mb:.1f}" for _, mb in rss))
    print_parts(parts)
    slope = slope_mb_per_min(rss, args.slope_minutes)
    print(
        f"start {rss[0][1]:.1f} MB, end {rss[-1][1]:.1f} MB; slope of the last "
        f"{args.slope_minutes:g} min: {slope:+.3f} MB/min (goal: at most +0.05)"
    )


def print_parts(parts: Sequence[Mapping[str, object]]) -> None:
    """Each figure of `bot.core.heap.memory_parts` over the samples (MB; Threads: a count)."""
    names = [k for k in (parts[0] if parts else {}) if k not in ("n", "at", "VmRSS", "RssShmem")]
    for name in names:
        figures = " ".join(f"{float(part.get(name, 0)):.1f}" for part in parts)  # type: ignore[arg-type]
        print(f"  {name}{'' if name == 'Threads' else ' MB'}: {figures}")


def print_growth(earlier: tracemalloc.Snapshot, later: tracemalloc.Snapshot, since: str) -> None:
    ignore = (tracemalloc.Filter(False, tracemalloc.__file__),)
    stats = later.filter_traces(ignore).compare_to(earlier.filter_traces(ignore), "traceback")
    total = sum(stat.size_diff for stat in stats)
    print(f"Python allocations since {since}: {total / 1e6:+.2f} MB; grew most (by traceback):")
    for stat in stats[:12]:
        print(f"  {stat.size_diff / 1e3:+.1f} kB in {stat.count_diff:+d} blocks")
        for line in stat.traceback.format()[-8:]:
            print("    " + line)


def slope_mb_per_min(samples: list[tuple[int, float]], minutes: float) -> float:
    last = samples[-1][0]
    window = [(t / 60, mb) for t, mb in samples if t >= last - minutes * 60]
    if len(window) < 2:
        return 0.0
    mean_t = sum(t for t, _ in window) / len(window)
    mean_m = sum(m for _, m in window) / len(window)
    num = sum((t - mean_t) * (m - mean_m) for t, m in window)
    den = sum((t - mean_t) ** 2 for t, _ in window)
    return num / den if den else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=5760)
    parser.add_argument("--poll-every", type=int, default=4, help="messages per poll cycle")
    parser.add_argument("--command-every", type=int, default=40, help="messages per command pair")
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--minutes", type=float, default=0, help="real-time soak length")
    parser.add_argument("--rate", type=float, default=6.0, help="messages a second (real time)")
    parser.add_argument(
        "--slope-minutes", type=float, default=5.0, help="the slope of the last M minutes"
    )
    parser.add_argument(
        "--command-seconds",
        type=float,
        default=120.0,
        help="--process: seconds between /status + /timeline pairs (0: none)",
    )
    parser.add_argument(
        "--sample-seconds", type=float, default=30.0, help="--process: seconds between RSS samples"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="more environment for the bot process (--process), e.g. GLIBC_TUNABLES=…",
    )
    parser.add_argument(
        "--empty",
        action="store_true",
        help="--process: the bot starts on an empty database (no sample history), as a new "
        "deployment does: SQLite's caches then fill with the chat itself",
    )
    parser.add_argument(
        "--no-dumps",
        action="store_true",
        help="--process: no memory dump (each runs a full garbage collection in the bot) "
        "until the end, so RSS is what the bot does alone, as the chaos check sees it",
    )
    parser.add_argument(
        "--process",
        action="store_true",
        help="real time against `runscribe run` as its own process (with --minutes)",
    )
    parser.add_argument(
        "--unbounded",
        action="store_true",
        help="the old behaviour: discord.py's 1,000-message cache, every pager kept",
    )
    args = parser.parse_args()
    if args.process:
        if not args.minutes:
            parser.error("--process soaks in real time: give --minutes")
        asyncio.run(process_soak(args))
        return
    if args.trace:
        tracemalloc.start(25)
    start = rss_mb()
    began = time.perf_counter()
    samples, top = asyncio.run(soak(args))
    took = time.perf_counter() - began
    if args.minutes:
        print("RSS MB every 30 s: " + " ".join(f"{mb:.1f}" for _, mb in samples))
        slope = slope_mb_per_min(samples, args.slope_minutes)
        print(
            f"  start {samples[0][1]:.1f} MB, end {samples[-1][1]:.1f} MB; slope of the last "
            f"{args.slope_minutes:g} min: {slope:+.3f} MB/min (goal: at most +0.05)"
        )
        return
    warm = samples[len(samples) // 4 - 1][1]
    after = [mb for _, mb in samples[len(samples) // 4 :]]
    growth = (max(after) - warm) / warm * 100
    print(f"{args.messages:,} messages, {args.messages // args.poll_every:,} polls, "
          f"{2 * (args.messages // args.command_every):,} commands in {took:.0f} s")  # fmt: skip
    print("RSS MB: " + " ".join(f"{mb:.0f}" for _, mb in samples))
    print(
        f"  before start {start:.0f} MB; after warm-up {warm:.0f} MB; end {samples[-1][1]:.0f} MB"
    )
    during = (warm - samples[0][1]) / samples[0][1] * 100
    print(f"  growth after warm-up: {growth:+.1f} % (goal: within 10 %); "
          f"during warm-up (baseline): {during:+.1f} %")  # fmt: skip
    for line in top:
        print("  " + line)


if __name__ == "__main__":
    main()
