"""Posts: how what the domain decided is worded for Discord, as outbox payloads.

`incidents` words incident posts (the alert card, its edits, thread updates, the resolution,
the `/incidents` listing) as outbox payloads. The incident engine (`bot.incidents.engine`)
decides what is said and when; it receives an `IncidentPosts` (its `IncidentWords`) from the
composition root and never imports this package."""
