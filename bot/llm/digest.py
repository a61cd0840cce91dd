"""The daily digest's LLM writer: the same grounded writer as the narrative, over a window's
facts, with its own prompt and the template digest as the fallback. A quiet window gets the
template line without a model call; the scheduler usually skips posting it."""

from __future__ import annotations

import asyncio
from datetime import datetime
from functools import partial

from bot.llm.client import LLMClient
from bot.llm.grounded import render_prompt, write_grounded
from bot.llm.people import known_people
from bot.models import LLMOutput
from bot.narrative.facts import DigestFacts
from bot.narrative.format import fmt_time
from bot.narrative.templates import DIGEST_MAX_CHARS, template_digest
from bot.store import Store

DIGEST_MAX_WORDS = 400
DIGEST_MAX_TOKENS = 1400


async def write_digest(
    store: Store, llm: LLMClient | None, facts: DigestFacts, now: datetime
) -> LLMOutput:
    """Write, check and store the digest for `facts`' window. Always returns a stored output:
    the one already written for the same facts and prompt (`DigestFacts.fingerprint`, which
    leaves out the clock) when there is one, without a request."""
    window = (
        f"the {facts.window_hours} hours up to {fmt_time(facts.window_end or now, facts.timezone)}"
    )
    # CPU work (the grounding of every fact): in a worker thread, never on the event loop
    known = await known_people(store, facts.run_slug)
    rendered = await asyncio.to_thread(
        partial(
            render_prompt,
            "digest",
            facts,
            max_words=DIGEST_MAX_WORDS,
            window=window,
            known=known,
        )
    )
    rendered.max_chars = DIGEST_MAX_CHARS
    rendered.max_tokens = DIGEST_MAX_TOKENS
    key = f"digest:{facts.run_slug}:{rendered.prompt_hash}:{facts.fingerprint()}"
    if llm is not None and not facts.quiet:
        # the same facts, the same answer: a digest already written for them is not paid twice
        cached = await store.llm.by_cache_key(key)
        if cached is not None and not cached.fallback and cached.content.strip():
            return cached
    return await write_grounded(
        store,
        None if facts.quiet else llm,
        rendered,
        template_digest(facts),
        run_slug=facts.run_slug,
        now=now,
        cache_key=key,
    )


__all__ = ["write_digest"]
