"""What Runscribe tells people about a run, as pure code: no store, no network, no LLM.

- `facts` — NarrativeFacts and DigestFacts (the one digest view), and the pure selection of
  highlights, open threads and incidents they carry.
- `entries` — TimelineEntry, one dated line of the timeline.
- `format` — dates, times, counts and tokens as words ("Apr 21, 2027", "2.46T").
- `templates` — the deterministic narrative and digest: what no-key installs show and what the
  LLM writers fall back to.

The services (`bot.services.narrative`, `bot.services.digest`) build these from the store; the
LLM writers (`bot.llm.narrative`, `bot.llm.digest`) turn them into prose."""
