-- Per-request cost independent of history (issue 12): what a command or an idle poll cycle reads
-- is kept up to date at write time, by triggers in the writer's own transaction, so no request
-- counts or scans the whole history.

-- The metric series per run: the chart cache's data version (`changes`) and the span the chart
-- downsamples over, instead of COUNT(*), MIN(at), MAX(at) over every point.
CREATE TABLE metric_spans (
    run_slug  TEXT PRIMARY KEY REFERENCES runs(slug) ON DELETE CASCADE,
    points    INTEGER NOT NULL DEFAULT 0,
    first_at  TEXT,
    last_at   TEXT,
    changes   INTEGER NOT NULL DEFAULT 0   -- bumped by every inserted or deleted point
);

-- Pre-aggregated chart buckets: the last point of each `width`-second bucket per W&B run, at three
-- resolutions (5 min, 1 h, 12 h). A chart of any history reads at most a few thousand of them.
CREATE TABLE metric_buckets (
    run_slug   TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    width      INTEGER NOT NULL,            -- seconds
    wandb_run  TEXT NOT NULL,
    bucket     INTEGER NOT NULL,            -- unix seconds // width
    step       INTEGER NOT NULL,
    at         TEXT NOT NULL,
    tokens     REAL,
    loss       REAL,
    PRIMARY KEY (run_slug, width, wandb_run, bucket)
) WITHOUT ROWID;

CREATE TRIGGER metric_points_counted AFTER INSERT ON metric_points BEGIN
    INSERT INTO metric_spans (run_slug, points, first_at, last_at, changes)
    VALUES (new.run_slug, 1, new.at, new.at, 1)
    ON CONFLICT (run_slug) DO UPDATE SET
        points = points + 1,
        changes = changes + 1,
        first_at = min(first_at, excluded.first_at),
        last_at = max(last_at, excluded.last_at);
    INSERT INTO metric_buckets (run_slug, width, wandb_run, bucket, step, at, tokens, loss)
    SELECT new.run_slug, w.width, new.wandb_run,
           CAST(strftime('%s', new.at) AS INTEGER) / w.width,
           new.step, new.at, new.tokens, new.loss
    FROM (SELECT 300 AS width UNION ALL SELECT 3600 UNION ALL SELECT 43200) AS w WHERE true
    ON CONFLICT (run_slug, width, wandb_run, bucket) DO UPDATE SET
        step = excluded.step, at = excluded.at, tokens = excluded.tokens, loss = excluded.loss
    WHERE excluded.at >= metric_buckets.at;
END;

-- Points are only ever deleted with their run (which takes the series and buckets with it); the
-- count and version still follow, so a cached chart can never outlive its data.
CREATE TRIGGER metric_points_uncounted AFTER DELETE ON metric_points BEGIN
    UPDATE metric_spans SET points = points - 1, changes = changes + 1
    WHERE run_slug = old.run_slug;
END;

INSERT INTO metric_spans (run_slug, points, first_at, last_at, changes)
SELECT run_slug, COUNT(*), MIN(at), MAX(at), COUNT(*) FROM metric_points GROUP BY run_slug;

-- SQLite's bare columns: with MAX(at), step/tokens/loss come from the row holding the maximum.
INSERT INTO metric_buckets (run_slug, width, wandb_run, bucket, step, at, tokens, loss)
SELECT run_slug, width, wandb_run, bucket, step, MAX(at), tokens, loss FROM (
    SELECT p.*, w.width, CAST(strftime('%s', p.at) AS INTEGER) / w.width AS bucket
    FROM metric_points AS p,
         (SELECT 300 AS width UNION ALL SELECT 3600 UNION ALL SELECT 43200) AS w
) GROUP BY run_slug, width, wandb_run, bucket;

-- A version of what the incident statistics on /status are computed from (incidents, their
-- linked events and those events' incident flag), so the statistics are recomputed only when one
-- of those changes.
CREATE TABLE incident_versions (
    run_slug  TEXT PRIMARY KEY REFERENCES runs(slug) ON DELETE CASCADE,
    version   INTEGER NOT NULL DEFAULT 0
);

CREATE TRIGGER incidents_versioned_insert AFTER INSERT ON incidents BEGIN
    INSERT INTO incident_versions (run_slug, version) VALUES (new.run_slug, 1)
    ON CONFLICT (run_slug) DO UPDATE SET version = version + 1;
END;

-- The engine rewrites the incidents it follows every cycle; only a real change is a new version.
CREATE TRIGGER incidents_versioned_update AFTER UPDATE ON incidents
WHEN old.status IS NOT new.status OR old.details IS NOT new.details
    OR old.started_at IS NOT new.started_at OR old.resolved_at IS NOT new.resolved_at
    OR old.fired_at IS NOT new.fired_at OR old.fingerprint IS NOT new.fingerprint
    OR old.kind IS NOT new.kind OR old.title IS NOT new.title OR old.severity IS NOT new.severity
    OR old.cause IS NOT new.cause OR old.resolution IS NOT new.resolution
    OR old.acked_by IS NOT new.acked_by OR old.acked_at IS NOT new.acked_at
    OR old.last_seen_at IS NOT new.last_seen_at OR old.run_slug IS NOT new.run_slug
BEGIN
    INSERT INTO incident_versions (run_slug, version) VALUES (new.run_slug, 1)
    ON CONFLICT (run_slug) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER incidents_versioned_delete AFTER DELETE ON incidents BEGIN
    UPDATE incident_versions SET version = version + 1 WHERE run_slug = old.run_slug;
END;

CREATE TRIGGER incident_links_versioned_insert AFTER INSERT ON incident_events BEGIN
    UPDATE incident_versions SET version = version + 1
    WHERE run_slug = (SELECT run_slug FROM incidents WHERE id = new.incident_id);
END;

CREATE TRIGGER incident_links_versioned_delete AFTER DELETE ON incident_events BEGIN
    UPDATE incident_versions SET version = version + 1
    WHERE run_slug = (SELECT run_slug FROM incidents WHERE id = old.incident_id);
END;

CREATE TRIGGER incident_reports_versioned AFTER UPDATE OF incident, at ON events
WHEN (old.incident != new.incident OR old.at != new.at)
    AND EXISTS (SELECT 1 FROM incident_events WHERE event_id = new.id)
BEGIN
    UPDATE incident_versions SET version = version + 1 WHERE run_slug = new.run_slug;
END;

INSERT INTO incident_versions (run_slug, version)
SELECT run_slug, COUNT(*) FROM incidents GROUP BY run_slug;

-- Pending enrichment is `enriched_hash IS NULL` alone: every edit clears the hash (and only
-- set_enrichment writes it, with the content hash it was computed for). Normalise rows an older
-- version may have left, then index the pending set by run and time so the poll cycle reads it
-- in order without touching the enriched history.
UPDATE events SET enriched_hash = NULL WHERE enriched_hash != content_hash;
DROP INDEX events_unenriched;
CREATE INDEX events_pending ON events (run_slug, at) WHERE enriched_hash IS NULL;

-- Events the rules enriched while the LLM was failing, offered to it again each cycle.
CREATE INDEX events_llm_retry ON events (run_slug, at) WHERE enriched_by = 'rules:llm-retry';

-- Conversations: messages of one channel in a time range.
DROP INDEX events_thread;
CREATE INDEX events_thread ON events (run_slug, thread, at);
