-- When a source's current run of failures began (issue 11 item 4), so /status can say
-- "W&B failing since 01:51". Set by the first failure after a success, cleared by a success.
ALTER TABLE source_health ADD COLUMN failing_since TEXT;
UPDATE source_health SET failing_since = last_attempt_at WHERE consecutive_failures > 0;
