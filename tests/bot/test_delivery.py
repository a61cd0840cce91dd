"""The platform-neutral outbox poster and digest schedule: limits, markers, ordering, backoff,
crash recovery, threads and edits, against an in-memory transport and a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.config.settings import parse_runs
from bot.core.mentions import defuse_mentions
from bot.core.timeutil import utcnow
from bot.models import OutboxItem
from bot.outbox.backoff import backoff_delay
from bot.outbox.lanes import plan_channels
from bot.outbox.markers import Marker, find_markers
from bot.outbox.payload import (
    CONTENT_LIMIT,
    PayloadError,
    fit_card,
    make_payload,
    parse_payload,
    payload_from_card,
    split_text,
)
from bot.outbox.poster import OutboxPoster
from bot.outbox.transport import DeliveryError, OutgoingMessage, SeenMessage, render_item
from bot.outputs.digests import (
    due_digest_date,
    latest_occurrence,
    occurrence,
    run_due_digests,
)
from bot.render.cards import Card, CardField
from bot.store import Database, Store

NY = ZoneInfo("America/New_York")


def fmt(value: datetime, style: str) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


# --- payloads and limits -------------------------------------------------------------------------


def test_payload_round_trip_from_card() -> None:
    card = Card(
        title="Node lost",
        description="rank 17 gone",
        color="bad",
        url="https://github.com/o/r/issues/1",
        fields=[CardField("Run", "hero", inline=True)],
        footer="incident",
    )
    payload = payload_from_card(card, "heads up", thread_name="Incident: node lost")
    assert payload == {
        "content": "heads up",
        "card": {
            "title": "Node lost",
            "description": "rank 17 gone",
            "color": "bad",
            "url": "https://github.com/o/r/issues/1",
            "fields": [{"name": "Run", "value": "hero", "inline": True}],
            "footer": "incident",
            "image": None,
        },
        "thread_name": "Incident: node lost",
        "edit_of": None,
    }
    parsed = parse_payload(payload)
    assert parsed.card == card
    assert parsed.content == "heads up"
    assert parsed.thread_name == "Incident: node lost"


def test_empty_payload_is_refused() -> None:
    with pytest.raises(ValueError):
        make_payload()
    with pytest.raises(ValueError):
        parse_payload({"content": "   ", "card": None})


def test_split_text_respects_limit_and_boundaries() -> None:
    text = "\n".join(f"line {i} " + "x" * 90 for i in range(60))  # ~6,000 characters
    parts = split_text(text, 1950)
    assert len(parts) == 4
    assert all(len(p) <= 1950 for p in parts)
    assert all(p.startswith("line ") for p in parts)  # cut at line ends
    assert "".join(parts).replace("\n", "") == text.replace("\n", "")


def test_split_text_trims_past_max_parts() -> None:
    parts = split_text("word " * 5000, 1000, max_parts=3)
    assert len(parts) == 3
    assert parts[-1].endswith("(trimmed)")
    assert all(len(p) <= 1000 for p in parts)


def test_defuse_mentions_breaks_every_ping() -> None:
    text = "@everyone @here <@123> <@!456> <@&1> mail@example.com"
    escaped = defuse_mentions(text)
    for ping in ("@everyone", "@here", "<@123>", "<@!456>", "<@&1>"):
        assert ping not in escaped
    assert "mail@example.com" in escaped


def test_fit_card_keeps_every_embed_limit() -> None:
    card = Card(
        title="t" * 400,
        description="d" * 5000,
        fields=[CardField("n" * 300, "v" * 2000) for _ in range(40)],
        footer="f" * 3000,
    )
    fitted = fit_card(card, reserve=48)
    assert len(fitted.title) <= 256
    assert len(fitted.description) <= 4096
    assert len(fitted.fields) <= 25
    assert all(len(f.name) <= 256 and len(f.value) <= 1024 for f in fitted.fields)
    assert fitted.footer is not None and len(fitted.footer) <= 2048 - 48
    assert fitted.size() <= 6000 - 48


def test_render_item_splits_long_content_and_marks_every_part() -> None:
    payload = parse_payload(make_payload("@everyone " + "y" * 4500, Card(title="Digest")))
    messages = render_item(42, "digest:hero:2026-09-02", payload)
    assert len(messages) == 3
    assert messages[0].card is not None and messages[1].card is None
    for part, message in enumerate(messages):
        assert message.content is not None and len(message.content) <= CONTENT_LIMIT
        assert "@everyone" not in message.content
        assert find_markers(message.content) == [
            Marker.for_item(42, part, "digest:hero:2026-09-02")
        ]
        assert len(message.nonce) <= 25


def test_card_only_message_carries_marker_in_footer() -> None:
    [message] = render_item(7, "k", parse_payload(make_payload(card=Card(title="x"))))
    assert message.content is None and message.card is not None
    assert message.card.footer is not None
    assert find_markers(message.card.footer) == [Marker.for_item(7, 0, "k")]


def test_marker_distinguishes_items_parts_and_databases() -> None:
    markers = {
        Marker.for_item(1, 0, "a"),
        Marker.for_item(1, 1, "a"),
        Marker.for_item(2, 0, "a"),
        Marker.for_item(1, 0, "b"),
    }
    assert len(markers) == 4
    for marker in markers:
        assert find_markers("text" + marker.encode() + "more") == [marker]


# --- ordering and backoff ------------------------------------------------------------------------


def item(id: int, channel: int, not_before: datetime | None = None) -> OutboxItem:
    return OutboxItem(
        id=id,
        channel_id=channel,
        kind="alert",
        payload={},
        dedup_key=str(id),
        not_before=not_before,
    )


def test_plan_blocks_a_channel_behind_its_backing_off_head() -> None:
    now = datetime(2026, 9, 2, tzinfo=UTC)
    later = now + timedelta(minutes=1)
    plan = plan_channels([item(1, 10, later), item(2, 10), item(3, 20), item(4, 20)], now)
    assert 10 not in plan  # item 2 must not overtake item 1
    assert [i.id for i in plan[20]] == [3, 4]


def test_plan_keeps_edits_out_of_the_channel_lane() -> None:
    now = datetime(2026, 9, 2, tzinfo=UTC)
    later = now + timedelta(minutes=1)
    edit = item(1, 10, later)
    edit.kind, edit.payload = "edit", {"edit_of": 7}
    plan = plan_channels([edit, item(2, 10), item(3, 10)], now)
    assert [i.id for i in plan[10]] == [2, 3]  # the backing-off edit holds nothing up
    assert ("edit", 7) not in plan


def test_backoff_doubles_caps_and_honours_retry_after() -> None:
    assert [backoff_delay(n) for n in range(4)] == [2, 4, 8, 16]
    assert backoff_delay(30) == 25  # a long outage is retried every 25 s, not every 5 minutes
    assert backoff_delay(0, retry_after=45) == 45
    # a rate limit waits what the server said, however often it happened: no growing backoff
    assert backoff_delay(9, retry_after=0.3) == 0.3


# --- the poster against a real store ------------------------------------------------------------


class MemoryTransport:
    def __init__(self) -> None:
        self.channels: dict[int, list[tuple[int, OutgoingMessage]]] = {}
        self.fail: list[DeliveryError] = []
        self.no_threads: set[int] = set()
        self.threads: dict[int, int] = {}
        self.edits: list[tuple[int, int, OutgoingMessage]] = []
        self.archived: list[int] = []
        self.next_id = 1000
        self.history_pages = 0

    async def send(self, channel_id: int, message: OutgoingMessage) -> int:
        if self.fail:
            raise self.fail.pop(0)
        self.next_id += 1
        self.channels.setdefault(channel_id, []).append((self.next_id, message))
        return self.next_id

    async def edit(self, channel_id: int, message_id: int, message: OutgoingMessage) -> None:
        self.edits.append((channel_id, message_id, message))

    async def open_thread(self, channel_id: int, message_id: int, name: str) -> int | None:
        if channel_id in self.no_threads:
            return None
        self.threads[message_id] = channel_id
        return message_id

    async def archive_thread(self, thread_id: int, *, archived: bool = True) -> None:
        if archived:
            self.archived.append(thread_id)

    async def recent(self, channel_id: int, limit: int) -> list[SeenMessage]:
        out = []
        for mid, message in reversed(self.channels.get(channel_id, [])[-limit:]):
            out.append(SeenMessage(mid, self._text(message)))
        return out

    async def newest_id(self, channel_id: int) -> int | None:
        messages = self.channels.get(channel_id)
        return messages[-1][0] if messages else None

    async def after(self, channel_id: int, after_id: int, limit: int) -> list[SeenMessage]:
        self.history_pages += 1
        newer = [(m, msg) for m, msg in self.channels.get(channel_id, []) if m > after_id]
        return [SeenMessage(m, self._text(msg)) for m, msg in newer[:limit]]

    @staticmethod
    def _text(message: OutgoingMessage) -> str:
        return (message.content or "") + ((message.card.footer or "") if message.card else "")

    def texts(self, channel_id: int) -> list[str]:
        return [
            (m.content or (m.card.title if m.card else "")).split("\u2063")[0]
            for _, m in self.channels.get(channel_id, [])
        ]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with Database.open(tmp_path / "delivery.db") as db:
        yield Store(db)


async def queue(store: Store, channel: int, text: str, **kw: object) -> int:
    payload = kw.pop("payload", None) or make_payload(text)
    item_id = await store.outbox.enqueue(
        OutboxItem(channel_id=channel, kind="alert", payload=payload, dedup_key=text, **kw)  # type: ignore[arg-type]
    )
    assert item_id is not None
    return item_id


async def test_in_order_per_channel_and_stop_at_first_failure(store: Store) -> None:
    transport = MemoryTransport()
    poster = OutboxPoster(store, transport, backoff_base=0)
    for n in range(3):
        await queue(store, 10, f"a{n}")
        await queue(store, 20, f"b{n}")
    transport.fail = [DeliveryError("HTTP 503")]
    report = await poster.drain()
    # one channel lost its head to the 503 and stopped; the other went through, which showed
    # the outage over, so the stopped channel was tried again in the same drain, in order
    assert len(report.sent) == 6 and report.retried == []
    assert transport.texts(10) == ["a0", "a1", "a2"]
    assert transport.texts(20) == ["b0", "b1", "b2"]
    assert await store.outbox.pending_count() == 0


async def test_permanent_errors_give_up_and_unblock_the_channel(store: Store) -> None:
    transport = MemoryTransport()
    poster = OutboxPoster(store, transport, backoff_base=0)
    first = await queue(store, 10, "doomed")
    await queue(store, 10, "next")
    transport.fail = [DeliveryError("HTTP 400", permanent=True, status=400) for _ in range(6)]
    for _ in range(7):
        await poster.drain()
    failed = await store.outbox.get(first)
    assert failed is not None and failed.status == "failed" and failed.attempts == 6
    assert transport.texts(10) == ["next"]


def refusal() -> DeliveryError:
    return DeliveryError(
        "HTTP 403: Missing Permissions",
        permanent=True,
        status=403,
        code=50013,
        detail="Missing Permissions",
    )


async def test_a_refusal_holds_its_channel_for_hours_while_others_go_on(store: Store) -> None:
    transport = MemoryTransport()
    clock = Clock()
    poster = OutboxPoster(store, transport, clock=clock, hold=timedelta(hours=2))
    head = await queue(store, 10, "node lost", created_at=clock.now)
    await queue(store, 10, "node lost: update", created_at=clock.now)
    for n in range(60):  # an hour of refusals, far past six tries
        transport.fail = [refusal()]
        await queue(store, 20, f"digest {n}", created_at=clock.now)
        report = await poster.drain()
        assert report.held == [head] and report.failed == []
        stored = await store.outbox.get(head)
        assert stored is not None and stored.not_before is not None
        assert stored.not_before - clock.now <= timedelta(seconds=60)
        clock.now = stored.not_before
    assert transport.texts(10) == []  # the update never overtook its head
    assert len(transport.texts(20)) == 60  # the other channel went on
    row = await store.delivery.get(10)
    assert (
        row is not None
        and row.refused
        and row.last_error == ("403 Missing Permissions (code 50013)")
    )
    await poster.drain()  # access is back
    assert transport.texts(10) == ["node lost", "node lost: update"]
    row = await store.delivery.get(10)
    assert row is not None and not row.refused and row.failing_since is None


async def test_past_the_hold_posts_are_given_up_once_and_a_notice_leads_the_channel(
    store: Store,
) -> None:
    transport = MemoryTransport()
    clock = Clock()
    poster = OutboxPoster(store, transport, clock=clock, hold=timedelta(hours=1))
    first = await queue(store, 10, "alert one", created_at=clock.now)
    clock.now += timedelta(minutes=10)
    second = await queue(store, 10, "alert two", created_at=clock.now)
    transport.fail = [refusal()]
    await poster.drain()
    clock.now += timedelta(hours=2)
    await queue(store, 10, "alert three", created_at=clock.now)
    transport.fail = [refusal()]
    report = await poster.drain()  # the head is asked again, refused, past its hold: given up
    assert report.abandoned == [first] and transport.fail == []
    transport.fail = [refusal()]
    report = await poster.drain()  # still refused: the next one past its hold goes unasked
    row = await store.delivery.get(10)
    assert row is not None and row.missed == 2 and row.notice_id is not None
    assert report.abandoned == [second] and report.held == [row.notice_id]  # the notice leads
    for gone in (first, second):
        item = await store.outbox.get(gone)
        assert item is not None and item.status == "failed" and item.abandoned_at is not None
    clock.now += timedelta(seconds=60)
    await poster.drain()  # access is back: the notice, then alert three
    notice, later = transport.texts(10)
    assert notice.startswith("⚠️ 2 posts queued between") and "(code 50013)" in notice
    assert later == "alert three"
    row = await store.delivery.get(10)
    assert row is not None and row.missed == 0 and row.notice_id is None


async def test_crash_between_send_and_mark_does_not_duplicate(store: Store) -> None:
    transport = MemoryTransport()
    item_id = await queue(store, 10, "alert: node lost " + "z" * 3000)  # two parts
    # A previous process sent the first part, then died before sending the rest or marking.
    [first, _second] = render_item(
        item_id,
        "alert: node lost " + "z" * 3000,
        parse_payload(make_payload("alert: node lost " + "z" * 3000)),
    )
    transport.channels[10] = [(555, first)]
    poster = OutboxPoster(store, transport, clock=lambda: utcnow() + timedelta(seconds=1))
    report = await poster.drain()
    assert report.sent == [item_id]
    assert len(transport.channels[10]) == 2  # only the missing part was sent
    stored = await store.outbox.get(item_id)
    assert stored is not None and stored.status == "sent" and stored.message_id == "555"


async def test_fully_sent_item_is_recovered_not_resent(store: Store) -> None:
    transport = MemoryTransport()
    item_id = await queue(store, 10, "digest")
    [message] = render_item(item_id, "digest", parse_payload(make_payload("digest")))
    transport.channels[10] = [(777, message)]
    poster = OutboxPoster(store, transport, clock=lambda: utcnow() + timedelta(seconds=1))
    report = await poster.drain()
    assert report.recovered == [item_id]
    assert len(transport.channels[10]) == 1


async def test_reply_goes_to_thread_or_channel_and_edit_waits_for_target(store: Store) -> None:
    transport = MemoryTransport()
    poster = OutboxPoster(store, transport, backoff_base=0)
    head = await queue(
        store, 10, "head", payload=make_payload("node lost", thread_name="Incident: node lost")
    )
    await queue(store, 10, "reply", payload=make_payload("comment"), reply_to=head)
    await queue(store, 10, "edit", payload=make_payload("node lost — resolved", edit_of=head))
    await poster.drain()
    head_id = transport.channels[10][0][0]
    assert transport.threads == {head_id: 10}
    assert transport.texts(head_id) == ["comment"]  # posted in the thread (id = message id)
    [(channel, edited, message)] = transport.edits
    assert (channel, edited) == (10, head_id)
    assert message.content is not None and message.content.startswith("node lost — resolved")

    transport.no_threads.add(30)
    head2 = await queue(store, 30, "h2", payload=make_payload("x", thread_name="t"))
    await queue(store, 30, "r2", payload=make_payload("follow-up"), reply_to=head2)
    await poster.drain()
    assert transport.texts(30) == ["x", "follow-up"]  # no thread possible: the channel

    # A thread-only copy (the channel gets its own) is dropped where no thread exists, so the
    # channel does not see the same resolution twice; with a thread it goes into the thread.
    only = await queue(
        store, 30, "r3", payload=make_payload("resolved", thread_only=True), reply_to=head2
    )
    await poster.drain()
    assert transport.texts(30) == ["x", "follow-up"]
    dropped = await store.outbox.get(only)
    assert dropped is not None and dropped.status == "sent" and dropped.message_id is None
    await queue(store, 10, "r4", payload=make_payload("resolved", thread_only=True), reply_to=head)
    await poster.drain()
    assert transport.texts(head_id) == ["comment", "resolved"]


def test_only_the_ping_role_can_ping() -> None:
    payload = parse_payload(
        make_payload("🔴 Incident #1 — <@&5> and @everyone in the text", ping_role=42)
    )
    [message] = render_item(1, "alert", payload)
    assert message.ping_role == 42
    assert message.content is not None
    assert message.content.startswith("<@&42> 🔴 Incident #1 — a role and everyone in the text")
    [plain] = render_item(2, "x", parse_payload(make_payload("<@&42> hi")))
    assert plain.ping_role is None and plain.content is not None
    assert plain.content.startswith("a role hi")
    with pytest.raises(PayloadError):
        parse_payload({"content": "x", "ping_role": "42"})


async def test_a_closing_reply_archives_its_thread_once_posted(store: Store) -> None:
    transport = MemoryTransport()
    poster = OutboxPoster(store, transport, backoff_base=0)
    head = await queue(store, 10, "head", payload=make_payload("down", thread_name="Incident"))
    await queue(store, 10, "update", payload=make_payload("comment"), reply_to=head)
    await poster.drain()
    assert transport.archived == []  # an ordinary reply leaves the thread open
    closing = make_payload("resolved; closing", thread_only=True, archive_thread=True)
    await queue(store, 10, "closing", payload=closing, reply_to=head)
    await poster.drain()
    head_id = transport.channels[10][0][0]
    assert transport.texts(head_id) == ["comment", "resolved; closing"]
    assert transport.archived == [head_id]

    transport.no_threads.add(30)  # no thread: nothing to archive, and nothing posted twice
    head2 = await queue(store, 30, "h2", payload=make_payload("x", thread_name="t"))
    await queue(store, 30, "c2", payload=closing, reply_to=head2)
    await poster.drain()
    assert transport.archived == [head_id] and transport.texts(30) == ["x"]


async def test_an_edit_after_a_restart_finds_the_thread_message(store: Store) -> None:
    """The thread a reply went into is stored with it, so a new process (which never saw the
    thread opened) still edits that message where it is."""
    transport = MemoryTransport()
    head = await queue(store, 10, "head", payload=make_payload("node lost", thread_name="t"))
    reply = await queue(store, 10, "reply", payload=make_payload("update 1"), reply_to=head)
    await OutboxPoster(store, transport, backoff_base=0).drain()
    sent = await store.outbox.get(reply)
    head_message = transport.channels[10][0][0]
    assert sent is not None and sent.posted_in == head_message  # the thread's id

    restarted = OutboxPoster(store, MemoryTransport(), backoff_base=0)
    await queue(store, 10, "edit", payload=make_payload("update 1 (corrected)", edit_of=reply))
    await restarted.drain()
    [(channel, message_id, _)] = restarted.transport.edits  # type: ignore[attr-defined]
    assert (channel, message_id) == (head_message, int(sent.message_id or 0))


# --- digest schedule ----------------------------------------------------------------------------


def test_occurrence_across_dst() -> None:
    nine = time(9, 0, tzinfo=NY)
    assert occurrence(date(2026, 3, 7), nine) == datetime(2026, 3, 7, 14, 0, tzinfo=UTC)  # EST
    assert occurrence(date(2026, 3, 9), nine) == datetime(2026, 3, 9, 13, 0, tzinfo=UTC)  # EDT
    # 02:30 does not exist on 2026-03-08 in New York: it moves forward by the hour skipped
    gap = occurrence(date(2026, 3, 8), time(2, 30, tzinfo=NY))
    assert gap == datetime(2026, 3, 8, 7, 30, tzinfo=UTC)  # = 03:30 EDT
    # 01:30 happens twice on 2026-11-01: the first one (EDT) is used
    twice = occurrence(date(2026, 11, 1), time(1, 30, tzinfo=NY))
    assert twice == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)


def test_latest_occurrence() -> None:
    nine = time(9, 0, tzinfo=NY)
    now = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)  # 08:00 in New York
    assert latest_occurrence(now, nine) == (date(2026, 9, 1), datetime(2026, 9, 1, 13, tzinfo=UTC))


def test_due_once_then_not_again() -> None:
    nine = time(9, 0, tzinfo=NY)
    before = datetime(2026, 9, 2, 12, 59, tzinfo=UTC)
    at = datetime(2026, 9, 2, 13, 0, tzinfo=UTC)
    assert due_digest_date(before, nine, last=date(2026, 9, 1)) is None
    assert due_digest_date(at, nine, last=date(2026, 9, 1)) == date(2026, 9, 2)
    assert due_digest_date(at + timedelta(minutes=5), nine, last=date(2026, 9, 2)) is None


def test_catch_up_once_when_down_at_that_time_but_not_days_later() -> None:
    nine = time(9, 0, tzinfo=NY)
    # down from 08:00 to 11:30 local: the 09:00 digest is caught up on start
    assert due_digest_date(
        datetime(2026, 9, 2, 15, 30, tzinfo=UTC), nine, last=date(2026, 9, 1)
    ) == date(2026, 9, 2)
    # down for three days, back at 23:00 local: more than 12 h late, wait for tomorrow's
    assert (
        due_digest_date(datetime(2026, 9, 6, 3, 0, tzinfo=UTC), nine, last=date(2026, 9, 2)) is None
    )


def run_config(**changes: object) -> dict[str, object]:
    config: dict[str, object] = {
        "slug": "hero",
        "name": "Hero run",
        "github_repo": "o/r",
        "digest_channel": 1234567890,
        "digest_time": "09:00",
        "timezone": "America/New_York",
    }
    config.update(changes)
    return config


async def test_scheduler_skips_quiet_day_and_records_it(store: Store) -> None:
    from bot.process.runtime import record_runs

    runs = parse_runs({"runs": [run_config()]})
    await record_runs(store, runs)
    now = datetime(2026, 9, 2, 13, 5, tzinfo=UTC)
    done = await run_due_digests(store, runs.runs, now, fmt=fmt)  # type: ignore[arg-type]
    assert done == [("hero", date(2026, 9, 2), None)]  # quiet: nothing queued
    assert await store.outbox.pending_count() == 0
    assert await run_due_digests(store, runs.runs, now + timedelta(minutes=1), fmt=fmt) == []  # type: ignore[arg-type]


async def test_scheduler_queues_digest_with_dedup_key(store: Store) -> None:
    from bot.models import Event
    from bot.process.runtime import record_runs

    runs = parse_runs({"runs": [run_config()]})
    await record_runs(store, runs)
    now = datetime(2026, 9, 2, 13, 5, tzinfo=UTC)
    event = Event(
        run_slug="hero",
        source="github",
        external_id="issue:1",
        kind="issue",
        at=now - timedelta(hours=2),
        title="Loss spike at step 1,000",
        summary="Loss spike at step 1,000",
        tag="training-dynamics",
    )
    await store.events.upsert_many([event])

    async def composer(facts: object) -> str:
        return "An LLM wrote this."

    done = await run_due_digests(store, runs.runs, now, fmt=fmt, composer=composer)  # type: ignore[arg-type]
    [(slug, day, item_id)] = done
    assert (slug, day) == ("hero", date(2026, 9, 2))
    queued = await store.outbox.get_by_key("digest:hero:2026-09-02")
    assert queued is not None and queued.id == item_id and queued.channel_id == 1234567890
    assert queued.payload["card"]["description"] == "An LLM wrote this."


# --- the already-sent check after a crash, waits under rate limits and outages ----------------


async def test_crash_then_150_newer_messages_is_found_by_anchor_not_resent(store: Store) -> None:
    transport = MemoryTransport()
    transport.channels[10] = [(900 + n, OutgoingMessage(f"old {n}", None, Marker(0, 0, 0)))
                              for n in range(5)]  # fmt: skip
    item_id = await queue(store, 10, "Loss is NaN")
    # The previous process recorded the anchor, posted, and died before marking the row.
    await store.outbox.set_anchor(item_id, 904)
    [message] = render_item(item_id, "Loss is NaN", parse_payload(make_payload("Loss is NaN")))
    transport.channels[10].append((1000, message))
    chatter = OutgoingMessage("chat", None, Marker(0, 0, 0))
    transport.channels[10].extend((2000 + n, chatter) for n in range(150))
    poster = OutboxPoster(store, transport, clock=lambda: utcnow() + timedelta(seconds=1))
    report = await poster.drain()
    assert report.recovered == [item_id]
    assert transport.texts(10).count("Loss is NaN") == 1
    stored = await store.outbox.get(item_id)
    assert stored is not None and stored.message_id == "1000"


async def test_anchor_is_recorded_before_the_first_send(store: Store) -> None:
    transport = MemoryTransport()
    transport.channels[10] = [(950, OutgoingMessage("hello", None, Marker(0, 0, 0)))]
    first = await queue(store, 10, "first")
    second = await queue(store, 10, "second")
    await OutboxPoster(store, transport).drain()
    one, two = await store.outbox.get(first), await store.outbox.get(second)
    assert one is not None and one.anchor_id == 950  # asked the channel once
    assert two is not None and two.anchor_id == int(one.message_id or 0)  # then known locally


async def test_rate_limit_waits_retry_after_within_the_drain(store: Store) -> None:
    transport = MemoryTransport()
    for n in range(3):
        await queue(store, 10, f"a{n}")
    transport.fail = [DeliveryError("HTTP 429", retry_after=0.001) for _ in range(7)]
    report = await OutboxPoster(store, transport).drain()  # one drain: no waiting for the loop
    assert report.sent == [1, 2, 3] and report.retried == []
    assert transport.texts(10) == ["a0", "a1", "a2"]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 9, 2, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_server_outage_waits_at_most_the_cap_then_oldest_first(store: Store) -> None:
    transport = MemoryTransport()
    clock = Clock()
    poster = OutboxPoster(store, transport, clock=clock)
    first = await queue(store, 10, "oldest alert", created_at=clock.now)
    await queue(store, 10, "newer alert", created_at=clock.now)
    transport.fail = [DeliveryError("HTTP 503") for _ in range(12)]
    for _ in range(12):  # a long outage: every try fails
        report = await poster.drain()
        assert report.retried == [first]
        head = await store.outbox.get(first)
        assert head is not None and head.not_before is not None
        assert head.not_before - clock.now <= timedelta(seconds=30)
        clock.now = head.not_before
    report = await poster.drain()  # Discord answers again: within one capped wait
    assert transport.texts(10) == ["oldest alert", "newer alert"]


async def test_a_success_elsewhere_ends_the_wait_of_a_server_error(store: Store) -> None:
    transport = MemoryTransport()
    clock = Clock()
    poster = OutboxPoster(store, transport, clock=clock)
    await queue(store, 10, "alert", created_at=clock.now)
    transport.fail = [DeliveryError("HTTP 502")]
    await poster.drain()
    assert transport.texts(10) == []
    await queue(store, 20, "digest", created_at=clock.now)
    report = await poster.drain()  # same instant: channel 10 is still backing off, but 20 worked
    assert transport.texts(20) == ["digest"] and transport.texts(10) == ["alert"]
    assert len(report.sent) == 2
