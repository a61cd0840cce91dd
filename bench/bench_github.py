"""GitHub polling cost: Runscribe's repository-wide conditional polling against a naive poller
that asks for every tracked thread's comments each cycle. Both run against the local fake GitHub
(tests/fakes/github.py) in this process; requests are counted from the fake's request log.

    python bench/bench_github.py [--issues 2000] [--tracked 50] [--cycles 5]

Goal: an idle cycle costs at most 2 requests, all 304; an active cycle at most 2 plus
the pages of new data.

Baseline: `naive+etag`, what a competent engineer writes from GitHub's own advice: one
conditional request per tracked thread (`If-None-Match` with the ETag of its last answer; a 304
is free against the rate limit). `naive` (the same without ETags) is shown beside it but is not a
fair baseline. The fake GitHub answers ETags and 304s as GitHub documents; request counts are
what crossed the wire, not set by the fake."""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config.settings import RunConfig, Settings  # noqa: E402
from bot.sources.github import GitHubSource  # noqa: E402
from bot.store import Database, Store  # noqa: E402
from tests.fakes.github import FakeGitHub, FakeRepo  # noqa: E402

REPO = "acme/rocket"
NOW = datetime(2026, 9, 2, tzinfo=UTC)


@dataclass
class Cost:
    requests: int = 0
    not_modified: int = 0
    cycles: int = 0
    seconds: float = 0.0
    worst: int = 0

    def add(self, log: list, seconds: float) -> None:
        self.requests += len(log)
        self.not_modified += sum(1 for r in log if r.status == 304)
        self.cycles += 1
        self.seconds += seconds
        self.worst = max(self.worst, len(log))

    def row(self, name: str) -> str:
        per = self.requests / max(self.cycles, 1)
        billed = (self.requests - self.not_modified) / max(self.cycles, 1)
        share = self.not_modified / self.requests if self.requests else 1.0
        ms = 1000 * self.seconds / max(self.cycles, 1)
        return f"{name:<22}{per:>10.1f}{self.worst:>7}{share:>7.0%}{billed:>9.1f}{ms:>10.0f}"


class NaivePoller:
    """For each tracked thread, GET all its comments every cycle (no conditional requests)."""

    def __init__(self, client: httpx.AsyncClient, base: str, threads: list[int], etag: bool):
        self.client = client
        self.base = base
        self.threads = threads
        self.use_etag = etag
        self.etags: dict[int, str] = {}

    async def poll(self) -> None:
        for number in self.threads:
            url: str | None = f"{self.base}/repos/{REPO}/issues/{number}/comments?per_page=100"
            first = True
            while url:
                headers = {"User-Agent": "naive/1", "Accept": "application/vnd.github+json"}
                if first and self.use_etag and number in self.etags:
                    headers["If-None-Match"] = self.etags[number]
                response = await self.client.get(url, headers=headers)
                if response.status_code == 304:
                    break
                if first and "etag" in response.headers:
                    self.etags[number] = response.headers["etag"]
                first = False
                url = response.links.get("next", {}).get("url")


def build(repo: FakeRepo, issues: int, tracked: int, rng: random.Random) -> list[int]:
    hero = set(rng.sample(range(1, issues + 1), tracked))
    for number in range(1, issues + 1):
        labels = ["hero-run"] if number in hero else []
        repo.add_issue(f"Thread {number}", f"Body of thread {number}", labels=labels)
        for i in range(rng.randint(0, 3)):
            repo.add_comment(number, f"comment {i} on thread {number}")
        repo.server.advance(minutes=7)
    return sorted(hero)


def mutate(repo: FakeRepo, hero: list[int], issues: int, rng: random.Random, size: int) -> None:
    """One busy interval: comments on tracked and untracked threads, an edit, a close."""
    for _ in range(size):
        repo.add_comment(rng.choice(hero), "new comment on a tracked thread")
        repo.add_comment(rng.randint(1, issues), "chatter elsewhere")
    comment = rng.choice(sorted(repo.comments))
    repo.edit_comment(comment, "edited")
    victim = rng.choice(hero)
    if repo.issues[victim].state == "open":
        repo.close(victim)
    repo.server.advance(minutes=10)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=2000)
    parser.add_argument("--tracked", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--changes", type=int, default=5, help="new comments per active cycle")
    args = parser.parse_args()
    rng = random.Random(3)

    async with FakeGitHub() as gh, httpx.AsyncClient(timeout=30) as client:
        repo = gh.repo(REPO)
        hero = build(repo, args.issues, args.tracked, rng)
        settings = Settings(_env_file=None, github_api_url=gh.url)  # type: ignore[call-arg]
        config = RunConfig(slug="hero", name="Hero", github_repo=REPO, github_labels=["hero-run"])
        with tempfile.TemporaryDirectory() as tmp:
            async with Database.open(Path(tmp) / "bench.db") as db:
                store = Store(db)
                source = GitHubSource(store, client, settings, [config])
                naive = NaivePoller(client, gh.url, hero, etag=False)
                naive_etag = NaivePoller(client, gh.url, hero, etag=True)
                costs = {
                    name: Cost()
                    for name in (
                        "first sync",
                        "runscribe idle",
                        "runscribe active",
                        "naive idle",
                        "naive active",
                        "naive+etag idle",
                        "naive+etag active",
                    )
                }

                async def measure(name: str, poll) -> None:  # type: ignore[no-untyped-def]
                    start, began = len(gh.log), time.perf_counter()
                    await poll()
                    costs[name].add(gh.log[start:], time.perf_counter() - began)

                await measure("first sync", lambda: source.poll(NOW))
                await naive_etag.poll()  # prime its ETags
                new_pages = 0
                for _ in range(args.cycles):
                    gh.advance(minutes=1)
                    await measure("runscribe idle", lambda: source.poll(NOW))
                    await measure("naive idle", naive.poll)
                    await measure("naive+etag idle", naive_etag.poll)
                for _ in range(args.cycles):
                    mutate(repo, hero, args.issues, rng, args.changes)
                    start = len(gh.log)
                    await measure("runscribe active", lambda: source.poll(NOW))
                    new_pages += sum(
                        1
                        for r in gh.log[start:]
                        if r.status == 200 and r.path.endswith(("/issues", "/issues/comments"))
                    )
                    await measure("naive active", naive.poll)
                    await measure("naive+etag active", naive_etag.poll)
                events = await db.fetchall("SELECT kind, COUNT(*) FROM events GROUP BY kind")

    print(
        f"GitHub polling cost: {args.issues} issues, {args.tracked} tracked threads, "
        f"{args.cycles} idle + {args.cycles} active cycles ({args.changes} tracked comments, "
        f"{args.changes} untracked, 1 edit, 1 close per active cycle)\n"
    )
    print(f"{'poller':<22}{'req/cycle':>10}{'max':>7}{'304':>7}{'billed':>9}{'ms/cycle':>10}")
    for name, cost in costs.items():
        print(cost.row(name))
    print(
        f"\nrunscribe active cycles: {new_pages / args.cycles:.1f} listing responses with data "
        "per cycle (a third request appears when the cursor moves and its new URL's ETag is "
        "learned)"
    )
    print("events stored: " + ", ".join(f"{kind} {count}" for kind, count in events))
    print("billed = requests not answered 304 (what counts against the rate limit)")


if __name__ == "__main__":
    asyncio.run(main())
