"""A W&B run's heartbeat and state: the snapshot stored each poll, the `state` event when the
state changed (dated by the run's own data, `state_changed_at`), and the shape every event of
the W&B source shares (`base_event`). Pure: no store, no W&B."""

from __future__ import annotations

from datetime import datetime

from bot.core.numbers import fmt_int
from bot.models import Event, RunSnapshot, WandbState
from bot.sources.wandb_cursors import HistoryCursor
from bot.sources.wandb_history import SOURCE, MemberFetch, as_int, from_ts

#: States in which a W&B run stopped: it stopped when W&B last heard from it.
STOPPED_STATES = frozenset({"crashed", "failed", "killed", "preempted", "finished"})


def snapshot_of(
    member: MemberFetch, after: HistoryCursor, step_key: str, now: datetime
) -> RunSnapshot:
    """The run as seen this poll (its last step: the last training step stored, else the
    summary's)."""
    return RunSnapshot(
        wandb_run=member.path,
        name=member.name,
        state=member.state,
        created_at=member.created_at,
        heartbeat_at=member.heartbeat_at,
        last_step=after.value if after.value is not None else as_int(member.summary.get(step_key)),
        observed_at=now,
        summary=member.summary,
    )


def state_event(
    slug: str,
    member: MemberFetch,
    previous: RunSnapshot | None,
    snapshot: RunSnapshot,
    after: HistoryCursor,
    now: datetime,
) -> Event | None:
    """`state:<path>:<state>:<when>`: the run's state changed (or was seen the first time)."""
    old = previous.state if previous is not None else None
    if old == snapshot.state:
        return None
    at = state_changed_at(member, previous, after, now)
    event = base_event(slug, member, f"state:{member.path}:{snapshot.state}:{iso(at)}", "state", at)
    name = member.name or member.run_id
    step = snapshot.last_step
    at_step = f" at step {fmt_int(step)}" if step is not None else ""
    heartbeat = f" Last heartbeat: {iso(snapshot.heartbeat_at)}." if snapshot.heartbeat_at else ""
    if old is None:
        event.title = f"W&B run {name} is {snapshot.state}{at_step}"
        event.body = (
            f"First observation of W&B run {label(member)}: {snapshot.state}{at_step}.{heartbeat}"
        )
    else:
        event.title = f"W&B run {name} went from {old} to {snapshot.state}{at_step}"
        event.body = (
            f"W&B run {label(member)} changed state from {old} to {snapshot.state}"
            f"{at_step} at {iso(at)} (observed at {iso(now)}).{heartbeat}"
        )
    event.updated_at = now
    event.extra = WandbState(
        wandb_run=member.path,
        from_state=old,
        to_state=snapshot.state,
        step=step,
        heartbeat_at=snapshot.heartbeat_at,
        observed_at=now,
    ).to_json()
    return event


def state_changed_at(
    member: MemberFetch, previous: RunSnapshot | None, after: HistoryCursor, now: datetime
) -> datetime:
    """When a W&B run's state changed, from the run's own data, never from when Runscribe
    looked: a stop happened at the last sign of life (the later of the heartbeat and the last
    history row); a run that came back (crashed → running in place) at its first row logged
    after the previous heartbeat; anything else, or a first observation, at the heartbeat (a
    start never before the look that still saw the old state). A
    run W&B has no time for falls back to its creation, and only then to `now`. Never later
    than `now` (a server clock ahead of ours)."""
    beat = member.heartbeat_at
    last_row = from_ts(after.value_ts)
    state = str(member.state)
    at: datetime | None
    if state in STOPPED_STATES:
        signs = [t for t in (beat, last_row) if t is not None]
        at = max(signs) if signs else None
    else:
        at = beat
        if previous is not None and previous.state in STOPPED_STATES:  # came back
            since = previous.heartbeat_at
            firsts = [
                t
                for t in (from_ts(r.get("_timestamp")) for r in member.rows)
                if t is not None and (since is None or t > since)
            ]
            if firsts:
                at = min(firsts)
        if previous is not None and at is not None:
            # A start is later than the look that still saw the old state (a stop is not: W&B
            # marks a run crashed minutes after its last heartbeat).
            at = max(at, previous.observed_at)
    at = at or member.created_at or now
    return min(at, now)


def base_event(slug: str, member: MemberFetch, external_id: str, kind: str, at: datetime) -> Event:
    """An event of the W&B source about one member of the chain."""
    return Event(
        run_slug=slug,
        source=SOURCE,
        external_id=external_id,
        kind=kind,
        at=at,
        author=None,
        ref=member.run_id,
        url=member.url,
        state=member.state,
        thread=f"wandb:{member.path}",
    )


def label(member: MemberFetch) -> str:
    if member.name and member.name != member.run_id:
        return f"{member.name} ({member.run_id})"
    return member.run_id


def iso(value: datetime) -> str:
    return value.isoformat(timespec="seconds")
