-- One GitHub comment per incident on its run's ops-log issue (runs-file `github_ops_issue`): the
-- write-up wanted there (stored first), and the comment that says it once posted. The comment's
-- body carries a marker naming the incident, so a crash between GitHub's answer and this row's
-- update finds the comment again instead of posting a second; a changed write-up is edited in.
CREATE TABLE ops_comments (
    incident_id  INTEGER PRIMARY KEY REFERENCES incidents(id) ON DELETE CASCADE,
    run_slug     TEXT NOT NULL,
    repo         TEXT NOT NULL,
    issue        INTEGER NOT NULL,
    body         TEXT NOT NULL,
    body_hash    TEXT NOT NULL,
    wanted_at    TEXT NOT NULL,
    comment_id   INTEGER,
    posted_hash  TEXT,   -- body_hash of what GitHub holds (NULL: not posted yet)
    posted_at    TEXT,
    last_error   TEXT    -- GitHub's last refusal, shown by nothing but the log and this row
);
-- "Which comments are due?" each cycle: only those not yet saying what is wanted.
CREATE INDEX ops_comments_due ON ops_comments (wanted_at)
    WHERE posted_hash IS NULL OR posted_hash != body_hash;
