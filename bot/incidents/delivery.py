"""Posting incidents: what the engine queues in the outbox for each incident of a round, worded
by its `IncidentWords`. `IncidentDelivery.deliver` is the one place that decides it: the alert
(opens a thread, pings once), updates in the thread, edits of the alert message, the alerts
summary, the resolution (in the thread and in the channel) and reminders. Silenced incidents and
runs without an `alerts_channel` are recorded but post nothing.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Protocol

import bot.incidents.lifecycle as lifecycle
from bot.incidents.rounds import Cycle
from bot.incidents.silences import silencing
from bot.incidents.writeup import Prose, Writeup, WriteupPen, gather_writeup
from bot.models import Event, Incident, OutboxItem, ReportedCause, Silence
from bot.store import Store


class IncidentWords(Protocol):
    """How incident posts are worded (`bot.posts.incidents.IncidentPosts`). The engine
    decides what is said and when; each method returns the outbox payload (or the thread
    text) that says it."""

    def head_hash(self, incident: Incident, run_name: str, links: dict[str, str]) -> str: ...

    def alert(
        self, incident: Incident, run_name: str, links: dict[str, str], *, ping_role: int | None
    ) -> tuple[dict[str, Any], str]: ...

    def edit(
        self, incident: Incident, run_name: str, links: dict[str, str], *, edit_of: int
    ) -> dict[str, Any]: ...

    def update(self, text: str, *, archive_thread: bool) -> dict[str, Any]: ...

    def closing(self, incident: Incident) -> dict[str, Any]: ...

    def resolved(self, incident: Incident, run_name: str) -> dict[str, Any]: ...

    def reminder(self, incident: Incident, now: datetime) -> dict[str, Any]: ...

    def reopened(
        self,
        incident: Incident,
        run_name: str,
        zone: str,
        *,
        thread_id: int | None,
        ping_role: int | None,
    ) -> dict[str, Any]: ...

    def reopened_update(self, incident: Incident, zone: str) -> dict[str, Any]: ...

    def member_update(self, title: str, at: datetime) -> str: ...

    def alert_summary(
        self, incident: Incident, *, edit_of: int | None, archive_thread: bool
    ) -> dict[str, Any] | None: ...

    def cause_update(self, cause: ReportedCause) -> str: ...

    def writeup(
        self,
        writeup: Writeup,
        *,
        edit_of: int | None,
        archive_thread: bool,
        prose: Prose | None = None,
    ) -> dict[str, Any]: ...

    def event_update(self, event: Event) -> str: ...


class IncidentDelivery:
    """Queues each incident's posts, each with a dedup key (`incident:<id>:…`), so a round that
    runs twice posts once. With a `pen` (a model key), the write-up waits for the words the
    model stored for it (`WriteupPen.stored`): never the model itself."""

    def __init__(self, words: IncidentWords, pen: WriteupPen | None = None):
        self.words = words
        self.pen = pen

    async def deliver(self, store: Store, cycle: Cycle, incident: Incident) -> None:
        """What the round says about `incident`: the alert once it fires, then updates, edits,
        the resolution once, reminders while it stays open."""
        details = incident.details
        if incident.id is None or not details.fired or details.history:
            return  # pending, or history found after the fact: nothing to post
        silence = silencing(cycle.silences, incident, cycle.now)
        details.silenced_by = silence.id if silence is not None else None
        if silence is not None and not details.notified:
            return  # held back: nothing was posted, nothing is
        if cycle.channel is None:
            return
        links = links_of(cycle, incident)
        if not details.notified and not await self._alert(store, cycle, incident, links):
            return
        fired_id = details.fired_outbox_id
        await self._reopened(store, cycle, incident, silence, fired_id)
        await self._follow_ups(store, cycle, incident, silence, fired_id)
        head_hash = self.words.head_hash(incident, cycle.run.name, links)
        if head_hash != details.head_hash and fired_id is not None:
            details.edits += 1
            body = self.words.edit(incident, cycle.run.name, links, edit_of=fired_id)
            key = f"incident:{incident.id}:edit:{details.edits}"
            await self.enqueue(store, cycle, "edit", key, body)
            details.head_hash = head_hash
        await self._close_or_remind(store, cycle, incident, silence, fired_id)

    async def _alert(
        self, store: Store, cycle: Cycle, incident: Incident, links: dict[str, str]
    ) -> bool:
        """The incident's first post, once it fires (or resolves in this round): False when
        there is nothing to say yet, or it fired and cleared unheard."""
        details, done = incident.details, incident.status == "resolved"
        if not done and incident.status != "firing":
            return False
        if done and incident.id not in cycle.resolved_now:
            return False  # fired and cleared while silenced (or without a channel): stay quiet
        # the ping: the run's alert role, on the incident's first post only
        body, head_hash = self.words.alert(
            incident, cycle.run.name, links, ping_role=cycle.run.config.alert_role
        )
        fired = await self.enqueue(store, cycle, "alert", f"incident:{incident.id}:fired", body)
        details.notified = True
        details.fired_outbox_id = fired
        details.head_hash = head_hash
        details.edits = 0
        assert incident.id is not None
        cycle.updates.pop(incident.id, None)  # the alert already shows them
        return True

    async def _reopened(
        self,
        store: Store,
        cycle: Cycle,
        incident: Incident,
        silence: Silence | None,
        fired_id: int | None,
    ) -> None:
        """Each reopening, said once (its keys count the reopenings): a post in the incident's
        thread (which unarchives it) and a short alert in the channel, pinging the alert role as
        a new incident's alert does, linking the thread. Held back while a silence covers it;
        a reopening that cleared again unheard (silenced) stays unsaid."""
        details, count = incident.details, incident.details.reopens
        if count <= details.reopen_posted or fired_id is None or silence is not None:
            return
        if incident.status == "resolved" and incident.id not in cycle.resolved_now:
            details.reopen_posted = count
            return
        key, zone = f"incident:{incident.id}:reopen:{count}", cycle.run.timezone
        body = self.words.reopened_update(incident, zone)
        await self.enqueue(store, cycle, "update", f"{key}:thread", body, fired_id)
        head = await store.outbox.get_by_key(f"incident:{incident.id}:fired")
        thread = int(head.message_id) if head is not None and head.message_id else None
        body = self.words.reopened(
            incident, cycle.run.name, zone, thread_id=thread, ping_role=cycle.run.config.alert_role
        )
        await self.enqueue(store, cycle, "alert", key, body)
        details.reopen_posted = count

    async def _follow_ups(
        self,
        store: Store,
        cycle: Cycle,
        incident: Incident,
        silence: Silence | None,
        fired_id: int | None,
    ) -> None:
        """The round's thread updates (unless silenced) and the alerts summary."""
        details = incident.details
        assert incident.id is not None
        updates = cycle.updates.pop(incident.id, [])
        for suffix, text in updates if silence is None else []:
            # after the resolution, a late follow-up reopens the archived thread: close it again
            body = self.words.update(text, archive_thread=details.resolved_posted)
            key = f"incident:{incident.id}:{suffix}"
            await self.enqueue(store, cycle, "update", key, body, fired_id)
        if silence is None and fired_id is not None and not details.resolved_posted:
            await self._alert_summary(store, cycle, incident, fired_id)

    async def _close_or_remind(
        self,
        store: Store,
        cycle: Cycle,
        incident: Incident,
        silence: Silence | None,
        fired_id: int | None,
    ) -> None:
        """The resolution, said once; else a reminder when one is due."""
        details, key = incident.details, f"incident:{incident.id}"
        if details.reopens:  # each outage's resolution is its own post
            key += f":reopen:{details.reopens}"
        done = incident.status == "resolved"
        if silence is not None:
            # Silenced after it alerted: the head posted before stays true (acknowledged,
            # resolved and without its button), and nothing new is posted in the channel; its
            # thread is still closed and archived when it resolves.
            if done and not details.resolved_posted and fired_id is not None:
                body = self.words.closing(incident)
                await self.enqueue(
                    store, cycle, "resolved", f"{key}:resolved:thread", body, fired_id
                )
                details.resolved_posted = True
            return
        if done and not details.resolved_posted:
            # Said once: the head above now reads resolved, the thread gets its write-up and a
            # closing line and is archived, the channel one resolution message.
            await self._writeup(store, cycle, incident, fired_id)
            body = self.words.closing(incident)
            await self.enqueue(store, cycle, "resolved", f"{key}:resolved:thread", body, fired_id)
            body = self.words.resolved(incident, cycle.run.name)
            await self.enqueue(store, cycle, "resolved", f"{key}:resolved", body)
            details.resolved_posted = True
            return
        if done:
            await self._writeup(store, cycle, incident, fired_id)  # edited if it changed
            return
        if lifecycle.reminder_due(incident, cycle.now, cycle.th):
            count = details.reminders + 1
            body = self.words.reminder(incident, cycle.now)
            await self.enqueue(store, cycle, "update", f"{key}:reminder:{count}", body, fired_id)
            details.reminders = count
            details.last_reminder_at = cycle.now

    async def _writeup(
        self, store: Store, cycle: Cycle, incident: Incident, fired_id: int | None
    ) -> None:
        """The incident's one write-up, in its thread when it resolves: posted once (keyed by
        the incident, so a restart re-posts nothing), edited in place whenever what it says
        changes (a late report, a person's action read after it resolved, a follow-up opened,
        a reopening). Without a model, the template's, just before the closing line. With one,
        what the model stored for the present facts, in a later round (after the closing line,
        so it closes the thread again): until it is stored, the thread keeps what it has."""
        if fired_id is None:
            return
        key = f"incident:{incident.id}:writeup"
        facts = await gather_writeup(store, cycle.run, incident)
        prose = await self.pen.stored(store, facts) if self.pen is not None else None
        if self.pen is not None and prose is None:
            return  # not written yet for these facts (`WriteupPen.write`, off this path)
        posted = await store.outbox.get_by_key(key)
        archive = self.pen is not None and incident.details.resolved_posted
        if posted is None:
            body = self.words.writeup(facts, edit_of=None, archive_thread=archive, prose=prose)
            await self.enqueue(store, cycle, "update", key, body, fired_id)
            return
        body = self.words.writeup(facts, edit_of=posted.id, archive_thread=False, prose=prose)
        if body.get("card") != posted.payload.get("card"):
            card = json.dumps(body.get("card"), sort_keys=True)
            edit = hashlib.sha256(card.encode()).hexdigest()[:16]
            await self.enqueue(store, cycle, "edit", f"{key}:edit:{edit}", body)

    async def _alert_summary(
        self, store: Store, cycle: Cycle, incident: Incident, fired_id: int
    ) -> None:
        """The thread's one post about the incident's Alertmanager alerts: posted when there is
        more to say than the head (a group, an alert joining another incident, alerts left out
        of a notification), then edited as the alerts change; never a post per alert."""
        key = f"incident:{incident.id}:alerts"
        posted = await store.outbox.get_by_key(key)
        body = self.words.alert_summary(
            incident, edit_of=posted.id if posted is not None else None, archive_thread=False
        )
        if body is None:
            return
        if posted is None:
            await self.enqueue(store, cycle, "update", key, body, fired_id)
        elif body.get("content") != posted.payload.get("content"):
            # one edit per distinct text (the text carries its last change's time)
            await self.enqueue(store, cycle, "edit", f"{key}:edit:{_digest(body)}", body)

    async def enqueue(
        self,
        store: Store,
        cycle: Cycle,
        kind: str,
        key: str,
        body: dict[str, Any],
        reply_to: int | None = None,
    ) -> int | None:
        assert cycle.channel is not None
        item = OutboxItem(
            channel_id=cycle.channel,
            kind=kind,
            payload=body,
            dedup_key=key,
            run_slug=cycle.run.slug,
            created_at=cycle.now,
            reply_to=reply_to,
        )
        item_id = await store.outbox.enqueue(item)
        if item_id is not None:
            cycle.queued += 1
            return item_id
        existing = await store.outbox.get_by_key(key)
        return existing.id if existing is not None else None


def _digest(body: dict[str, Any]) -> str:
    text = str(body.get("content") or "")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def links_of(cycle: Cycle, incident: Incident) -> dict[str, str]:
    links: dict[str, str] = {}
    for signal in incident.details.signals:
        url = signal.url
        if url and url not in links.values() and len(links) < 6:
            links[signal.source] = url
    for member in incident.details.members.values():
        # a detector's own links, labelled by what they open (an alert's runbook, its graph)
        for label, url in (member.facts.get("links") or {}).items():
            if url not in links.values() and len(links) < 6:
                links[label] = url
    for label, url in cycle.run.links.items():
        if url not in links.values() and len(links) < 6:
            links[label] = url
    return links
