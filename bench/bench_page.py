"""Benchmark the status page server on a busy month (20 timeline entries a day, 30 days).

    python bench/bench_page.py [--requests 50] [--per-day 20]

Measures, over real HTTP against `bot.web.server` on 127.0.0.1 and a real SQLite file:
- a reload with `If-None-Match` (304) and a plain GET served from the cycle's cache, against
- the naive baseline, rendering the page from the store on every request (what the server
  would cost without the cache), measured in the same run;
and prints the page's size. Figures are medians of `--requests` requests.

The per-request render is the floor without any cache, not a competent baseline. What a
competent engineer writes (render on a request, cached until the data changes, with an ETag) costs
what this server's cache costs on every request but the first after a change, which pays one
render (the naive figure); the bot renders after its cycle instead, so no request pays it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from bot.outputs.statuspage import gather_run_page
from bot.render.page import render_run_page
from bot.store import Database, Store
from bot.web.server import serve
from tests.web.seed import SLUG, add_entries, seed_run
from tests.web.test_page import busy_month


async def timed(count: int, call) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        out.append((time.perf_counter() - start) * 1000)
    return out


async def main(requests: int, per_day: int) -> None:
    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "bench.db") as db:
            store = Store(db)
            await seed_run(store, now, entries=(), forecast=False)
            await add_entries(store, SLUG, now, busy_month(now, per_day))
            await store.cycles.record(now, now, 3600)
            async with (
                serve(store, "127.0.0.1", 0, poll_interval=3600) as (_site, port),
                aiohttp.ClientSession() as http,
            ):
                url = f"http://127.0.0.1:{port}/runs/{SLUG}"
                async with http.get(url) as response:
                    etag = response.headers["ETag"]
                    size = len(await response.read())

                async def conditional() -> None:
                    async with http.get(url, headers={"If-None-Match": etag}) as response:
                        assert response.status == 304

                async def cached() -> None:
                    async with http.get(url) as response:
                        await response.read()

                async def naive() -> None:
                    page = await gather_run_page(store, SLUG, datetime.now(UTC), days=30)
                    render_run_page(page).encode()

                rows = [
                    ("reload, 304 (If-None-Match)", await timed(requests, conditional)),
                    ("GET, cached for the cycle", await timed(requests, cached)),
                    ("naive: render per request", await timed(requests, naive)),
                ]
    print(f"page: {size:,} bytes, {per_day} entries/day x 30 days, {requests} requests each")
    for label, times in rows:
        print(f"  {label:32s} median {statistics.median(times):8.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--per-day", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.per_day))
