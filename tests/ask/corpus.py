"""The hand-written development corpus (tests/data/) loaded into a real store through the store
API, as the GitHub and Discord sources would store it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.core.timeutil import parse_time
from bot.models import Event, RunInfo
from bot.store import Store

DATA = Path(__file__).resolve().parents[1] / "data"
SLUG = "hero"


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    answer_ids: list[str]


def entries() -> list[dict[str, Any]]:
    with open(DATA / "signal_corpus.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def questions() -> list[Question]:
    with open(DATA / "ask_questions.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [Question(r["question"], list(r["answer_ids"])) for r in rows]


def to_event(entry: dict[str, Any]) -> Event:
    url = entry["url"]
    if entry["source"] == "github":
        repo = "/".join(url.split("/")[3:5])
        thread = f"github:{repo}{entry['ref']}"
    else:
        thread = f"discord:{entry['ref']}"
    at = parse_time(entry["at"])
    assert at is not None
    return Event(
        run_slug=SLUG,
        source=entry["source"],
        external_id=entry["id"],  # the corpus id, so a hit maps back to its entry
        kind=entry["kind"],
        at=at,
        author=entry["author"],
        ref=entry["ref"],
        url=url,
        state="open" if entry["kind"] in ("issue", "pull") else None,
        title=entry.get("title"),
        body=entry["body"],
        thread=thread,
    )


async def load(store: Store, *, until: datetime | None = None) -> list[Event]:
    """The corpus as the store holds it; with `until`, as it stood then: what was posted later
    (the batches of other projects run into 2027) is not there yet."""
    await store.runs.upsert(RunInfo(slug=SLUG, name="Hero-8B", timezone="UTC"))
    events = [to_event(e) for e in entries()]
    if until is not None:
        events = [e for e in events if e.at <= until]
    await store.events.upsert_many(events)
    return events
