"""Incident posts carry neutral time stamps; the Discord edge turns them into the `<t:…>`
timestamps readers always saw, and a terminal into local times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.app import card_to_embed, discord_text, discord_time
from bot.models import Event, Incident, IncidentDetails, IncidentSignal
from bot.posts import incidents as messages
from bot.render.stamps import render_stamps, stamp
from bot.render.terminal import local_formatter

T0 = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
EPOCH = int(T0.timestamp())


def resolved() -> Incident:
    signal = IncidentSignal(7, T0 + timedelta(minutes=3), "GitHub #1", "node lost", None)
    incident = Incident("r", "wandb-state", "crash", "W&B run a crashed", "resolved", T0,
                        resolved_at=T0 + timedelta(minutes=47), resolution="Training resumed.",
                        details=IncidentDetails(signals=[signal]), id=4)  # fmt: skip
    return incident


def test_stamps_render_as_the_discord_timestamps_readers_saw() -> None:
    for style, code in (("datetime", "f"), ("relative", "R"), ("time", "t"), ("date", "D")):
        neutral = stamp(T0, style)  # type: ignore[arg-type]
        assert "<t:" not in neutral
        rendered = discord_text(f"at {neutral}.")
        assert rendered == f"at <t:{EPOCH}:{code}>."
        assert len(neutral) == len(rendered) - len("at .")  # limits hold after rendering


def test_incident_card_reaches_discord_with_timestamps() -> None:
    card = messages.head_card(resolved(), "Hero", {})
    assert "<t:" not in card.description  # the domain writes no Discord markup
    embed = card_to_embed(card)
    assert embed.description is not None
    assert embed.description.startswith(
        f"✅ Resolved <t:{EPOCH + 47 * 60}:f> · lasted 47 min: first seen → cleared"
    )
    [signals] = [f for f in embed.fields if f.name == "Signals"]
    assert signals.value == f"• <t:{EPOCH + 180}:t> GitHub #1: node lost"


def test_thread_update_renders_for_a_terminal_too() -> None:
    event = Event("r", "github", "c:1", "comment", T0, author="ada", body="back up")
    text = messages.event_update(event)
    assert discord_text(text).startswith(f"<t:{EPOCH}:t> **ada**")
    local = render_stamps(text, local_formatter("UTC", T0))
    assert "\ue000" not in local and "<t:" not in local and "back up" in local


def test_no_discord_markup_in_the_incident_domain() -> None:
    package = Path(messages.__file__).parent
    for source in package.glob("*.py"):
        assert "<t:" not in source.read_text("utf-8"), source.name
    assert discord_time(T0, "datetime") == f"<t:{EPOCH}:f>"


def test_alert_footer_names_the_condition_in_words_not_identifiers() -> None:
    card = messages.head_card(resolved(), "Hero", {})
    assert card.footer == "Incident #4 · W&B run state · needs a look"
    assert "wandb-state" not in card.footer and "severity" not in card.footer
