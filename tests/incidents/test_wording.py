"""What incident posts say: one downtime figure with its meaning, 'under a minute' rather than
'just now', the reported cause, each signal once, no cut inside a link, the resolved head, who
acted, and the `/incidents` listing."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from bot.app import card_to_embed, discord_text
from bot.core.timeutil import humanize_duration
from bot.incidents.detectors import CRASH
from bot.incidents.people import attach_cause, note_acting, reports_acting
from bot.incidents.service import IncidentView, public_kind
from bot.models import (
    NEW_RUN,
    Event,
    Incident,
    IncidentDetails,
    IncidentMember,
    IncidentSignal,
    ReportedCause,
    Restart,
)
from bot.posts import incidents as messages

T0 = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
MEANING = "last step before the crash → first step after the restore"


def crash_incident(*, down: float | None = 9120.0, status: str = "resolved") -> Incident:
    restart = (
        Restart(
            T0 + timedelta(hours=2), NEW_RUN, "lab/hero/hero-2", previous_run="lab/hero/hero-1",
            from_step=76_225, to_step=76_000, stopped_at=T0 - timedelta(seconds=down) +
            timedelta(hours=2), resumed_at=T0 + timedelta(hours=2),
        )
        if down is not None
        else None
    )  # fmt: skip
    member = IncidentMember("crash", "crashed", T0, T0 + timedelta(hours=2), restart=restart)
    return Incident(
        "hero", CRASH, "crash", "W&B run hero-1 crashed at step 76,225", status, T0,
        severity="critical",
        resolved_at=T0 + timedelta(hours=2, minutes=23) if status == "resolved" else None,
        cause="W&B reports run hero-1 as crashed.",
        resolution="Training resumed from step 76,000 in run hero-2; 225 steps recomputed.",
        details=IncidentDetails(members={CRASH: member}), id=7,
    )  # fmt: skip


def report(text: str, *, at: datetime = T0, author: str = "dana", flagged: bool = True) -> Event:
    return Event(
        "hero", "discord", f"msg:{at.timestamp()}", "message", at, author=author, ref="#hero-run",
        url="https://discord.com/channels/1/2/3", body=text, thread="discord:2",
        incident=flagged, live_report=flagged, id=int(at.timestamp()) % 10_000,
    )  # fmt: skip


def test_one_downtime_figure_with_its_meaning() -> None:
    incident = crash_incident()
    assert messages.downtime(incident) == f"down 2 h 32 min: {MEANING}"
    status = messages.status_line(incident)
    assert status.endswith(f"· down 2 h 32 min: {MEANING}")
    assert "2 h 23 min" not in status  # the incident's own span is not a second figure
    text = messages.resolved_content(incident, "Hero")
    assert text.count("2 h 32 min") == 1 and "2 h 23 min" not in text
    assert f"Down 2 h 32 min: {MEANING}. Training resumed from step 76,000" in text
    card = messages.head_card(incident, "Hero", {})
    assert (card.description + card.title).count("2 h 32 min") == 1


def test_without_a_resume_the_figure_says_how_long_it_lasted() -> None:
    incident = crash_incident(down=None)
    assert messages.downtime(incident) == "lasted 2 h 23 min: first seen → cleared"
    assert messages.downtime(crash_incident(status="firing")) is None


def test_short_durations_say_under_a_minute() -> None:
    assert humanize_duration(timedelta(seconds=4)) == "under a minute"
    assert humanize_duration(timedelta(seconds=59)) == "under a minute"
    assert humanize_duration(timedelta(seconds=60)) == "1 min"
    quick = crash_incident(down=5.0)
    for text in (messages.resolved_content(quick, "Hero"), messages.status_line(quick)):
        assert "down under a minute" in text.lower() and "just now" not in text
    assert "after just now" not in messages.reminder_content(crash_incident(status="firing"), T0)


def test_the_head_and_content_read_resolved_once_it_is() -> None:
    firing = crash_incident(status="firing")
    assert messages.alert_content(firing, "Hero").startswith("🔴 **Incident #7** — Hero: ")
    done = crash_incident()
    content = messages.alert_content(done, "Hero")
    assert content.startswith("✅ **Resolved** · Incident #7 — Hero: ") and "🔴" not in content
    assert messages.head_card(done, "Hero", {}).title.startswith("✅")
    closing = discord_text(messages.closing_line(done))
    assert re.fullmatch(r"✅ Resolved <t:\d+:t>; closing this thread\.", closing)


def test_the_reported_cause_is_shown_and_not_again_under_signals() -> None:
    incident = crash_incident(status="firing")
    event = report("Hero is down: node r12n4 lost, double-bit ECC on GPU 3. Requeueing.")
    incident.details.signals = [
        IncidentSignal(event.id, event.at, "Discord #hero-run", event.body, event.url),
        IncidentSignal(None, T0, "W&B hero-1", "state crashed", "https://wandb.ai/x"),
    ]
    assert attach_cause(incident, event)
    assert not attach_cause(incident, report("second report", at=T0 + timedelta(minutes=3)))
    card = messages.head_card(incident, "Hero", {})
    embed = card_to_embed(card)
    assert embed.description is not None
    assert re.search(
        r"\*\*Reported cause\*\* \(dana, \[Discord #hero-run\]\(https://discord.com/channels/1/2/3"
        r"\) at <t:\d+:t>\): Hero is down: node r12n4 lost",
        embed.description,
    )
    [signals] = [f for f in embed.fields if f.name == "Signals"]
    assert "r12n4" not in signals.value and "state crashed" in signals.value


def test_a_cause_is_what_a_person_wrote_while_it_was_open() -> None:
    done = crash_incident()
    late = report("it was the ECC on GPU 3", at=T0 + timedelta(hours=5))
    assert not attach_cause(done, late)  # after the resolution: a follow-up, not the cause
    assert not attach_cause(done, report("all fine", flagged=False))  # not an incident report
    bot = report("node lost", author="ci[bot]")
    bot.source = "github"
    assert not attach_cause(done, bot)
    assert attach_cause(done, report("node r12n4 lost", at=T0 + timedelta(minutes=2)))
    assert done.details.reported_cause is not None
    assert done.details.reported_cause.text == "node r12n4 lost"


def test_each_signal_once_and_never_cut_inside_a_link() -> None:
    incident = crash_incident(status="firing")
    url = "https://github.com/lab/model/issues/12#issuecomment-123456789"
    long_text = "x" * 140 + f" see {url} for details"
    incident.details.signals = [
        IncidentSignal(1, T0, "GitHub #12", long_text, url),
        IncidentSignal(2, T0, "GitHub #12", long_text, url),  # the same message seen twice
        *[
            IncidentSignal(10 + i, T0, f"Discord #c{i}", f"line {i} " + "y" * 100,
                           f"https://discord.com/channels/1/2/{i}")
            for i in range(11)
        ],
    ]  # fmt: skip
    card = messages.head_card(incident, "Hero", {})
    [signals] = [f for f in card.fields if f.name == "Signals"]
    assert signals.value.count("[GitHub #12]") == 1
    assert len(signals.value) <= 1024
    for line in signals.value.splitlines():  # every link whole: opened and closed
        for match in re.finditer(r"\]\(([^)]*)\)", line):
            assert match.group(1).startswith("https://") and " " not in match.group(1)
    assert "https://github.com/lab/model/issues/12#issuecomm…" not in signals.value
    clipped = messages.clip_text(long_text, 160)
    assert clipped.endswith("…") and url not in clipped and "https://" not in clipped


def test_lines_within_keeps_whole_lines() -> None:
    lines = [f"• [link {i}](https://example.com/{i})" for i in range(100)]
    text = messages.lines_within(lines, 300)
    assert len(text) <= 300
    *kept, note = text.splitlines()
    assert kept == lines[: len(kept)] and note == f"… and {100 - len(kept)} more"


def test_who_acted_decides_on_its_own() -> None:
    for text in (
        "Requeueing onto a spare.",
        "restarted the job from 76k",
        "drained r12n4 and relaunched",
        "swapping in spare r15n1",
        "41k is incomplete, resuming from 40k",
    ):
        assert reports_acting(text), text
    for text in (
        "The scheduler failed over to a spare on its own, 37 min down.",
        "it restarted automatically",
        "loss looks fine",
        "nobody restarted it, it came back by itself",
    ):
        assert not reports_acting(text), text
    incident = crash_incident()
    note_acting(
        incident, [report("loss looks fine"), report("requeued on spare r14n1", author="amara")]
    )
    assert incident.details.acted_by == "amara"


def test_public_kinds() -> None:
    incident = crash_incident()
    incident.details.members["report:hardware:discord:2"] = IncidentMember("hardware", "r", T0)
    assert public_kind(incident) == "crash"  # a crash someone also reported is a crash
    reported = Incident("hero", "report:node-loss:x", "node-loss", "t", "firing", T0)
    assert public_kind(reported) == "reported"
    assert public_kind(Incident("hero", "stall", "stall", "t", "firing", T0)) == "stall"
    assert public_kind(Incident("hero", "loss-nan", "loss-nan", "t", "firing", T0)) == "nan"
    assert public_kind(Incident("hero", "drift:train/grad_norm", "drift", "t", "firing", T0)) == (
        "drift"
    )


def test_listing_names_people_labels_links_and_uses_timestamps() -> None:
    incident = crash_incident()
    incident.acked_by, incident.acked_at = "Rita", T0 + timedelta(minutes=5)
    incident.details.reported_cause = ReportedCause(
        "node r12n4 lost", "dana", "Discord #hero-run", T0, "https://discord.com/channels/1/2/3"
    )
    view = IncidentView(
        incident=incident,
        started_at=incident.started_at,
        ended_at=incident.resolved_at,
        duration=timedelta(hours=2, minutes=23),
        cause=incident.cause or "",
        resolution=incident.resolution,
        links=[("GitHub #12", "https://github.com/lab/model/issues/12")],
    )
    card = messages.listing_card([view], "Hero", open_only=False, now=T0 + timedelta(hours=3))
    embed = card_to_embed(card)
    [field] = embed.fields
    value = field.value or ""
    assert "[GitHub #12](https://github.com/lab/model/issues/12)" in value
    assert "[link]" not in value
    assert re.search(r"acknowledged by Rita <t:\d+:R>", value)
    assert re.search(r"<t:\d+:f> → <t:\d+:f> · down 2 h 32 min: ", value)
    assert "**Reported cause** (dana, [Discord #hero-run]" in value
    assert not re.search(r"\d{15,}\)?$", value)  # no raw user ids
