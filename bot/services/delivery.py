"""Whether posts can reach Discord, as `/healthz` judges it: from the database, so `runscribe web`
in another process sees what the bot sees.

The bot records its gateway connection (`gateway_up` / `gateway_down`, a `source_health` row whose
scope is no run's slug) and each failing outbox round (`outbox_failed` / `outbox_ok`). Delivery is
not ok when, beyond `DELIVERY_BOUND`:

- the oldest queued post has waited longer (every post refused, Discord unreachable, a channel
  the bot may not write to while its retries last);
- the gateway has been down longer (the bot is disconnected, still connecting, or stopped);
- the outbox rounds have been failing longer (a damaged outbox table: alerts would stop
  silently); or the outbox cannot be read at all (at once).

And at once, per channel (`delivery_channels`, written by the poster):

- a post is held back because Discord refuses it there (403, 404: the bot lost a permission or
  the channel), until a post there goes through;
- posts were given up there (refused past their hold) and the notice that reports them has not
  been posted yet: it leads the channel's queue, so the first post that gets through there
  reports them and ends this (if the notice is given up too, the log has said it all);
- the last try to post in a run's alerts channel failed (any error but a rate limit), until one
  succeeds.

A database no bot has ever run on (a `poll` + `web` install without Discord) is not judged: its
posts stay queued by design.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from bot.core.numbers import fmt_int
from bot.store import Store

log = logging.getLogger(__name__)

SOURCE = "delivery"
GATEWAY = "gateway:discord"  # a `:` never appears in a run slug
OUTBOX = "outbox:loop"
INTEGRITY = "store:integrity"  # the daily `PRAGMA quick_check` (bot.store.integrity)
#: A post queued this long, or a gateway down this long, means posts are not being delivered.
#: The poster delivers within 30 s of an outage's end, so a healthy bot never waits this long.
DELIVERY_BOUND = timedelta(seconds=30)


async def gateway_up(store: Store, at: datetime) -> None:
    await _quietly(store.health.record_success(SOURCE, GATEWAY, at))


async def gateway_down(store: Store, at: datetime, why: str) -> None:
    await _quietly(store.health.record_failure(SOURCE, GATEWAY, at, why, None))


async def outbox_ok(store: Store, at: datetime) -> None:
    await _quietly(store.health.record_success(SOURCE, OUTBOX, at))


async def outbox_failed(store: Store, at: datetime, why: str) -> None:
    await _quietly(store.health.record_failure(SOURCE, OUTBOX, at, why, None))


async def integrity_checked(store: Store, at: datetime, found: list[str]) -> None:
    if found:
        await _quietly(store.health.record_failure(SOURCE, INTEGRITY, at, found[0][:300], None))
    else:
        await _quietly(store.health.record_success(SOURCE, INTEGRITY, at))


async def _quietly(write: Any) -> None:
    """A health note must never take the caller down (the store may be the problem)."""
    try:
        await write
    except Exception as exc:
        log.warning("could not record delivery health: %s", exc)


def _age(now: datetime, then: datetime | None) -> float | None:
    return None if then is None else round(max((now - then).total_seconds(), 0.0), 1)


async def delivery_report(store: Store, now: datetime) -> tuple[dict[str, Any] | None, list[str]]:
    """The `delivery` part of `/healthz` and the problems it adds (empty: posts get through).
    None when no bot has run on this database."""
    problems: list[str] = []
    integrity = await store.health.get(SOURCE, INTEGRITY)
    if integrity is not None and integrity.failing:
        problems.append(f"store: quick_check found damage ({(integrity.last_error or '')[:160]})")
    gateway = await store.health.get(SOURCE, GATEWAY)
    if gateway is None:
        return None, problems
    body: dict[str, Any] = {"bound_seconds": DELIVERY_BOUND.total_seconds()}
    down_since = gateway.failing_since if gateway.failing else None
    body["gateway"] = {
        "connected": not gateway.failing,
        "down_since": down_since.isoformat() if down_since else None,
        "error": gateway.last_error if gateway.failing else None,
    }
    if down_since is not None and now - down_since > DELIVERY_BOUND:
        problems.append(
            f"delivery: Discord gateway down for {fmt_int(_age(now, down_since))} s "
            f"({gateway.last_error or 'disconnected'})"
        )
    try:
        oldest = await store.outbox.oldest_queued()
    except Exception as exc:  # a damaged outbox: say so rather than answer 500
        body["queue"] = {"error": str(exc)[:200]}
        problems.append(f"delivery: the outbox cannot be read ({str(exc)[:120]})")
        oldest = None
    else:
        body["queue"] = {
            "oldest_queued_at": oldest.created_at.isoformat()
            if oldest and oldest.created_at
            else None,
            "oldest_age_seconds": _age(now, oldest.created_at) if oldest else None,
            "oldest_kind": oldest.kind if oldest else None,
            "last_error": oldest.last_error if oldest else None,
        }
    if (
        oldest is not None
        and oldest.created_at is not None
        and now - oldest.created_at > DELIVERY_BOUND
    ):
        why = f"; last error: {oldest.last_error[:120]}" if oldest.last_error else ""
        problems.append(
            f"delivery: the oldest queued post ({oldest.kind} #{oldest.id}) has waited "
            f"{fmt_int(_age(now, oldest.created_at))} s{why}"
        )
    problems += await _channel_problems(store, now, body)
    problems += await _loop_problems(store, now, body)
    body["ok"] = not problems
    return body, problems


async def _loop_problems(store: Store, now: datetime, body: dict[str, Any]) -> list[str]:
    loop = await store.health.get(SOURCE, OUTBOX)
    failing_since = loop.failing_since if loop is not None and loop.failing else None
    body["outbox_loop"] = {
        "ok": failing_since is None,
        "failing_since": failing_since.isoformat() if failing_since else None,
        "consecutive_failures": loop.consecutive_failures if loop else 0,
        "error": loop.last_error if loop is not None and loop.failing else None,
    }
    if loop is None or failing_since is None or now - failing_since <= DELIVERY_BOUND:
        return []
    return [
        f"delivery: the outbox round has failed {loop.consecutive_failures} times in a row "
        f"({(loop.last_error or 'error')[:120]})"
    ]


async def _channel_problems(store: Store, now: datetime, body: dict[str, Any]) -> list[str]:
    """Held, given-up and failing channels (see the module docstring); `body["channels"]`
    lists every channel that is not plainly ok."""
    try:
        held = {h.channel_id: h for h in await store.delivery.held()}
        channels = await store.delivery.all()
        alerts = {r.config.alerts_channel for r in await store.runs.all()}
    except Exception as exc:  # a damaged table: say so rather than answer 500
        body["channels"] = {"error": str(exc)[:200]}
        return [f"delivery: the per-channel delivery state cannot be read ({str(exc)[:120]})"]
    problems: list[str] = []
    shown = []
    for row in channels:
        c = row.channel_id
        hold = held.get(c)
        reported = row.missed > 0 and row.notice_id is not None
        failing = row.failing_since is not None
        if hold is None and not reported and not failing:
            continue
        shown.append(
            {
                "channel": str(c),
                "alerts": c in alerts,
                "failing_since": row.failing_since.isoformat() if row.failing_since else None,
                "refused": row.refused and failing,
                "error": row.last_error if failing else None,
                "held": hold.count if hold else 0,
                "missed": row.missed,
                "missed_from": row.missed_from.isoformat() if row.missed_from else None,
                "missed_until": row.missed_until.isoformat() if row.missed_until else None,
                "missed_reason": row.missed_reason,
            }
        )
        if hold is not None:
            since = f" since {hold.refused_since.isoformat()}" if hold.refused_since else ""
            problems.append(
                f"delivery: {hold.count} post(s) held back in channel {c}: Discord refuses "
                f"them{since} ({(hold.error or 'no access')[:120]})"
            )
        elif failing and c in alerts:
            problems.append(
                f"delivery: posts to alerts channel {c} have failed for "
                f"{fmt_int(_age(now, row.failing_since) or 0)} s "
                f"({(row.last_error or 'error')[:120]})"
            )
        if reported:
            problems.append(
                f"delivery: {row.missed} post(s) to channel {c} were given up "
                f"({(row.missed_reason or 'refused')[:120]}); not yet reported there"
            )
    body["channels"] = shown
    return problems
