"""Discord bursts grouped into conversations (pure: events in, events out)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.enrich.conversations import (
    GAP,
    MAX_MESSAGES,
    MAX_SPAN,
    context_lines,
    folds,
    group_conversations,
)
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
    assert conversation.extra == {
        "messages": ["msg:1", "msg:2", "msg:3"],
        "count": 3,
        "until": "2026-09-02T09:09:00.000000Z",  # the last message's time
    }


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


def test_a_long_chat_is_cut_into_conversations_of_bounded_size() -> None:
    """A channel that never pauses for GAP still gets entries a reader can take in: a
    conversation closes at MAX_MESSAGES messages or MAX_SPAN, and the next message starts the
    next one. Every message is in exactly one conversation."""
    every = 1.5  # minutes apart, never a GAP
    chat = [message(i, i * every) for i in range(1, 121)]
    out = group_conversations(chat)
    assert all(e.kind == "conversation" for e in out)
    members = [m for e in out for m in e.extra["messages"]]
    assert sorted(members) == sorted(m.external_id for m in chat)  # each exactly once
    assert all(e.extra["count"] <= MAX_MESSAGES for e in out)
    for conversation in out:
        span = datetime.fromisoformat(conversation.extra["until"]) - conversation.at
        assert span < MAX_SPAN
    assert len(out) == -(-120 * every // (MAX_SPAN.total_seconds() / 60))  # 1 h of chat each

    busy = [message(i, i * 0.1) for i in range(1, 2 * MAX_MESSAGES + 2)]  # 10 a minute
    out = group_conversations(busy)
    counts = [e.extra["count"] if e.kind == "conversation" else 1 for e in out]
    assert counts == [MAX_MESSAGES, MAX_MESSAGES, 1]


def test_only_chit_chat_is_folded_into_a_conversation() -> None:
    for text in ("Morning all!", "+1", "thanks dave!", "anyone grabbing lunch?", "nice 🎉"):
        assert folds(message(1, 0, body=text)), text
    for text in (
        "node lost, ECC errors on host 12",  # a report
        "I drained host 12 and requeued",  # an action
        "let's rotate the spare pool on Friday",  # a decision
        "two GPUs on gb-r14-n3 overheating, step time 17 s -> 26 s",  # numbers the rules miss
    ):
        assert not folds(message(1, 0, body=text)), text


def test_a_message_is_read_against_what_was_said_before_it() -> None:
    burst = [
        message(1, 0, "ana", "step time went from 17 s to 26 s"),
        message(2, 1, "bo", "two GPUs on gb-r14-n3 overheating"),
        message(3, 2, "cy", "draining it"),
    ]
    earlier = message(0, -30, "dee", "lunch?")  # an earlier burst: not context
    channel = [earlier, *burst]
    assert context_lines(channel, burst[0]) == []
    assert context_lines(list(reversed(channel)), burst[2]) == [
        "ana: step time went from 17 s to 26 s",
        "bo: two GPUs on gb-r14-n3 overheating",
    ]
    assert context_lines(channel, burst[2], limit=40) == [
        "bo: two GPUs on gb-r14-n3 overheating"  # the latest kept when not all fit
    ]
    assert context_lines(channel, message(9, 3)) == []  # not in the channel
