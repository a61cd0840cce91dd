"""One dated line of the timeline, as `/timeline`, `timeline --json` and the digest show it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.models import LINE_BODY_CHARS, Event


@dataclass(slots=True, frozen=True)
class TimelineEntry:
    at: datetime
    author: str | None
    source: str
    ref: str | None
    url: str | None
    state: str | None
    summary: str
    tag: str | None  # None: nothing fits well enough (the rules were not sure), shown untagged
    incident: bool
    kind: str
    tag_by: str = "rules"  # who judged the summary and tag: "rules" or "model"

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
            "tag_by": self.tag_by,
            "incident": self.incident,
        }


def tag_of(event: Event) -> str | None:
    """The tag the timeline shows: none for "other" (nothing fits) or an unenriched event."""
    tag = event.tag or ("incident" if event.incident else None)
    return None if tag == "other" else tag


def judged_by(event: Event) -> str:
    """ "model" when an LLM wrote the event's summary and tag, else "rules"."""
    return "model" if (event.enriched_by or "").startswith("llm") else "rules"


def entry_from_event(event: Event) -> TimelineEntry:
    summary = event.summary or event.title or (event.body[:LINE_BODY_CHARS] if event.body else "")
    return TimelineEntry(
        at=event.at,
        author=event.author,
        source=event.source,
        ref=event.ref,
        url=event.url,
        state=event.state,
        summary=summary or "(no text)",
        tag=tag_of(event),
        incident=event.incident,
        kind=event.kind,
        tag_by=judged_by(event),
    )
