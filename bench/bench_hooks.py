"""A burst of GitHub webhook deliveries against the push endpoint: the real web server
(`bot.web.server` with `bot.hooks`), a real SQLite store and the real GitHub source over the fake
GitHub, in this process. 1,000 signed `issue_comment` deliveries (the fake's own payloads, 50
tracked threads) sent by 50 concurrent senders, as GitHub fans out a busy hour's deliveries.

Measured: each delivery's answer time (p50/p95/max), the time until every comment is stored
(the hooks loop's body, woken by the doorbell), that each is stored once, that redelivering all
of them changes nothing, and that the poll afterwards (the safety net) writes nothing.

Beside it, the naive handler: the delivery read into the store inside the request (no inbox,
no doorbell), so the sender waits for the source and the store (`--naive N`: on a burst of N
instead, as it takes minutes at 1,000). That is what GitHub's webhook guide warns against
(answer within 10 s, work later), so it is not a fair baseline; the competent design is the
one measured (record the delivery, answer 202, ingest behind a doorbell), and its figure is
judged against GitHub's 10 s delivery timeout, not against the naive handler.

    python bench/bench_hooks.py [--deliveries 1000] [--senders 50] [--threads 50] [--naive N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config.settings import RunConfig, Settings  # noqa: E402
from bot.core.timeutil import utcnow  # noqa: E402
from bot.hooks.ingest import ingest_github  # noqa: E402
from bot.hooks.routes import HookEndpoints  # noqa: E402
from bot.models import RunInfo  # noqa: E402
from bot.sources.github import GitHubSource  # noqa: E402
from bot.store import Database, Store  # noqa: E402
from bot.web.server import serve  # noqa: E402
from tests.fakes.github import FakeGitHub, signed_delivery  # noqa: E402

REPO = "acme/rocket"
SECRET = "bench-secret"


class InlineEndpoints(HookEndpoints):
    """The naive handler: what was recorded is read into the store before the answer."""

    source: GitHubSource

    async def github(self, request: Any) -> Any:
        response = await super().github(request)
        await ingest_github(self.store, [self.source], utcnow())
        return response


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def burst(args: argparse.Namespace, *, inline: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            FakeGitHub() as gh,
            Database.open(Path(tmp) / "bench.db") as db,
            httpx.AsyncClient() as client,
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.senders)) as http,
        ):
            store = Store(db)
            run = RunConfig(slug="hero", name="Hero", github_repo=REPO, github_labels=["hero-run"])
            await store.runs.upsert(RunInfo.from_config(run))
            settings = Settings(_env_file=None, github_api_url=gh.url)  # type: ignore[call-arg]
            source = GitHubSource(store, client, settings, [run])
            repo = gh.repo(REPO)
            threads = [
                repo.add_issue(f"Hero run thread {n}", labels=["hero-run"])
                for n in range(args.threads)
            ]
            await source.poll(utcnow())  # the repository as the bot knows it before the burst
            deliveries = []
            for n in range(args.deliveries):
                number = threads[n % len(threads)]
                comment = repo.add_comment(number, f"Update {n}: step {n * 100:,} looks fine.")
                payload = repo.delivery(
                    "issue_comment", "created", number=number, comment_id=comment
                )
                deliveries.append(signed_delivery("issue_comment", payload, SECRET))
            kind = InlineEndpoints if inline else HookEndpoints
            hooks = kind(store, github_secret=SECRET, token=None)
            if isinstance(hooks, InlineEndpoints):
                hooks.source = source
            stored_at: float | None = None
            done = asyncio.Event()

            async def hooks_loop() -> None:  # what the bot's hooks loop does, woken by the doorbell
                nonlocal stored_at
                while True:
                    await hooks.doorbell.event.wait()
                    hooks.doorbell.event.clear()
                    await ingest_github(store, [source], utcnow())
                    if await store.hooks.pending("github", limit=1) == []:
                        row = await store.db.fetchone(
                            "SELECT count(*) FROM events WHERE external_id LIKE 'comment:%'"
                        )
                        if row and row[0] >= args.deliveries:
                            stored_at = time.perf_counter()
                            done.set()

            async with serve(store, "127.0.0.1", 0, poll_interval=60.0, hooks=hooks) as (_, port):
                url = f"http://127.0.0.1:{port}/hooks/github"
                times: list[float] = []
                statuses: list[int] = []
                queue: asyncio.Queue[tuple[dict[str, str], bytes]] = asyncio.Queue()
                for item in deliveries:
                    queue.put_nowait(item)

                async def sender() -> None:
                    while not queue.empty():
                        headers, body = queue.get_nowait()
                        started = time.perf_counter()
                        async with http.post(url, data=body, headers=headers) as response:
                            await response.read()
                            statuses.append(response.status)
                        times.append(time.perf_counter() - started)

                loop = None if inline else asyncio.create_task(hooks_loop())
                began = time.perf_counter()
                await asyncio.gather(*(sender() for _ in range(args.senders)))
                answered = time.perf_counter() - began
                if loop is not None:
                    await asyncio.wait_for(done.wait(), 120)
                    loop.cancel()
                all_stored = (stored_at or time.perf_counter()) - began
                # Redelivered, every one: nothing changes.
                before = await store.db.fetchall("SELECT id, content_hash FROM events ORDER BY id")
                redelivered = []
                for headers, body in deliveries:
                    async with http.post(url, data=body, headers=headers) as response:
                        redelivered.append(response.status)
                await ingest_github(store, [source], utcnow())
                after = await store.db.fetchall("SELECT id, content_hash FROM events ORDER BY id")
                polled = await source.poll(utcnow())
                counts = await store.db.fetchall(
                    "SELECT count(*), count(DISTINCT external_id) FROM events "
                    "WHERE external_id LIKE 'comment:%'"
                )
            return {
                "statuses": sorted(set(statuses)),
                "p50": statistics.median(times) * 1000,
                "p95": pct(times, 0.95) * 1000,
                "max": max(times) * 1000,
                "answered": answered,
                "stored": all_stored,
                "comments": counts[0][0],
                "distinct": counts[0][1],
                "redelivery": sorted(set(redelivered)),
                "redelivery_changed": [tuple(r) for r in before] != [tuple(r) for r in after],
                "poll_wrote": polled.events,
            }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=1000)
    parser.add_argument("--senders", type=int, default=50)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument(
        "--naive", type=int, default=0, help="deliveries for the naive handler (0: the same)"
    )
    args = parser.parse_args()
    print(f"{args.deliveries} deliveries, {args.senders} senders, {args.threads} tracked threads")
    naive = argparse.Namespace(**{**vars(args), "deliveries": args.naive or args.deliveries})
    for name, inline, given in (
        ("runscribe (inbox + doorbell)", False, args),
        ("naive (ingest in request)", True, naive),
    ):
        r = await burst(given, inline=inline)
        print(
            f"{name:<30} answers {r['statuses']} p50 {r['p50']:.1f} ms, p95 {r['p95']:.1f} ms, "
            f"max {r['max']:.1f} ms; all answered in {r['answered']:.2f} s, all stored in "
            f"{r['stored']:.2f} s; {r['comments']} comments stored ({r['distinct']} distinct); "
            f"redelivered: {r['redelivery']}, changed {r['redelivery_changed']}; "
            f"the poll after wrote {r['poll_wrote']}"
        )


if __name__ == "__main__":
    asyncio.run(main())
