-- Where an outbox item's message actually went: its channel, or the thread opened on the item it
-- replies to. Edits after a restart need it (the thread ids were only known in memory).
ALTER TABLE outbox ADD COLUMN posted_in INTEGER;
