-- A smaller database (issue 12): about a third fewer bytes per event, nothing a reader sees lost.
--
-- 1. The /ask index keeps which events hold a term, not where (FTS5 `detail=none`), nor each
--    event's length per column (`columnsize=0`): those were four fifths of it. Phrases cannot
--    be matched by such an index, so the query side (bot/ask/query.py) asks for every token of
--    a compound instead ("hero-12d8b6f0" → hero AND 12d8b6f0), and the retriever re-scores its
--    candidates in Python with the exact token sequences, so adjacency still ranks. bm25()
--    gives the same scores as before, column weights included: FTS5 re-reads the rows it ranks
--    from `events` (the retriever ranks at most about a thousand per question).
-- 2. Content hashes are 16 hex digits (64 bits) instead of 32: they only tell one version of
--    an event from the next. Stored hashes are cut to match, so nothing is seen as edited.
-- 3. `events.ingested_at` was written and never read.
-- 4. `events_kind` indexed every event by source and kind, but only W&B events (state
--    changes, restarts) are ever looked up that way: a partial index of them by time replaces it.
--    The thread index leaves out events without a thread (W&B), which no lookup can want.
-- 5. Metric points are keyed by (run, W&B run, time, step) instead of (…, step, time): the key
--    itself then serves every lookup (a run's newest point, a time window per W&B run), and
--    both secondary indexes go (they were as large as the table).

UPDATE events SET content_hash = substr(content_hash, 1, 16),
                  enriched_hash = substr(enriched_hash, 1, 16)
WHERE length(content_hash) > 16;

ALTER TABLE events DROP COLUMN ingested_at;

DROP INDEX events_kind;
CREATE INDEX events_wandb ON events (run_slug, at) WHERE source = 'wandb';
DROP INDEX events_thread;
CREATE INDEX events_thread ON events (run_slug, thread, at) WHERE thread IS NOT NULL;

-- The triggers of migration 0006 name the index, not its options: they stay as they are.
DROP TABLE events_fts;
CREATE VIRTUAL TABLE events_fts USING fts5(
    title, body, summary, ref, author,
    content = 'events',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2',
    detail = none,
    columnsize = 0
);
INSERT INTO events_fts (rowid, title, body, summary, ref, author)
SELECT id, title, body, summary, ref, author FROM events WHERE deleted = 0;
-- Retrieval may order some hits differently now: retire cached /ask answers.
UPDATE search_versions SET version = version + 1;

CREATE TABLE metric_points_compact (
    run_slug   TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    wandb_run  TEXT NOT NULL,
    step       INTEGER NOT NULL,
    at         TEXT NOT NULL,
    tokens     REAL,
    loss       REAL,
    -- A restore inside one W&B run logs the same step again at a later time: both rows are kept.
    PRIMARY KEY (run_slug, wandb_run, at, step)
) WITHOUT ROWID;
INSERT INTO metric_points_compact (run_slug, wandb_run, step, at, tokens, loss)
SELECT run_slug, wandb_run, step, at, tokens, loss FROM metric_points;
DROP TABLE metric_points;  -- its indexes and triggers with it; the counters are unchanged
ALTER TABLE metric_points_compact RENAME TO metric_points;

-- The triggers of migration 0011, as they were.
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

CREATE TRIGGER metric_points_uncounted AFTER DELETE ON metric_points BEGIN
    UPDATE metric_spans SET points = points - 1, changes = changes + 1
    WHERE run_slug = old.run_slug;
END;
