-- Watched W&B metrics ([[runs.forecasts]]) and their forecast state.

-- One row per logged value. `id` is the arrival order: the forecast reads only rows after its
-- cursor, so a poll's work is O(new points) at any history length.
CREATE TABLE metric_series (
    id         INTEGER PRIMARY KEY,
    run_slug   TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    metric     TEXT NOT NULL,
    wandb_run  TEXT NOT NULL,
    step       INTEGER NOT NULL,
    at         TEXT NOT NULL,
    value      REAL NOT NULL,
    -- A restore inside one W&B run logs the same step again at a later time: both rows are kept.
    UNIQUE (run_slug, metric, wandb_run, step, at)
);
CREATE INDEX metric_series_order ON metric_series (run_slug, metric, id);

-- The tracker of each watched metric (bot.analysis.forecast.Tracker as JSON, bounded in size)
-- and the last metric_series id it has seen.
CREATE TABLE forecast_state (
    run_slug    TEXT NOT NULL REFERENCES runs(slug) ON DELETE CASCADE,
    metric      TEXT NOT NULL,
    cursor      INTEGER NOT NULL DEFAULT 0,
    state       TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (run_slug, metric)
);
