-- An event's `incident` now means it is about a specific incident (its report, diagnosis, fix or
-- post-mortem: what `timeline --json` shows); what may raise an alert is narrower, a live report
-- of a failure happening now. Until now the one column meant the live report, so it seeds it.
ALTER TABLE events ADD COLUMN live_report INTEGER NOT NULL DEFAULT 0;
UPDATE events SET live_report = incident WHERE incident = 1;

-- The engine reads live reports (unlinked reports, human reports before a resolution): index and
-- version those instead of the broader flag.
DROP INDEX events_incident_flag;
CREATE INDEX events_live_report ON events (run_slug, at) WHERE live_report = 1;

DROP TRIGGER incident_reports_versioned;
CREATE TRIGGER incident_reports_versioned AFTER UPDATE OF live_report, at ON events
WHEN (old.live_report != new.live_report OR old.at != new.at)
    AND EXISTS (SELECT 1 FROM incident_events WHERE event_id = new.id)
BEGIN
    UPDATE incident_versions SET version = version + 1 WHERE run_slug = new.run_slug;
END;
