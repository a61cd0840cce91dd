"""Which steps of a working bot hold its event loop for 20 ms or more, at 1,000,000 events.

    python bench/bench_loop_steps.py [--events 1000000] [--threshold 0.02] [--poll 30]

The real process (`python -m bot run`, wrapped by this file's `--serve` so the loop is measured
from inside) on a copy of a store of `--events` events and 0.4 metric points per event
(`bench/history.py`, shared with `bench_charts.py`), plus the last `--recent-days` (1) before
now at the same density (8,333 events and 3,333 points a day), against the fake Discord and fake
GitHub (this process's loop), the fake W&B (a thread) and its own web server with the GitHub webhook
endpoint. The runs file has every feature on: W&B with a watched forecast metric, GitHub with a
label, a watched channel, alerts, a live status message refreshed every minute, a digest.

Each callback of the bot's loop is measured by the tests' instrument (`tests/slow_callbacks.py`:
held = wall time less the waits for a CPU, so a busy machine does not make a callback slow); one
that holds it for `--threshold` or more is recorded with the loop thread's stack, sampled every
5 ms once it has run 10 ms. The steps, one at a time, each with the loop to itself a few seconds:

  start (the first rounds, the first chart, the live message), a W&B round with 120 new points,
  5 `/status`, `/timeline` 7 days and all history, `/ask`, `/forecast`, `/incidents list`,
  `/digest`, 200 webhook deliveries (`POST /hooks/github`, ingested behind the doorbell),
  the status pages (`GET /`, `GET /runs/<slug>`), 200 messages in the watched channel, and 40 s
  of the background loops (narrative, live status, digest schedule).

Reported per step: each callback over the threshold, its held and CPU ms, and where the loop
thread was (the innermost frames of bot/ and cogs/ most often sampled). Goal: none
over 20 ms. There is no baseline: the figure is the list.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = str(Path(__file__).resolve())
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bot_process import ALERTS, CHAT, GUILD  # noqa: E402

STATUS = 910_000_000_000_000_004
DIGEST = 910_000_000_000_000_005
REPO = "o/r"
SECRET = "bench-secret"
OURS = re.compile(r'File "[^"]*/(bot|cogs)/([^"]+)", line (\d+), in (\S+)')


# --- inside the bot's process ------------------------------------------------------------------


def serve(record: Path, threshold: float) -> int:
    """`runscribe run` with every loop callback measured; slow ones appended to `record`."""
    import tests.slow_callbacks as sc

    original_run = asyncio.run

    class Recorder(sc.SlowCallbacks):
        def __init__(self, sampler: Any) -> None:
            super().__init__(threshold)
            self.sampler = sampler
            self.out = record.open("a")

        def report(self, handle: asyncio.Handle, cost: sc.Cost) -> None:
            if cost.held < threshold:
                return
            line = {
                "t": time.time(),
                "held": cost.held,
                "cpu": cost.cpu,
                "wall": cost.wall,
                "gc": cost.gc,
                "handle": f"{handle!r:.300}",
                "stacks": list(self.sampler.stacks),
            }
            self.out.write(json.dumps(line) + "\n")
            self.out.flush()

    class Sampler(sc._Sampler):
        """The loop thread's stack every 5 ms once a callback has run 10 ms."""

        def run(self) -> None:
            import traceback

            while not self.done.wait(0.005):
                started = self.started
                if started is None or time.perf_counter() - started < 0.01:
                    continue
                frame = sys._current_frames().get(self.thread)
                if frame is not None:
                    self.stacks.append("".join(traceback.format_stack(frame, limit=25)))

    async def measured(main: Any) -> Any:
        thread = threading.get_ident()
        sampler = Sampler(thread)
        sampler.start()
        handler = Recorder(sampler)
        original = asyncio.Handle._run
        asyncio.Handle._run = sc._measured(  # type: ignore[method-assign]
            original, handler, thread, sc.RunQueue(), sampler
        )
        try:
            return await main
        finally:
            asyncio.Handle._run = original  # type: ignore[method-assign]
            sampler.done.set()

    def run(main: Any, **kwargs: Any) -> Any:
        return original_run(measured(main), **kwargs)

    asyncio.run = run  # type: ignore[assignment]
    from bot import cli

    return cli.main(["run"])


# --- the driver ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def runs_toml(slug: str, wandb: str, digest_at: str) -> str:
    return f"""
[[runs]]
slug = "{slug}"
name = "Bench 500B"
wandb_runs = ["{wandb}"]
total_steps = 4000000
target_tokens = 1.6e13
github_repo = "{REPO}"
github_labels = ["hero-run"]
watch_channels = [{CHAT}]
alerts_channel = {ALERTS}
status_channel = {STATUS}
status_refresh_minutes = 1
digest_channel = {DIGEST}
digest_time = "{digest_at}"
timezone = "UTC"

[runs.metrics]
step = "_step"
tokens = "throughput/total_tokens"
loss = "train/loss"

[[runs.forecasts]]
metric = "train/grad_norm"
label = "gradient norm"
direction = "up"
"""


def row(step: int, at: float) -> dict[str, float]:
    return {
        "_step": step,
        "_timestamp": at,
        "train/loss": 1.8 + 8 / (1 + step / 2000),
        "throughput/total_tokens": 4e6 * step,
        "train/grad_norm": 0.3 + 0.01 * ((step * 7919) % 13) / 13,
    }


def where(stacks: list[str]) -> str:
    """The innermost bot/ or cogs/ frames most often seen in the samples."""
    seen: collections.Counter[str] = collections.Counter()
    for stack in stacks:
        frames = OURS.findall(stack)
        if frames:
            part, path, line, name = frames[-1]
            seen[f"{part}/{path}:{line} {name}"] += 1
    return "; ".join(f"{frame} ×{n}" for frame, n in seen.most_common(3)) or "(no bot frame)"


async def recent_history(db: Path, now: datetime, days: float) -> int:
    """The stored history ends months ago (`history.py` builds 120 days from 2025-01-01): add the
    last `days` before `now` at the same density (events, enrichment, points, incidents), so the
    windows commands and digests read (24 h, 7 days) are as busy as any other. Returns the index
    of the newest event (its points' steps continue from there)."""
    from history import EVENTS_PER_SECOND, START, grow

    from bot.store import Database, Store

    newest = int((now - START).total_seconds() * EVENTS_PER_SECOND)
    async with Database.open(db) as database:
        await grow(
            Store(database), newest - int(days * 86400 * EVENTS_PER_SECOND), newest, log=False
        )
    return newest


async def drive(args: argparse.Namespace, db: Path, folder: Path) -> list[tuple[str, float, float]]:
    import aiohttp
    from bot_process import bot_env, bot_process
    from history import POINTS_PER_EVENT, SLUG, WANDB

    from tests.fakes.discord import FakeDiscord
    from tests.fakes.github import FakeGitHub, signed_delivery
    from tests.fakes.wandb import FakeWandb

    steps: list[tuple[str, float, float]] = []
    now = datetime.now(UTC)
    newest = await recent_history(db, now, args.recent_days)
    step = int(newest * POINTS_PER_EVENT)
    wb = FakeWandb().start()
    wb.add_run(WANDB, created_at=now - timedelta(days=120))
    # 40 minutes of a step a second before the bot starts: more than a forecast's catch-up
    start = time.time() - 2400
    wb.append_rows(WANDB, [row(step + i + 1, start + i) for i in range(2400)])
    step += 2400
    digest_at = (now + timedelta(minutes=4)).strftime("%H:%M")
    config = folder / "runscribe.toml"
    config.write_text(runs_toml(SLUG, WANDB, digest_at))
    web_port = free_port()
    record = folder / "slow.jsonl"
    record.touch()
    log = folder / "bot.log"
    channels = {CHAT: "chat", ALERTS: "alerts", STATUS: "status", DIGEST: "digest"}
    try:
        async with (
            FakeDiscord(guild_id=GUILD, channels=channels) as fake,
            FakeGitHub() as gh,
            aiohttp.ClientSession() as http,
        ):
            repo = gh.repo(REPO)
            threads = [
                repo.add_issue(f"Hero run thread {n}", labels=["hero-run"]) for n in range(20)
            ]
            env = bot_env(
                fake=fake,
                guild=GUILD,
                db=db,
                config=config,
                code=ROOT,
                wb=wb,
                folder=folder,
                GITHUB_API_URL=gh.url,
                GITHUB_WEBHOOK_SECRET=SECRET,
                RUNSCRIBE_POLL_INTERVAL=str(args.poll),
                RUNSCRIBE_WEB_PORT=str(web_port),
                TZ="UTC",
            )
            argv = [sys.executable, HERE, "--serve", str(record)]
            argv += ["--threshold", str(args.threshold)]
            base = f"http://127.0.0.1:{web_port}"
            async with bot_process(argv, env, ROOT, log):
                began = time.time()
                await fake.wait_for(lambda: fake.commands.get(GUILD), within=180)
                await fake.wait_connected(within=120)
                await fake.wait_for(lambda: len(wb.requests) >= 4, within=180)
                await asyncio.sleep(args.settle * 2)
                steps.append(("start: first rounds, first chart, live message", began, time.time()))

                async def step_(label: str, body: Any) -> None:
                    t0 = time.time()
                    await body()
                    await asyncio.sleep(args.settle)
                    steps.append((label, t0, time.time()))
                    print(f"  {label}: {time.time() - t0:.1f} s", flush=True)

                async def wandb_round() -> None:
                    nonlocal step
                    seen = len(wb.requests)
                    wb.append_rows(
                        WANDB, [row(step + i + 1, time.time() - 120 + i) for i in range(120)]
                    )
                    step += 120
                    await fake.wait_for(lambda: len(wb.requests) >= seen + 3, within=args.poll * 3)

                async def command(name: str, options: Any = None, sub: str | None = None) -> None:
                    record = await fake.slash(name, options or [], subcommand=sub)
                    await fake.wait_for(lambda: record.finished_at, within=120)

                async def statuses() -> None:
                    for _ in range(5):
                        await command("status")

                def days(n: int) -> list[dict[str, Any]]:
                    return [{"name": "days", "type": 4, "value": n}]

                async def hooks() -> None:
                    for n in range(200):
                        number = threads[n % len(threads)]
                        comment = repo.add_comment(number, f"Update {n}: step {n * 100:,} fine.")
                        payload = repo.delivery(
                            "issue_comment", "created", number=number, comment_id=comment
                        )
                        headers, body = signed_delivery("issue_comment", payload, SECRET)
                        async with http.post(
                            f"{base}/hooks/github", data=body, headers=headers
                        ) as response:
                            await response.read()

                async def pages() -> None:
                    for path in ("/", f"/runs/{SLUG}", "/", f"/runs/{SLUG}"):
                        async with http.get(base + path) as response:
                            await response.read()

                async def messages() -> None:
                    for n in range(200):
                        await fake.say(CHAT, f"node {n} restarted; loss at step {n} looks flat")

                question = [{"name": "question", "type": 3, "value": "why did the loss spike?"}]
                await step_("W&B round, 120 new points", wandb_round)
                await step_("5 × /status", statuses)
                await step_("/timeline 7 days", lambda: command("timeline", days(7)))
                await step_("/timeline all history", lambda: command("timeline", days(3650)))
                await step_("/ask", lambda: command("ask", question))
                await step_("/forecast", lambda: command("forecast"))
                await step_("/incidents list", lambda: command("incidents", sub="list"))
                await step_("/digest", lambda: command("digest"))
                await step_("200 webhook deliveries", hooks)
                await step_("status pages", pages)
                await step_("200 watched messages", messages)
                await step_("W&B round after the messages", wandb_round)
                await step_("background loops", lambda: asyncio.sleep(40))
    finally:
        wb.stop()
    report(steps, record, args)
    print(f"(bot log: {log})")
    return steps


def report(steps: list[tuple[str, float, float]], record: Path, args: argparse.Namespace) -> None:
    """CPU-bound callbacks (on a CPU for `threshold` or more) per step; the ones that held the
    loop without its CPU (blocked: waiting for the GIL a worker thread holds, or the
    instrument's own /proc reads, which a busy kernel can hold up) are only counted."""
    slow = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    bound = [s for s in slow if s["cpu"] >= args.threshold]
    print(
        f"\ncallbacks on the loop's CPU for ≥ {args.threshold * 1000:.0f} ms, {args.events:,} "
        f"events (load average {os.getloadavg()[0]:.1f}): {len(bound)}; held ≥ "
        f"{args.threshold * 1000:.0f} ms without it (blocked, not computing): "
        f"{len(slow) - len(bound)}"
    )
    for label, t0, t1 in steps:
        mine = [s for s in bound if t0 <= s["t"] <= t1 + 0.5]
        print(f"- {label}: {len(mine)}")
        for s in sorted(mine, key=lambda s: -s["cpu"])[:8]:
            handle = re.sub(r"\s+", " ", s["handle"])[:150]
            print(
                f"    CPU {s['cpu'] * 1000:5.0f} ms (held {s['held'] * 1000:4.0f}, GC "
                f"{s['gc'] * 1000:3.0f}) {where(s['stacks'])}\n      {handle}"
            )
    outside = [s for s in bound if not any(t0 <= s["t"] <= t1 + 0.5 for _, t0, t1 in steps)]
    if outside:
        print(f"- between steps: {len(outside)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--threshold", type=float, default=0.02, help="seconds held")
    parser.add_argument("--poll", type=float, default=30.0, help="RUNSCRIBE_POLL_INTERVAL, s")
    parser.add_argument("--settle", type=float, default=4.0, help="seconds after each step")
    parser.add_argument("--recent-days", type=float, default=1.0, help="history added before now")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        sys.exit(serve(args.serve, args.threshold))
    from bench_charts import store_for

    source = store_for(args.events)
    folder = Path(tempfile.mkdtemp(prefix="bench-loop-steps-"))
    db = folder / "bot.db"
    shutil.copyfile(source, db)
    try:
        asyncio.run(drive(args, db, folder))
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
