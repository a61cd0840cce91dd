"""A recorded run for the status page tests: real rows in a real store, with hostile text from
every untrusted source, a restart, a loss forecast, tags and sources to filter by."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.models import Event, MetricPoint, RunInfo
from bot.store import Store

SLUG = "hero"
# Each would set window.__pwned (or load something) if it were ever active on the page.
HOSTILE_SCRIPT = "<script>window.__pwned = 1</script> the loader hangs again"
HOSTILE_IMG = 'see <img src="x" onerror="window.__pwned = 2"> for the trace'
HOSTILE_SVG = '"><svg onload="window.__pwned = 3"> node lost'
HOSTILE_LINK = "javascript:window.__pwned = 4"


@dataclass(frozen=True, slots=True)
class Entry:
    source: str
    kind: str
    author: str | None
    ref: str | None
    url: str | None
    state: str | None
    summary: str
    tag: str
    hours_ago: float
    incident: bool = False
    extra: dict[str, object] | None = None


ENTRIES = (
    Entry(
        "github",
        "issue",
        "larry",
        "#8818",
        "https://github.com/lab/model/issues/8818",
        "open",
        "Attention gate norm keeps growing; no intervention while loss stays under the ladder",
        "training-dynamics",
        50,
    ),
    Entry(
        "github",
        "pull",
        "larry",
        "#8833",
        "https://github.com/lab/model/pull/8833",
        "open",
        "Weight decay for the gate and router lowered from 0.05 to 0.02",
        "optimizer",
        26,
    ),
    Entry(
        "github",
        "comment",
        '<b onmouseover="window.__pwned = 5">mallory</b>',
        "#8840",
        HOSTILE_LINK,
        "open",
        HOSTILE_SCRIPT,
        "infra",
        20,
        incident=True,
    ),
    Entry(
        "discord",
        "message",
        "Percy",
        "#hero-run",
        "https://discord.com/channels/1/2/3",
        None,
        HOSTILE_IMG,
        "evals",
        8,
    ),
    Entry(
        "discord",
        "message",
        "Kai",
        "#hero-run",
        "data:text/html,<b>x</b>",
        None,
        HOSTILE_SVG,
        "optimizer",
        5,
    ),
    Entry(
        "wandb",
        "restart",
        None,
        "hero-2",
        "https://wandb.ai/ent/proj/runs/hero-2",
        None,
        "Resumed from step 500 in hero-2",
        "checkpointing",
        3,
        extra={
            "restart": "restore",
            "wandb_run": "ent/proj/hero-2",
            "from_step": 520,
            "to_step": 500,
        },
    ),
)


async def seed_run(
    store: Store,
    now: datetime,
    *,
    slug: str = SLUG,
    name: str = "Hero 70B",
    forecast: bool = True,
    entries: tuple[Entry, ...] = ENTRIES,
) -> RunInfo:
    config: dict[str, object] = {
        "slug": slug,
        "name": name,
        "wandb_runs": ["ent/proj/hero-1", "ent/proj/hero-2"],
        "github_repo": "lab/model",
        "total_steps": 1000,
        "target_tokens": 4e9,
        "timezone": "Europe/Berlin",
    }
    if forecast:
        config["loss_forecast"] = [[10, 4.0], [100, 3.0], [1000, 2.2]]
    run = RunInfo(
        slug=slug,
        name=name,
        total_steps=1000,
        target_tokens=4e9,
        launched_at=now - timedelta(days=2),
        timezone="Europe/Berlin",
        links={"W&B report": "https://wandb.ai/ent/proj/reports/hero"},
        config=config,
    )
    await store.runs.upsert(run)
    await add_entries(store, slug, now, entries)
    # hero-1 logs steps 0..520, then hero-2 resumes from the step-500 checkpoint.
    start = now - timedelta(hours=30)
    points = [
        MetricPoint(
            "ent/proj/hero-1",
            step,
            start + timedelta(minutes=3 * step),
            tokens=4e6 * step,
            loss=4.0 * (step + 10) ** -0.08,
        )
        for step in range(0, 521, 5)
    ]
    resume = start + timedelta(minutes=3 * 520 + 40)
    points += [
        MetricPoint(
            "ent/proj/hero-2",
            step,
            resume + timedelta(minutes=3 * (step - 500)),
            tokens=4e6 * step,
            loss=4.0 * (step + 10) ** -0.08 - 0.01,
        )
        for step in range(500, 641, 5)
    ]
    await store.metrics.add_points(slug, points)
    for source in ("wandb", "github"):
        await store.health.record_success(source, slug, now - timedelta(seconds=30))
    return run


async def add_entries(
    store: Store, slug: str, now: datetime, entries: tuple[Entry, ...] | list[Entry]
) -> None:
    events = [
        Event(
            run_slug=slug,
            source=e.source,
            external_id=f"{e.kind}:{i}",
            kind=e.kind,
            at=now - timedelta(hours=e.hours_ago),
            author=e.author,
            ref=e.ref,
            url=e.url,
            state=e.state,
            title=None,
            body=e.summary,
            extra=dict(e.extra or {}),
        )
        for i, e in enumerate(entries)
    ]
    await store.events.upsert_many(events)
    for i, e in enumerate(entries):
        stored = await store.events.get_by_external(slug, e.source, f"{e.kind}:{i}")
        assert stored is not None
        await store.events.set_enrichment(
            stored,
            summary=e.summary,
            tag=e.tag,
            incident=e.incident,
            severity="warning" if e.incident else None,
            newsworthy=True,
            enriched_by="test",
        )
