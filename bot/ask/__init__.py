"""/ask: answers from a run's stored history, with numbered citations.

- `query` — a question (untrusted text) → quoted FTS5 terms; never raw MATCH syntax.
- `retrieval` — BM25 over the events' full-text index with a mild recency preference and a
  per-thread cap, bounded in work at millions of events.
- `service` — retrieve, then a grounded LLM answer (`bot.llm.ask`) or the best matches as
  one-line summaries; answers cached by (question, data version).
- `limits` — the per-user rate limit the Discord surface applies.
"""
