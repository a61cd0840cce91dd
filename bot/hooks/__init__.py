"""Push ingestion: GitHub webhooks and Alertmanager's webhook receiver, served by the status
site's web server (`bot.hooks.routes`), read into the store (`bot.hooks.ingest`) and the
incident engine like anything polled."""
