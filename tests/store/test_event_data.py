"""Each source's event data (`Event.extra`) is a declared type, named by its registration
(`SourceSpec.data`; a chat source's conversations are `ConversationData`): what
the sources write reads back as that type and writes the same JSON again (the on-disk format is
unchanged), a bad write is refused by the store with one line naming the kind and the key, rows
an older version wrote still read, and no reader outside `bot.models` picks keys out of the
dict by name."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.enrich.context import ThreadContext
from bot.enrich.conversations import burst_bounds, conversation_of
from bot.hooks.alertmanager import alert_event, parse_message
from bot.models import (
    SOURCE_SPECS,
    AlertData,
    BadEventData,
    BadRestart,
    ConversationData,
    Event,
    GithubComment,
    GithubReview,
    GithubThread,
    Restart,
    RunInfo,
    SourceSpec,
    WandbState,
    check_event_data,
)
from bot.sources.github_threads import comment_event, issue_event, review_event, thread_context
from bot.store import Store

AT = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
async def hero(store: Store) -> None:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))


def _issue(pull: bool = False) -> dict[str, Any]:
    item: dict[str, Any] = {
        "number": 12,
        "title": "[infra] Node loss at step 40k",
        "body": "details",
        "user": {"login": "ana"},
        "created_at": "2026-09-01T10:00:00Z",
        "updated_at": "2026-09-01T11:00:00Z",
        "html_url": "https://github.com/lab/model/issues/12",
        "state": "open",
        "labels": [{"name": "hero-run"}, {"name": "infra"}],
        "author_association": "MEMBER",
    }
    if pull:
        item["pull_request"] = {"merged_at": "2026-09-01T12:00:00Z"}
    return item


def _written() -> list[tuple[Event, type[Any]]]:
    """One event of every declared (source, kind), as its writer builds it."""
    item = _issue(pull=True)
    comment = {"id": 7, "body": "rerun", "user": {"login": "bo"}, "created_at": AT.isoformat()}
    review = {
        "id": 8,
        "body": "ok",
        "user": {"login": "cy"},
        "submitted_at": AT.isoformat(),
        "state": "APPROVED",
        "author_association": "CONTRIBUTOR",
    }
    messages = [
        Event("hero", "discord", f"msg:{i}", "message", AT + timedelta(minutes=i), body="hi")
        for i in (1, 2)
    ]
    [alert] = parse_message(
        b'{"version": "4", "status": "resolved", "alerts": [{"status": "resolved", '
        b'"labels": {"alertname": "GPUXidError", "instance": "node-17", "severity": "critical"},'
        b' "annotations": {"summary": "Xid 79"}, "startsAt": "2026-09-02T11:00:00Z", '
        b'"endsAt": "2026-09-02T11:30:00Z", "fingerprint": "f00d"}]}'
    )
    restart = Restart(
        at=AT,
        kind="restore",
        wandb_run="lab/pretrain/hero-1",
        from_step=120,
        to_step=100,
        stopped_at=AT - timedelta(minutes=5),
        resumed_at=AT,
    )
    state = WandbState(
        wandb_run="lab/pretrain/hero-1",
        from_state="running",
        to_state="crashed",
        step=120,
        heartbeat_at=AT - timedelta(minutes=1),
        observed_at=AT,
    )
    return [
        (issue_event("hero", "lab/model", _issue()), GithubThread),
        (issue_event("hero", "lab/model", item), GithubThread),
        (
            comment_event("hero", "lab/model", 12, comment, "open", thread_context(item)),
            GithubComment,
        ),
        (comment_event("hero", "lab/model", 12, dict(comment, id=6), "open"), GithubComment),
        (review_event("hero", "lab/model", 12, review, "open", thread_context(item)), GithubReview),
        (conversation_of(messages, "discord:100"), ConversationData),
        (alert_event("hero", alert), AlertData),
        (
            Event("hero", "wandb", "state:x", "state", AT, extra=state.to_json()),
            WandbState,
        ),
        (
            Event("hero", "wandb", "restart:x", "restart", AT, extra=restart.to_json()),
            Restart,
        ),
    ]


def test_every_declared_kind_has_a_writer_here() -> None:
    kinds = {(event.source, event.kind) for event, _ in _written()}
    assert kinds == set(SOURCE_SPECS.declared())


@pytest.mark.parametrize(("event", "data"), _written(), ids=lambda v: getattr(v, "external_id", ""))
def test_what_a_source_writes_reads_back_as_its_type_and_writes_the_same_json(
    event: Event, data: type[Any]
) -> None:
    check_event_data(event)  # what the store runs before a write
    typed = data.of_event(event) if data is Restart else data.of(event)
    assert isinstance(typed, data)
    assert typed.to_json() == event.extra  # same keys, same values: old rows and new agree


def test_the_typed_fields_say_what_the_json_said() -> None:
    events = {event.external_id: event for event, _ in _written()}
    pull = GithubThread.of(events["issue:12"])
    assert pull.labels == ("hero-run", "infra") and pull.author_association == "MEMBER"
    review = GithubReview.of(events["review:8"])
    assert review.review_state == "APPROVED" and review.thread_kind == "pull"
    assert review.thread_prefix == "infra" and review.author_association == "CONTRIBUTOR"
    assert GithubComment.of(events["comment:7"]).thread_title == "[infra] Node loss at step 40k"
    conversation = ConversationData.of(events["conv:1"])
    assert conversation.messages == ("msg:1", "msg:2") and conversation.count == 2
    assert conversation.until == AT + timedelta(minutes=2)
    alert = AlertData.of(next(e for e in events.values() if e.source == "alertmanager"))
    assert (alert.alertname, alert.instance, alert.severity) == (
        "GPUXidError",
        "node-17",
        "critical",
    )
    assert alert.ends_at == datetime(2026, 9, 2, 11, 30, tzinfo=UTC)
    state = WandbState.of(events["state:x"])
    assert (state.from_state, state.to_state, state.step) == ("running", "crashed", 120)


def test_reading_the_wrong_kind_says_so() -> None:
    event = Event("hero", "wandb", "state:x", "state", AT, extra={"to_state": "running"})
    with pytest.raises(
        BadEventData, match=r"^wandb state event 'state:x' does not carry AlertData$"
    ):
        AlertData.of(event)


async def _refused(store: Store, event: Event, message: str) -> None:
    with pytest.raises(BadEventData, match=message) as caught:
        await store.events.upsert_many([event])
    assert "\n" not in str(caught.value)
    assert (
        await store.events.get_by_external(event.run_slug, event.source, event.external_id) is None
    )


async def test_the_store_refuses_a_renamed_key_naming_the_kind_and_the_key(store: Store) -> None:
    good = Event("hero", "wandb", "state:a", "state", AT, extra={"to_state": "crashed"})
    bad = Event("hero", "wandb", "state:b", "state", AT, extra={"to_sate": "crashed"})
    with pytest.raises(BadEventData, match=r"^wandb state event 'state:b': unknown key 'to_sate'$"):
        await store.events.upsert_many([good, bad])
    # the batch is refused before anything is written: the good one is not half-stored either
    assert await store.events.get_by_external("hero", "wandb", "state:a") is None
    await store.events.upsert_many([good])
    stored = await store.events.get_by_external("hero", "wandb", "state:a")
    assert stored is not None and WandbState.of(stored).to_state == "crashed"


async def test_the_store_refuses_a_value_of_the_wrong_type(store: Store) -> None:
    await _refused(
        store,
        Event("hero", "wandb", "state:c", "state", AT, extra={"step": "120"}),
        r"wandb state event 'state:c': key 'step' must be an integer or null, not '120'",
    )
    await _refused(
        store,
        Event("hero", "discord", "conv:1", "conversation", AT, extra={"messages": "msg:1"}),
        r"discord conversation event 'conv:1': key 'messages' must be a list of text",
    )
    await _refused(
        store,
        Event("hero", "alertmanager", "alert:f:1", "alert", AT, extra={"alertname": "Xid"}),
        r"alertmanager alert event 'alert:f:1': key 'fingerprint' is missing",
    )


async def test_the_store_refuses_data_on_a_kind_that_declares_none(store: Store) -> None:
    await _refused(
        store,
        Event("hero", "discord", "msg:1", "message", AT, extra={"author_association": "OWNER"}),
        r"discord message event 'msg:1': no data is declared for it, yet it has key "
        r"'author_association'",
    )


async def test_the_store_refuses_a_restart_with_an_unknown_key(store: Store) -> None:
    extra = {"restart": "restore", "wandb_run": "e/p/r", "to_step": 5, "downtime": 60}
    event = Event("hero", "wandb", "restart:r", "restart", AT, extra=extra)
    with pytest.raises(
        BadRestart, match=r"wandb restart event 'restart:r'.*unknown key 'downtime'"
    ):
        await store.events.upsert_many([event])


async def test_rows_an_older_version_wrote_still_read(store: Store) -> None:
    """Rows as they stand in existing databases: a restart from before the typed restart (no
    times, no derived figures), a state change with a key since dropped, a comment recorded
    before threads were, a conversation without its end."""
    old = [
        (
            "wandb",
            "restart:restore:e/p/r:100",
            "restart",
            '{"restart": "restore", "from_step": 120, "to_step": 100, "wandb_run": "e/p/r"}',
        ),
        ("wandb", "state:e/p/r", "state", '{"to_state": "crashed", "seen_by": "poller-1"}'),
        ("github", "comment:5", "comment", '{"author_association": "OWNER"}'),
        ("discord", "conv:9", "conversation", '{"messages": ["msg:9", "msg:10"], "count": 2}'),
    ]
    async with store.db.transaction() as conn:
        for source, external_id, kind, extra in old:
            await conn.execute(
                "INSERT INTO events (run_slug, source, external_id, kind, at, extra, content_hash) "
                "VALUES ('hero', ?, ?, ?, '2026-09-02T12:00:00.000000Z', ?, 'h')",
                (source, external_id, kind, extra),
            )

    [restart] = await store.events.restarts("hero")
    assert (restart.from_step, restart.to_step, restart.recomputed_steps) == (120, 100, 20)
    assert restart.down_for is None and restart.at == AT
    state = await store.events.get_by_external("hero", "wandb", "state:e/p/r")
    assert state is not None and WandbState.of(state).to_state == "crashed"
    comment = await store.events.get_by_external("hero", "github", "comment:5")
    assert comment is not None and ThreadContext.of(comment).trusted is True
    assert ThreadContext.of(comment).title == ""
    conversation = await store.events.get_by_external("hero", "discord", "conv:9")
    assert conversation is not None
    assert burst_bounds(conversation) == (AT, AT, 2)  # no end recorded: its own time


def test_no_reader_outside_the_models_picks_a_key_out_of_extra() -> None:
    """`event.extra["key"]` and `event.extra.get("key")` only in `bot.models` (the declared
    types): everywhere else reads a typed field, so a renamed key is a mypy error."""
    found = []
    for path in [*(ROOT / "bot").rglob("*.py"), *(ROOT / "cogs").rglob("*.py")]:
        if path == ROOT / "bot" / "models.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            picked = (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "extra"
            ) or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "pop", "setdefault")
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "extra"
            )
            if picked:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_a_new_source_declares_its_data_in_its_one_registration() -> None:
    """A source registered with `data` has its events' data checked and read by that type; a
    chat source's conversations carry `ConversationData` without saying so."""
    spec = SOURCE_SPECS.register(
        SourceSpec("matrix", "Matrix", people=True, polled=False, chat=True, data=(AlertData,))
    )
    try:
        alert = Event("hero", "matrix", "alert:1", "alert", AT, extra={"fingerprint": "f"})
        assert AlertData.of(alert).fingerprint == "f"
        assert SOURCE_SPECS.data_of("matrix", "conversation") is ConversationData
        assert SOURCE_SPECS.data_of("matrix", "message") is None
        with pytest.raises(BadEventData, match=r"^matrix alert event 'alert:2': unknown key 'x'$"):
            check_event_data(Event("hero", "matrix", "alert:2", "alert", AT, extra={"x": 1}))
        with pytest.raises(BadEventData, match=r"'conv:1': key 'count' must be an integer"):
            check_event_data(
                Event("hero", "matrix", "conv:1", "conversation", AT, extra={"count": "2"})
            )
    finally:
        SOURCE_SPECS.unregister(spec.name)


def test_two_data_types_cannot_declare_one_kind() -> None:
    with pytest.raises(ValueError, match="two data types declare one kind"):
        SourceSpec("twice", "Twice", people=False, data=(GithubComment, GithubComment))


def test_a_restart_is_read_only_from_the_kind_registered_for_it() -> None:
    restart = Restart(at=AT, kind="new-run", wandb_run="e/p/b", previous_run="e/p/a")
    state = Event("hero", "wandb", "state:x", "state", AT, extra=restart.to_json())
    with pytest.raises(BadRestart, match=r"^event 'state:x' is not a restart$"):
        Restart.of_event(state)
    assert (
        Restart.of_event(
            Event("hero", "wandb", "restart:x", "restart", AT, extra=restart.to_json())
        )
        == restart
    )
