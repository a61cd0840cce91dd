"""Refused posts: held while an operator can still fix it, then given up and reported.

Discord answers 403 (Missing Permissions, Missing Access), 404 (Unknown Channel) or 401 when
the bot may not post somewhere. Those are fixed by a person (a permission given back, a channel
restored, a token replaced), not by waiting a minute, so a refused post is *held*: tried again
with a backoff capped at `REFUSAL_CAP`, for as long as it can still matter, `hold` after it was
queued (`RUNSCRIBE_DELIVERY_HOLD_HOURS`, 24 h by default). Its channel's lane waits behind it
(an incident's head before its thread updates); other channels go on. A post delivered in the
channel (an edit, another lane) ends the wait of the held ones at once.

A post past its hold in a channel that still refuses is given up (`abandoned_at`), logged with
when and why, and counted in the channel's `missed`. A notice ("2 posts could not be delivered
here between … and … (403 Missing Permissions (code 50013))") is queued at the front of that
channel's lane, so the first post that gets through there is the one that says what was missed;
if the notice is itself given up, the next post delivered in the channel queues another.

Everything is in the database (`delivery_channels`, the outbox row), so a restart during a
refusal still posts the alert once when access returns, and `/healthz` in another process sees
what the poster sees (`bot.services.delivery`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from bot.models import OutboxItem
from bot.outbox.payload import make_payload
from bot.render.stamps import stamp
from bot.store import Store
from bot.store.delivery import ChannelDelivery
from bot.store.live import LIVE_KIND

log = logging.getLogger(__name__)

REFUSED_STATUSES = frozenset({401, 403, 404})  # no access: a person can fix it
REFUSAL_CAP = 60.0  # seconds: a held post is tried again at least this often
DEFAULT_HOLD = timedelta(hours=24)
MISSED_KIND = "missed"  # the outbox kind of a notice of posts given up


def refusal_delay(attempts: int, base: float, cap: float = REFUSAL_CAP) -> float:
    return min(cap, base * (2 ** min(attempts, 20)))


def missed_text(gap: ChannelDelivery, hold: timedelta) -> str:
    """What the notice says: how many posts, queued when, refused why."""
    count = "1 post" if gap.missed == 1 else f"{gap.missed} posts"
    first, last = gap.missed_from, gap.missed_until
    if first is None or last is None:
        span = ""
    elif int(first.timestamp()) == int(last.timestamp()):
        span = f" queued at {stamp(first)}"
    else:
        span = f" queued between {stamp(first)} and {stamp(last)}"
    hours = hold.total_seconds() / 3600
    held = f"{hours:.0f} h" if hours >= 1 else f"{hold.total_seconds() / 60:.0f} min"
    return (
        f"⚠️ {count}{span} could not be delivered here: Discord refused "
        f"{'it' if gap.missed == 1 else 'them'} ({gap.missed_reason or 'no access'}) for "
        f"{held}, and Runscribe gave up. Check the bot's permissions in this channel."
    )


def missed_payload(gap: ChannelDelivery, hold: timedelta) -> dict[str, Any]:
    payload = make_payload(missed_text(gap, hold))
    payload["missed"] = gap.missed  # how many it reports, once delivered
    return payload


class Refusals:
    """The poster's memory of refusals, over the store: records every try's outcome per
    channel, holds refused posts, gives up and reports the ones past their hold."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], datetime],
        hold: timedelta = DEFAULT_HOLD,
        cap: float = REFUSAL_CAP,
        base: float = 2.0,
    ):
        self.store = store
        self.clock = clock
        self.hold = hold
        self.cap = cap
        self.base = base  # the poster's backoff base: the first wait, doubled per try
        self._held: dict[int, int] = {}  # item → channel: backing off from a refusal
        self._ok: set[int] = set()  # channels recorded ok with nothing missed (no write needed)
        self._delivered: set[int] = set()  # channels a post went through in this drain
        self._cap_delta = timedelta(seconds=max(cap, 1.0))

    def begin(self) -> None:
        self._delivered.clear()

    def woken(self) -> frozenset[int]:
        """Held posts whose channel took a post in this drain: access is back, try them now."""
        return frozenset(i for i, c in self._held.items() if c in self._delivered)

    def past_hold(self, item: OutboxItem, now: datetime) -> bool:
        return now - (item.created_at or now) >= self.hold

    async def expire(self, queued: Sequence[OutboxItem]) -> list[OutboxItem]:
        """Give up the queued posts past their hold in channels that still refuse, without
        asking Discord again; the rest, to plan."""
        now = self.clock()
        late = [i for i in queued if i.kind != LIVE_KIND and self.past_hold(i, now)]
        if not late:
            return list(queued)
        # refused lately: a refusal from before a long stop may be over (the head is tried)
        refused = await self.store.delivery.refused_channels(now - 2 * self._cap_delta)
        gone = {i.id for i in late if i.channel_id in refused}
        for item in late:
            if item.id in gone:
                row = await self.store.delivery.get(item.channel_id)
                await self.abandon(item, (row.last_error if row else None) or "refused")
        return [i for i in queued if i.id not in gone]

    async def refused(self, item: OutboxItem, reason: str, attempts: int) -> bool:
        """A refusal of `item`: True when it is held (tried again later), False when it was
        given up (past its hold)."""
        assert item.id is not None
        now = self.clock()
        await self.store.delivery.failed(item.channel_id, now, reason, refused=True)
        self._ok.discard(item.channel_id)
        self._held.pop(item.id, None)
        if self.past_hold(item, now):
            await self.abandon(item, reason)
            return False
        delay = refusal_delay(attempts, self.base, self.cap)
        first = not (item.last_error or "").startswith("refused")
        await self.store.outbox.mark_retry(
            item.id, f"refused: {reason}", now + timedelta(seconds=delay)
        )
        self._held[item.id] = item.channel_id
        deadline = (item.created_at or now) + self.hold
        (log.warning if first else log.debug)(
            "outbox item %s (%s) to channel %s refused by Discord (%s); held, tried again "
            "every %.0f s at most until %s, when it is given up",
            item.id, item.kind, item.channel_id, reason, self.cap, deadline.isoformat(),
        )  # fmt: skip
        return True

    async def failed(self, channel_id: int, error: str) -> None:
        """Any other failed try (a server error, a timeout): the channel's last try failed."""
        self._ok.discard(channel_id)
        await self.store.delivery.failed(channel_id, self.clock(), error, refused=False)

    def forget(self, item_id: int) -> None:
        self._held.pop(item_id, None)

    async def abandon(self, item: OutboxItem, reason: str) -> None:
        """Give the post up for good, say so in the log, and have the channel told."""
        assert item.id is not None
        now = self.clock()
        self._held.pop(item.id, None)
        queued = item.created_at or now
        error = f"given up after {self.hold} refused: {reason}"
        async with self.store.transaction():
            if not await self.store.outbox.abandon(item.id, now, error):
                return
            if item.kind == MISSED_KIND:  # the notice itself: the next delivered post tells
                await self.store.delivery.set_notice(item.channel_id, None)
                gap = None
            else:
                gap = await self.store.delivery.add_missed(item.channel_id, queued, reason, now)
                await self._notice(gap, f"missed:{item.channel_id}:{item.id}")
        log.error(
            "outbox item %s (%s) to channel %s given up at %s: Discord refused it (%s) and it "
            "was queued %s ago, past the %s hold; %s",
            item.id, item.kind, item.channel_id, now.isoformat(), reason, now - queued,
            self.hold, f"{gap.missed} post(s) missed there, reported by the next post "
            "delivered there" if gap else "the next post delivered there reports what was missed",
        )  # fmt: skip

    async def delivered(self, item: OutboxItem) -> None:
        """A post went through: the channel is ok; a notice reports its posts; posts missed
        there and not reported yet get a notice now."""
        channel = item.channel_id
        self._delivered.add(channel)
        if item.kind == MISSED_KIND:
            said = item.payload.get("missed") if isinstance(item.payload, dict) else None
            await self.store.delivery.reported(channel, said if isinstance(said, int) else 0)
        elif channel in self._ok:
            return
        gap = await self.store.delivery.succeeded(channel, self.clock())
        if gap.missed and not await self._notice_queued(gap):
            await self._notice(gap, f"missed:{channel}:after:{item.id}")
        elif not gap.missed:
            self._ok.add(channel)

    async def _notice_queued(self, gap: ChannelDelivery) -> bool:
        if gap.notice_id is None:
            return False
        notice = await self.store.outbox.get(gap.notice_id)
        return notice is not None and notice.status == "queued"

    async def _notice(self, gap: ChannelDelivery, key: str) -> None:
        """Queue the channel's notice, or rewrite the queued one with the new count."""
        payload = missed_payload(gap, self.hold)
        if gap.notice_id is not None and await self.store.outbox.replace_payload(
            gap.notice_id, payload
        ):
            return
        notice = OutboxItem(
            channel_id=gap.channel_id,
            kind=MISSED_KIND,
            payload=payload,
            dedup_key=key,
            created_at=self.clock(),
        )
        notice_id = await self.store.outbox.enqueue(notice)
        if notice_id is None:  # queued before (a retried round): it is the one
            existing = await self.store.outbox.get_by_key(key)
            notice_id = existing.id if existing is not None else None
        await self.store.delivery.set_notice(gap.channel_id, notice_id)
