-- A window of metric points at a bounded resolution (issue 28): the first and the last point of
-- each minute of each W&B run, kept at ingest by a trigger in the writer's transaction. `/status`,
-- the digest and the detectors read a day as at most two points a minute per W&B run, however
-- often the run logs; a run logging at most twice a minute reads exactly its raw points (a
-- minute's first and last point are then all of its points).
CREATE TABLE metric_minutes (
    run_slug      TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    minute        INTEGER NOT NULL,         -- unix seconds // 60
    wandb_run     TEXT NOT NULL,
    first_step    INTEGER NOT NULL,         -- the minute's earliest point
    first_at      TEXT NOT NULL,
    first_tokens  REAL,
    first_loss    REAL,
    step          INTEGER NOT NULL,         -- the minute's latest point
    at            TEXT NOT NULL,
    tokens        REAL,
    loss          REAL,
    points        INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (run_slug, minute, wandb_run)
) WITHOUT ROWID;

-- Every column of the update reads the row as it was before it, so the first and the last point
-- are chosen from the same old values.
CREATE TRIGGER metric_points_minutes AFTER INSERT ON metric_points BEGIN
    INSERT INTO metric_minutes (run_slug, minute, wandb_run, first_step, first_at, first_tokens,
                                first_loss, step, at, tokens, loss, points)
    VALUES (new.run_slug, CAST(strftime('%s', new.at) AS INTEGER) / 60, new.wandb_run,
            new.step, new.at, new.tokens, new.loss, new.step, new.at, new.tokens, new.loss, 1)
    ON CONFLICT (run_slug, minute, wandb_run) DO UPDATE SET
        points = points + 1,
        first_step = CASE WHEN excluded.at < first_at THEN excluded.step ELSE first_step END,
        first_tokens = CASE WHEN excluded.at < first_at THEN excluded.tokens ELSE first_tokens END,
        first_loss = CASE WHEN excluded.at < first_at THEN excluded.loss ELSE first_loss END,
        first_at = min(first_at, excluded.at),
        step = CASE WHEN excluded.at >= at THEN excluded.step ELSE step END,
        tokens = CASE WHEN excluded.at >= at THEN excluded.tokens ELSE tokens END,
        loss = CASE WHEN excluded.at >= at THEN excluded.loss ELSE loss END,
        at = max(at, excluded.at);
END;

-- The points already stored, oldest first through the same upsert (`WHERE true`: SQLite's
-- parsing rule for an upsert on a SELECT).
INSERT INTO metric_minutes (run_slug, minute, wandb_run, first_step, first_at, first_tokens,
                            first_loss, step, at, tokens, loss, points)
SELECT run_slug, CAST(strftime('%s', at) AS INTEGER) / 60, wandb_run,
       step, at, tokens, loss, step, at, tokens, loss, 1
FROM metric_points WHERE true ORDER BY at
ON CONFLICT (run_slug, minute, wandb_run) DO UPDATE SET
    points = points + 1,
    first_step = CASE WHEN excluded.at < first_at THEN excluded.step ELSE first_step END,
    first_tokens = CASE WHEN excluded.at < first_at THEN excluded.tokens ELSE first_tokens END,
    first_loss = CASE WHEN excluded.at < first_at THEN excluded.loss ELSE first_loss END,
    first_at = min(first_at, excluded.at),
    step = CASE WHEN excluded.at >= at THEN excluded.step ELSE step END,
    tokens = CASE WHEN excluded.at >= at THEN excluded.tokens ELSE tokens END,
    loss = CASE WHEN excluded.at >= at THEN excluded.loss ELSE loss END,
    at = max(at, excluded.at);
