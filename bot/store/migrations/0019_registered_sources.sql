-- Sources are registered in code (issue 24): `bot.models.SOURCE_SPECS` is their one list, and
-- the store refuses an event of a source it does not name (`EventsRepo.upsert_many`). The events
-- table's CHECK listed the sources a second time, so a new source needed a migration besides
-- its registration; it now checks only the name's shape (a plain lowercase identifier, which is
-- what `SourceSpec` accepts and what lets a query name a source as a literal). A looser CHECK
-- leaves every stored row valid, so the table's SQL is edited in place, as 0015 did.

PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(
    sql,
    'CHECK (source IN (''github'', ''discord'', ''wandb'', ''system'', ''alertmanager''))',
    'CHECK (source GLOB ''[a-z]*'' AND source NOT GLOB ''*[^a-z0-9_-]*'' AND length(source) <= 32)'
)
WHERE type = 'table' AND name = 'events';
PRAGMA writable_schema = RESET;
PRAGMA writable_schema = OFF;

-- A schema change after the edit bumps the schema cookie: other connections re-read it.
CREATE TABLE registered_sources_bump (x);
DROP TABLE registered_sources_bump;
