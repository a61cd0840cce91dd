"""The live status message: one message per run in its `status_channel`, showing the `/status`
card, edited in place.

The refresher here decides *when* and queues *what*: every `status_refresh_minutes`, and as soon
as the run's state, its open incidents or a source's health change (the fingerprint: a source
that recovers is shown back at once), but never sooner than
`MIN_GAP` after the last update, so an event storm costs about one edit a minute. At most one
update per run waits in the outbox at a time. The card is the `/status` card (`status_card`)
written with neutral time stamps; the poster (`bot.outbox.poster`) edits the stored message, or
posts and pins a new one when there is none or it was deleted, and attaches the chart only when
its data version changed."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Container, Sequence
from datetime import datetime, timedelta

from bot.config.runsfile import RunConfig
from bot.models import MONITOR_STALE_AFTER, LiveMessage, OutboxItem, SourceHealth
from bot.outbox.payload import LiveSpec, make_payload
from bot.render.cards import status_card
from bot.render.stamps import stamp
from bot.services.narrative import status_with_narrative
from bot.store import Store
from bot.store.live import LIVE_KIND
from bot.store.metrics import NO_POINTS

log = logging.getLogger(__name__)

MIN_GAP = timedelta(seconds=60)  # at most about one update a minute per message


async def fingerprint(
    store: Store, slug: str, now: datetime, started_at: datetime | None = None
) -> str:
    """What makes an update due at once: the state of each W&B run of the chain, the open
    incidents (one opened or resolved) and each source's health (one failing, or back: a
    recovered W&B must not stay "stale" on the message until the next refresh), and whether
    W&B has answered since this process started at `started_at` (the message stops showing
    the state stored before the restart at the first W&B round). Three indexed reads, no metric
    points."""
    chain = await store.snapshots.chain(slug)
    states = ",".join(f"{s.wandb_run}={s.state}" for s in chain)
    incidents = await store.incidents.find(slug, open_only=True)
    opened = ",".join(str(i.id) for i in sorted(incidents, key=lambda i: i.id or 0))
    rows = await store.health.for_run(slug)
    heard = rows.get("wandb")
    waiting = started_at is not None and not (
        heard is not None
        and heard.last_success_at is not None
        and heard.last_success_at >= started_at
    )
    restored = "|before-restart" if waiting else ""
    return f"{states}|{opened}|{source_health(rows, now)}{restored}"


def source_health(rows: dict[str, SourceHealth], now: datetime) -> str:
    """Each source's health as the card tells it: failing, W&B stale (not reached lately, the
    card's "monitor stale"), or ok. The time since a success is left out: it moves every
    round."""

    def word(name: str, row: SourceHealth) -> str:
        if row.failing:
            return "failing"
        last = row.last_success_at
        stale = name == "wandb" and last is not None and now - last > MONITOR_STALE_AFTER
        return "stale" if stale else "ok"

    return ",".join(f"{name}={word(name, row)}" for name, row in sorted(rows.items()))


def update_due(
    row: LiveMessage | None,
    current: str,
    run: RunConfig,
    now: datetime,
    *,
    restarted: bool = False,
) -> str | None:
    """Why the run's live message should be updated now, or None. `restarted`: this process
    has not updated it yet (it shows it is back, once the gap allows)."""
    if row is None or row.rendered_at is None:
        return "new"  # never posted, or gone and forgotten
    if row.message_id is not None and row.channel_id != run.status_channel:
        return "moved"
    age = now - row.rendered_at
    if age >= timedelta(minutes=run.status_refresh_minutes):
        return "refresh"
    if age >= MIN_GAP and (current != row.fingerprint or restarted):
        return "changed" if current != row.fingerprint else "restarted"
    return None


async def live_item(
    store: Store,
    run: RunConfig,
    now: datetime,
    *,
    repost: bool = False,
    dedup_key: str | None = None,
    started_at: datetime | None = None,
) -> OutboxItem:
    """The outbox item of one update: the `/status` card and "updated … · next …"
    (`started_at`: the bot's start, `build_status`)."""
    assert run.status_channel is not None
    reader = store.reader
    report, narrative = await status_with_narrative(reader, run.slug, now, started_at=started_at)
    version = await reader.metrics.version(run.slug)
    card = status_card(report, narrative, stamp)
    following = now + timedelta(minutes=run.status_refresh_minutes)
    content = (
        f"**Live status** · updated {stamp(now, 'relative')} · next {stamp(following, 'relative')}"
    )
    spec = LiveSpec(run.slug, None if version == NO_POINTS else version, repost)
    return OutboxItem(
        channel_id=run.status_channel,
        kind=LIVE_KIND,
        payload=make_payload(content, card, live=spec),
        # one queued at a time is the refresher's rule; the key only has to be new
        dedup_key=dedup_key or f"live:{run.slug}:{now.isoformat()}:{uuid.uuid4().hex[:8]}",
        run_slug=run.slug,
        created_at=now,
    )


async def _enqueue(store: Store, item: OutboxItem, current: str, now: datetime) -> int | None:
    assert item.run_slug is not None
    async with store.transaction():  # queued and recorded together: a crash loses neither
        item_id = await store.outbox.enqueue(item)
        if item_id is not None:
            await store.live.rendered(item.run_slug, current, now)
    return item_id


async def refresh_live(
    store: Store,
    runs: Sequence[RunConfig],
    now: datetime,
    *,
    updated: Container[str] = (),
    started_at: datetime | None = None,
) -> dict[str, int]:
    """Queue an update for each run with a `status_channel` whose message is due (see
    `update_due`; `updated`: runs this process already updated; `started_at`: when it
    started, `build_status`). Returns slug → outbox id of each queued update."""
    queued: dict[str, int] = {}
    for run in runs:
        if run.status_channel is None:
            continue
        try:
            if await store.live.queued(run.slug):
                continue  # one at a time: it shows the newest state when it is sent
            row = await store.live.get(run.slug)
            current = await fingerprint(store.reader, run.slug, now, started_at)
            reason = update_due(row, current, run, now, restarted=run.slug not in updated)
            if reason is None:
                continue
            item = await live_item(store, run, now, started_at=started_at)
            item_id = await _enqueue(store, item, current, now)
        except asyncio.CancelledError:
            raise
        except Exception:  # one run's problem never stops another's message
            log.exception("live status update for %s failed", run.slug)
            continue
        if item_id is not None:
            log.debug("live status of %s queued (%s)", run.slug, reason)
            queued[run.slug] = item_id
    return queued


async def repost_live(
    store: Store, run: RunConfig, now: datetime, key: str, *, started_at: datetime | None = None
) -> int | None:
    """Queue a new live message for the run in its `status_channel` (the old one, wherever
    it is, is deleted when the new one is posted): after the channel changed, or to bring it
    back to the bottom of the channel. None when `key` was already queued."""
    if run.status_channel is None:
        raise ValueError(f"run {run.slug!r} has no status_channel")
    item = await live_item(store, run, now, repost=True, dedup_key=key, started_at=started_at)
    current = await fingerprint(store.reader, run.slug, now, started_at)
    return await _enqueue(store, item, current, now)


class LiveMessages:
    """The bot's live status messages: what the live loop, `/admin live-status` and a deleted
    message ask for. `wake_outbox` delivers what was queued now; `wake_live` has the live loop
    look again at once."""

    def __init__(
        self,
        store: Callable[[], Store],
        runs: Callable[[], Sequence[RunConfig]],
        clock: Callable[[], datetime],
        *,
        started_at: datetime,
        wake_outbox: Callable[[], None],
        wake_live: Callable[[], None],
    ):
        self._store = store
        self._runs = runs
        self._clock = clock
        # Until W&B answers this process, /status and the live message show the state stored
        # before it started, marked so (`bot.services.status.stored_state_at`).
        self.started_at = started_at
        self._wake_outbox = wake_outbox
        self._wake_live = wake_live
        self._updated: set[str] = set()  # runs whose live message this process updated
        self._lock = asyncio.Lock()

    async def refresh(self) -> dict[str, int]:
        """Queue the live status updates that are due (`refresh_live`), and deliver them now."""
        async with self._lock:  # the loop and a caller never both queue the same update
            queued = await refresh_live(
                self._store(),
                self._runs(),
                self._clock(),
                updated=self._updated,
                started_at=self.started_at,
            )
        if queued:
            self._updated.update(queued)
            self._wake_outbox()
        return queued

    async def repost(self, run: RunConfig, key: str) -> int | None:
        """A new live status message for `run` in its `status_channel`, the old one deleted
        (`/admin live-status`). None when that request (`key`) was already queued."""
        async with self._lock:
            item_id = await repost_live(
                self._store(), run, self._clock(), key, started_at=self.started_at
            )
        self._updated.add(run.slug)
        self._wake_outbox()
        return item_id

    async def deleted(self, message_id: int) -> bool:
        """Someone deleted a message: if it was a run's live status message, forget it and
        post a new one now (rather than at the next update's 404)."""
        store = self._store()
        row = await store.live.by_message(message_id)
        if row is None or not await store.live.forget(row.run_slug, message_id):
            return False
        log.info("the live status message of %s was deleted; posting a new one", row.run_slug)
        self._wake_live()
        return True
