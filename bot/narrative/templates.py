"""The deterministic narrative and digest: plain sentences from the facts alone. What an install
without an LLM key shows, and what the LLM writers fall back to when the model is absent, over
budget, failing or strays from the facts."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.narrative.facts import DigestFacts, Highlight, NarrativeFacts, what_happened
from bot.narrative.format import (
    fmt_big,
    fmt_duration,
    fmt_int,
    fmt_projected,
    fmt_time,
    inline,
    sentence,
)
from bot.narrative.words import credit, state_words

NARRATIVE_MAX_CHARS = 1800
DIGEST_MAX_CHARS = 3800
DIGEST_ITEMS = 8  # lines under "What happened"


LATEST_ITEMS = 3  # "Latest" lines under the narrative
LATEST_CHARS = 140  # one line each
LATEST_WINDOW = timedelta(days=1)  # how recent a "Latest" line is
OPEN_ITEMS = 3
OPEN_CHARS = 100

_STOPPED = {"crashed", "failed", "killed", "preempted"}


def _state_sentence(facts: NarrativeFacts) -> str:
    if facts.step is None:
        return f"{facts.run_name} has not logged a training step yet."
    state = facts.state
    if state == "running":
        return "Training is running normally."
    if state == "finished":
        return "Training has finished."
    if state in _STOPPED:
        return f"Training is stopped: W&B reports the run as {state_words(state)}."
    if state == "stalled":
        return (
            "Training has stopped logging new steps, although W&B still lists the run as running."
        )
    if state == "pending":
        return "The run is waiting to start."
    return f"The run's state is {state_words(state)}."


def _story(facts: NarrativeFacts) -> list[str]:
    """What happened and what it means, in words: the state, what a person reported about an
    open incident, why the run last restarted. Numbers the card shows as fields are left out."""
    parts = [_state_sentence(facts)]
    if facts.monitor_stale:
        parts.append(
            "Runscribe has not been able to reach W&B recently, so the figures may be behind; "
            "that says nothing about the run itself."
        )
    open_incidents = [i for i in facts.incidents if i.status != "resolved"]
    if open_incidents:
        first = open_incidents[0]
        parts.append(f"It needs attention: {sentence(inline(first.title, 160))}")
        if first.reported_cause:
            who = first.reported_by or "A person"
            parts.append(f"{who} reported: {sentence(inline(first.reported_cause, 240))}")
        elif first.kind in ("crash", "other") and facts.state in _STOPPED:
            parts.append("Nobody has reported a cause yet.")
        if len(open_incidents) > 1:
            parts.append("The other open incidents are listed below.")
        return parts
    restart = facts.last_restart
    cause = facts.restart_incident if restart is not None else None
    if cause is not None and cause.reported_cause:
        who = cause.reported_by or "a person"
        parts.append(
            f"Before the last restart, {who} reported: "
            f"{sentence(inline(cause.reported_cause, 240))}"
        )
    elif cause is not None and cause.kind == "crash":
        parts.append("The last restart followed a crash; no person reported a cause for it.")
    elif cause is not None and (cause.cause or cause.title):
        text = cause.cause or cause.title
        parts.append(f"Cause of the last restart: {sentence(inline(text, 240))}")
    elif restart is not None and restart.cause:
        parts.append(f"Cause of the last restart: {sentence(inline(restart.cause, 240))}")
    told = cause is not None or (restart is not None and bool(restart.cause))
    resolved = [i for i in facts.incidents if i.status == "resolved"]
    if resolved and not told:
        latest = resolved[0]
        line = f"The latest incident, {inline(latest.title, 160).rstrip('.')}, is resolved"
        if latest.reported_cause:
            who = latest.reported_by or "a person"
            line += f"; {who} reported: {inline(latest.reported_cause, 200).rstrip('.')}"
        parts.append(line + ".")
    elif not resolved and not told and facts.step is not None and facts.state == "running":
        parts.append(_quiet_week(facts))
    return parts


def _quiet_week(facts: NarrativeFacts) -> str:
    """What to say when no incident was recorded: "no incident in the past week" only when
    nothing in the week was flagged as one (a crash from before Runscribe watched the run is
    history, not an incident it tracked, but it did happen)."""
    if not facts.counts_by_tag.get("incident"):
        return "No incident in the past week."
    failure = next((h for h in facts.highlights if h.incident), None)
    if failure is None:
        return "No incident is open."
    age = facts.now - failure.at
    ago = f"{age.days} days" if age.days >= 2 else fmt_duration(age)
    summary = sentence(inline(failure.summary, 160))
    return f"No incident is open; the latest failure, {ago} ago: {summary}"


def latest_lines(
    highlights: list[Highlight], limit: int = LATEST_ITEMS, now: datetime | None = None
) -> list[str]:
    """A short list, one line each, credited to the person or, for the monitor's own events,
    to the source ("W&B"). With `now`, only what happened in the last `LATEST_WINDOW`: an
    event from days ago (a crash read back at install) is history, not "latest"."""
    if now is not None:
        highlights = [h for h in highlights if now - h.at <= LATEST_WINDOW]
    lines = []
    for h in highlights[:limit]:
        ref = f" ({h.ref})" if h.ref else ""
        lines.append(f"• {credit(h.author, h.source)}{ref}: {inline(h.summary, LATEST_CHARS)}")
    return lines


def template_narrative(facts: NarrativeFacts) -> str:
    """What happened, what it means and what is open, in plain sentences: what no-key installs
    show and the LLM's fallback. The numbers the status card shows as fields (progress, tokens,
    launch and projected end, the restart's time, step and downtime, the loss, incident counts)
    are not repeated here."""
    paragraphs = [" ".join(_story(facts))]
    # the newest restart is the card's "Last restart" field: not said again
    shown = [
        h
        for h in facts.highlights
        if not (facts.last_restart is not None and h.source == "wandb" and h.kind == "restart")
    ]
    latest = latest_lines(shown, now=facts.now)
    if latest:
        paragraphs.append("Latest:\n" + "\n".join(latest))
    if facts.open_threads:
        lines = [
            "• " + inline(f"{t.ref} {t.title}" if t.ref else t.title, OPEN_CHARS)
            for t in facts.open_threads[:OPEN_ITEMS]
        ]
        paragraphs.append("Still open:\n" + "\n".join(lines))
    return "\n\n".join(paragraphs)[:NARRATIVE_MAX_CHARS]


def template_digest(facts: DigestFacts) -> str:
    """Plain sentences from the facts alone."""
    tz = facts.timezone
    hours = facts.window_hours
    name = facts.run_name
    if facts.quiet:
        return f"{name}: nothing happened in the last {hours} hours."
    paragraphs: list[str] = []
    head: list[str] = []
    if facts.step is not None:
        line = f"{name} is {facts.state} at step {fmt_int(facts.step)}"
        if facts.total_steps:
            line += f" of {fmt_int(facts.total_steps)}"
        if facts.percent is not None:
            line += f" ({facts.percent:.1f}%)"
        gained = facts.steps_gained
        if gained:
            line += f", {fmt_int(gained)} steps further than {hours} hours ago"
        head.append(line + ".")
    if facts.tokens is not None and facts.target_tokens:
        head.append(
            f"It has seen {fmt_big(facts.tokens)} of {fmt_big(facts.target_tokens)} tokens."
        )
    if facts.projected_end:
        when = fmt_projected(facts.projected_end, facts.projected_margin, tz, facts.now)
        head.append(f"Projected end at the recent pace: {when}.")
    if head:
        paragraphs.append(" ".join(head))
    if facts.restarts_in_window:
        parts = []
        for restart in facts.restarts_in_window:
            text = f"at {fmt_time(restart.at, tz)}"
            if restart.to_step is not None:
                text += f" from step {fmt_int(restart.to_step)}"
            if restart.down_for is not None:
                text += f" after {fmt_duration(restart.down_for)} down"
            parts.append(text)
        count = len(facts.restarts_in_window)
        paragraphs.append(
            f"Training restarted {count} time{'s' if count != 1 else ''} from a checkpoint "
            f"(a saved copy of the model): " + "; ".join(parts) + "."
        )
    if facts.incidents:
        lines = []
        for incident in facts.incidents:
            state = (
                f"resolved after {fmt_duration(incident.duration(facts.now))}"
                if incident.resolved_at
                else f"open for {fmt_duration(incident.duration(facts.now))}"
            )
            lines.append(f"{incident.title.rstrip('.')} ({state})")
        paragraphs.append("Incidents: " + "; ".join(lines) + ".")
    happened = what_happened(facts.highlights, DIGEST_ITEMS)
    if happened:
        lines = []
        for h in happened:
            ref = f" in {h.ref}" if h.ref else ""
            lines.append(f"- {credit(h.author, h.source)}{ref}: {sentence(h.summary)}")
        paragraphs.append("What happened:\n" + "\n".join(lines))
    if facts.open_threads:
        refs = "; ".join(f"{t.ref} {t.title}" if t.ref else t.title for t in facts.open_threads[:5])
        paragraphs.append(f"Still open: {refs}.")
    return "\n\n".join(paragraphs)[:DIGEST_MAX_CHARS]
