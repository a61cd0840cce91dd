-- Full-text search for /ask (issue 13). An FTS5 index over each live event's title, body,
-- enrichment summary, reference (#8818, a W&B run id) and author. It is an external-content
-- index: the text stays in `events` and only the inverted index is stored here.
--
-- Triggers keep it in step with every writer (ingest, edits, re-enrichment, soft and hard
-- deletes), so no repository has to remember to. Soft-deleted events (deleted = 1) are not
-- indexed. An external-content 'delete' must be given exactly the values that were indexed;
-- the WHEN clauses keep that true (only rows that are in the index are removed from it).
--
-- `search_versions` counts changes to the indexed text per run: /ask's answer cache is keyed
-- on it, so an edit, a new summary or a deletion retires cached answers at once.
--
-- Tokenizer: unicode61 splits on anything but letters and digits, so `#8818` is the token
-- 8818, `hero-12d8b6f0` the phrase "hero 12d8b6f0" and `54,000` the phrase "54 000"; the
-- query side (bot/ask/query.py) builds the matching quoted phrases. porter stems English
-- words ("lowered" finds "lower").

CREATE VIRTUAL TABLE events_fts USING fts5(
    title, body, summary, ref, author,
    content = 'events',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TABLE search_versions (
    run_slug  TEXT PRIMARY KEY,
    version   INTEGER NOT NULL DEFAULT 0
);

CREATE TRIGGER events_fts_insert AFTER INSERT ON events WHEN new.deleted = 0 BEGIN
    INSERT INTO events_fts (rowid, title, body, summary, ref, author)
    VALUES (new.id, new.title, new.body, new.summary, new.ref, new.author);
    INSERT INTO search_versions (run_slug, version) VALUES (new.run_slug, 1)
    ON CONFLICT (run_slug) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER events_fts_delete AFTER DELETE ON events WHEN old.deleted = 0 BEGIN
    INSERT INTO events_fts (events_fts, rowid, title, body, summary, ref, author)
    VALUES ('delete', old.id, old.title, old.body, old.summary, old.ref, old.author);
    INSERT INTO search_versions (run_slug, version) VALUES (old.run_slug, 1)
    ON CONFLICT (run_slug) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER events_fts_update AFTER UPDATE OF title, body, summary, ref, author, deleted
ON events
WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.summary IS NOT new.summary
    OR old.ref IS NOT new.ref OR old.author IS NOT new.author OR old.deleted != new.deleted
BEGIN
    INSERT INTO events_fts (events_fts, rowid, title, body, summary, ref, author)
    SELECT 'delete', old.id, old.title, old.body, old.summary, old.ref, old.author
    WHERE old.deleted = 0;
    INSERT INTO events_fts (rowid, title, body, summary, ref, author)
    SELECT new.id, new.title, new.body, new.summary, new.ref, new.author
    WHERE new.deleted = 0;
    INSERT INTO search_versions (run_slug, version) VALUES (new.run_slug, 1)
    ON CONFLICT (run_slug) DO UPDATE SET version = version + 1;
END;

-- Index the events stored before this migration.
INSERT INTO events_fts (rowid, title, body, summary, ref, author)
SELECT id, title, body, summary, ref, author FROM events WHERE deleted = 0;
INSERT INTO search_versions (run_slug, version)
SELECT run_slug, COUNT(*) FROM events GROUP BY run_slug;
