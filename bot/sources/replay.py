"""The bundled sample run behind `runscribe demo`, replayed offline.

A sample is one JSON file in `bot/sources/sample/` holding a fictional run's config, the parameters
of its W&B history (segments between restarts, loss curve, spikes), its W&B state timeline, and its
GitHub and Discord items. The loss history is generated here from those parameters with a fixed
seed, so every load returns the same data.

Every time in the file is absolute UTC; `load_sample(now)` shifts all of them by one offset so the
sample ends exactly at `now`, which makes the demo look live whatever day it runs. The shapes match
what the live GitHub, Discord and W&B sources produce, so the rest of the pipeline cannot tell the
difference. Enrichment fields (summary, tag, incident…) are left unset on purpose.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib.resources import files
from typing import Any

from bot.core.timeutil import ensure_utc, parse_time, utcnow
from bot.models import Event, GithubComment, GithubThread, MetricPoint, RunSnapshot

SAMPLE_PACKAGE = "bot.sources"
SAMPLE_DIR = "sample"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
# A segment's last interior point is dropped when it would land this close to its final point.
_MIN_POINT_GAP = timedelta(minutes=3)

_Shift = Callable[[str], datetime]  # sample ISO time -> shifted datetime


@dataclass(slots=True)
class WandbRunState:
    """One observation of one W&B run's state at a moment (a state change)."""

    at: datetime
    wandb_run: str
    state: str
    heartbeat_at: datetime | None
    last_step: int | None


@dataclass(slots=True)
class SampleRun:
    run_config: dict[str, Any]  # the [[runs]] table as a dict (the fixed keys), times as ISO text
    snapshots: list[RunSnapshot]  # final state of each W&B run in the chain (observed_at = end)
    state_history: list[WandbRunState]  # every state change, time-ordered
    points: list[MetricPoint]  # the whole generated history, all chain members, per run in order
    events: list[Event]  # GitHub + Discord events, time-ordered; edited items at their latest
    start: datetime  # shifted sample bounds
    end: datetime
    superseded: list[Event] = field(default_factory=list)  # earlier versions of edited items
    discord_channels: dict[int, str] = field(default_factory=dict)  # channel id -> name
    discord_guild_id: int | None = None
    github: dict[str, Any] = field(default_factory=dict)  # the file's GitHub items, unshifted
    shift: timedelta = timedelta(0)  # add to a time in the file to get the replayed time


def available_samples() -> list[str]:
    """Names accepted by `load_sample`."""
    folder = files(SAMPLE_PACKAGE) / SAMPLE_DIR
    return sorted(
        entry.name.removesuffix(".json")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    )


def load_sample(now: datetime | None = None, name: str = "aurora") -> SampleRun:
    """Load the bundled sample `name`, shifted so that its last moment is `now` (default: now)."""
    raw = _read(name)
    now = ensure_utc(now) if now is not None else utcnow()
    end_raw = _time(raw["end"])
    offset = now - end_raw
    # The people in the sample write dates too ("2026-03-16", kernel log stamps): they move with
    # the rest, so the replayed chat agrees with the replayed calendar.
    raw["github"] = shift_text_dates(raw["github"], offset)
    raw["discord"] = shift_text_dates(raw["discord"], offset)

    def at(value: str) -> datetime:
        return _time(value) + offset

    config = dict(raw["run_config"])
    slug = str(config["slug"])
    if config.get("launched_at"):
        config["launched_at"] = _iso(at(config["launched_at"]), timespec="seconds")

    points, states, snapshots = _wandb(raw["wandb"], config, at, observed_at=now)
    events, superseded = _github(raw["github"], slug, at)
    channels, guild_id, discord_events = _discord(raw["discord"], slug, at)
    events.extend(discord_events)
    events.sort(key=_event_order)
    superseded.sort(key=_event_order)

    return SampleRun(
        run_config=config,
        snapshots=snapshots,
        state_history=states,
        points=points,
        events=events,
        start=at(raw["start"]),
        end=now,
        superseded=superseded,
        discord_channels=channels,
        discord_guild_id=guild_id,
        github=raw["github"],
        shift=offset,
    )


# --- dates written in the sample's text -------------------------------------------------------

_TEXT_KEYS = frozenset({"title", "body", "content"})
_ISO_DATE = re.compile(r"\b(20\d\d)-(\d\d)-(\d\d)\b(?![T:]\d)")
# syslog / dmesg -T stamps: "Wed Mar  4 02:15:41 2026"
_LOG_STAMP = re.compile(
    r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) "
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}\b"
)
_LOG_FORMAT = "%a %b %d %H:%M:%S %Y"


def _shift_date(match: re.Match[str], offset: timedelta) -> str:
    try:
        day = datetime(int(match[1]), int(match[2]), int(match[3]), 12)
    except ValueError:
        return match[0]
    return (day + offset).date().isoformat()


def _shift_stamp(match: re.Match[str], offset: timedelta) -> str:
    try:
        stamp = datetime.strptime(" ".join(match[0].split()), _LOG_FORMAT)
    except ValueError:
        return match[0]
    moved = stamp + offset
    return f"{moved:%a %b} {moved.day:>2} {moved:%H:%M:%S %Y}"


def shift_text_dates(value: Any, offset: timedelta) -> Any:
    """A copy of `value` (the sample's GitHub or Discord items) whose prose moves every written
    date by `offset`: ISO dates (taken at midday, the time of day being unknown) and log stamps
    (exactly). Times in fields other than title/body/content are shifted where they are read."""
    if isinstance(value, dict):
        return {
            key: (
                _LOG_STAMP.sub(
                    lambda m: _shift_stamp(m, offset),
                    _ISO_DATE.sub(lambda m: _shift_date(m, offset), item),
                )
                if key in _TEXT_KEYS and isinstance(item, str)
                else shift_text_dates(item, offset)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [shift_text_dates(item, offset) for item in value]
    return value


# --- reading ------------------------------------------------------------------------------------


def _read(name: str) -> dict[str, Any]:
    if not _NAME_RE.match(name):
        raise ValueError(f"invalid sample name {name!r}")
    resource = files(SAMPLE_PACKAGE) / SAMPLE_DIR / f"{name}.json"
    if not resource.is_file():
        known = ", ".join(available_samples()) or "none"
        raise ValueError(f"no bundled sample named {name!r} (available: {known})")
    data: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    return data


def _time(value: str) -> datetime:
    parsed = parse_time(value)
    if parsed is None:
        raise ValueError("sample contains an empty time")
    return parsed


def _iso(value: datetime | None, timespec: str = "auto") -> str | None:
    if value is None:
        return None
    return value.isoformat(timespec=timespec).replace("+00:00", "Z")


def _event_order(event: Event) -> tuple[datetime, str, str]:
    return (event.at, event.source, event.external_id)


# --- W&B ----------------------------------------------------------------------------------------


class _LossModel:
    """A power-law loss curve in the step, plus recovering spikes, slow per-run shifts (an
    optimizer change after a fork) and relative Gaussian noise from a seeded generator."""

    def __init__(self, params: dict[str, Any], rng: random.Random) -> None:
        curve = params["loss"]
        self.floor = float(curve["floor"])
        self.scale = float(curve["scale"])
        self.exponent = float(curve["exponent"])
        self.offset = float(curve["offset_steps"])
        self.noise = float(curve["noise"])
        self.spikes = params.get("spikes", [])
        self.shifts = params.get("shifts", [])
        self.rng = rng

    def __call__(self, run: str, step: int) -> float:
        loss = self.floor + self.scale * (step + self.offset) ** -self.exponent
        for spike in self.spikes:
            if spike["run"] == run and step >= spike["step"]:
                loss += spike["height"] * math.exp(-(step - spike["step"]) / spike["decay_steps"])
        for shift in self.shifts:
            if shift["run"] == run and step >= shift["from_step"]:
                ramp = min(1.0, (step - shift["from_step"]) / shift["ramp_steps"])
                loss += shift["delta"] * ramp
        loss *= 1.0 + self.rng.gauss(0.0, self.noise)
        return round(loss, 4)


def _wandb(
    params: dict[str, Any],
    config: dict[str, Any],
    at: _Shift,
    *,
    observed_at: datetime,
) -> tuple[list[MetricPoint], list[WandbRunState], list[RunSnapshot]]:
    rng = random.Random(params["seed"])
    loss_of = _LossModel(params, rng)
    tokens_per_step = float(params["tokens_per_step"])
    spacing_lo, spacing_hi = (float(m) for m in params["point_minutes"])
    metrics = config.get("metrics", {})

    points: list[MetricPoint] = []
    states: list[WandbRunState] = []
    snapshots: list[RunSnapshot] = []
    for run in params["runs"]:
        path = run["path"]
        last_point: MetricPoint | None = None
        state = "pending"
        heartbeat: datetime | None = None
        for segment in run["segments"]:
            launch = at(segment["launch"])
            states.append(
                WandbRunState(
                    at=launch,
                    wandb_run=path,
                    state="running",
                    heartbeat_at=launch,
                    last_step=last_point.step if last_point else None,
                )
            )
            state = "running"
            if "first_step_at" in segment:
                for when, step in _segment_steps(segment, at, rng, spacing_lo, spacing_hi):
                    last_point = MetricPoint(
                        wandb_run=path,
                        step=step,
                        at=when,
                        tokens=step * tokens_per_step,
                        loss=loss_of(path, step),
                    )
                    points.append(last_point)
            heartbeat = at(segment["last_heartbeat_at"])
            if segment.get("then"):
                state = segment["then"]
                states.append(
                    WandbRunState(
                        at=at(segment["then_at"]),
                        wandb_run=path,
                        state=state,
                        heartbeat_at=heartbeat,
                        last_step=last_point.step if last_point else None,
                    )
                )
        times = (at(run["created_at"]), observed_at)
        snapshots.append(_final_snapshot(run, state, heartbeat, last_point, metrics, times))
    states.sort(key=lambda s: (s.at, s.wandb_run))
    return points, states, snapshots


def _final_snapshot(
    run: dict[str, Any],
    state: str,
    heartbeat: datetime | None,
    last_point: MetricPoint | None,
    metrics: dict[str, Any],
    times: tuple[datetime, datetime],
) -> RunSnapshot:
    """A sample W&B run as last seen (`times`: when it was created, when it was observed)."""
    created, observed_at = times
    summary: dict[str, Any] = {}
    if last_point is not None:
        summary = {
            metrics.get("step", "_step"): last_point.step,
            metrics.get("tokens", "tokens"): last_point.tokens,
            metrics.get("loss", "loss"): last_point.loss,
        }
    return RunSnapshot(
        wandb_run=run["path"],
        name=run.get("name"),
        state=state,
        created_at=created,
        heartbeat_at=heartbeat,
        last_step=last_point.step if last_point else None,
        observed_at=observed_at,
        summary=summary,
    )


def _segment_steps(
    segment: dict[str, Any], at: _Shift, rng: random.Random, lo: float, hi: float
) -> list[tuple[datetime, int]]:
    """(time, step) pairs from the first to the last logged step of one segment: steps advance at
    a constant rate, one point every lo–hi minutes, the exact last step at the exact last time."""
    first, last = at(segment["first_step_at"]), at(segment["last_step_at"])
    start, stop = int(segment["start_step"]), int(segment["last_step"])
    span = (last - first).total_seconds()
    rate = (stop - start) / span if span > 0 else 0.0
    out = [(first, start)]
    elapsed = 0.0
    while True:
        elapsed += round(rng.uniform(lo, hi) * 60)
        when = first + timedelta(seconds=elapsed)
        if when > last - _MIN_POINT_GAP:
            break
        out.append((when, start + round(rate * elapsed)))
    if last > first:
        out.append((last, stop))
    return out


# --- GitHub -------------------------------------------------------------------------------------


def _github(data: dict[str, Any], slug: str, at: _Shift) -> tuple[list[Event], list[Event]]:
    repo = data["repo"]
    events: list[Event] = []
    superseded: list[Event] = []
    for item in data["items"]:
        number = int(item["number"])
        is_pull = item["kind"] == "pull"
        thread = f"github:{repo}#{number}"
        ref = f"#{number}"
        merged_at = at(item["merged_at"]) if item.get("merged_at") else None
        events.append(
            Event(
                run_slug=slug,
                source="github",
                external_id=f"issue:{number}",
                kind="pull" if is_pull else "issue",
                at=at(item["created_at"]),
                author=item["author"],
                ref=ref,
                url=f"https://github.com/{repo}/{'pull' if is_pull else 'issues'}/{number}",
                state=item["state"],
                title=item["title"],
                body=item["body"],
                thread=thread,
                updated_at=at(item["updated_at"]),
                extra=GithubThread(
                    labels=tuple(item["labels"]), merged_at=_iso(merged_at)
                ).to_json(),
            )
        )
        for comment in item["comments"]:
            versions = _comment_versions(comment, item, repo, slug, at)
            events.append(versions[-1])
            superseded.extend(versions[:-1])
    return events, superseded


def _comment_versions(
    comment: dict[str, Any], item: dict[str, Any], repo: str, slug: str, at: _Shift
) -> list[Event]:
    """One sample comment or review as events, one per version (the last is the current)."""
    number = int(item["number"])
    cid = int(comment["id"])
    created = at(comment["created_at"])
    if comment["kind"] == "review":
        external_id = f"review:{cid}"
        url = f"https://github.com/{repo}/pull/{number}#pullrequestreview-{cid}"
        post: GithubComment = GithubComment().reviewed(comment.get("review_state"))
    else:
        external_id = f"comment:{cid}"
        url = f"https://github.com/{repo}/issues/{number}#issuecomment-{cid}"
        post = GithubComment()
    versions = [(created, comment["body"])] + [
        (at(edit["updated_at"]), edit["body"]) for edit in comment.get("edits", [])
    ]
    return [
        Event(
            run_slug=slug,
            source="github",
            external_id=external_id,
            kind=comment["kind"],
            at=created,
            author=comment["author"],
            ref=f"#{number}",
            url=url,
            state=item["state"],
            body=body,
            thread=f"github:{repo}#{number}",
            updated_at=updated,
            extra=post.to_json(),
        )
        for updated, body in versions
    ]


# --- Discord ------------------------------------------------------------------------------------


def _discord(
    data: dict[str, Any], slug: str, at: _Shift
) -> tuple[dict[int, str], int, list[Event]]:
    guild_id = int(data["guild_id"])
    channels = {int(channel["id"]): channel["name"] for channel in data["channels"]}
    events = [
        Event(
            run_slug=slug,
            source="discord",
            external_id=f"msg:{message['id']}",
            kind="message",
            at=at(message["at"]),
            author=message["author"],
            ref=f"#{channels[int(message['channel_id'])]}",
            url=(
                f"https://discord.com/channels/{guild_id}/{message['channel_id']}/{message['id']}"
            ),
            body=message["content"],
            thread=f"discord:{message['channel_id']}",
        )
        for message in data["messages"]
    ]
    return channels, guild_id, events
