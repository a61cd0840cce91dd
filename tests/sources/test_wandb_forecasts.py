"""The W&B source reads `[[runs.forecasts]]` keys incrementally with the others, through the real
`wandb` package against the fake server: a key logged with the loss, and one logged in rows of
its own (every tenth step), each stored in `metric_series` once."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from bot.config.settings import ForecastConfig, MetricKeys, RunConfig
from bot.models import RunInfo
from bot.sources.wandb import WandbSource
from bot.sources.wandb_client import WandbClient
from bot.store import Store
from tests.fakes.wandb import FakeWandb
from tests.sources.test_wandb import (  # noqa: F401  (module fixtures)
    EVERY,
    T0,
    client,
    fake,
    history_rows,
    server,
    wandb_env,
)


def watched_config(path: str) -> RunConfig:
    return RunConfig(
        slug="hero",
        name="Hero 70B",
        wandb_runs=[path],
        metrics=MetricKeys(tokens=None, loss="train/loss"),
        forecasts=[
            ForecastConfig(metric="train/grad_norm", label="gradient norm", direction="up"),
            ForecastConfig(metric="eval/rare"),
        ],
    )


async def test_watched_keys_are_read_incrementally(
    fake: FakeWandb,  # noqa: F811
    client: WandbClient,  # noqa: F811
    store: Store,
) -> None:
    path = "ent/watch/hero-1"
    fake.add_run(path, created_at=T0)
    cfg = watched_config(path)
    await store.runs.upsert(RunInfo.from_config(cfg))
    source = WandbSource(store, cfg, client)

    def log(count: int, start_step: int) -> None:
        fake.log(
            path,
            count,
            start=T0 + EVERY * start_step,
            every=EVERY,
            tokens_key=None,
            extra=lambda step: {"train/grad_norm": 1.0 + step / 1000},
        )
        # an eval logged by its own wandb.log call: a row without the loss
        fake.append_rows(
            path,
            [
                {
                    "_timestamp": (T0 + EVERY * (start_step + count)).timestamp(),
                    "eval/rare": float(start_step + count),
                }
            ],
        )

    log(100, 0)
    result = await source.poll(T0 + EVERY * 101)
    assert result.points == 100 + 100 + 1  # loss points, grad norm values, one eval
    grad = await store.series.latest("hero", "train/grad_norm", 1000)
    assert [p.step for p in grad] == list(range(100))
    assert grad[-1].value == 1.0 + 99 / 1000
    rare = await store.series.latest("hero", "eval/rare", 1000)
    assert [(p.step, p.value) for p in rare] == [(100, 100.0)]

    log(50, 101)
    fake.clear_log()
    result = await source.poll(T0 + EVERY * 160)
    # loss (+1 row re-read for continuity), grad norm and eval: only what is new
    assert history_rows(fake) == 50 + 1 + 50 + 1
    grad = await store.series.latest("hero", "train/grad_norm", 1000)
    assert [p.step for p in grad] == [*range(100), *range(101, 151)]
    assert [p.step for p in await store.series.latest("hero", "eval/rare", 10)] == [100, 151]

    fake.clear_log()
    result = await source.poll(T0 + EVERY * 160 + timedelta(minutes=1))
    assert result.points == 0 and fake.operations() == ["Run"]


async def test_a_rounds_rows_become_points_in_a_worker_thread(
    fake: FakeWandb,  # noqa: F811
    client: WandbClient,  # noqa: F811
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Turning rows into points and series is CPU work that grows with the logging rate: it is
    done off the event loop (the store writes stay on it)."""
    path = "ent/watch/hero-2"
    fake.add_run(path, created_at=T0)
    cfg = watched_config(path)
    await store.runs.upsert(RunInfo.from_config(cfg))
    source = WandbSource(store, cfg, client)
    fake.log(path, 60, start=T0, tokens_key=None, extra=lambda step: {"train/grad_norm": 1.0})
    threads: list[int] = []
    real = WandbSource._plan

    def planned(self: WandbSource, *args: Any) -> Any:
        threads.append(threading.get_ident())
        return real(self, *args)

    monkeypatch.setattr(WandbSource, "_plan", planned)

    result = await source.poll(T0 + EVERY * 61)

    assert result.points == 60 + 60  # the loss points and the watched metric's, stored
    assert threads and threading.get_ident() not in threads
