-- Conversations (Discord bursts) are extended in place: each cycle the pipeline finds a channel's
-- current conversation and the ones its new messages may touch. Only conversation rows are in this
-- index, so the lookup never walks a channel's messages.
CREATE INDEX events_conversations ON events (run_slug, thread, at) WHERE kind = 'conversation';
