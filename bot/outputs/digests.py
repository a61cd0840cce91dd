"""The daily digest's schedule and composition, on top of the outbox.

`due_digest_date` decides, from the run's local `digest_time` (DST-aware) and the last date a
digest was handled (kept in `store.cursors`, source "digest", key = run slug), whether a digest
is due now. A digest missed while the bot was down is caught up once, if it is less than
`CATCH_UP` late; a quiet day records the date and posts nothing. The text is the template's
unless a composer (the LLM, bound by `bot.process.wiring`) writes a better one."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, date, datetime, time, timedelta

from bot.config.runsfile import RunConfig
from bot.models import OutboxItem
from bot.narrative.facts import DigestFacts
from bot.outbox.payload import payload_from_card
from bot.render.cards import TimeFormatter, digest_card
from bot.services.digest import build_digest
from bot.store import Store

log = logging.getLogger(__name__)

CATCH_UP = timedelta(hours=12)
DIGEST_SOURCE = "digest"  # store.cursors source for "last digest date per run"
POSTED = "{slug}:posted"  # its key for the local date of the last digest queued (any kind)


def occurrence(day: date, clock: time) -> datetime:
    """The UTC instant of `clock` (aware, in the run's zone) on local `day`. A time skipped by a
    spring-forward change moves forward by the gap; a repeated one takes its first occurrence."""
    zone = clock.tzinfo
    local = datetime.combine(day, clock.replace(tzinfo=None)).replace(tzinfo=zone, fold=0)
    return local.astimezone(UTC)


def latest_occurrence(now: datetime, clock: time) -> tuple[date, datetime]:
    """The most recent scheduled digest at or before `now`: (local date, UTC instant)."""
    today = now.astimezone(clock.tzinfo).date()
    for day in (today, today - timedelta(days=1), today - timedelta(days=2)):
        at = occurrence(day, clock)
        if at <= now:
            return day, at
    raise AssertionError("unreachable: a day has passed")  # pragma: no cover


def due_digest_date(
    now: datetime, clock: time, last: date | None, catch_up: timedelta = CATCH_UP
) -> date | None:
    """The local date whose digest should be handled now, or None. Due once the scheduled time
    has passed and that date was not handled yet; a digest missed by more than `catch_up` (the
    bot was down) is skipped, since the next one is close."""
    day, at = latest_occurrence(now, clock)
    if last is not None and last >= day:
        return None
    if now - at > catch_up:
        return None
    return day


DigestComposer = Callable[[DigestFacts], Awaitable[str | None]]


async def compose_text(facts: DigestFacts, composer: DigestComposer | None) -> str:
    """The composer's text, or the template already in facts.text when there is none or it
    fails: an LLM outage never stops a digest. How goodput moved is code's sentence: it closes
    a composed text that did not say it."""
    if composer is None:
        return facts.text
    try:
        text = await composer(facts)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("digest composer failed for %s; using the template", facts.run_slug)
        return facts.text
    if not text:
        return facts.text
    moved = facts.goodput_moved
    return f"{text}\n\n{moved}" if moved and moved not in text else text


async def last_digest_date(store: Store, slug: str) -> date | None:
    value, _ = await store.cursors.get(DIGEST_SOURCE, slug)
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


async def enqueue_digest(
    store: Store,
    run: RunConfig,
    now: datetime,
    *,
    fmt: TimeFormatter,
    composer: DigestComposer | None = None,
    dedup_key: str | None = None,
    skip_quiet: bool = True,
    channel_id: int | None = None,
    asked: bool = False,
) -> int | None:
    """Compose the run's digest and queue it for its digest channel. Returns the outbox id, or
    None when the day was quiet (and `skip_quiet`), the key was already queued, or there is no
    channel. One digest per run and local day: one a person `asked` for on a day that already
    had one says it is an update, and it counts as that day's, so the scheduled one is not
    repeated."""
    channel = channel_id or run.digest_channel
    if channel is None:
        return None
    local_day = now.astimezone(run.zone).date()
    posted_key = POSTED.format(slug=run.slug)
    posted, _ = await store.cursors.get(DIGEST_SOURCE, posted_key)
    facts = await build_digest(store, run.slug, now)
    if skip_quiet and facts.quiet:
        return None
    facts.text = await compose_text(facts, composer)
    card = digest_card(facts, fmt, update=asked and posted == local_day.isoformat())
    item = OutboxItem(
        channel_id=channel,
        kind="digest",
        payload=payload_from_card(card),
        dedup_key=dedup_key or f"digest:{run.slug}:{local_day.isoformat()}",
        run_slug=run.slug,
        created_at=now,
    )
    async with store.transaction():
        item_id = await store.outbox.enqueue(item)
        if item_id is not None:
            await store.cursors.set(DIGEST_SOURCE, posted_key, local_day.isoformat())
            if asked:  # today's digest: the schedule does not post another
                await store.cursors.set(DIGEST_SOURCE, run.slug, local_day.isoformat())
    return item_id


async def run_due_digests(
    store: Store,
    runs: Sequence[RunConfig],
    now: datetime,
    *,
    fmt: TimeFormatter,
    composer: DigestComposer | None = None,
    ready: Callable[[RunConfig], bool] | None = None,
) -> list[tuple[str, date, int | None]]:
    """One scheduler tick: for every run with a digest channel whose digest is due, queue it
    (or skip a quiet day) and record the date. Returns (slug, date, outbox id or None). A run
    not `ready` (the bot has not yet heard from every source it uses since start) waits: a
    digest composed before the first W&B round would say the run made no progress."""
    done = []
    for run in runs:
        if run.digest_channel is None:
            continue
        if ready is not None and not ready(run):
            continue
        try:
            day = due_digest_date(now, run.digest_clock, await last_digest_date(store, run.slug))
            if day is None:
                continue
            facts_key = f"digest:{run.slug}:{day.isoformat()}"
            item_id = await enqueue_digest(
                store, run, now, fmt=fmt, composer=composer, dedup_key=facts_key
            )
            await store.cursors.set(DIGEST_SOURCE, run.slug, day.isoformat())
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("digest for %s failed; will try again", run.slug)
            continue
        if item_id is None:
            log.info(
                "digest for %s on %s: quiet day or already queued, nothing posted", run.slug, day
            )
        else:
            log.info("digest for %s on %s queued as outbox item %s", run.slug, day, item_id)
        done.append((run.slug, day, item_id))
    return done
