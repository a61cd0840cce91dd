"""One dated line of the timeline, as `/timeline`, `timeline --json` and the digest show it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.models import Event


@dataclass(slots=True, frozen=True)
class TimelineEntry:
    at: datetime
    author: str | None
    source: str
    ref: str | None
    url: str | None
    state: str | None
    summary: str
    tag: str
    incident: bool
    kind: str

    def as_json(self) -> dict[str, object]:
        return {
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "author": self.author,
            "source": self.source,
            "ref": self.ref,
            "url": self.url,
            "state": self.state,
            "summary": self.summary,
            "tag": self.tag,
            "incident": self.incident,
        }


def entry_from_event(event: Event) -> TimelineEntry:
    summary = event.summary or event.title or (event.body[:200] if event.body else "")
    return TimelineEntry(
        at=event.at,
        author=event.author,
        source=event.source,
        ref=event.ref,
        url=event.url,
        state=event.state,
        summary=summary or "(no text)",
        tag=event.tag or ("incident" if event.incident else "other"),
        incident=event.incident,
        kind=event.kind,
    )
