-- The W&B events index of 0013 was (run, time): finding a run's last restart walked back through
-- every W&B state change to reach it (1.3 s at a million events, most of them W&B). Keyed by kind
-- as well, "the last restart" and "every restart for the chart" are one seek again.
DROP INDEX events_wandb;
CREATE INDEX events_wandb ON events (run_slug, kind, at) WHERE source = 'wandb';
