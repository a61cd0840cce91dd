"""A template narrative that reaches the point, on a real store and through
`current_narrative` (what a no-key /status shows): a long reported cause is quoted to the end
of its sentence, never cut mid-word; "normally" is never said while an incident is open or a
source fails; the current W&B run is named; the last restart says why and how long training
was down; chit-chat is never quoted."""

from __future__ import annotations

from datetime import timedelta

from bot.models import RESTORE, Event, Incident, IncidentDetails, ReportedCause, Restart
from bot.narrative.templates import NARRATIVE_MAX_CHARS, within
from bot.services.narrative import current_narrative
from bot.services.status import build_status
from bot.store import Store
from tests.services.test_plain_status import add_events
from tests.services.test_status import NOW, seed

LONG_CAUSE = (
    "Hero is down since the 09:00 checkpoint save: the gang scheduler lost contact with two "
    "of the sixteen nodes in rack 4 while the optimizer state was being written, and both "
    "show uncorrectable ECC errors on host 12 in the BMC log, so the save never finished."
)


async def narrative_text(store: Store) -> str:
    return (await current_narrative(store, await build_status(store, "hero", NOW))).text


async def test_an_open_incident_quotes_the_whole_cause_and_is_not_normal(store: Store) -> None:
    await seed(store)  # W&B still says running
    cause = ReportedCause(LONG_CAUSE, "bob", "Discord #hero-run", NOW - timedelta(minutes=5))
    await store.incidents.save(
        Incident(
            "hero",
            "report:hardware:discord:2",
            "hardware",
            "Hardware fault reported in Discord #hero-run by bob",
            "firing",
            NOW - timedelta(minutes=6),
            details=IncidentDetails(reported_cause=cause),
        )
    )
    text = await narrative_text(store)
    assert text.startswith("Training is running in W&B run hero-1. It needs attention:")
    assert "normally" not in text
    assert f"bob reported: {LONG_CAUSE}" in text  # to its last word
    assert len(LONG_CAUSE) > 240  # the old cut would have stopped inside it


async def test_a_failing_source_is_said_and_nothing_is_normal(store: Store) -> None:
    await seed(store)
    await store.health.record_failure("wandb", "hero", NOW, "W&B answered 502", None)
    text = await narrative_text(store)
    assert "normally" not in text
    assert "W&B is failing to answer Runscribe" in text


async def test_the_last_restart_says_why_and_how_long_it_was_down(store: Store) -> None:
    await seed(store)
    stopped = NOW - timedelta(hours=5)
    resumed = stopped + timedelta(minutes=47)
    restart = Restart(
        resumed,
        RESTORE,
        "lab/hero/hero-1",
        from_step=4_300,
        to_step=4_200,
        stopped_at=stopped,
        resumed_at=resumed,
    )
    await add_events(
        store,
        [
            Event(
                "hero",
                "wandb",
                "restart:r",
                "restart",
                resumed,
                ref="hero-1",
                title="W&B run hero-1 resumed from step 4,200",
                extra=restart.to_json(),
            ),
            Event(
                "hero",
                "discord",
                "msg:9",
                "message",
                NOW - timedelta(hours=1),
                author="erin",
                ref="#hero-run",
                body="anyone grabbing lunch?",
                summary="anyone grabbing lunch?",
            ),
        ],
    )
    await store.incidents.save(
        Incident(
            "hero",
            "wandb-state",
            "crash",
            "W&B run hero-1 crashed at step 4,300",
            "resolved",
            stopped,
            resolved_at=resumed,
            details=IncidentDetails(
                reported_cause=ReportedCause(
                    "node lost, ECC errors on host 12.", "bob", "Discord #hero-run", stopped
                )
            ),
        )
    )
    text = await narrative_text(store)
    assert (
        "It last restarted from a checkpoint on Sep 2 at 3:47 a.m. EDT, after 47 min down. "
        "Before the last restart, bob reported: node lost, ECC errors on host 12." in text
    ), text
    assert "lunch" not in text  # chit-chat is never a "Latest" line


def test_length_is_cut_at_lines_and_sentences() -> None:
    story = "Training is running in W&B run hero-2. " + "It needs attention: a fault. " * 10
    lines = "\n".join(f"• W&B: line number {i} of the list" for i in range(200))
    text = within([story.strip(), "Latest:\n" + lines], NARRATIVE_MAX_CHARS)
    assert len(text) <= NARRATIVE_MAX_CHARS
    assert text.startswith(story.strip())
    assert text.endswith("of the list")  # a whole line, never a cut one
    cut = within(["A sentence here. " * 200], 100)
    assert len(cut) <= 100 and cut.endswith("here.")
