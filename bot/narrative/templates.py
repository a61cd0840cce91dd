"""The deterministic narrative and digest: plain sentences from the facts alone. What an install
without an LLM key shows, and what the LLM writers fall back to when the model is absent, over
budget, failing or strays from the facts."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.core.numbers import fmt_big, fmt_int, fmt_percent
from bot.core.timeutil import humanize_duration
from bot.enrich.reports import is_substantive
from bot.enrich.summary import truncate
from bot.models import NEW_RUN, SOURCE_SPECS
from bot.narrative.discussed import discussion_paragraph, open_lines, told
from bot.narrative.facts import (
    DigestFacts,
    Highlight,
    IncidentFact,
    NarrativeFacts,
    what_happened,
)
from bot.narrative.format import (
    fmt_projected,
    fmt_time,
    fmt_when,
    inline,
    sentence,
    whole_sentences,
)
from bot.narrative.words import credit, source_name, state_words

NARRATIVE_MAX_CHARS = 1800
DIGEST_MAX_CHARS = 3800
DIGEST_ITEMS = 8  # lines under "What happened"


LATEST_ITEMS = 3  # "Latest" lines under the narrative
LATEST_CHARS = 200  # one line each, whole sentences (a clause when one is longer)
LATEST_WINDOW = timedelta(days=1)  # how recent a "Latest" line is
OPEN_ITEMS = 3
OPEN_ROOM = 450  # what "Still open" and its three lines take at most, kept for them
CAUSE_CHARS = 300  # a reported cause is quoted up to this, cut at a sentence

_STOPPED = {"crashed", "failed", "killed", "preempted"}


def _troubled(facts: NarrativeFacts) -> bool:
    """An incident is open or a source is failing: nothing is "normal" then."""
    open_incident = any(i.status != "resolved" for i in facts.incidents)
    return open_incident or facts.monitor_stale or bool(facts.failing_sources)


def _state_sentence(facts: NarrativeFacts) -> str:
    if facts.step is None:
        return f"{facts.run_name} has not logged a training step yet."
    state = facts.state
    run = f"run {facts.wandb_run}" if facts.wandb_run else "the run"
    where = f" in W&B run {facts.wandb_run}" if facts.wandb_run else ""
    if state == "running":
        return (
            f"Training is running{where}."
            if _troubled(facts)
            else (f"Training is running normally{where}.")
        )
    if state == "finished":
        return f"Training has finished{where}."
    if state in _STOPPED:
        return f"Training is stopped: W&B reports {run} as {state_words(state)}."
    if state == "stalled":
        return f"Training has stopped logging new steps, although W&B still lists {run} as running."
    if state == "pending":
        return f"{run[0].upper()}{run[1:]} is waiting to start."
    return f"The state of {run} is {state_words(state)}."


def _quoted(text: str, limit: int = CAUSE_CHARS) -> str:
    """A person's words on one line, cut at a sentence (else a word), never mid-word."""
    return sentence(truncate(" ".join(text.split()), limit))


def _restart_sentence(facts: NarrativeFacts) -> str | None:
    """When the run last restarted and how long training was down, why (what a person reported
    about the incident before it, linked, else the incident's or W&B's own cause), and whether
    it came back on its own."""
    restart = facts.last_restart
    if restart is None:
        return None
    cause = facts.restart_incident
    how = "in a new W&B run" if restart.kind == NEW_RUN else "from a checkpoint"
    down = f", after {humanize_duration(restart.down_for)} down" if restart.down_for else ""
    parts = [f"It last restarted {how} on {fmt_when(restart.at, facts.timezone)}{down}."]
    text = (cause.cause or cause.title) if cause is not None else restart.cause
    if cause is not None and cause.reported_cause:
        who = cause.reported_by or "a person"
        said = _quoted(cause.reported_cause)
        if cause.reported_url:  # linked: the reader can read the whole post
            said = f"{said.rstrip('.')} ({cause.reported_url})."
        parts.append(f"Before the last restart, {who} reported: {said}")
    elif cause is not None and cause.kind == "crash":
        parts.append("It followed a crash; no person reported a cause for it.")
    elif text:
        parts.append(f"Cause of the last restart: {_quoted(text)}")
    if cause is not None and cause.acted_by:
        parts.append(f"{cause.acted_by} reported bringing it back.")
    elif cause is not None and cause.healed:
        parts.append("It came back on its own: nobody reported stepping in.")
    return " ".join(parts)


def _story(facts: NarrativeFacts) -> list[str]:
    """What happened and what it means, in words: the state, what a person reported about an
    open incident, why the run last restarted and how long it was down. Other numbers the card
    shows as fields are left out."""
    parts = [_state_sentence(facts)]
    if facts.monitor_stale:
        parts.append(
            "Runscribe has not been able to reach W&B recently, so the figures may be behind; "
            "that says nothing about the run itself."
        )
    others = [
        source_name(s)
        for s in facts.failing_sources
        if s != "wandb" or not facts.monitor_stale  # a stale monitor is said just above
    ]
    if others:
        verb = "is" if len(others) == 1 else "are"
        parts.append(
            f"{' and '.join(others)} {verb} failing to answer Runscribe, so its news may be behind."
        )
    open_incidents = [i for i in facts.incidents if i.status != "resolved"]
    if open_incidents:
        first = open_incidents[0]
        parts.append(f"It needs attention: {_quoted(first.title, 160)}")
        if first.reported_cause:
            who = first.reported_by or "A person"
            parts.append(f"{who} reported: {_quoted(first.reported_cause)}")
        elif first.kind in ("crash", "other") and facts.state in _STOPPED:
            parts.append("Nobody has reported a cause yet.")
        if len(open_incidents) > 1:
            parts.append("The other open incidents are listed below.")
        return parts
    told = _restart_sentence(facts)
    if told:
        parts.append(told)
    resolved = [i for i in facts.incidents if i.status == "resolved"]
    if resolved and not told:
        latest = resolved[0]
        line = f"The latest incident, {inline(latest.title, 160).rstrip('.')}, is resolved"
        if latest.reported_cause:
            who = latest.reported_by or "a person"
            line += f"; {who} reported: {_quoted(latest.reported_cause).rstrip('.')}"
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
    ago = f"{age.days} days" if age.days >= 2 else humanize_duration(age)
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
    # chat that says nothing about the run is never quoted
    highlights = [
        h for h in highlights if not SOURCE_SPECS.is_chat(h.source) or is_substantive(h.summary)
    ]
    lines = []
    for h in highlights[:limit]:
        ref = f" ({h.ref})" if h.ref else ""
        said = whole_sentences(h.summary, LATEST_CHARS)
        lines.append(f"• {credit(h.author, h.source)}{ref}: {said}")
    return lines


def within(paragraphs: list[str], limit: int) -> str:
    """Paragraphs joined, at most `limit` characters: whole lines are dropped from the end,
    and a first paragraph that is still too long is cut at a sentence, never mid-word."""
    text = "\n\n".join(paragraphs)
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    while len(lines) > 1 and len("\n".join(lines)) > limit:
        lines.pop()
    while lines and (not lines[-1].strip() or lines[-1].endswith(":")):
        lines.pop()  # no empty tail, no heading left without its list
    return truncate("\n".join(lines), limit)


def template_narrative(facts: NarrativeFacts) -> str:
    """What happened, what it means and what is open, in whole sentences: what no-key installs
    show and the LLM's fallback. First the state, the last restart and its cause; then what is
    being discussed and by whom (`bot.narrative.discussed`); what is still open; other news
    of the last day. The numbers the status card shows as fields (progress, tokens, launch and
    projected end, the restart's step, the loss, incident counts) are not repeated here. Length
    is cut at a line or a sentence (`within`), never before the state and the cause."""
    paragraphs = [" ".join(_story(facts))]
    # what is discussed gets what the story leaves, less room for three open threads
    room = NARRATIVE_MAX_CHARS - len(paragraphs[0]) - OPEN_ROOM
    talk = discussion_paragraph(facts, room)
    if talk:
        paragraphs.append(talk)
    discussed = {d.ref for d in told(facts)}
    # the newest restart is the first paragraph's; a discussed thread is the second's
    shown = [
        h
        for h in facts.highlights
        if not (facts.last_restart is not None and h.source == "wandb" and h.kind == "restart")
        and (h.ref is None or h.ref not in discussed)
    ]
    if facts.open_threads:
        paragraphs.append("Still open:\n" + "\n".join(open_lines(facts, OPEN_ITEMS)))
    latest = latest_lines(shown, now=facts.now)
    if latest:  # last: what the length leaves room for
        paragraphs.append("Latest:\n" + "\n".join(latest))
    return within(paragraphs, NARRATIVE_MAX_CHARS)


def _cause_clause(incident: IncidentFact) -> str:
    """'; Dana reported: node lost, ECC errors on host 12' or '; cause: W&B reports …'."""
    if incident.reported_cause:
        who = incident.reported_by or "a person"
        return f"; {who} reported: {inline(incident.reported_cause, 200).rstrip('.')}"
    if incident.cause:
        return f"; cause: {inline(incident.cause, 200).rstrip('.')}"
    return ""


def _bare(text: str) -> str:
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c.isspace()).split())


def told_above(highlight: Highlight, facts: DigestFacts) -> bool:
    """Whether the digest's incident and restart paragraphs already say what `highlight` says,
    so "What happened" leaves it out (each fact said once): a W&B restart of the window, an
    incident's own machine event (a W&B state, an alert), a person's report quoted as an
    incident's cause."""
    if highlight.kind == "restart" and facts.restarts_in_window:
        return True
    if not facts.incidents:
        return False
    if highlight.incident and SOURCE_SPECS.is_facts(highlight.source):
        return True
    said = _bare(highlight.summary)
    causes = [_bare(i.reported_cause) for i in facts.incidents if i.reported_cause]
    return bool(said) and any(said in cause or cause in said for cause in causes if cause)


def template_digest(facts: DigestFacts) -> str:
    """Plain sentences from the facts alone, in the order the digest tells things: where the
    run stands, incidents (each with its cause), restarts, what happened, what is open."""
    if facts.quiet:
        return f"{facts.run_name}: nothing happened in the last {facts.window_hours} hours."
    paragraphs: list[str] = []
    head = _digest_head(facts)
    if head:
        paragraphs.append(" ".join(head))
    if facts.incidents:
        paragraphs.append(_digest_incidents(facts))
    if facts.restarts_in_window:
        paragraphs.append(_digest_restarts(facts))
    if facts.goodput_moved:
        paragraphs.append(facts.goodput_moved)
    untold = [h for h in facts.highlights if not told_above(h, facts)]
    happened = what_happened(untold, DIGEST_ITEMS)
    if happened:
        lines = []
        for h in happened:
            ref = f" in {h.ref}" if h.ref else ""
            lines.append(f"- {credit(h.author, h.source)}{ref}: {sentence(h.summary)}")
        paragraphs.append("What happened:\n" + "\n".join(lines))
    if facts.open_threads:
        refs = "; ".join(f"{t.ref} {t.title}" if t.ref else t.title for t in facts.open_threads[:5])
        paragraphs.append(f"Still open: {refs}.")
    return within(paragraphs, DIGEST_MAX_CHARS)


def _digest_head(facts: DigestFacts) -> list[str]:
    """Where the run stands: step, tokens, projected end (a sentence each)."""
    hours = facts.window_hours
    head: list[str] = []
    if facts.step is not None:
        line = f"{facts.run_name} is {facts.state} at step {fmt_int(facts.step)}"
        if facts.total_steps:
            line += f" of {fmt_int(facts.total_steps)}"
        if facts.percent is not None:
            line += f" ({fmt_percent(facts.percent)})"
        gained = facts.steps_gained
        launched = facts.launched_at
        if gained and launched is not None and launched > facts.start:
            line += f", {fmt_int(gained)} steps since launch"  # younger than the window
        elif gained:
            line += f", {fmt_int(gained)} steps further than {hours} hours ago"
        head.append(line + ".")
    if facts.tokens is not None and facts.target_tokens:
        head.append(
            f"It has seen {fmt_big(facts.tokens)} of {fmt_big(facts.target_tokens)} tokens."
        )
    if facts.projected_end:
        when = fmt_projected(facts.projected_end, facts.projected_margin, facts.timezone, facts.now)
        head.append(f"Projected end at the recent pace: {when}.")
    return head


def _digest_incidents(facts: DigestFacts) -> str:
    lines = []
    for incident in facts.incidents:
        state = (
            f"resolved after {humanize_duration(incident.duration(facts.now))}"
            if incident.resolved_at
            else f"open for {humanize_duration(incident.duration(facts.now))}"
        )
        lines.append(f"{incident.title.rstrip('.')} ({state}{_cause_clause(incident)})")
    return "Incidents: " + "; ".join(lines) + "."


def _digest_restarts(facts: DigestFacts) -> str:
    parts = []
    for restart in facts.restarts_in_window:
        text = f"at {fmt_time(restart.at, facts.timezone)}"
        if restart.to_step is not None:
            text += f" from step {fmt_int(restart.to_step)}"
        if restart.down_for is not None:
            text += f" after {humanize_duration(restart.down_for)} down"
        if restart.recomputed_steps:
            text += f", {fmt_int(restart.recomputed_steps)} steps recomputed"
        parts.append(text)
    count = len(facts.restarts_in_window)
    return (
        f"Training restarted {count} time{'s' if count != 1 else ''} from a checkpoint "
        f"(a saved copy of the model): " + "; ".join(parts) + "."
    )
