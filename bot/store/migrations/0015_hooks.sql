-- Push ingestion (issue 27): GitHub webhook deliveries and Alertmanager alerts.
--
-- 1. `hook_deliveries`: every signed GitHub delivery, by its `X-GitHub-Delivery` id, so a
--    redelivery changes nothing. The payload waits there until the GitHub source has read it
--    (`payload` is then cleared; the id stays for a week, as long as GitHub can redeliver).
-- 2. Alerts are events of a new source, `alertmanager`. The events table's CHECK constraint
--    lists the sources; widening a CHECK leaves every stored row valid, so the table's SQL is
--    edited in place (SQLite's documented procedure for such changes: writable_schema, then a
--    schema change so every connection re-reads the schema) instead of copying the table.
-- 3. The engine reads a run's firing alerts and those resolved since its window: one partial
--    index of alert events by state and end time serves both.

CREATE TABLE hook_deliveries (
    id            INTEGER PRIMARY KEY,
    hook          TEXT NOT NULL,
    delivery_id   TEXT NOT NULL,
    event         TEXT NOT NULL,
    payload       TEXT,                 -- NULL once ingested
    received_at   TEXT NOT NULL,
    UNIQUE (hook, delivery_id)
);
CREATE INDEX hook_deliveries_pending ON hook_deliveries (id) WHERE payload IS NOT NULL;
CREATE INDEX hook_deliveries_received ON hook_deliveries (received_at);

PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(
    sql,
    'CHECK (source IN (''github'', ''discord'', ''wandb'', ''system''))',
    'CHECK (source IN (''github'', ''discord'', ''wandb'', ''system'', ''alertmanager''))'
)
WHERE type = 'table' AND name = 'events';
PRAGMA writable_schema = RESET;
PRAGMA writable_schema = OFF;

-- A schema change after the edit bumps the schema cookie: other connections re-read it.
CREATE INDEX events_alerts ON events (run_slug, state, updated_at) WHERE source = 'alertmanager';
