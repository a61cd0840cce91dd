-- The channel's newest message id recorded just before an outbox item is first sent: after a
-- crash the poster searches history after it for the item's marker, however busy the channel.
ALTER TABLE outbox ADD COLUMN anchor_id INTEGER;
