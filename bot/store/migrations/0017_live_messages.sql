-- One live status message per run (runs-file `status_channel`): where it is, what it last showed
-- and when. The poster writes where the message is (channel, message id, the chart attached, the
-- pin); the refresher what it queued last (fingerprint, rendered_at). A restart edits the same
-- message; a message that is gone (404) is forgotten and posted anew, once.
CREATE TABLE live_messages (
    run_slug       TEXT PRIMARY KEY,
    channel_id     INTEGER,
    message_id     INTEGER,
    chart_digest   TEXT,     -- SHA-256 (16 hex) of the chart PNG attached (NULL: none)
    attachment_id  INTEGER,  -- that chart's attachment, kept on edits while it is unchanged
    pinned         INTEGER NOT NULL DEFAULT 0,
    pin_refused    INTEGER NOT NULL DEFAULT 0,  -- Discord said no (Manage Messages missing)
    posted_at      TEXT,
    edited_at      TEXT,
    rendered_at    TEXT,     -- when the newest queued (or delivered) content was computed
    fingerprint    TEXT      -- its state and open incidents: a change is shown at once
);
-- "Is a live update for this run already queued?" on every refresh tick.
CREATE INDEX outbox_live_queued ON outbox (run_slug) WHERE status = 'queued' AND kind = 'live';
