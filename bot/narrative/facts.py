"""Facts for the narrative and the digest: computed in code, bounded in size.

Size is bounded whatever the run's length: at most `MAX_HIGHLIGHTS` enriched summaries (chosen
by recency and tag weight), at most `MAX_OPEN_THREADS` open threads and `MAX_INCIDENTS`
incidents; counts by tag are a handful of integers. Raw bodies never enter these facts, only
enriched summaries. The narrative's highlights are chosen by what matters first: the posts of the
threads most discussed lately (`bot.narrative.discussions`: what changed, the latest), then the
last day, within the same budget (`select_story_highlights`). The selection here is pure;
`bot.services.narrative` reads the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.core.hashing import short_hash
from bot.models import SOURCE_SPECS, Event, Incident, Restart, WandbState
from bot.narrative.discussions import Discussion, discussion_events
from bot.narrative.entries import TimelineEntry

MAX_HIGHLIGHTS = 40
# The narrative's request: the last day first, older highlights only for questions still open,
# and a cap on their text (40 highlights, most of them weeks old, were 19,000 characters).
NARRATIVE_HIGHLIGHTS = 16
NARRATIVE_HIGHLIGHT_CHARS = 4_000
RECENT_WINDOW = timedelta(days=1)
MAX_OPEN_THREADS = 10
MAX_INCIDENTS = 8
MAX_ENTRIES = 12  # timeline entries a digest lists
COUNT_WINDOW = timedelta(days=7)
INCIDENT_WINDOW = timedelta(days=7)

# How much a tag matters when choosing what to mention (highlights, digest entries); lower is
# more important. The one table: the narrative, the digest text and the digest's entries agree.
TAG_WEIGHT = {
    "incident": 0,
    "spec": 1,
    "optimizer": 1,
    "training-dynamics": 1,
    "ablation": 2,
    "evals": 2,
    "checkpointing": 2,
    "data": 3,
    "long-context": 3,
    "infra": 3,
    "other": 5,
}


#: W&B run states worth telling people: the run stopped or ended. Every other state change
#: ("is running", "crashed → running", heartbeat bookkeeping) is the monitor's own churn: the
#: restart and the incident already say what it means.
NEWS_STATES = frozenset({"crashed", "failed", "killed", "preempted", "finished"})


def routine(event: Event) -> bool:
    """A W&B state line nobody needs to read: not a crash, a restart or the finish."""
    if event.source != "wandb" or event.kind not in ("state", "heartbeat"):
        return False
    if event.kind == "state":
        return (WandbState.of(event).to_state or event.state) not in NEWS_STATES
    return event.state not in NEWS_STATES


# What the digest's "What happened" tells first (lower first): what broke, what came back,
# what was decided, other work, then chat.
INCIDENTS, RESTARTS, DECISIONS, WORK, CHAT = range(5)


def digest_rank(source: str, kind: str | None, state: str | None, incident: bool) -> int:
    if incident:
        return INCIDENTS
    if source == "wandb":
        return RESTARTS if kind == "restart" else INCIDENTS if state in NEWS_STATES else WORK
    if source == "github" and kind == "state" and state in ("merged", "closed"):
        return DECISIONS
    return CHAT if SOURCE_SPECS.is_chat(source) else WORK


@dataclass(slots=True)
class Highlight:
    at: datetime
    summary: str
    source: str
    author: str | None = None
    ref: str | None = None
    url: str | None = None
    tag: str | None = None
    state: str | None = None
    incident: bool = False
    kind: str | None = None

    @classmethod
    def of(cls, e: Event) -> Highlight:
        return cls(
            at=e.at,
            summary=e.summary or "",
            source=e.source,
            author=e.author,
            ref=e.ref,
            url=e.url,
            tag=e.tag,
            state=e.state,
            incident=e.incident,
            kind=e.kind,
        )

    @property
    def rank(self) -> int:
        return digest_rank(self.source, self.kind, self.state, self.incident)


@dataclass(slots=True)
class IncidentFact:
    title: str
    status: str  # pending | firing | resolved
    started_at: datetime
    resolved_at: datetime | None = None
    severity: str = "warning"
    cause: str | None = None
    resolution: str | None = None
    kind: str = "other"
    reported_cause: str | None = None  # what a person wrote about it while it was open
    reported_by: str | None = None
    reported_url: str | None = None  # where the person wrote it
    acted_by: str | None = None  # a person who reported acting on it (requeue, restart…)
    # resolved with nobody reporting acting on it, once people's posts were read for that;
    # None while that is unknown
    healed: bool | None = None

    def duration(self, now: datetime) -> timedelta:
        return (self.resolved_at or now) - self.started_at


@dataclass(slots=True)
class OpenThread:
    title: str
    source: str  # the source it is open in (`Event.source`)
    ref: str | None = None
    url: str | None = None
    author: str | None = None
    opened_at: datetime | None = None
    kind: str | None = None


@dataclass(slots=True)
class NarrativeFacts:
    run_slug: str
    run_name: str
    now: datetime
    timezone: str = "UTC"
    state: str = "unknown"
    step: int | None = None
    total_steps: int | None = None
    percent: float | None = None
    tokens: float | None = None
    target_tokens: float | None = None
    launched_at: datetime | None = None
    projected_end: datetime | None = None
    projected_margin: timedelta | None = None  # how far either side the end plausibly lies
    loss: float | None = None
    loss_vs_forecast: str | None = None  # "0.012 below the predicted curve"
    drifting: list[str] = field(default_factory=list)  # watched metrics off their forecast
    last_restart: Restart | None = None  # the newest, as the W&B source recorded it
    restart_incident: IncidentFact | None = None  # the outage that most likely caused it
    incidents: list[IncidentFact] = field(default_factory=list)
    counts_by_tag: dict[str, int] = field(default_factory=dict)
    counts_window: timedelta = COUNT_WINDOW
    highlights: list[Highlight] = field(default_factory=list)
    open_threads: list[OpenThread] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)
    incidents_total: int = 0  # over the whole run
    self_healed: int = 0  # crashes training recovered from with no human report
    monitor_stale: bool = False  # W&B unreachable lately: figures may be behind
    wandb_run: str | None = None  # the chain's current W&B run ("hero-2")
    failing_sources: list[str] = field(default_factory=list)  # sources whose last poll failed
    # the threads most discussed lately, most first (`bot.narrative.discussions`)
    discussions: list[Discussion] = field(default_factory=list)

    def fingerprint(self) -> str:
        """What changes the story (not the ever-moving step count): state, last restart,
        incidents and their status, the newest highlights and open threads."""
        parts = [
            self.state,
            self.last_restart.at.isoformat() if self.last_restart else "",
            ";".join(f"{i.title}|{i.status}" for i in self.incidents),
            ";".join(f"{h.at.isoformat()}|{h.ref}|{h.summary}" for h in self.highlights[:10]),
            ";".join(t.ref or t.title for t in self.open_threads),
        ]
        return short_hash(*parts, length=16)


@dataclass(slots=True)
class DigestFacts(NarrativeFacts):
    """The digest of a window: the narrative's facts over [window_start, window_end), plus what
    the digest card and `digest --json` list. `text` starts as the template digest; a configured
    LLM may replace it (`by` says which)."""

    window_start: datetime | None = None
    window_end: datetime | None = None
    step_at_start: int | None = None
    events_in_window: int = 0  # newsworthy events in the window
    restarts_in_window: list[Restart] = field(default_factory=list)
    incidents_opened: int = 0
    incidents_resolved: int = 0
    incidents_open: int = 0
    entries: list[TimelineEntry] = field(default_factory=list)  # the most important, newest first
    # how goodput since launch moved over the window, when by 0.1 point or more (a sentence)
    goodput_moved: str | None = None
    text: str = ""
    by: str = "template"

    def fingerprint(self) -> str:
        """What changes the digest: the narrative's story plus everything of the window it
        tells (its events, restarts, incident counts, the day it covers); not the clock."""
        parts = [
            NarrativeFacts.fingerprint(self),
            self.end.date().isoformat(),
            str(self.events_in_window),
            ";".join(r.at.isoformat() for r in self.restarts_in_window),
            f"{self.incidents_opened}|{self.incidents_resolved}|{self.incidents_open}",
            ";".join(f"{h.at.isoformat()}|{h.ref}|{h.summary}" for h in self.highlights),
            self.goodput_moved or "",
        ]
        return short_hash(*parts, length=16)

    @property
    def start(self) -> datetime:
        return self.window_start or self.now

    @property
    def end(self) -> datetime:
        return self.window_end or self.now

    @property
    def steps_gained(self) -> int | None:
        if self.step is None or self.step_at_start is None:
            return None
        return self.step - self.step_at_start

    @property
    def drifts_opened(self) -> list[str]:
        """Titles of the drift incidents that began in the window."""
        return [i.title for i in self.incidents if i.kind == "drift" and i.started_at >= self.start]

    @property
    def drifts_resolved(self) -> list[str]:
        return [
            i.title
            for i in self.incidents
            if i.kind == "drift" and i.resolved_at is not None and i.resolved_at >= self.start
        ]

    @property
    def window_hours(self) -> int:
        if self.window_start is None or self.window_end is None:
            return 24
        return round((self.window_end - self.window_start).total_seconds() / 3600)

    @property
    def quiet(self) -> bool:
        """Nothing happened: no newsworthy event, no restart and no training progress in the
        window, and no incident open at any time in it (a run that is down all day is news)."""
        return (
            self.events_in_window == 0
            and not self.restarts_in_window
            and not self.incidents
            and not self.steps_gained
        )


# -- selection (pure) ------------------------------------------------------------------------


def _candidates(events: Sequence[Event]) -> list[Event]:
    """What a highlight may be: a live, newsworthy, summarised event that is not routine."""
    return [
        e
        for e in events
        if not e.deleted and e.newsworthy and (e.summary or "").strip() and not routine(e)
    ]


def _weight(e: Event) -> int:
    """Lower is more relevant: the tag's weight, an incident first among its tag."""
    return TAG_WEIGHT.get(e.tag or "other", 5) - (1 if e.incident else 0)


def select_highlights(
    events: Sequence[Event], now: datetime, limit: int = MAX_HIGHLIGHTS
) -> list[Highlight]:
    """The `limit` most relevant enriched, newsworthy events: score = tag weight + age in half
    days, lower first; returned newest first."""
    scored = [
        (_weight(event) + max(0.0, (now - event.at).total_seconds() / 43200), event)
        for event in _candidates(events)
    ]
    scored.sort(key=lambda pair: (pair[0], -pair[1].at.timestamp()))
    chosen = sorted((event for _, event in scored[:limit]), key=lambda e: e.at, reverse=True)
    return [Highlight.of(e) for e in chosen]


def select_narrative_highlights(
    events: Sequence[Event],
    now: datetime,
    open_refs: set[str],
    limit: int = NARRATIVE_HIGHLIGHTS,
    max_chars: int = NARRATIVE_HIGHLIGHT_CHARS,
) -> list[Highlight]:
    """The narrative's highlights: what happened in the last day first (by tag weight, then
    newest), then older events only from threads still open (the latest of each), until
    `limit` highlights or `max_chars` of summaries; returned newest first."""
    candidates = _candidates(events)
    recent = [e for e in candidates if now - e.at <= RECENT_WINDOW]
    recent.sort(key=lambda e: (_weight(e), -e.at.timestamp()))
    older: list[Event] = []
    seen: set[str] = set()
    for e in sorted(candidates, key=lambda e: e.at, reverse=True):
        if now - e.at <= RECENT_WINDOW or not e.ref or e.ref not in open_refs or e.ref in seen:
            continue
        seen.add(e.ref)
        older.append(e)
    older.sort(key=lambda e: (_weight(e), -e.at.timestamp()))
    chosen: list[Event] = []
    size = 0
    for e in [*recent, *older]:
        if len(chosen) >= limit:
            break
        cost = len(e.summary or "")
        if chosen and size + cost > max_chars:
            continue
        chosen.append(e)
        size += cost
    chosen.sort(key=lambda e: e.at, reverse=True)
    return [Highlight.of(e) for e in chosen]


def open_threads_from(events: Sequence[Event], limit: int = MAX_OPEN_THREADS) -> list[OpenThread]:
    """Open issues and pull requests, newest first, one per reference."""
    seen: set[str] = set()
    threads: list[OpenThread] = []
    for event in sorted(events, key=lambda e: e.at, reverse=True):
        if event.kind not in ("issue", "pull") or event.state != "open" or event.deleted:
            continue
        key = event.ref or event.external_id
        if key in seen:
            continue
        seen.add(key)
        threads.append(
            OpenThread(
                title=event.title or event.summary or key,
                source=event.source,
                ref=event.ref,
                url=event.url,
                author=event.author,
                opened_at=event.at,
                kind=event.kind,
            )
        )
        if len(threads) >= limit:
            break
    return threads


def select_story_highlights(
    events: Sequence[Event],
    now: datetime,
    open_refs: set[str],
    discussions: Sequence[Discussion],
    limit: int = NARRATIVE_HIGHLIGHTS,
    max_chars: int = NARRATIVE_HIGHLIGHT_CHARS,
) -> list[Highlight]:
    """The narrative's highlights chosen by what matters, within the same budget as
    `select_narrative_highlights`: first, for each discussion (most discussed first), the post
    that says what changed and its newest post; then the last day's and the open threads' as
    that function chooses them, in what is left of `limit` and `max_chars`. Newest first."""
    chosen: list[Event] = []
    size = 0
    for e in discussion_events(_candidates(events), discussions):
        cost = len(e.summary or "")
        if len(chosen) >= limit or (chosen and size + cost > max_chars):
            continue
        chosen.append(e)
        size += cost
    taken = {id(e) for e in chosen}
    rest: list[Highlight] = []
    if len(chosen) < limit and size < max_chars:
        rest = select_narrative_highlights(
            [e for e in events if id(e) not in taken],
            now,
            open_refs,
            limit - len(chosen),
            max_chars - size,
        )
    picked = [Highlight.of(e) for e in chosen] + rest
    picked.sort(key=lambda h: h.at, reverse=True)
    return picked


def open_threads_first(
    discussions: Sequence[Discussion],
    threads: Sequence[OpenThread],
    limit: int = MAX_OPEN_THREADS,
) -> list[OpenThread]:
    """Open threads, the ones under discussion first (most discussed first, however old),
    then the others as given; one per reference, at most `limit`."""
    out: list[OpenThread] = [
        OpenThread(
            title=d.title,
            source="github",
            ref=d.ref,
            url=d.url,
            author=d.opened_by or d.driver,
            opened_at=d.opened_at,
            kind=d.kind,
        )
        for d in discussions
        if d.open
    ]
    refs = {t.ref for t in out}
    out += [t for t in threads if t.ref is None or t.ref not in refs]
    return out[:limit]


def incident_fact(i: Incident) -> IncidentFact:
    return IncidentFact(
        title=i.title,
        status=i.status,
        started_at=i.started_at,
        resolved_at=i.resolved_at,
        severity=i.severity,
        cause=i.cause,
        resolution=i.resolution,
        kind=i.kind,
        reported_cause=i.details.reported_cause.text if i.details.reported_cause else None,
        reported_by=i.details.reported_cause.author if i.details.reported_cause else None,
        reported_url=i.details.reported_cause.url if i.details.reported_cause else None,
        acted_by=i.details.acted_by,
        healed=_healed(i),
    )


def _healed(i: Incident) -> bool | None:
    if i.details.acted_by is not None:
        return False
    if i.status != "resolved" or i.details.acted_checked_until is None:
        return None
    return True


def incident_facts(incidents: Sequence[Incident], limit: int = MAX_INCIDENTS) -> list[IncidentFact]:
    ordered = sorted(incidents, key=lambda i: (i.status == "resolved", -i.started_at.timestamp()))
    return [incident_fact(i) for i in ordered[:limit]]


def pick_entries(entries: Sequence[TimelineEntry], limit: int = MAX_ENTRIES) -> list[TimelineEntry]:
    """The `limit` entries a digest lists: incidents, restarts and decisions before other work
    and chat, then by tag weight, then newest; returned newest first."""
    ranked = sorted(
        entries,
        key=lambda e: (
            digest_rank(e.source, e.kind, e.state, e.incident),
            TAG_WEIGHT.get(e.tag or "other", 5),
            -e.at.timestamp(),
        ),
    )
    return sorted(ranked[:limit], key=lambda e: e.at, reverse=True)


def what_happened(highlights: Sequence[Highlight], limit: int) -> list[Highlight]:
    """The digest's "What happened": incidents, restarts and decisions first, then other work,
    chat last; newest first within each."""
    ordered = sorted(highlights, key=lambda h: (h.rank, -h.at.timestamp()))
    return ordered[:limit]
