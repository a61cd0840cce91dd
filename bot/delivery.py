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

A database no bot has ever run on (a `poll` + `web` install without Discord) is not judged: its
posts stay queued by design.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

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
            f"delivery: Discord gateway down for {_age(now, down_since):.0f} s "
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
            f"{_age(now, oldest.created_at):.0f} s{why}"
        )
    loop = await store.health.get(SOURCE, OUTBOX)
    failing_since = loop.failing_since if loop is not None and loop.failing else None
    body["outbox_loop"] = {
        "ok": failing_since is None,
        "failing_since": failing_since.isoformat() if failing_since else None,
        "consecutive_failures": loop.consecutive_failures if loop else 0,
        "error": loop.last_error if loop is not None and loop.failing else None,
    }
    if loop is not None and failing_since is not None and now - failing_since > DELIVERY_BOUND:
        problems.append(
            f"delivery: the outbox round has failed {loop.consecutive_failures} times in a row "
            f"({(loop.last_error or 'error')[:120]})"
        )
    body["ok"] = not problems
    return body, problems
