"""LLM writing for Runscribe: batched enrichment, grounded narratives and digests, all optional.

- `client.LLMClient` — the one adapter on AsyncAnthropic (capped retries, daily budget, cost);
  `client.usage_report` / `client.format_usage` back `runscribe usage`.
- `enrich.LLMEnricher` — the pipeline's `Enricher`, batched and cached, rules as the fallback;
  `enrich.group_conversations` — Discord bursts → one conversation event.
- `facts` — NarrativeFacts / DigestFacts and their builders from the store.
- `narrative.write_narrative`, `narrative.refresh_narrative_if_due`, `digest.write_digest` —
  grounded prose, template text when the model is absent or strays from the facts.
- `grounding`, `safety`, `prompts` — the checks, the fences and the prompt files.

Import the submodules directly; this package imports nothing at import time.
"""
