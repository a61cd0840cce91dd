"""The daily digest: the same grounded writer as the narrative, over a window's facts
(`facts.build_digest_facts`), with its own prompt and template. A quiet window (no events, no
restarts, no incidents, no progress) gets the template line without a model call; the caller
usually skips posting it."""

from __future__ import annotations

from datetime import datetime

from bot.llm.client import LLMClient
from bot.llm.facts import (
    DigestFacts,
    fmt_big,
    fmt_date,
    fmt_duration,
    fmt_int,
    fmt_time,
    sentence,
)
from bot.llm.narrative import render_prompt, write_grounded
from bot.models import LLMOutput
from bot.store import Store

DIGEST_MAX_WORDS = 400
DIGEST_MAX_CHARS = 3800
DIGEST_MAX_TOKENS = 1400


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


async def write_digest(
    store: Store, llm: LLMClient | None, facts: DigestFacts, now: datetime
) -> LLMOutput:
    """Write, check and store the digest for `facts`' window. Always returns a stored output."""
    window = (
        f"the {facts.window_hours} hours up to {fmt_time(facts.window_end or now, facts.timezone)}"
    )
    rendered = render_prompt("digest", facts, max_words=DIGEST_MAX_WORDS, window=window)
    rendered.max_chars = DIGEST_MAX_CHARS
    rendered.max_tokens = DIGEST_MAX_TOKENS
    key = f"digest:{facts.run_slug}:{facts.fingerprint()}"
    return await write_grounded(
        store,
        None if facts.quiet else llm,
        rendered,
        template_digest(facts),
        run_slug=facts.run_slug,
        now=now,
        cache_key=key,
    )


__all__ = ["template_digest", "write_digest"]
