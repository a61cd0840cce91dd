"""`EventsRepo`: events from every source, one repository (`store.events`) made of its writes,
its enrichment queue and its timeline reads. The row codec and the SQL helpers they share are in
`bot.store.events`."""

from __future__ import annotations

from bot.store.db import Database
from bot.store.enrichment import EventEnrichment
from bot.store.event_writes import EventWrites
from bot.store.timeline import TimelineReads


class EventsRepo(EventWrites, EventEnrichment, TimelineReads):
    def __init__(self, db: Database):
        self.db = db
