"""Discord bursts grouped into conversations (pure: events in, events out)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.enrich.conversations import GAP, group_conversations
from bot.models import Event

T0 = datetime(2026, 9, 2, 9, 0, tzinfo=UTC)


def message(
    mid: int,
    minutes: float,
    author: str | None = "ana",
    body: str = "hi",
    channel: str = "discord:100",
    **changes: object,
) -> Event:
    event = Event(
        run_slug="hero",
        source="discord",
        external_id=f"msg:{mid}",
        kind="message",
        at=T0 + timedelta(minutes=minutes),
        author=author,
        ref="#hero-run",
        url=f"https://discord.com/channels/1/100/{mid}",
        body=body,
        thread=channel,
    )
    for key, value in changes.items():
        setattr(event, key, value)
    return event


def test_a_burst_becomes_one_conversation_keyed_by_its_first_message() -> None:
    burst = [
        message(1, 0, "ana", "node s6   lost\nagain"),
        message(2, 4, "bo", "restarting from 76k"),
        message(3, 9, "ana", "ok", updated_at=T0 + timedelta(minutes=30)),
    ]
    [conversation] = group_conversations(list(reversed(burst)))  # input order does not matter
    assert conversation.kind == "conversation" and conversation.external_id == "conv:1"
    assert conversation.author == "ana and bo"
    assert conversation.body == "ana: node s6 lost again\nbo: restarting from 76k\nana: ok"
    assert conversation.at == T0 and conversation.updated_at == T0 + timedelta(minutes=30)
    assert conversation.thread == "discord:100" and conversation.url == burst[0].url
    assert conversation.extra == {"messages": ["msg:1", "msg:2", "msg:3"], "count": 3}


def test_a_gap_longer_than_the_limit_starts_a_new_conversation() -> None:
    events = [
        message(1, 0),
        message(2, 5),
        message(3, 5 + GAP.total_seconds() / 60 + 1),  # just past the gap: alone
        message(4, 60),
        message(5, 60 + GAP.total_seconds() / 60),  # exactly the gap: still together
    ]
    out = group_conversations(events)
    assert [(e.kind, e.external_id) for e in out] == [
        ("conversation", "conv:1"),
        ("message", "msg:3"),
        ("conversation", "conv:4"),
    ]


def test_channels_and_runs_are_grouped_apart_and_others_pass_through() -> None:
    other_channel = message(2, 1, channel="discord:200")
    other_run = message(3, 2)
    other_run.run_slug = "side"
    github = Event("hero", "github", "comment:9", "comment", T0 + timedelta(seconds=30))
    deleted = message(4, 3, deleted=True)
    out = group_conversations([message(1, 0), other_channel, other_run, github, deleted])
    assert [e.external_id for e in out] == ["msg:1", "comment:9", "msg:2", "msg:3", "msg:4"]
    assert all(e.kind != "conversation" for e in out)  # lone messages stay messages


def test_author_names_are_shortened_for_big_groups() -> None:
    names = ["ana", "bo", "cy", "di", "ed"]
    burst = [message(i, i, name) for i, name in enumerate(names, 1)]
    assert group_conversations(burst[:3])[0].author == "ana, bo and cy"
    assert group_conversations(burst)[0].author == "ana, bo and 3 others"
    unnamed = [message(1, 0, None), message(2, 1, None)]
    [conversation] = group_conversations(unnamed)
    assert conversation.author == "someone" and conversation.body == "someone: hi\nsomeone: hi"
