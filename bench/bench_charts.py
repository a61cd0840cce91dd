"""`/status` on an active run in real time: the final reply, and whether its chart was current.

    python bench/bench_charts.py [--minutes 30] [--events 1000000] [--poll 60] [--every 5]
    python bench/bench_charts.py --smoke          # 3 minutes on a 20,000-event store, poll 15 s

The real process (`python -m bot run`) against the fake Discord (this process's loop) and the
fake W&B (a thread of this process), on a copy of a store of `--events` events and 0.4 metric
points per event built through the store API (`bench/history.py`; kept in `bench/results/`).
The run is active the whole time: the fake W&B gets a new history row every second (86,400
points a day: the issue's "a step a second"), so every W&B round brings new points and the
chart's data changes; a member message every two seconds in the watched channel. Traffic, in
real time for `--minutes`:

- a `/status` every `--every` seconds (± 40 % jitter), a `/timeline` (1 day) every 30 s;
- every 5 minutes a burst of 10 `/status` at once.

Reported: the final reply time of `/status` and `/timeline` (the fake Discord's receipt of the
interaction → the answer itself reaching it: a direct reply or the followup after a deferral),
p50 / p95 / max, how many were acknowledged within Discord's 3 s; how many `/status` replies
carried a chart, and whether it was the newest *finished* chart: each chart the bot finishes
is logged with its digest (`ChartCache`), and a reply is current when its chart is the newest
finished before the interaction arrived (or one finished while it was being answered). Also the
bot's CPU (its process and children) and the machine's load average over the run. Goal:
`/status` final p95 ≤ 400 ms.

Baseline: none in the same run. The comparison is the independent reproduction's figure for
the code before background redraws (a chart redrawn by the `/status` that found it stale, the
chart process ended after 10 s idle): final p50 1.0–1.6 s on an active run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bot_process import ALERTS, CHAT, GUILD, bot_env, bot_process  # noqa: E402
from history import POINTS_PER_EVENT, SLUG, WANDB, counts, grow, record_run  # noqa: E402

from bot.store import Database, Store  # noqa: E402
from tests.fakes.discord import FakeDiscord, Interaction  # noqa: E402
from tests.fakes.wandb import FakeWandb  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
CHART_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .*chart of (\S+) drawn at version \S+ in "
    r"(\d+) ms \(\d+ bytes, sha256 ([0-9a-f]+)\)"
)


def digest(png: bytes) -> str:
    return hashlib.sha256(png).hexdigest()[:16]


def runs_toml() -> str:
    return (
        "[[runs]]\n"
        f'slug = "{SLUG}"\n'
        'name = "Bench 500B"\n'
        f'wandb_runs = ["{WANDB}"]\n'
        "total_steps = 4000000\n"
        "target_tokens = 1.6e13\n"
        f"watch_channels = [{CHAT}]\n"
        f"alerts_channel = {ALERTS}\n"
        "[runs.metrics]\n"
        'step = "_step"\n'
        'tokens = "throughput/total_tokens"\n'
        'loss = "train/loss"\n'
    )


def row(step: int, at: float) -> dict[str, float]:
    return {
        "_step": step,
        "_timestamp": at,
        "train/loss": 1.8 + 8 / (1 + step / 2000) + random.gauss(0, 0.01),
        "throughput/total_tokens": 4e6 * step,
    }


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live descendants."""
    total = 0.0
    todo, first = [pid], True
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime, stime, cutime, cstime are fields 14–17 (1-based), here 11–14 after the name
        total += sum(int(v) for v in fields[11 : 15 if first else 13]) / TICKS
        first = False
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return total


@dataclass
class Charts:
    """The charts the bot finished, read from its log: (wall time, digest), oldest first."""

    log: Path
    offset: int = 0
    finished: list[tuple[float, str]] = field(default_factory=list)
    draw_ms: list[float] = field(default_factory=list)

    def read(self) -> None:
        with self.log.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].decode(errors="replace").splitlines():
            found = CHART_LINE.match(line)
            if found and found[3] == SLUG:
                at = time.mktime(time.strptime(found[1], "%Y-%m-%d %H:%M:%S")) + int(found[2]) / 1e3
                self.finished.append((at, found[5]))
                self.draw_ms.append(float(found[4]))

    def judge(self, received: float, finished: float, png: str) -> str:
        """'current', 'older' (a newer chart was finished before the command arrived) or
        'unknown' (a chart the log never named)."""
        order = {h: i for i, (_, h) in enumerate(self.finished)}
        if png not in order:
            return "unknown"
        newest = max((i for i, (t, _) in enumerate(self.finished) if t <= received), default=-1)
        during = {h for t, h in self.finished if received < t <= finished}
        return "current" if order[png] >= newest or png in during else "older"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


async def build(db: Path, events: int) -> None:
    async with Database.open(db) as database:
        store = Store(database)
        await record_run(store)
        await grow(store, 0, events)


def store_for(events: int) -> Path:
    path = ROOT / "bench" / "results" / f"bench_charts-{events}.db"
    if counts(path) != (events, int(events * POINTS_PER_EVENT)):
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        print(f"building {events:,} events into {path} …", flush=True)
        asyncio.run(build(path, events))
    return path


@dataclass
class Sent:
    record: Interaction
    name: str
    burst: bool
    sent_wall: float  # time.time() when the interaction was dispatched


async def traffic(
    args: argparse.Namespace, fake: FakeDiscord, wb: FakeWandb, charts: Charts, pid: int
) -> tuple[list[Sent], list[float], float]:
    """Real time: W&B rows every second, a member message every 2 s, the commands."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    end = began + args.minutes * 60
    sent: list[Sent] = []
    loads: list[float] = []
    step = wb.runs[WANDB].last_step
    next_row = began
    next_message = began
    next_status = began
    next_timeline = began + 15
    next_burst = began + 150
    next_load = began
    cpu_start = tree_cpu_s(pid)
    n = 0

    async def command(name: str, burst: bool = False) -> None:
        options = [{"name": "days", "type": 4, "value": 1}] if name == "timeline" else []
        wall = time.time()
        sent.append(Sent(await fake.slash(name, options), name, burst, wall))

    while (now := loop.time()) < end:
        while next_row <= now:  # a step a second, stamped when it was logged
            step += 1
            wb.append_rows(WANDB, [row(step, time.time())])
            next_row += 1
        if now >= next_message:
            n += 1
            await fake.say(
                CHAT, f"checkpoint {n} written; loss looks flat", author_id=10_000 + n % 7
            )
            next_message += 2
        if now >= next_status:
            await command("status")
            next_status += args.every * random.uniform(0.6, 1.4)
        if now >= next_timeline:
            await command("timeline")
            next_timeline += 30
        if now >= next_burst:
            for _ in range(10):
                await command("status", burst=True)
            next_burst += 300
        if now >= next_load:
            loads.append(os.getloadavg()[0])
            charts.read()
            next_load += 30
        await asyncio.sleep(0.05)
    # the last answers arrive
    with contextlib.suppress(TimeoutError):
        await fake.wait_for(lambda: all(s.record.finished_at for s in sent), within=120)
    cpu = tree_cpu_s(pid) - cpu_start
    charts.read()
    return sent, loads, cpu


async def measure(args: argparse.Namespace, db: Path, folder: Path) -> tuple[list[Sent], ...]:
    random.seed(28)
    wb = FakeWandb().start()
    now = datetime.now(UTC)
    # The W&B run continues the stored history: its next step follows the store's last one.
    last_step = int(args.events * POINTS_PER_EVENT)
    wb.add_run(WANDB, created_at=now - timedelta(days=120))
    start = time.time() - 600
    wb.append_rows(WANDB, [row(last_step + i + 1, start + i) for i in range(600)])
    config = folder / "runscribe.toml"
    config.write_text(runs_toml())
    log = folder / "bot.log"
    log.touch()
    charts = Charts(log)
    try:
        async with FakeDiscord(guild_id=GUILD, channels={CHAT: "chat", ALERTS: "alerts"}) as fake:
            env = bot_env(
                fake=fake,
                guild=GUILD,
                db=db,
                config=config,
                code=ROOT,
                wb=wb,
                folder=folder,
                RUNSCRIBE_POLL_INTERVAL=str(args.poll),
                TZ="UTC",
            )
            argv = (sys.executable, "-m", "bot", "run")
            async with bot_process(argv, env, ROOT, log) as process:
                await fake.wait_for(lambda: fake.commands.get(GUILD), within=120)
                await fake.wait_connected(within=60)
                print(
                    f"bot started (pid {process.pid}); traffic for {args.minutes:g} min", flush=True
                )
                sent, loads, cpu = await traffic(args, fake, wb, charts, process.pid)
    finally:
        wb.stop()
    report(args, sent, loads, cpu, charts, log)
    return (sent,)


def report(
    args: argparse.Namespace,
    sent: list[Sent],
    loads: list[float],
    cpu: float,
    charts: Charts,
    log: Path,
) -> None:
    offset = time.time() - time.monotonic()  # the fake stamps with the monotonic clock
    print(
        f"\n{args.events:,} events, poll every {args.poll:g} s, a W&B step a second, "
        f"{args.minutes:g} min; load average {min(loads):.1f}–{max(loads):.1f} "
        f"(median {statistics.median(loads):.1f}); bot CPU {cpu:.0f} s "
        f"({cpu / (args.minutes * 60) * 100:.0f} % of a core, chart process included)"
    )
    print("| command | n | acked ≤ 3 s | final ms p50 / p95 / max | deferred | unanswered |")
    print("|---|---:|---:|---:|---:|---:|")
    groups = (
        ("/status, one at a time", [s for s in sent if s.name == "status" and not s.burst]),
        ("/status, bursts of 10", [s for s in sent if s.name == "status" and s.burst]),
        ("/status, all", [s for s in sent if s.name == "status"]),
        ("/timeline", [s for s in sent if s.name == "timeline"]),
    )
    for label, group in groups:
        records = [s.record for s in group]
        finals = [(r.finished_at - r.received_at) * 1000 for r in records if r.finished_at]
        acked = sum(
            1 for r in records if r.answered_at is not None and r.answered_at - r.received_at <= 3
        )
        deferred = sum(1 for r in records if r.followups)
        print(
            f"| {label} | {len(records)} | {acked}/{len(records)} | {pct(finals, 0.5):.0f} / "
            f"{pct(finals, 0.95):.0f} / {max(finals, default=float('nan')):.0f} | {deferred} | "
            f"{len(records) - len(finals)} |"
        )
    statuses = [s for s in sent if s.name == "status"]
    verdicts: dict[str, int] = {"current": 0, "older": 0, "unknown": 0, "no chart": 0}
    served: set[str] = set()
    for s in statuses:
        r = s.record
        png = next((data for name, data in r.files if name.endswith(".png")), None)
        if png is None or r.finished_at is None:
            verdicts["no chart"] += 1
            continue
        served.add(digest(png))
        verdicts[charts.judge(r.received_at + offset, r.finished_at + offset, digest(png))] += 1
    with_chart = len(statuses) - verdicts["no chart"]
    print(
        f"/status with a chart: {with_chart}/{len(statuses)}; the newest finished chart: "
        f"{verdicts['current']}, an older one: {verdicts['older']}, one the log never named: "
        f"{verdicts['unknown']}. Charts drawn: {len(charts.finished)} (draw median "
        f"{statistics.median(charts.draw_ms) if charts.draw_ms else float('nan'):.0f} ms, max "
        f"{max(charts.draw_ms, default=float('nan')):.0f} ms), {len(served)} distinct served"
    )
    first = min(statuses, key=lambda s: s.record.received_at, default=None)
    if first is not None and first.record.finished_at:
        print(
            f"the first /status after start: "
            f"{(first.record.finished_at - first.record.received_at) * 1000:.0f} ms"
        )
    print(f"(bot log: {log})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--poll", type=float, default=60.0, help="RUNSCRIBE_POLL_INTERVAL, s")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between /status")
    parser.add_argument("--smoke", action="store_true", help="3 min, 20,000 events, poll 15 s")
    parser.add_argument("--keep", action="store_true", help="keep the copied store and the log")
    args = parser.parse_args()
    if args.smoke:
        args.minutes, args.events, args.poll = 3.0, 20_000, 15.0
    source = store_for(args.events)
    folder = Path(tempfile.mkdtemp(prefix="bench-charts-"))
    db = folder / "bot.db"
    shutil.copyfile(source, db)
    try:
        asyncio.run(measure(args, db, folder))
    finally:
        if not args.keep:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
