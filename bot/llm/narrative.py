"""The status narrative's LLM writer: facts in, grounded prose out, the template when the model
is absent, over budget, failing, or cannot stay within the facts (see `bot.llm.grounded`).
Choosing when a narrative is due is `bot.services.narrative`'s job."""

from __future__ import annotations

import asyncio
from datetime import datetime
from functools import partial

from bot.llm.client import LLMClient
from bot.llm.grounded import render_prompt, write_grounded
from bot.llm.people import known_people
from bot.models import LLMOutput
from bot.narrative.facts import NarrativeFacts
from bot.narrative.templates import template_narrative
from bot.store import Store

NARRATIVE_MAX_WORDS = 250


async def write_narrative(
    store: Store, llm: LLMClient | None, facts: NarrativeFacts, now: datetime
) -> LLMOutput:
    """Write, check and store the status narrative for `facts.run_slug`. Always returns a stored
    output (fallback=True when it is the template)."""
    # The prompt's grounding (every number, duration and link the facts allow) is CPU work,
    # ~25 ms on a busy run: built in a worker thread, never on the event loop.
    known = await known_people(store, facts.run_slug)
    rendered = await asyncio.to_thread(
        partial(
            render_prompt,
            "narrative",
            facts,
            max_words=NARRATIVE_MAX_WORDS,
            card=True,
            known=known,
        )
    )
    return await write_grounded(
        store,
        llm,
        rendered,
        template_narrative(facts),
        run_slug=facts.run_slug,
        now=now,
        cache_key=f"narrative:{facts.run_slug}:{facts.fingerprint()}",
    )


__all__ = ["write_narrative"]
