-- The poll loop's heartbeat (issue 15): when the last cycle ran and at what interval, so the
-- status page can say "updated … · next in …" and /healthz can tell a stuck loop from a quiet
-- run, even when the web server is a different process from the poller. One row.
CREATE TABLE poll_cycles (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    started_at        TEXT NOT NULL,
    finished_at       TEXT NOT NULL,
    interval_seconds  REAL NOT NULL
);
