"""Every stored JSON shape reads back from the JSON as the hand-written codecs wrote it (the
fixtures in tests/data/stored_shapes were captured from that code before the one codec replaced
it) and writes back byte for byte: event data, restarts, incident details, forecast trackers and
outbox payloads. A key renamed, a time written in another format or a default dropped fails
here, not on a user's old database."""

from __future__ import annotations

import json
from collections import deque
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.analysis.forecast import Episode, Fit, Observation, Tracker
from bot.config.runsfile import ForecastConfig
from bot.models import (
    AlertData,
    ConversationData,
    EventData,
    GithubComment,
    GithubReview,
    GithubThread,
    IncidentAction,
    IncidentDetails,
    IncidentMember,
    IncidentSignal,
    Recurrence,
    ReportedCause,
    Restart,
    WandbState,
)
from bot.outbox.payload import LiveSpec, PayloadError, make_payload, parse_payload
from bot.render.cards import Card, CardField
from bot.store.codec import to_json
from bot.store.incidents import details_from_json, details_to_json

SHAPES = Path(__file__).resolve().parents[1] / "data" / "stored_shapes"
T = datetime(2026, 3, 1, 12, 30, 15, 250000, tzinfo=UTC)


def _fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SHAPES / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


EVENT_DATA: dict[str, EventData] = {
    "github_thread": GithubThread(
        labels=("bug", "infra"), merged_at="2026-03-01T12:00:00Z", author_association="MEMBER"
    ),
    "github_thread_sparse": GithubThread(),
    "github_comment": GithubComment(
        thread_title="Loss spike",
        thread_prefix="infra",
        thread_labels=("a",),
        thread_kind="issue",
        author_association="OWNER",
    ),
    "github_comment_sparse": GithubComment(),
    "github_review": GithubReview(thread_title="Fix", thread_kind="pull", review_state="APPROVED"),
    "wandb_state": WandbState(
        wandb_run="e/p/r1",
        from_state="running",
        to_state="crashed",
        step=1200,
        heartbeat_at=T.replace(microsecond=0),
        observed_at=T.replace(microsecond=0) + timedelta(minutes=1),
    ),
    "wandb_state_sparse": WandbState(),
    "conversation": ConversationData(messages=("m1", "m2", "m3"), count=3, until=T),
    "conversation_sparse": ConversationData(),
    "alert": AlertData(
        fingerprint="fp1",
        alertname="NodeDown",
        severity="critical",
        instance="n1",
        summary="s",
        description="d",
        labels={"job": "x"},
        ends_at=T,
        truncated=2,
        unseen=True,
        runbook_url="https://r",
        generator_url="https://g",
    ),
    "alert_sparse": AlertData(fingerprint="fp2"),
}


@pytest.mark.parametrize("name", sorted(EVENT_DATA))
def test_event_data_reads_and_writes_the_stored_shape(name: str) -> None:
    stored = _fixture("event_data")[name]
    expected = EVENT_DATA[name]
    read = type(expected).from_json(stored, strict=True)
    # WandbState keeps whole seconds and ConversationData the store's own format: compare what
    # the stored text says, then that writing it again gives the same text.
    assert type(expected).from_json(expected.to_json()) == read
    assert read.to_json() == stored


NEW_RUN = Restart(
    at=T,
    kind="new-run",
    wandb_run="e/p/r2",
    previous_run="e/p/r1",
    from_step=900,
    stopped_at=T - timedelta(hours=1),
    cause="W&B run r1 crashed",
)
RESTORE = Restart(
    at=T,
    kind="restore",
    wandb_run="e/p/r1",
    from_step=1000,
    to_step=800,
    stopped_at=T - timedelta(minutes=30),
    resumed_at=T,
    interval=25,
)


@pytest.mark.parametrize(("name", "restart"), [("new_run", NEW_RUN), ("restore", RESTORE)])
def test_restart_reads_and_writes_the_stored_shape(name: str, restart: Restart) -> None:
    stored = _fixture("restart")[name]
    read = Restart.from_json(T, stored, strict=True)
    assert read == restart
    assert read.to_json() == stored


def test_restart_ignores_derived_figures_it_stored() -> None:
    stored = dict(_fixture("restart")["restore"], checkpoint_step=1, recomputed_steps=1)
    assert Restart.from_json(T, stored) == RESTORE


FULL_DETAILS = IncidentDetails(
    group="outage",
    members={
        "crash": IncidentMember(
            kind="crash",
            title="Run crashed",
            since=T,
            until=T + timedelta(hours=1),
            seen_at=T,
            resolution="came back",
            last_report_at=T,
            facts={"step": 5, "why": ["a"]},
            restart=RESTORE,
        ),
        "stall": IncidentMember(kind="stall", title="Stalled", since=T),
    },
    signals=[
        IncidentSignal(event_id=7, at=T, source="GitHub #1", text="down", url="https://x"),
        IncidentSignal(event_id=None, at=T, source="W&B r", text="t"),
    ],
    threads=["gh-1", "dc-2"],
    flaps=2,
    clear_since=T,
    fired=True,
    notified=True,
    fired_outbox_id=11,
    head_hash="abc",
    edits=3,
    resolved_posted=True,
    silenced_by=4,
    reminders=2,
    last_reminder_at=T,
    reported_cause=ReportedCause(
        text="OOM", author="ann", source="Discord #run", at=T, url=None, event_id=9
    ),
    acted_by="bob",
    action=IncidentAction(
        who="bob", at=T, text="requeued", source="Discord #run", url="https://u", event_id=10
    ),
    credited=True,
    acted_checked_until=T,
    recurrence=Recurrence(3, 42, T - timedelta(days=1)),
)


@pytest.mark.parametrize(
    ("name", "details"), [("full", FULL_DETAILS), ("empty", IncidentDetails())]
)
def test_incident_details_read_and_write_the_stored_shape(
    name: str, details: IncidentDetails
) -> None:
    stored = _fixture("incident_details")[name]
    read = details_from_json(to_json(stored))
    assert read == details
    assert details_to_json(read) == to_json(stored)


def test_incident_details_read_rows_from_before_later_keys() -> None:
    """An old row: no recurrence, action or cause keys, null counters, a half-written cause."""
    stored = _fixture("incident_details")["full"]
    for key in ("recurrence", "action", "acted_checked_until", "credited", "acted_by"):
        del stored[key]
    stored.update(edits=None, reminders=None, reported_cause={"text": "x"})
    read = details_from_json(to_json(stored))
    assert (read.recurrence, read.action, read.reported_cause) == (None, None, None)
    assert (read.edits, read.reminders, read.credited) == (0, 0, False)
    assert read.members == FULL_DETAILS.members
    assert details_from_json("") == IncidentDetails()


def _obs(step: int, value: float, forecast: float | None = None) -> Observation:
    return Observation(
        step=step,
        at=T + timedelta(seconds=step),
        value=value,
        forecast=forecast,
        low=None if forecast is None else forecast - 0.1,
        high=None if forecast is None else forecast + 0.1,
    )


CONFIG = ForecastConfig(metric="loss")
TRACKER = Tracker(
    CONFIG,
    window=deque([(1, 3.0), (2, 2.5)]),
    run="e/p/r1",
    seen=40,
    restarts=1,
    fit=Fit(anchor=2.0, slope=-0.01, intercept=2.4, width=0.2, start=1.0),
    since_fit=3,
    last=_obs(32, 1.3),
    outside=2,
    outside_dir="down",
    outside_first=_obs(30, 1.5, 2.0),
    inside=1,
    held=2,
    episode=Episode(
        direction="down",
        start=_obs(30, 1.5, 2.0),
        confirmed=_obs(31, 1.4, 2.0),
        peak=_obs(32, 1.3, 2.0),
    ),
    closed=[
        Episode(
            direction="up",
            start=_obs(10, 2.5, 2.0),
            confirmed=_obs(12, 2.6, 2.0),
            peak=_obs(13, 2.9, 2.0),
            end=_obs(20, 2.0, 2.0),
            resolution="back",
            undone=True,
        )
    ],
)


@pytest.mark.parametrize(("name", "tracker"), [("full", TRACKER), ("empty", Tracker(CONFIG))])
def test_forecast_tracker_reads_and_writes_the_stored_shape(name: str, tracker: Tracker) -> None:
    stored = _fixture("forecast_tracker")[name]
    read = Tracker.from_json(CONFIG, stored)
    assert read == tracker
    assert read.as_json() == stored


def test_forecast_tracker_of_another_version_starts_over() -> None:
    stored = dict(_fixture("forecast_tracker")["full"], v=0)
    assert Tracker.from_json(CONFIG, stored) == Tracker(CONFIG)


CARD = Card(
    title="Crash",
    description="Run crashed",
    color="bad",
    url="https://w",
    fields=[CardField("Step", "5", True), CardField("Why", "OOM")],
    footer="f",
    image="https://i",
)


def test_outbox_payload_reads_and_writes_the_stored_shape() -> None:
    stored = _fixture("outbox_payload")
    full = parse_payload(stored["full"])
    assert (full.content, full.card, full.thread_name, full.edit_of) == (
        "hello",
        CARD,
        "incident",
        3,
    )
    assert full.buttons == [{"custom_id": "ack:1", "label": "Ack"}]
    assert (full.thread_only, full.ping_role, full.archive_thread) == (True, 99, True)
    assert full.live == LiveSpec("run", "v1", True)
    assert full.color_value is None
    again = make_payload(
        full.content,
        full.card,
        thread_name=full.thread_name,
        edit_of=full.edit_of,
        buttons=full.buttons,
        thread_only=full.thread_only,
        ping_role=full.ping_role,
        archive_thread=full.archive_thread,
        live=full.live,
    )
    assert again == stored["full"]
    content_only = parse_payload(stored["content_only"])
    assert make_payload(content_only.content) == stored["content_only"]
    card_only = parse_payload(stored["card_only"])
    assert card_only.card == Card(title="t", description="d")
    assert make_payload(card=card_only.card) == stored["card_only"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"content": "x", "live": {}}, "live needs the run's slug"),
        ({"content": "x", "buttons": [{"label": "Ack"}]}, "each button needs a custom_id"),
        ({"content": "x", "edit_of": "3"}, "edit_of"),
        ({"content": " ", "card": None}, "a post needs content or a card"),
        (["x"], "JSON object"),
    ],
)
def test_a_malformed_payload_is_refused_saying_why(payload: Any, message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        parse_payload(payload)
