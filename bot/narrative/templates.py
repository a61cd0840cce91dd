"""The deterministic narrative and digest: plain sentences from the facts alone. What an install
without an LLM key shows, and what the LLM writers fall back to when the model is absent, over
budget, failing or strays from the facts."""

from __future__ import annotations

from bot.narrative.facts import DigestFacts, NarrativeFacts
from bot.narrative.format import fmt_big, fmt_date, fmt_duration, fmt_int, fmt_time, sentence

NARRATIVE_MAX_CHARS = 1800
DIGEST_MAX_CHARS = 3800


def template_narrative(facts: NarrativeFacts) -> str:
    """Plain sentences from the facts alone: what no-key installs show and the fallback."""
    name = facts.run_name
    tz = facts.timezone
    parts: list[str] = []
    if facts.step is None:
        parts.append(f"{name} has not logged any training steps yet.")
    else:
        where = f"step {fmt_int(facts.step)}"
        if facts.total_steps:
            where += f" of {fmt_int(facts.total_steps)}"
        if facts.percent is not None:
            where += f" ({facts.percent:.1f}% of the way)"
        verb = {
            "running": "is training at",
            "finished": "has finished at",
            "crashed": "crashed at",
            "failed": "failed at",
            "killed": "was stopped at",
            "preempted": "was preempted at",
        }.get(facts.state, f"is {facts.state} at")
        opening = f"{name} {verb} {where}"
        if facts.tokens is not None and facts.target_tokens:
            opening += (
                f", with {fmt_big(facts.tokens)} of {fmt_big(facts.target_tokens)} tokens seen"
            )
        parts.append(opening + ".")
        if facts.projected_end and facts.state != "finished":
            parts.append(
                f"At the current pace it should finish around {fmt_date(facts.projected_end, tz)}."
            )
    restart = facts.last_restart
    if restart is not None:
        text = f"The last restart was {fmt_duration(facts.now - restart.at)} ago"
        if restart.resumed_step is not None:
            text += (
                f"; training resumed from the last checkpoint (a saved copy of the model) at "
                f"step {fmt_int(restart.resumed_step)}"
            )
        if restart.down_for is not None:
            text += f" after {fmt_duration(restart.down_for)} down"
        parts.append(text + ".")
        if restart.cause:
            parts.append(f"Cause: {restart.cause.rstrip('.')}.")
    if facts.monitor_stale:
        parts.append(
            "Runscribe has not been able to reach W&B recently, so these figures may be behind; "
            "that says nothing about the run itself."
        )
    open_incidents = [i for i in facts.incidents if i.status != "resolved"]
    resolved = [i for i in facts.incidents if i.status == "resolved"]
    if open_incidents:
        titles = "; ".join(i.title for i in open_incidents[:3])
        parts.append(f"Open incident{'s' if len(open_incidents) != 1 else ''}: {titles}.")
    elif resolved:
        latest = resolved[0]
        parts.append(
            f"No incident is open; the latest, {latest.title.rstrip('.')}, was resolved after "
            f"{fmt_duration(latest.duration(facts.now))}."
        )
    else:
        parts.append("No incident is open.")
    if facts.incidents_total:
        total, healed = facts.incidents_total, facts.self_healed
        line = f"The run has had {total} incident{'s' if total != 1 else ''} so far"
        if healed:
            line += f"; training recovered from {healed} of them on its own"
        parts.append(line + ".")
    paragraphs = [" ".join(parts)]
    if facts.highlights:
        recent = facts.highlights[:3]
        lines = []
        for h in recent:
            who = h.author or "Someone"
            ref = f" ({h.ref})" if h.ref else ""
            lines.append(f"{who}{ref}: {sentence(h.summary)}")
        paragraphs.append("Latest: " + " ".join(lines))
    if facts.open_threads:
        refs = ", ".join(f"{t.ref} {t.title}" if t.ref else t.title for t in facts.open_threads[:4])
        paragraphs.append(f"Still open: {refs}.")
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
        head.append(f"The projected end is {fmt_date(facts.projected_end, tz)}.")
    if head:
        paragraphs.append(" ".join(head))
    if facts.restarts_in_window:
        parts = []
        for restart in facts.restarts_in_window:
            text = f"at {fmt_time(restart.at, tz)}"
            if restart.resumed_step is not None:
                text += f" from step {fmt_int(restart.resumed_step)}"
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
    if facts.highlights:
        lines = []
        for h in facts.highlights[:8]:
            who = h.author or "Someone"
            ref = f" in {h.ref}" if h.ref else ""
            lines.append(f"- {who}{ref}: {sentence(h.summary)}")
        paragraphs.append("What happened:\n" + "\n".join(lines))
    if facts.open_threads:
        refs = "; ".join(f"{t.ref} {t.title}" if t.ref else t.title for t in facts.open_threads[:5])
        paragraphs.append(f"Still open: {refs}.")
    return "\n\n".join(paragraphs)[:DIGEST_MAX_CHARS]
