"""A scripted training run for incident tests: writes what the W&B, GitHub and Discord sources
would write (points, snapshots, state/restart events, enriched reports, source health), one
poll cycle at a time, and runs the engine after each cycle."""

from __future__ import annotations

import asyncio
import math
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from bot.analysis.forecast import SeriesPoint
from bot.config.settings import parse_runs
from bot.incidents.engine import IncidentEngine
from bot.incidents.rounds import replica
from bot.models import NEW_RUN, Event, MetricPoint, OutboxItem, Restart, RunSnapshot
from bot.posts.incidents import IncidentPosts
from bot.process.pipeline import enrich_pending
from bot.process.runtime import record_runs
from bot.store import Database, Store

T = TypeVar("T")

CHANNEL = 1213463398226931745
RUN_A = "lab/pretrain/hero-a"
RUN_B = "lab/pretrain/hero-b"
FAR = datetime(2100, 1, 1, tzinfo=UTC)
MIN = timedelta(minutes=1)


@dataclass
class Member:
    path: str
    created_at: datetime
    state: str = "running"
    step: int = 0
    heartbeat_at: datetime | None = None
    loss: float = 2.0
    summary: dict[str, Any] = field(default_factory=dict)


class Scenario:
    def __init__(
        self,
        store: Store,
        t0: datetime,
        *,
        alerts: dict[str, Any] | None = None,
        channel: int | None = CHANNEL,
        engine: IncidentEngine | None = None,
        steps_per_minute: int = 100,
    ):
        self.store = store
        self.now = t0
        self.alerts = alerts or {}
        self.channel = channel
        self.engine = engine or IncidentEngine(IncidentPosts())
        self.rate = steps_per_minute
        self.members: dict[str, Member] = {}
        self.current: str | None = None
        self.training = True  # logging steps
        self.beating = True  # heartbeats reaching W&B
        self.wandb_up = True  # Runscribe can reach W&B
        self.loss_override: float | None = None
        self.logged: dict[str, MetricPoint] = {}  # each member's last logged point
        self._unresumed: dict[str, Restart] = {}  # new runs that have not logged a step yet
        self.queued = 0
        self._github_ids = 0
        self._pending_points: list[MetricPoint] = []
        # Watched metrics ([[runs.forecasts]]): metric -> value at a step, logged with each point.
        self.forecasts: list[dict[str, Any]] = []
        self.watched: dict[str, Callable[[int], float]] = {}
        self._pending_series: dict[str, list[SeriesPoint]] = {}

    async def start(self, path: str = RUN_A, step: int = 0) -> None:
        config: dict[str, Any] = {
            "slug": "hero",
            "name": "Hero 70B",
            "wandb_runs": [RUN_A, RUN_B],
            "github_repo": "lab/hero",
            "total_steps": 1_000_000,
            "alerts": self.alerts,
            "forecasts": self.forecasts,
        }
        if self.channel is not None:
            config["alerts_channel"] = self.channel
        await record_runs(self.store, parse_runs({"runs": [config]}))
        await self.launch(path, step)

    async def launch(self, path: str, step: int) -> None:
        """A new member of the chain (or the same run relaunched) starts training at `step`."""
        member = self.members.get(path)
        if member is None:
            member = self.members[path] = Member(path, created_at=self.now)
            if path != RUN_A and self.current is not None:
                # as the W&B source does: recorded when the run appears, refined with the time
                # of its first step when that is logged
                before = self.logged.get(self.current)
                restart = Restart(
                    self.now,
                    NEW_RUN,
                    path,
                    previous_run=self.current,
                    from_step=before.step if before else None,
                    to_step=step,
                    stopped_at=before.at if before else None,
                )
                self._unresumed[path] = restart
                await self._restart_event(restart)
        member.step = step
        member.heartbeat_at = self.now
        self.current = path
        self.training = self.beating = True
        await self.set_state("running")

    # --- what the sources write --------------------------------------------------------------

    async def _restart_event(self, restart: Restart) -> None:
        path = restart.wandb_run
        await self._event(
            "restart", f"restart:new-run:{path}", path, "running", restart.to_json(), restart.at
        )

    async def _event(
        self,
        kind: str,
        external_id: str,
        path: str,
        state: str,
        extra: dict[str, Any],
        at: datetime | None = None,
    ) -> None:
        event = Event(
            run_slug="hero",
            source="wandb",
            external_id=external_id,
            kind=kind,
            at=at or self.now,
            ref=path.rsplit("/", 1)[-1],
            url=f"https://wandb.ai/{path.replace('/pretrain/', '/pretrain/runs/')}",
            state=state,
            title=f"W&B {kind} {path} {state}",
            thread=f"wandb:{path}",
            extra=extra,
        )
        await self.store.events.upsert_many([event])

    async def set_state(self, state: str) -> None:
        assert self.current is not None
        member = self.members[self.current]
        previous = await self.store.snapshots.get("hero", member.path)
        member.state = state
        await self._snapshot(member)
        old = previous.state if previous else None
        if old != state:
            await self._event(
                "state",
                f"state:{member.path}:{state}:{self.now.isoformat()}",
                member.path,
                state,
                extra={"wandb_run": member.path, "from_state": old, "to_state": state},
            )

    async def set_member_state(self, path: str, state: str) -> None:
        current = self.current
        self.current = path
        try:
            await self.set_state(state)
        finally:
            self.current = current

    async def _snapshot(self, member: Member) -> None:
        await self.store.snapshots.upsert(
            "hero",
            RunSnapshot(
                wandb_run=member.path,
                name=member.path.rsplit("/", 1)[-1],
                state=member.state,
                created_at=member.created_at,
                heartbeat_at=member.heartbeat_at,
                last_step=member.step,
                observed_at=self.now,
                summary=member.summary,
            ),
        )

    async def report(
        self,
        body: str,
        *,
        source: str = "github",
        number: int = 42,
        author: str = "amara",
        title: str | None = None,
        kind: str = "comment",
    ) -> Event:
        """A person reports something (on GitHub a comment, or with ``kind="issue"`` the
        description of an issue they open); enrichment flags it as it would in the bot."""
        self._github_ids += 1
        if source == "github":
            issue = kind == "issue"
            url = f"https://github.com/lab/hero/issues/{number}"
            event = Event(
                run_slug="hero",
                source="github",
                external_id=f"issue:{number}" if issue else f"comment:{self._github_ids}",
                kind=kind,
                at=self.now,
                author=author,
                ref=f"#{number}",
                url=url if issue else f"{url}#issuecomment-{self._github_ids}",
                state="open",
                title=title,
                body=body,
                thread=f"github:lab/hero#{number}",
            )
        else:
            event = Event(
                run_slug="hero",
                source="discord",
                external_id=f"msg:{self._github_ids}",
                kind="message",
                at=self.now,
                author=author,
                ref="#ops",
                url=f"https://discord.com/channels/1/2/{self._github_ids}",
                body=body,
                thread="discord:2",
            )
        await self.store.events.upsert_many([event])
        await enrich_pending(self.store, run_slug="hero")
        stored = await self.store.events.get_by_external("hero", event.source, event.external_id)
        assert stored is not None
        return stored

    async def tick(self, minutes: float = 1) -> int:
        """Let time pass, then one poll cycle: W&B (if reachable) then detection."""
        end = self.now + timedelta(minutes=minutes)
        while self.now < end:
            self.now = min(self.now + MIN, end)
            member = self.members[self.current] if self.current else None
            if member is not None and member.state == "running":
                if self.beating:
                    member.heartbeat_at = self.now
                if self.training:
                    loss = self.loss_override if self.loss_override is not None else member.loss
                    member.loss = max(1.0, member.loss - 0.0001)
                    point = MetricPoint(member.path, member.step, self.now, member.step * 1e6, loss)
                    self._pending_points.append(point)
                    self.logged[member.path] = point
                    unresumed = self._unresumed.pop(member.path, None)
                    if unresumed is not None:
                        await self._restart_event(replace(unresumed, resumed_at=self.now))
                    for metric, value_at in self.watched.items():
                        self._pending_series.setdefault(metric, []).append(
                            SeriesPoint(member.path, member.step, self.now, value_at(member.step))
                        )
                    member.step += self.rate
        if self.wandb_up:
            await self._poll_wandb()
        else:
            await self.store.health.record_failure("wandb", "hero", self.now, "timeout", None)
        for source in ("github", "discord"):
            await self.store.health.record_success(source, "hero", self.now)
        queued = await self.engine.detect(self.store, self.now)
        self.queued += queued
        return queued

    async def _poll_wandb(self) -> None:
        if self._pending_points:
            await self.store.metrics.add_points("hero", self._pending_points)
            self._pending_points = []
        for metric, points in self._pending_series.items():
            await self.store.series.add("hero", metric, points)
        self._pending_series = {}
        for member in self.members.values():
            await self._snapshot(member)
        await self.store.health.record_success("wandb", "hero", self.now)

    async def run_for(self, minutes: int) -> None:
        for _ in range(minutes):
            await self.tick()

    # --- what was queued ---------------------------------------------------------------------

    async def outbox(self) -> list[OutboxItem]:
        return await self.store.outbox.due(FAR, limit=10_000)

    async def kinds(self) -> list[str]:
        return [item.kind for item in await self.outbox()]

    async def alerts_posted(self) -> list[OutboxItem]:
        return [i for i in await self.outbox() if i.kind == "alert"]

    async def resolutions(self) -> list[OutboxItem]:
        """Resolution messages in the alerts channel itself (not the thread copy)."""
        return [i for i in await self.outbox() if i.kind == "resolved" and i.reply_to is None]


def content(item: OutboxItem) -> str:
    text = item.payload.get("content") or ""
    card = item.payload.get("card") or {}
    return " ".join([text, str(card.get("title", "")), str(card.get("description", ""))])


def finite(value: float) -> bool:
    return math.isfinite(value)


@dataclass(frozen=True)
class Saved:
    """A scenario as it stood at one moment: its database (a closed file), its own state and
    its engine's memory (what the reader judged through, the failures it logged). A test that
    starts from that moment resumes from a copy instead of replaying the minutes before it."""

    path: Path
    state: dict[str, Any]
    memory: tuple[dict[str, datetime], dict[str, dict[str, int]]]

    def resume(self, store: Store, engine: IncidentEngine | None = None) -> Scenario:
        """The scenario at that moment over `store` (opened on a copy of `path`), its engine
        `engine` (default: a plain one, as `Scenario` builds) with the saved memory."""
        sc = Scenario(store, FAR, engine=engine)
        vars(sc).update(replica(self.state))
        sc.engine.reader._judged_through, sc.engine._logged = replica(self.memory)
        return sc


def save(
    path: Path, empty_database: Path, drive: Callable[[Store], Awaitable[tuple[Scenario, T]]]
) -> tuple[Saved, T]:
    """`drive` run once over a new store at `path` (a copy of `empty_database`, as every
    test's store is), saved as it left the scenario; with what `drive` returned besides."""
    shutil.copy(empty_database, path)

    async def build() -> tuple[Saved, T]:
        async with Database.open(path) as db:
            sc, extra = await drive(Store(db))
            state = {k: v for k, v in vars(sc).items() if k not in ("store", "engine")}
            memory = (sc.engine.reader._judged_through, sc.engine._logged)
            return Saved(path, replica(state), replica(memory)), extra

    return asyncio.run(build())
