-- Timelines read newest first with ties broken by id (ORDER BY at DESC, id DESC). An ascending
-- (run_slug, at) index scanned backwards yields exactly that order (rowid ends every entry), so
-- SQLite no longer sorts a week of events to return the first page.
DROP INDEX events_run_at;
CREATE INDEX events_run_at ON events (run_slug, at);
