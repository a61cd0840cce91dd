-- Runscribe schema, version 1. Times are UTC ISO-8601 text, fixed width, so they sort as strings.

CREATE TABLE runs (
    slug        TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    config      TEXT NOT NULL,          -- the [[runs]] table as JSON
    updated_at  TEXT NOT NULL
);

CREATE TABLE events (
    id            INTEGER PRIMARY KEY,
    run_slug      TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    source        TEXT NOT NULL CHECK (source IN ('github', 'discord', 'wandb', 'system')),
    external_id   TEXT NOT NULL,
    kind          TEXT NOT NULL,
    at            TEXT NOT NULL,
    updated_at    TEXT,
    author        TEXT,
    ref           TEXT,
    url           TEXT,
    state         TEXT,
    title         TEXT,
    body          TEXT NOT NULL DEFAULT '',
    thread        TEXT,
    extra         TEXT NOT NULL DEFAULT '{}',
    deleted       INTEGER NOT NULL DEFAULT 0,
    content_hash  TEXT NOT NULL,
    ingested_at   TEXT NOT NULL,
    -- enrichment; enriched_hash = content_hash at the time it was enriched
    summary       TEXT,
    tag           TEXT,
    incident      INTEGER NOT NULL DEFAULT 0,
    severity      TEXT,
    newsworthy    INTEGER NOT NULL DEFAULT 1,
    enriched_by   TEXT,
    enriched_hash TEXT,
    UNIQUE (run_slug, source, external_id)
);
CREATE INDEX events_run_at ON events (run_slug, at DESC);
CREATE INDEX events_thread ON events (run_slug, thread);
CREATE INDEX events_kind ON events (run_slug, source, kind, at);
CREATE INDEX events_unenriched ON events (run_slug) WHERE enriched_hash IS NULL;

CREATE TABLE metric_points (
    run_slug   TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    wandb_run  TEXT NOT NULL,
    step       INTEGER NOT NULL,
    at         TEXT NOT NULL,
    tokens     REAL,
    loss       REAL,
    -- A restore inside one W&B run logs the same step again at a later time: both rows are kept.
    PRIMARY KEY (run_slug, wandb_run, step, at)
) WITHOUT ROWID;
CREATE INDEX metric_points_at ON metric_points (run_slug, at);
CREATE INDEX metric_points_run_at ON metric_points (run_slug, wandb_run, at);

CREATE TABLE run_snapshots (
    run_slug      TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    wandb_run     TEXT NOT NULL,
    name          TEXT,
    state         TEXT NOT NULL,
    created_at    TEXT,
    heartbeat_at  TEXT,
    last_step     INTEGER,
    observed_at   TEXT NOT NULL,
    summary       TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_slug, wandb_run)
);

CREATE TABLE source_cursors (
    source      TEXT NOT NULL,
    key         TEXT NOT NULL,          -- e.g. "owner/repo:issues", "entity/project/run:history"
    value       TEXT,
    etag        TEXT,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (source, key)
);

CREATE TABLE source_health (
    source                TEXT NOT NULL,
    scope                 TEXT NOT NULL, -- a run slug (freshness) or a source key (backoff)
    last_attempt_at       TEXT,
    last_success_at       TEXT,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    next_attempt_at       TEXT,
    last_error            TEXT,
    PRIMARY KEY (source, scope)
);

CREATE TABLE incidents (
    id           INTEGER PRIMARY KEY,
    run_slug     TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    fingerprint  TEXT NOT NULL,
    kind         TEXT NOT NULL,
    title        TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'firing', 'resolved')),
    severity     TEXT NOT NULL DEFAULT 'warning',
    started_at   TEXT NOT NULL,
    fired_at     TEXT,
    resolved_at  TEXT,
    last_seen_at TEXT,
    cause        TEXT,
    resolution   TEXT,
    acked_by     TEXT,
    acked_at     TEXT,
    details      TEXT NOT NULL DEFAULT '{}'
);
-- At most one unresolved incident per run and condition.
CREATE UNIQUE INDEX incidents_open ON incidents (run_slug, fingerprint) WHERE status != 'resolved';
CREATE INDEX incidents_run ON incidents (run_slug, started_at DESC);

CREATE TABLE incident_events (
    incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
    event_id    INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    PRIMARY KEY (incident_id, event_id)
);

CREATE TABLE outbox (
    id          INTEGER PRIMARY KEY,
    run_slug    TEXT,
    channel_id  INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    dedup_key   TEXT NOT NULL UNIQUE,
    payload     TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'failed')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    not_before  TEXT,
    sent_at     TEXT,
    message_id  TEXT,
    last_error  TEXT,
    reply_to    INTEGER REFERENCES outbox(id)
);
CREATE INDEX outbox_queued ON outbox (channel_id, id) WHERE status = 'queued';

CREATE TABLE llm_outputs (
    id            INTEGER PRIMARY KEY,
    run_slug      TEXT,
    task          TEXT NOT NULL,
    prompt_name   TEXT NOT NULL,
    prompt_hash   TEXT NOT NULL,
    model         TEXT NOT NULL,
    content       TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL NOT NULL DEFAULT 0,
    fallback      INTEGER NOT NULL DEFAULT 0,
    cache_key     TEXT
);
CREATE INDEX llm_outputs_task ON llm_outputs (run_slug, task, created_at DESC);
CREATE INDEX llm_outputs_cache ON llm_outputs (cache_key) WHERE cache_key IS NOT NULL;
CREATE INDEX llm_outputs_day ON llm_outputs (created_at);
