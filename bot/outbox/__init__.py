"""The outbox: every post the bot makes on its own is a row first, drained in order per channel.

- `payload` — the stored JSON shape, building and parsing it, Discord's limits.
- `markers` — the invisible per-message marker and nonce that make delivery exactly-once.
- `poster` — `OutboxPoster` over a platform `Transport` (Discord's is in `bot.app`).

Digest scheduling is not here: it queues rows like any other writer (`bot.outputs.digests`)."""
