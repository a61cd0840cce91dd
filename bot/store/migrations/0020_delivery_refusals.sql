-- A post Discord refuses (403 Missing Permissions or Access, 404 Unknown Channel) is held and
-- retried for hours, per channel, instead of being dropped after a minute (issue 35). What that
-- takes survives a restart: per channel, the last delivery outcome (for /healthz), whether it
-- was a refusal, and the posts given up there that no post has reported yet ("3 posts could not
-- be delivered between … and …"), with the queued notice that will report them.
ALTER TABLE outbox ADD COLUMN abandoned_at TEXT;

CREATE TABLE delivery_channels (
    channel_id      INTEGER PRIMARY KEY,
    last_attempt_at TEXT NOT NULL,
    failing_since   TEXT,               -- first failed try since the last success (NULL: ok)
    last_error      TEXT,
    refused         INTEGER NOT NULL DEFAULT 0,  -- the last failure was a refusal
    missed          INTEGER NOT NULL DEFAULT 0,  -- posts given up here, not reported yet
    missed_from     TEXT,               -- when the first and last of them were queued
    missed_until    TEXT,
    missed_reason   TEXT,               -- e.g. "403 Missing Permissions (code 50013)"
    notice_id       INTEGER             -- the queued outbox row that will report them
);
