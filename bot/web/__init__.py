"""The status server: the HTTP routes (`server`), what guards them from the network (`guard`) and
what the bot records for /healthz (`health`)."""
