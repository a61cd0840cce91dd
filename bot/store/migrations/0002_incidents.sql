-- Incident engine (issue 6): silences, per-run engine cursor, and indexes that keep each
-- detection cycle windowed (it reads only recent W&B facts and incident-flagged reports).

CREATE TABLE incident_silences (
    id            INTEGER PRIMARY KEY,
    run_slug      TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    matcher       TEXT NOT NULL,          -- '*', a fingerprint, a kind, or a glob ('report:*')
    starts_at     TEXT NOT NULL,
    ends_at       TEXT NOT NULL,
    owner         TEXT NOT NULL,          -- who created it (Discord user), shown in /incidents
    reason        TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    cancelled_at  TEXT,
    cancelled_by  TEXT
);
CREATE INDEX incident_silences_run ON incident_silences (run_slug, ends_at);

-- Where each run's detection got to, so a restarted engine neither re-alerts nor skips history.
CREATE TABLE incident_engine_state (
    run_slug        TEXT PRIMARY KEY REFERENCES runs(slug) ON DELETE CASCADE,
    last_detect_at  TEXT NOT NULL,
    wandb_seen_at   TEXT                  -- last cycle at which W&B data was fresh
);

CREATE INDEX incident_events_event ON incident_events (event_id);
CREATE INDEX events_incident_flag ON events (run_slug, at) WHERE incident = 1;
CREATE INDEX incidents_resolved ON incidents (run_slug, resolved_at);
