"""`runscribe run` resident memory at 1M events with its W&B helper, idle and after a burst.

    python bench/bench_rss.py [--db bench/results/bench_bot.db] [--events 1000000]
                              [--baseline DIR] [--idle 30] [--settle 45] [--llm]

The real process (`python -m bot run`) against the fake Discord (this process) and the fake W&B
(a thread of this process), on a store of `--events` events and 0.4 metric points per event
built through the store API (`bench/history.py`; reused when `--db` exists). RSS is the sum over
the bot and its child processes (wandb-core, which the W&B source starts, and the chart process
while it lives), read from /proc.

1. idle: after the first poll cycles and `--idle` seconds (longer than the chart process lives
   after the chart drawn at start), the median of 10 samples over `--idle` seconds;
2. burst: 50 concurrent `/status` and 25 `/timeline` (7 days), 300 member messages in a watched
   channel and 500 new W&B rows (the next poll ingests them and the chart is redrawn); the
   highest sample while it runs;
3. after: `--settle` seconds later, the median of 10 samples; then a second burst and the same,
   to tell a one-time cost from growth.

Goal: ≤ 200 MB including the W&B helper; after a burst back within 10 % of idle.
`--llm`: with an Anthropic key, against the fake Anthropic server (the SDK is loaded and the
messages enriched in batches). `--baseline DIR`: the same run with the code in DIR (a checkout
of an earlier commit, e.g. `git worktree add --detach /tmp/base <commit>`), on the same store,
printed beside it. That baseline is the project's earlier code (history, to show what changed),
not a competitor; the figure is judged against the goal above.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bot_process import ALERTS, CHAT, GUILD, bot_env, bot_process  # noqa: E402
from history import SLUG, WANDB, grow, record_run  # noqa: E402

from bot.store import Database, Store  # noqa: E402
from tests.fakes.anthropic import FakeAnthropic  # noqa: E402
from tests.fakes.discord import FakeDiscord, Interaction  # noqa: E402
from tests.fakes.wandb import FakeWandb  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def tree_rss_mb(pid: int) -> tuple[float, float]:
    """(the process's RSS, RSS of it and all its descendants), MB."""
    own = total = 0.0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            pages = int(Path(f"/proc/{current}/statm").read_text().split()[1])
        except OSError:
            continue
        mb = pages * PAGE / 1e6
        total += mb
        if current == pid:
            own = mb
        todo += _children(current)
    return own, total


async def samples(pid: int, seconds: float, count: int = 10) -> list[tuple[float, float]]:
    out = []
    for _ in range(count):
        out.append(tree_rss_mb(pid))
        await asyncio.sleep(seconds / count)
    return out


def _runs_toml() -> str:
    return (
        "[[runs]]\n"
        f'slug = "{SLUG}"\n'
        'name = "Bench 500B"\n'
        f'wandb_runs = ["{WANDB}"]\n'
        f"watch_channels = [{CHAT}]\n"
        f"alerts_channel = {ALERTS}\n"
    )


def _rows(first: int, count: int, start: datetime) -> list[dict[str, float]]:
    return [
        {
            "_step": first + i,
            "_timestamp": (start + timedelta(seconds=30 * i)).timestamp(),
            "train/loss": 2.0 + 1 / (1 + (first + i) / 1000),
            "throughput/total_tokens": 4e6 * (first + i),
        }
        for i in range(count)
    ]


def latencies(records: list[Interaction]) -> str:
    """How the real process answered a burst: acknowledged within Discord's 3 s, and the final
    reply's p50 / p95, for /status and /timeline apart (ms from the fake's receipt)."""

    def pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")

    parts = []
    for name in ("status", "timeline"):
        mine = [r for r in records if r.payload["data"]["name"] == name]
        acked = sum(
            1 for r in mine if r.answered_at is not None and r.answered_at - r.received_at <= 3
        )
        finals = [(r.finished_at - r.received_at) * 1000 for r in mine if r.finished_at]
        parts.append(
            f"/{name} {acked}/{len(mine)} acked ≤ 3 s, final p50 {pct(finals, 0.5):.0f} / "
            f"p95 {pct(finals, 0.95):.0f} ms"
        )
    return "; ".join(parts)


async def measure(code: Path, db: Path, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    wb = FakeWandb().start()
    now = datetime.now(UTC)
    wb.add_run(WANDB, created_at=now - timedelta(days=120))
    wb.append_rows(WANDB, _rows(0, 200, now - timedelta(hours=2)))
    config = folder / "runscribe.toml"
    config.write_text(_runs_toml())
    log = folder / f"bot-{code.name}.log"
    try:
        async with (
            FakeDiscord(guild_id=GUILD, channels={CHAT: "chat", ALERTS: "alerts"}) as fake,
            contextlib.AsyncExitStack() as held,
        ):
            llm = await held.enter_async_context(FakeAnthropic()) if args.llm else None
            env = bot_env(
                fake=fake,
                guild=GUILD,
                db=db,
                config=config,
                code=code,
                wb=wb,
                folder=folder,
                RUNSCRIBE_POLL_INTERVAL="10",
            )
            if llm is not None:  # the bot as deployed with a key: the SDK loaded, batches sent
                env.update(ANTHROPIC_API_KEY="sk-bench", ANTHROPIC_BASE_URL=llm.base_url)
            argv = (sys.executable, "-m", "bot", "run")
            async with bot_process(argv, env, code, log) as process:
                await fake.wait_for(lambda: fake.commands.get(GUILD), within=120)
                await fake.wait_connected(within=60)
                # the first poll cycles (W&B history read, detection) are behind us
                await fake.wait_for(lambda: len(wb.requests) >= 4, within=120)
                await asyncio.sleep(args.idle)
                idle = await samples(process.pid, args.idle)

                peak = [0.0, 0.0]
                after: list[list[tuple[float, float]]] = []
                answers: list[str] = []
                for burst in range(2):
                    records = await _burst(
                        fake, wb, process.pid, peak, first=200 + 500 * burst, now=now
                    )
                    answers.append(latencies(records))
                    await asyncio.sleep(args.settle)
                    after.append(await samples(process.pid, 10))
    finally:
        wb.stop()
    return {
        "idle": statistics.median(t for _, t in idle),
        "idle_bot": statistics.median(o for o, _ in idle),
        "peak": peak[1],
        "after": statistics.median(t for _, t in after[0]),
        "after_bot": statistics.median(o for o, _ in after[0]),
        "after2": statistics.median(t for _, t in after[1]),
        "answers": answers,
    }


async def _burst(
    fake: FakeDiscord, wb: FakeWandb, pid: int, peak: list[float], *, first: int, now: datetime
) -> list[Interaction]:
    """300 messages, 50 /status and 25 /timeline at once, 500 new W&B rows; until a poll has
    ingested them. `peak` keeps the highest RSS seen meanwhile."""
    done = asyncio.Event()

    async def watch() -> None:
        while not done.is_set():
            own, total = tree_rss_mb(pid)
            peak[0], peak[1] = max(peak[0], own), max(peak[1], total)
            await asyncio.sleep(0.2)

    watcher = asyncio.create_task(watch())
    seen = len(wb.requests)
    wb.append_rows(WANDB, _rows(first, 500, now - timedelta(minutes=30)))
    for n in range(300):
        await fake.say(CHAT, f"node {n} lost; the scheduler restarted the job at step {n}")
    records = [await fake.slash("status") for _ in range(50)]
    records += [
        await fake.slash("timeline", [{"name": "days", "type": 4, "value": 7}]) for _ in range(25)
    ]
    for record in records:
        await asyncio.wait_for(record.callback, 60)
        await fake.wait_for(lambda r=record: r.followups or r.original, within=60)
    await fake.wait_for(lambda: len(wb.requests) >= seen + 6, within=120)  # a poll ingested
    await asyncio.sleep(5)
    done.set()
    await watcher
    return records


async def build(db: Path, events: int) -> None:
    async with Database.open(db) as database:
        store = Store(database)
        await record_run(store)
        await grow(store, 0, events)


def report(label: str, r: dict[str, Any]) -> str:
    back = (r["after"] - r["idle"]) / r["idle"] * 100
    again = (r["after2"] - r["after"]) / r["after"] * 100
    return (
        f"{label}: idle {r['idle']:.0f} MB (bot {r['idle_bot']:.0f}, helper "
        f"{r['idle'] - r['idle_bot']:.0f}); burst peak {r['peak']:.0f} MB; after "
        f"{r['after']:.0f} MB (bot {r['after_bot']:.0f}), {back:+.1f} % of idle; after a "
        f"second burst {r['after2']:.0f} MB, {again:+.1f} % of the first\n"
        + "".join(f"    burst {n}: {line}\n" for n, line in enumerate(r["answers"], 1))
    ).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("bench/results/bench_bot.db"))
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--settle", type=float, default=45.0)
    parser.add_argument(
        "--llm", action="store_true", help="with an Anthropic key (the fake Anthropic server)"
    )
    args = parser.parse_args()
    if not args.db.exists():
        print(f"building {args.events:,} events into {args.db} …", flush=True)
        args.db.parent.mkdir(parents=True, exist_ok=True)
        asyncio.run(build(args.db, args.events))
    folder = Path(tempfile.mkdtemp(prefix="bench-rss-"))
    results = []
    if args.baseline is not None:
        results.append(
            ("baseline", asyncio.run(measure(args.baseline.resolve(), args.db, folder, args)))
        )
    results.append(("this code", asyncio.run(measure(ROOT, args.db, folder, args))))
    key = "with an Anthropic key (fake server)" if args.llm else "no Anthropic key"
    print(f"`runscribe run` on {args.db} ({args.events:,} events), {key}, RSS incl. wandb-core:")
    for label, result in results:
        print("  " + report(label, result))
    print(f"  (logs in {folder})")


if __name__ == "__main__":
    main()
