"""An end date a lead can plan on: a day with its range in days, from the training pace with
the restarts' downtime taken out and the recent trend, stable from hour to hour. Through the
real store (points and the W&B source's restart records) and `/status`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.config.runsfile import MetricKeys, RunConfig
from bot.models import RESTORE, Event, MetricPoint, Restart, RunInfo
from bot.render.cards import status_card
from bot.render.json import status_json
from bot.render.terminal import local_formatter
from bot.services.narrative import Narrative
from bot.services.status import build_status
from bot.store import Store

RUN = "marin/hero/hero-1"
LAUNCH = datetime(2026, 8, 20, 4, tzinfo=UTC)
EVERY = timedelta(minutes=10)
PACE = 3600 / 22  # steps an hour of training: a step every 22 s
TOTAL = 390_251


def run_config() -> RunConfig:
    return RunConfig(
        slug="hero",
        name="Hero",
        wandb_runs=[RUN],
        total_steps=TOTAL,
        launched_at=LAUNCH,
        timezone="America/New_York",
        metrics=MetricKeys(step="_step", tokens=None, loss="train/loss"),
    )


def restart_event(stop: datetime, down: timedelta, from_step: int, to_step: int) -> Event:
    restart = Restart(
        at=stop + down,
        kind=RESTORE,
        wandb_run=RUN,
        from_step=from_step,
        to_step=to_step,
        stopped_at=stop,
        resumed_at=stop + down,
        interval=1,
    )
    return Event(
        run_slug="hero",
        source="wandb",
        external_id=f"restart:restore:{RUN}:{to_step}:{restart.at.isoformat()}",
        kind="restart",
        at=restart.at,
        title=f"W&B run hero-1 resumed from step {to_step}",
        thread=f"wandb:{RUN}",
        extra=restart.to_json(),
    )


class Training:
    """A run training at `PACE` give or take 10 % from one ten minutes to the next, that loses
    a node every three days (47 min down, 110 steps trained again)."""

    def __init__(self) -> None:
        self.at, self.step, self.tick = LAUNCH, 0, 0
        self.points: list[MetricPoint] = []
        self.restarts: list[Event] = []

    def until(self, end: datetime) -> None:
        while self.at + EVERY <= end:
            self.tick += 1
            if self.tick % (3 * 144) == 0:  # every third day
                down = timedelta(minutes=47)
                back = self.step - 110
                self.restarts.append(restart_event(self.at, down, self.step, back + 1))
                self.at += down
                self.step = back
            jitter = 1 + 0.1 * ((self.tick * 7) % 5 - 2) / 2
            self.at += EVERY
            self.step += round(PACE * jitter * EVERY / timedelta(hours=1))
            self.points.append(MetricPoint(RUN, self.step, self.at, None, 2.5))


async def test_the_projected_end_is_a_day_with_a_range_stable_from_hour_to_hour(
    store: Store,
) -> None:
    await store.runs.upsert(RunInfo.from_config(run_config()))
    training = Training()
    start = datetime(2026, 9, 2, 12, tzinfo=UTC)
    ends, margins = [], []
    for hour in range(25):
        now = start + timedelta(hours=hour)
        training.until(now)
        await store.metrics.add_points("hero", training.points)
        await store.events.upsert_many(training.restarts)
        report = await build_status(store, "hero", now)
        end, margin = report.progress.projected_end, report.projected_margin
        assert end is not None and margin is not None
        ends.append(end)
        margins.append(margin)
        # within a week of the date the training pace gives (downtime out)
        remaining = TOTAL - report.progress.step
        by_pace = now + timedelta(hours=remaining / PACE)
        assert abs(end - by_pace) < timedelta(days=7)
        assert report.progress.pace is not None
        assert abs(report.progress.pace - PACE) / PACE < 0.05

    assert max(ends) - min(ends) < timedelta(days=1)  # stable from hour to hour
    assert max(margins) <= timedelta(days=7)
    # the card names the day and its range in days; status --json keeps an ISO end
    fmt = local_formatter("America/New_York", now)
    card = status_card(report, Narrative("", now, "template"), fmt)
    [schedule] = [f.value for f in card.fields if f.name == "Schedule"]
    days = round(margin / timedelta(days=1))
    assert f"projected end {fmt(end, 'date')} ± {days} days" in schedule
    data = status_json(report, Narrative("", now, "template"))
    assert datetime.fromisoformat(data["projected_end"].replace("Z", "+00:00")) == end
    assert data["projected_end_margin_days"] == round(margin / timedelta(days=1), 1)
