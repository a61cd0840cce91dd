"""/status and the digest say things once, plainly, on a real store: the
narrative leaves the card's numbers to its fields, "Latest" is a short credited list, the
projected end and the rate window are honest, no internal word reaches a reader, and the
digest tells incidents, restarts and decisions before chat, without routine W&B state lines."""

from __future__ import annotations

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

from bot.models import RESTORE, Event, Incident, IncidentDetails, ReportedCause, Restart
from bot.render.cards import digest_card, status_card
from bot.render.terminal import local_formatter, render_card
from bot.services.digest import build_digest
from bot.services.narrative import Narrative, current_narrative
from bot.services.status import build_status
from bot.store import Store
from tests.services.test_status import NOW, seed

#: Words that are Runscribe's internals, never a reader's.
INTERNAL = re.compile(
    r"Someone|template|outbox|severity|wandb-state|\(LLM\)|narrative \(|loss-nan|monitor-stale",
    re.IGNORECASE,
)
NUMBER = re.compile(r"\d[\d,.]*\d|\d")


async def add_events(store: Store, events: list[Event]) -> None:
    await store.events.upsert_many(events)
    for event in events:
        await store.events.set_enrichment(
            event,
            summary=event.summary or event.title or "",
            tag=event.tag or "other",
            incident=event.incident,
            severity=None,
            newsworthy=True,
            enriched_by="test",
        )


def wandb_state(key: str, hours: float, old: str | None, new: str) -> Event:
    title = f"W&B run hero-1 went from {old} to {new}" if old else f"W&B run hero-1 is {new}"
    return Event(
        "hero",
        "wandb",
        f"state:{key}",
        "state",
        NOW - timedelta(hours=hours),
        ref="hero-1",
        state=new,
        title=title,
        summary=title,
        tag="incident" if new == "crashed" else "infra",
        incident=new == "crashed",
        extra={"from_state": old, "to_state": new},
    )


def day_of_events() -> list[Event]:
    """A day with a crash, a restart, a merged fix, a result on GitHub, chat and W&B churn."""
    return [
        Event(
            "hero",
            "discord",
            "msg:1",
            "message",
            NOW - timedelta(hours=1),
            author="Dana",
            ref="#hero-run",
            body="nice curve",
            summary="Dana likes how smooth the loss curve looks since the restart.",
            tag="other",
        ),
        wandb_state("1", 2, None, "running"),
        wandb_state("2", 5, "crashed", "running"),
        Event(
            "hero",
            "github",
            "state:12:merged",
            "state",
            NOW - timedelta(hours=3),
            ref="#12",
            url="https://github.com/o/r/pull/12",
            state="merged",
            title="merged #12",
            summary="Merged the launcher fix that times out a stuck restore barrier.",
            tag="infra",
        ),
        Event(
            "hero",
            "github",
            "comment:7",
            "comment",
            NOW - timedelta(hours=4),
            author="ada",
            ref="#9",
            url="https://github.com/o/r/issues/9",
            state="open",
            summary="Evals at the new checkpoint beat the ladder prediction on every subset.",
            tag="evals",
        ),
        Event(
            "hero",
            "wandb",
            "restart:1",
            "restart",
            NOW - timedelta(hours=5),
            ref="hero-1",
            state="running",
            title="W&B run hero-1 resumed from step 4,200",
            summary="W&B run hero-1 resumed from step 4,200 (last step before: 4,300)",
            tag="checkpointing",
            extra=Restart(
                NOW - timedelta(hours=5), RESTORE, "lab/hero/hero-1", from_step=4_300, to_step=4_200
            ).to_json(),
        ),
        wandb_state("3", 6, "running", "crashed"),
    ]


async def test_narrative_leaves_the_card_numbers_to_the_fields(store: Store) -> None:
    await seed(store)
    await add_events(store, day_of_events())
    report = await build_status(store, "hero", NOW)
    narrative = await current_narrative(store, report)
    card = status_card(report, narrative, local_formatter("America/New_York", NOW))
    head = card.description[: card.description.index(narrative.text)]
    fields = "\n".join(f.value for f in card.fields if f.name != "Links")
    shown = set(NUMBER.findall(head + "\n" + fields)) - {"1", "2", "3"}  # small counts aside
    assert {"4,800", "10,000", "48.0"} <= shown  # the card does show them...
    said = set(NUMBER.findall(narrative.text))
    # The narrative tells the story of the last restart (when, why), as the reference page's
    # first paragraph does: its time may be said again; the card's other numbers may not.
    assert report.last_restart is not None
    local = report.last_restart.at.astimezone(ZoneInfo("America/New_York"))
    restart_time = {f"{local.hour % 12 or 12}", f"{local.hour:02d}", f"{local.minute:02d}"}
    restated = (shown & said) - restart_time
    assert not restated, f"the narrative restates {restated}"  # ...the narrative does not
    assert "• #9 #9" not in card.description  # an untitled thread shows its reference once


async def test_latest_is_a_short_credited_list(store: Store) -> None:
    await seed(store)
    await add_events(store, day_of_events())
    report = await build_status(store, "hero", NOW)
    narrative = await current_narrative(store, report)
    assert "Someone" not in narrative.text
    latest = narrative.text.split("Latest:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert 1 <= len(latest) <= 3 and all(line.startswith("• ") for line in latest)
    assert all(len(line) <= 200 for line in latest)  # one line each
    credits = [line[2:].split(" (", 1)[0].split(":", 1)[0] for line in latest]
    assert "W&B" in credits  # the monitor's own events are credited to it
    assert not any("is running" in line or "to running" in line for line in latest)  # churn


async def test_open_incident_narrative_says_who_reported_what(store: Store) -> None:
    await seed(store, state="crashed")
    cause = ReportedCause(
        text="Node r12n4 lost, double-bit ECC on GPU 3. Requeueing onto a spare.",
        author="Dana",
        source="Discord #hero-run",
        at=NOW - timedelta(minutes=20),
    )
    await store.incidents.save(
        Incident(
            "hero",
            "wandb-state",
            "crash",
            "W&B reports run hero-1 as crashed",
            "firing",
            NOW - timedelta(minutes=30),
            severity="critical",
            details=IncidentDetails(reported_cause=cause),
        )
    )
    report = await build_status(store, "hero", NOW)
    narrative = await current_narrative(store, report)
    # the current W&B run by name, and never "normally" beside an open incident
    assert narrative.text.startswith("Training is stopped: W&B reports run hero-1 as crashed.")
    assert "normally" not in narrative.text
    assert "Dana reported: Node r12n4 lost, double-bit ECC on GPU 3." in narrative.text
    card = render_card(status_card(report, narrative, local_formatter("UTC", NOW)))
    assert not INTERNAL.search(card), INTERNAL.search(card)


async def test_young_run_card_names_the_real_window_and_an_honest_end(store: Store) -> None:
    await seed(store, hours=3)
    report = await build_status(store, "hero", NOW)
    assert report.progress.rate_window == timedelta(hours=3)
    narrative = await current_narrative(store, report)
    text = render_card(status_card(report, narrative, local_formatter("America/New_York", NOW)))
    assert "at 100 steps/h over the last 3 h, downtime included" in text
    assert "24 h" not in text
    # 9,700 steps left at 100/h: 97 h. From three hours of data the margin is
    # 97 h × 2 × 0.1 × sqrt(1/3 + 1/97) = 11.4 h: a day, never a countdown ("in 4 d 1 h")
    assert report.projected_margin is not None
    assert abs(report.projected_margin.total_seconds() / 3600 - 11.37) < 0.05
    schedule = text.split("Schedule:\n", 1)[1].split("\n\n", 1)[0]
    assert "projected end around Sep 6, 2026" in schedule
    assert not re.search(r"\bin \d+ d\b", text)


async def test_no_internal_words_on_cards_or_in_the_terminal(store: Store) -> None:
    await seed(store)
    await add_events(store, day_of_events())
    report = await build_status(store, "hero", NOW)
    fmt = local_formatter("America/New_York", NOW)
    for narrative in (
        await current_narrative(store, report),
        Narrative("Hero is training.", NOW - timedelta(minutes=5), "llm", NOW),
    ):
        text = render_card(status_card(report, narrative, fmt))
        assert not INTERNAL.search(text), INTERNAL.search(text)
    digest = await build_digest(store, "hero", NOW)
    text = render_card(digest_card(digest, fmt))
    assert digest.by == "template" and not INTERNAL.search(text), INTERNAL.search(text)


async def test_digest_ranks_what_broke_and_what_was_decided_before_chat(store: Store) -> None:
    await seed(store)
    await add_events(store, day_of_events())
    digest = await build_digest(store, "hero", NOW)
    happened = digest.text.split("What happened:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert happened == [
        "- W&B in hero-1: W&B run hero-1 went from running to crashed.",
        # (the restart is told once, by the digest's restarts paragraph)
        "- GitHub in #12: Merged the launcher fix that times out a stuck restore barrier.",
        "- ada in #9: Evals at the new checkpoint beat the ladder prediction on every subset.",
        "- Dana in #hero-run: Dana likes how smooth the loss curve looks since the restart.",
    ]
    # routine W&B state lines are news nowhere in the digest
    assert "hero-1 is running" not in digest.text and "crashed to running" not in digest.text
    assert all("running" not in e.summary or "crashed" in e.summary for e in digest.entries)
    assert digest.events_in_window == 5


async def test_a_restart_older_than_a_week_still_says_what_a_person_reported(
    store: Store,
) -> None:
    await seed(store)
    crashed_at = NOW - timedelta(days=8, hours=3)
    restart = Event(
        "hero",
        "wandb",
        "restart:old",
        "restart",
        NOW - timedelta(days=8),
        ref="hero-1",
        title="W&B run hero-1 resumed from step 1,000",
        summary="W&B run hero-1 resumed from step 1,000",
        extra=Restart(
            NOW - timedelta(days=8), RESTORE, "lab/hero/hero-1", from_step=1_100, to_step=1_000
        ).to_json(),
    )
    await add_events(store, [restart])
    cause = ReportedCause(
        text="Lost node r04n2: double-bit ECC on GPU 6. Requeued on a spare.",
        author="Amara",
        source="Discord #hero-run",
        at=crashed_at + timedelta(minutes=10),
    )
    await store.incidents.save(
        Incident(
            "hero",
            "wandb-state",
            "crash",
            "W&B run hero-1 crashed",
            "resolved",
            crashed_at,
            resolved_at=NOW - timedelta(days=8),
            details=IncidentDetails(reported_cause=cause),
        )
    )
    report = await build_status(store, "hero", NOW)
    assert report.last_restart is not None and report.last_restart.at == restart.at
    narrative = await current_narrative(store, report)
    assert narrative.text.startswith(
        "Training is running normally in W&B run hero-1. It last restarted from a checkpoint on "
        "Aug 25 at 8:00 a.m. EDT. Before the last restart, Amara reported: Lost node r04n2: "
        "double-bit ECC on GPU 6. Requeued on a spare."
    ), narrative.text
    # the restart itself is the card's "Last restart" field, not a "Latest" line
    assert "resumed from step 1,000" not in narrative.text


async def test_digest_tells_incidents_with_their_cause_then_restarts(store: Store) -> None:
    """The documented order (where the run stands, incidents, restarts, what happened), and
    each incident line says its cause: what a person reported, else what the monitor saw."""
    await seed(store)
    await add_events(store, day_of_events())
    reported = ReportedCause(
        text="Node r12n4 lost, double-bit ECC on GPU 3.",
        author="Dana",
        source="Discord #hero-run",
        at=NOW - timedelta(hours=6, minutes=50),
    )
    await store.incidents.save(
        Incident(
            "hero", "wandb-state", "crash", "W&B run hero-1 crashed at step 4,300", "resolved",
            NOW - timedelta(hours=7), resolved_at=NOW - timedelta(hours=5),
            cause="W&B reports run hero-1 as crashed.",
            details=IncidentDetails(reported_cause=reported),
        )
    )  # fmt: skip
    await store.incidents.save(
        Incident(
            "hero", "stall", "stall", "No new step for 25 min in hero-1", "resolved",
            NOW - timedelta(hours=3), resolved_at=NOW - timedelta(hours=2, minutes=30),
            cause="W&B shows run hero-1 as running, but no training step has been logged.",
        )
    )  # fmt: skip
    digest = await build_digest(store, "hero", NOW)
    text = digest.text
    incidents = text.index("Incidents: ")
    assert incidents < text.index("Training restarted 1 time") < text.index("What happened:")
    line = text[incidents:].split("\n\n", 1)[0]
    assert "(resolved after 2 h; Dana reported: Node r12n4 lost, double-bit ECC on GPU 3)" in line
    assert "cause: W&B shows run hero-1 as running, but no training step has been logged" in line
