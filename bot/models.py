"""Domain objects shared by the store, the sources, analysis and rendering. Plain dataclasses:
no I/O, no Discord."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any, ClassVar, Final, Self, TypeAlias

from bot.config.runsfile import RunConfig
from bot.core import jsoncodec
from bot.core.timeutil import to_db


def _unused(config: RunConfig) -> bool:
    return False


_SOURCE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One source's registration: everything the rest of the code asks about a source. Adding a
    source is its module plus one of these in `SOURCE_SPECS`; every surface (the CLI's choices,
    `/status` and the page's freshness and health, the reports the incidents read, the chat
    bursts folded into conversations, the live sources a run polls) derives from it."""

    name: str  # `Event.source`; a plain identifier (it is written into SQL as a literal)
    label: str  # how posts name it: "GitHub #8818", "Discord #hero-run"
    people: bool  # people write there: an incident-flagged event is a human report; else code
    #  wrote its events from structured data, so they are enriched from their fields (`facts`)
    polled: bool = True  # Runscribe polls it (its freshness is shown); "system" is our own
    #: whether a run uses it (its runs-file keys): a polled source a run does not use is neither
    #: shown nor judged for that run
    configured: Callable[[RunConfig], bool] = _unused
    #: people chat there in bursts: consecutive messages of one thread are folded into one
    #: `conversation` event before enrichment (`bot.enrich.conversations`)
    chat: bool = False
    #: "module:function" building its live sources for the runs that use it (`bot.process.wiring`
    #: imports it only then); None: not built per run (it pushes, or the bot's edge feeds it)
    build: str | None = None
    #: the declared data of each kind of its events that carries any (`EventData` subclasses,
    #: `Restart`): what the store checks before a write and readers read through; a chat
    #: source's conversations carry `ConversationData` without saying so
    data: tuple[DeclaredData, ...] = ()

    def __post_init__(self) -> None:
        if not _SOURCE_NAME.fullmatch(self.name):
            raise ValueError(f"source name {self.name!r} is not a plain lowercase identifier")
        kinds = [kind for data in self.data for kind in data.KINDS]
        if len(kinds) != len(set(kinds)):
            raise ValueError(f"source {self.name!r}: two data types declare one kind ({kinds})")
        if self.build is not None and ":" not in self.build:
            raise ValueError(f"source {self.name!r}: build {self.build!r} is not module:function")
        if self.polled and self.configured is _unused:
            raise ValueError(f"source {self.name!r} is polled: say which runs use it (configured)")


#: The data a kind of event carries (`SourceSpec.data`): an `EventData` subclass, or `Restart`;
#: each names the event kinds it is for (`KINDS`) and has the strict reader the store runs
#: before a write (`validate`).
DeclaredData: TypeAlias = "type[EventData] | type[Restart]"


class SourceRegistry:
    """The registered sources, in registration order. Every question about a source is asked
    here, never of a second table; the views are computed on each call, so a source registered
    later (a plug-in, a test's `register`) is seen everywhere at once."""

    def __init__(self, specs: Iterable[SourceSpec] = ()):
        self._specs: dict[str, SourceSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: SourceSpec) -> SourceSpec:
        if spec.name in self._specs:
            raise ValueError(f"source {spec.name!r} is registered already")
        self._specs[spec.name] = spec
        return spec

    def unregister(self, name: str) -> SourceSpec:
        return self._specs.pop(name)

    def __iter__(self) -> Iterator[SourceSpec]:
        return iter(tuple(self._specs.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def get(self, name: str) -> SourceSpec | None:
        return self._specs.get(name)

    def label(self, name: str) -> str | None:
        spec = self._specs.get(name)
        return spec.label if spec is not None else None

    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def reports(self) -> tuple[str, ...]:
        """Sources whose incident-flagged events are reports by people."""
        return tuple(s.name for s in self if s.people)

    def facts(self) -> tuple[str, ...]:
        """Sources whose events code wrote from structured data (enriched from their fields)."""
        return tuple(s.name for s in self if not s.people)

    def chat(self) -> tuple[str, ...]:
        """Sources whose messages are folded into conversations."""
        return tuple(s.name for s in self if s.chat)

    def is_chat(self, name: str) -> bool:
        spec = self._specs.get(name)
        return spec is not None and spec.chat

    def is_facts(self, name: str) -> bool:
        """Code wrote its events from structured data (a registered source people do not
        write in); an unknown name is read as text."""
        spec = self._specs.get(name)
        return spec is not None and not spec.people

    def polled(self) -> tuple[SourceSpec, ...]:
        """Sources Runscribe polls, W&B first (it says whether the run is alive): the order of
        freshness and health."""
        return tuple(sorted((s for s in self if s.polled), key=lambda s: s.name != "wandb"))

    def built(self) -> tuple[SourceSpec, ...]:
        """Sources built per run for a polling process (`bot.process.wiring`)."""
        return tuple(s for s in self if s.build is not None)

    def data_of(self, source: str, kind: str) -> DeclaredData | None:
        """The declared data of a source's events of one kind (None: they carry none)."""
        spec = self._specs.get(source)
        if spec is None:
            return None
        for data in spec.data:
            if kind in data.KINDS:
                return data
        if spec.chat and kind in ConversationData.KINDS:
            return ConversationData
        return None

    def declared(self) -> dict[tuple[str, str], DeclaredData]:
        """Every (source, kind) that carries data, and its type."""
        found: dict[tuple[str, str], DeclaredData] = {}
        for spec in self:
            chat = (ConversationData,) if spec.chat else ()
            for data in (*spec.data, *chat):
                for kind in data.KINDS:
                    found.setdefault((spec.name, kind), data)
        return found


TAGS: tuple[str, ...] = (
    "incident",
    "ablation",
    "optimizer",
    "training-dynamics",
    "evals",
    "data",
    "checkpointing",
    "long-context",
    "infra",
    "spec",
    "other",
)

# W&B run states (wandb/sdk/sweeps/run_state.py) plus "unknown".
WANDB_STATES: tuple[str, ...] = (
    "running",
    "pending",
    "preempting",
    "crashed",
    "failed",
    "killed",
    "finished",
    "preempted",
    "unknown",
)
UNHEALTHY_STATES = frozenset({"crashed", "failed", "killed", "preempted"})
#: W&B data older than this says more about the monitor than about the run ("stale", not
#: "crashed"); the incident engine stops judging W&B conditions past it.
MONITOR_STALE_AFTER = timedelta(minutes=15)


def content_hash(*parts: object) -> str:
    """Stable hash of an event's user-visible content; an edit changes it, a re-poll does not.
    64 bits: it only has to tell one version of an event from the next (migration 0012)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode("utf-8", "replace"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:16]


#: Characters of a body a one-line entry shows when the event has no summary or title.
LINE_BODY_CHARS = 200


@dataclass(slots=True)
class Event:
    """One observation from a source: a GitHub issue/PR/comment/review, a Discord message, a W&B
    state change or restart, or a system note. Unique per (run_slug, source, external_id)."""

    run_slug: str
    source: str  # a registered source (`SOURCE_SPECS`)
    external_id: str  # e.g. "issue:8818", "comment:123456", "msg:1180", "wandb:state:<run>:<at>"
    kind: str  # issue | pull | comment | review | message | conversation | state | restart | note
    at: datetime  # when it happened (creation time), UTC
    author: str | None = None
    ref: str | None = None  # "#8818", "#hero-run", a W&B run id
    url: str | None = None
    state: str | None = None  # open | closed | merged | running | crashed | ...
    title: str | None = None
    body: str = ""
    thread: str | None = None  # grouping key: "github:owner/repo#8818", "discord:<channel id>"
    updated_at: datetime | None = None  # last edit / state change seen at the source
    deleted: bool = False
    # Enrichment (filled by bot.enrich / bot.llm); None until enriched.
    summary: str | None = None
    tag: str | None = None
    # about a specific incident (its report, diagnosis, fix, post-mortem): the timeline's flag
    incident: bool = False
    # a report of a failure happening now: the only events that may raise or back an alert
    live_report: bool = False
    severity: str | None = None  # info | warning | critical
    newsworthy: bool = True
    enriched_by: str | None = None  # "rules" or "llm:<prompt>@<hash>"
    id: int | None = None  # database id once stored
    # its source's own data, as the JSON the store keeps: what its (source, kind) declares
    # (`SourceSpec.data`), read through that type (`WandbState.of(event)`), never by key
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        return content_hash(
            self.title, self.body, self.state, self.deleted, sorted(self.extra.items())
        )


@dataclass(slots=True, frozen=True)
class MetricPoint:
    """One W&B history row reduced to what Runscribe tracks."""

    wandb_run: str  # entity/project/run_id
    step: int
    at: datetime
    tokens: float | None = None
    loss: float | None = None


#: Restart kinds: a new W&B run continued the chain, or the step went back inside one run.
NEW_RUN = "new-run"
RESTORE = "restore"
RESTART_KINDS = (NEW_RUN, RESTORE)


class BadEventData(ValueError):
    """An event's data (`Event.extra`) that does not match what its (source, kind) declares
    (`SourceSpec.data`). Raised where it is written (the store refuses the event) and where it is
    read; the message names the source, the kind and the key."""


class BadRestart(BadEventData):
    """A restart record that does not hold together (raised where it is written or read)."""


@dataclass(frozen=True, slots=True)
class Restart:
    """One restart of a tracked run: the one record of it. The W&B source writes it (as its
    restart event's `extra`, `to_json`) and every surface reads it back (`of_event`): the
    card's "Last restart", the narrative, the digest, the crash incident's resolution and the
    page. Downtime and recomputed steps are derived here, so no reader computes them again.

    `at` is when it happened (the first step logged after a restore; a new run's creation);
    `stopped_at` the last step logged before the interruption, `resumed_at` the first one
    after (None while the new run has logged nothing)."""

    KINDS: ClassVar[tuple[str, ...]] = ("restart",)  # the event kind it is the data of

    at: datetime
    kind: str = field(metadata=jsoncodec.json_field("restart"))  # NEW_RUN | RESTORE
    wandb_run: str  # entity/project/run_id that resumed
    previous_run: str | None = None  # the run it continues (a new run), else None
    from_step: int | None = None  # last step reached before the interruption
    to_step: int | None = None  # step training resumed from
    stopped_at: datetime | None = None
    resumed_at: datetime | None = None
    cause: str | None = None  # what W&B said of the interruption ("W&B run a crashed")
    # The run's fixed logging interval in steps (25: it logs every 25th step), when its rows
    # are that regular: the checkpoint training resumed from is then `to_step - interval`.
    # None (rows at irregular steps, or too few): the first step logged is the checkpoint's.
    interval: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in RESTART_KINDS:
            raise BadRestart(f"restart kind {self.kind!r} is not one of {RESTART_KINDS}")
        if not self.wandb_run or not isinstance(self.wandb_run, str):
            raise BadRestart("a restart names the W&B run that resumed")
        for name in ("previous_run", "cause"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise BadRestart(f"restart {name} must be text, not {value!r}")
        for name in ("at", "stopped_at", "resumed_at"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
                raise BadRestart(f"restart {name} must be a timezone-aware datetime")
        if self.interval is not None and (
            isinstance(self.interval, bool) or not isinstance(self.interval, int)
        ):
            raise BadRestart(f"restart interval must be an integer, not {self.interval!r}")
        if self.interval is not None and self.interval < 1:
            raise BadRestart("restart interval must be at least one step")
        for name in ("from_step", "to_step"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise BadRestart(f"restart {name} must be an integer step, not {value!r}")
            if value is not None and value < 0:
                raise BadRestart(f"restart {name} must not be negative")
        if self.kind == RESTORE and self.to_step is None:
            raise BadRestart("a restore knows the step training resumed from")
        if (
            self.stopped_at is not None
            and self.resumed_at is not None
            and self.resumed_at < self.stopped_at
        ):
            raise BadRestart("a restart resumes after it stopped")

    @property
    def down_for(self) -> timedelta | None:
        """Last step before the interruption → first step after it."""
        if self.stopped_at is None or self.resumed_at is None:
            return None
        return self.resumed_at - self.stopped_at

    @property
    def went_on(self) -> bool:
        """The run logged again in place at a later step than it stopped at: W&B keeps one
        run's history in step order and drops rows logged again at earlier steps, so which
        checkpoint it resumed from (and how much was trained twice) is not in W&B."""
        return (
            self.kind == RESTORE
            and self.from_step is not None
            and self.to_step is not None
            and self.to_step > self.from_step
        )

    @property
    def checkpoint_step(self) -> int | None:
        """The step training resumed from: one logging interval before the first step logged
        again (`to_step` itself when the run has no fixed interval); None when W&B cannot
        tell (`went_on`)."""
        if self.to_step is None or self.went_on:
            return None
        return max(0, self.to_step - (self.interval or 0))

    @property
    def recomputed_steps(self) -> int | None:
        """Steps trained twice: every step after the checkpoint up to the last one reached.
        Resumed at step S with rows S+k, S+2k, … after reaching F: F - S (not F - (S+k))."""
        checkpoint = self.checkpoint_step
        if self.from_step is None or checkpoint is None:
            return None
        return max(0, self.from_step - checkpoint)

    @property
    def runs(self) -> tuple[str, ...]:
        """The W&B runs involved, oldest first."""
        return (self.previous_run, self.wandb_run) if self.previous_run else (self.wandb_run,)

    def to_json(self) -> dict[str, Any]:
        """The restart event's `extra` (derived figures included, for readers of the JSON)."""
        down = self.down_for
        return {
            **jsoncodec.dump(self, omit=("at",)),
            "down_seconds": down.total_seconds() if down is not None else None,
            "checkpoint_step": self.checkpoint_step,
            "recomputed_steps": self.recomputed_steps,
        }

    @classmethod
    def from_json(cls, at: datetime, data: Mapping[str, Any], *, strict: bool = False) -> Restart:
        """Read back what `to_json` wrote (derived figures are recomputed, never trusted).
        `strict` (before a write): a key `to_json` never writes is an error too; a stored row
        may keep keys of an older shape, which reading ignores."""
        if strict:
            unknown = sorted(set(data) - RESTART_KEYS)
            if unknown:
                raise BadRestart(f"restart record: unknown key {unknown[0]!r}")
        try:
            return jsoncodec.load(cls, data, omit=("at",), given={"at": at})
        except ValueError as exc:
            raise BadRestart(f"not a restart record: {exc}") from exc

    def timed_json(self) -> dict[str, Any]:
        """The record with its time, where no event carries it (an incident member's)."""
        return {"at": self.at.isoformat(), **self.to_json()}

    @classmethod
    def from_timed_json(cls, raw: Any) -> Restart | None:
        """What `timed_json` wrote; None for a record without its time."""
        if not isinstance(raw, Mapping) or not raw.get("at"):
            return None
        return cls.from_json(datetime.fromisoformat(raw["at"]), raw)

    @classmethod
    def of_event(cls, event: Event) -> Restart:
        if SOURCE_SPECS.data_of(event.source, event.kind) is not cls:
            raise BadRestart(f"event {event.external_id!r} is not a restart")
        return cls.from_json(event.at, event.extra)

    @classmethod
    def validate(cls, event: Event) -> Restart:
        """The restart an event about to be written carries, read strictly (`SourceSpec.data`)."""
        try:
            return cls.from_json(event.at, event.extra, strict=True)
        except BadRestart as exc:
            where = f"{event.source} {event.kind} event {event.external_id!r}"
            raise BadRestart(f"{where}: {exc}") from None


#: The keys `Restart.to_json` writes.
RESTART_KEYS = frozenset(
    (
        "restart",
        "wandb_run",
        "previous_run",
        "from_step",
        "to_step",
        "stopped_at",
        "resumed_at",
        "down_seconds",
        "interval",
        "checkpoint_step",
        "recomputed_steps",
        "cause",
    )
)


# --- what each source records on its events (`Event.extra`) ---------------------------------


@dataclass(frozen=True, slots=True)
class EventData:
    """The declared data of one (source, kind) of event: `Event.extra` as typed fields.

    The store keeps it as a JSON object (the events' `extra` column); `to_json` writes it the
    way the sources always have, `of` reads it back from an event (a key an older version wrote
    and this one dropped is ignored; a value of the wrong type is an error), `validate` reads an
    event about to be written strictly (an unknown key is an error too): the store calls it
    through `check_event_data` before every write. Readers in other parts use the fields, never
    `extra.get("…")`: a renamed key fails `mypy` and the store's check, not a reader's blank.

    A subclass names its event `KINDS`, and which keys are written only while set
    (`SPARSE`: left out when None). `bot.core.jsoncodec` writes and reads it: field types str,
    int, float, bool, datetime (ISO text, written by `time_text`), tuple[str, ...] (a JSON
    list), dict[str, str], each optionally `| None`."""

    KINDS: ClassVar[tuple[str, ...]] = ()
    SPARSE: ClassVar[frozenset[str]] = frozenset()

    @staticmethod
    def time_text(value: datetime) -> str:
        return value.isoformat()

    def to_json(self) -> dict[str, Any]:
        return jsoncodec.dump(self, sparse=self.SPARSE, time_text=self.time_text)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, strict: bool = False, where: str = "") -> Self:
        """The typed data of a JSON object; `where` names the event in an error."""
        try:
            return jsoncodec.load(cls, data, strict=strict)
        except jsoncodec.CodecError as exc:
            raise BadEventData(f"{where or f'{cls.__name__} data'}: {exc}") from None

    @classmethod
    def of(cls, event: Event) -> Self:
        """An event's data (raises `BadEventData` if the event is not of this source and kind)."""
        return cls.from_json(event.extra, where=cls._where(event))

    @classmethod
    def validate(cls, event: Event) -> Self:
        """The data of an event about to be written, read strictly."""
        return cls.from_json(event.extra, strict=True, where=cls._where(event))

    @classmethod
    def _where(cls, event: Event) -> str:
        where = f"{event.source} {event.kind} event {event.external_id!r}"
        if SOURCE_SPECS.data_of(event.source, event.kind) is not cls:
            raise BadEventData(f"{where} does not carry {cls.__name__}")
        return where


@dataclass(frozen=True, slots=True)
class GithubThread(EventData):
    """A GitHub issue or pull request (its description event)."""

    KINDS = ("issue", "pull")
    SPARSE = frozenset({"author_association"})

    labels: tuple[str, ...] = ()
    merged_at: str | None = None  # GitHub's own timestamp text, for a merged pull
    author_association: str | None = None  # GitHub's OWNER | MEMBER | … of the author


@dataclass(frozen=True, slots=True)
class GithubComment(EventData):
    """A comment in a GitHub thread: the thread it is in (title, its prefix, labels, issue or
    pull), as far as the source knew it, and its author's standing in the repository."""

    KINDS = ("comment",)
    SPARSE = frozenset(
        {"thread_title", "thread_prefix", "thread_labels", "thread_kind", "author_association"}
    )

    thread_title: str | None = None
    thread_prefix: str | None = None  # "infra", "small-scale ablation" (`split_prefix`)
    thread_labels: tuple[str, ...] | None = None
    thread_kind: str | None = None  # issue | pull
    author_association: str | None = None

    def reviewed(self, review_state: str | None) -> GithubReview:
        """The same thread and author, as a review with GitHub's verdict."""
        return GithubReview(
            **{f.name: getattr(self, f.name) for f in fields(GithubComment)},
            review_state=review_state,
        )


@dataclass(frozen=True, slots=True)
class GithubReview(GithubComment):
    """A pull request review: a comment with GitHub's verdict."""

    KINDS = ("review",)

    review_state: str | None = None  # APPROVED | CHANGES_REQUESTED | COMMENTED | …


@dataclass(frozen=True, slots=True)
class WandbState(EventData):
    """A W&B run's state change, as the monitor saw it."""

    KINDS = ("state",)

    wandb_run: str | None = None  # entity/project/run_id
    from_state: str | None = None  # None: the monitor's first look at the run
    to_state: str | None = None
    step: int | None = None  # the run's last step then
    heartbeat_at: datetime | None = None
    observed_at: datetime | None = None

    @staticmethod
    def time_text(value: datetime) -> str:
        return value.isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class ConversationData(EventData):
    """A burst of chat messages in one channel told as one event (`bot.enrich.conversations`):
    Discord's, and any source registered with `chat` (`SourceSpec.chat`)."""

    KINDS = ("conversation",)

    messages: tuple[str, ...] = ()  # the members' external ids, oldest first
    count: int = 2  # how many messages
    until: datetime | None = None  # the last member's time

    @staticmethod
    def time_text(value: datetime) -> str:
        return to_db(value) or ""


#: Alerts that fire always, by design: their silence, not their firing, is the news.
ALWAYS_FIRING: Final = frozenset({"Watchdog", "InfoInhibitor", "DeadMansSwitch"})


@dataclass(frozen=True, slots=True)
class AlertData(EventData):
    """An Alertmanager alert (`bot.hooks.alertmanager`): what it is and where it fired."""

    KINDS = ("alert",)
    SPARSE = frozenset({"ends_at", "truncated", "unseen", "runbook_url", "generator_url"})

    fingerprint: str
    alertname: str = "alert"
    severity: str = "warning"
    instance: str | None = None
    summary: str = ""
    description: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    ends_at: datetime | None = None  # when resolved
    #: alerts of its group Alertmanager left out of the notification (`truncatedAlerts`)
    truncated: int | None = None
    #: resolved before Runscribe saw it fire: recorded, never announced
    unseen: bool | None = None
    runbook_url: str | None = None  # its `runbook_url` annotation
    generator_url: str | None = None  # what raised it (`generatorURL`: Prometheus's graph)

    @property
    def always_firing(self) -> bool:
        """An alert that fires always, by design, to prove the alerting pipeline works (the
        Prometheus Operator's Watchdog and InfoInhibitor, the older DeadMansSwitch, any alert
        of severity "none"): recorded, never an incident. A team routing its cluster's alerts
        to Runscribe by a label gets these too."""
        severity = self.labels.get("severity", "").strip().lower()
        return self.alertname in ALWAYS_FIRING or severity == "none"


#: The one registration of every source. Everything else derives from it.
SOURCE_SPECS = SourceRegistry(
    (
        SourceSpec(
            "github",
            "GitHub",
            people=True,
            configured=lambda c: bool(c.github_repo),
            build="bot.sources.github:live_sources",
            data=(GithubThread, GithubComment, GithubReview),
        ),
        # Fed by the bot's channel listener (`cogs/watch.py`), not built per run.
        SourceSpec(
            "discord",
            "Discord",
            people=True,
            configured=lambda c: bool(c.watch_channels),
            chat=True,
        ),
        SourceSpec(
            "wandb",
            "W&B",
            people=False,
            configured=lambda c: bool(c.wandb_runs or c.wandb_run_pattern),
            build="bot.sources.wandb:live_sources",
            data=(WandbState, Restart),
        ),
        SourceSpec("system", "Runscribe", people=False, polled=False),
        # Pushed to Runscribe (`POST /hooks/alertmanager`), never polled: the cluster's own alerts.
        SourceSpec("alertmanager", "Alertmanager", people=False, polled=False, data=(AlertData,)),
    )
)


def check_event_data(event: Event) -> None:
    """Refuse an event whose data is not what its source's registration declares for its kind
    (`SourceSpec.data`): `BadEventData`, naming the kind and the key. The store calls it before
    it writes an event."""
    data = SOURCE_SPECS.data_of(event.source, event.kind)
    if data is not None:
        data.validate(event)
    elif event.extra:
        raise BadEventData(
            f"{event.source} {event.kind} event {event.external_id!r}: no data is declared "
            f"for it, yet it has key {sorted(event.extra)[0]!r}"
        )


@dataclass(slots=True)
class RunSnapshot:
    """Latest known W&B state of one run of the chain."""

    wandb_run: str  # entity/project/run_id
    name: str | None
    state: str
    created_at: datetime | None
    heartbeat_at: datetime | None
    last_step: int | None
    observed_at: datetime
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class RunInfo:
    """A tracked run as recorded in the store (so commands work without the runs file).

    `config` is the whole `[[runs]]` table, typed: the store keeps it as JSON and re-validates
    it on read (`RunConfig.stored`). Built without one (a run recorded by hand, a test), it holds
    the fields given here and the runs file's defaults; a mapping is validated the same way."""

    slug: str
    name: str
    total_steps: int | None = None
    target_tokens: float | None = None
    launched_at: datetime | None = None
    timezone: str = "UTC"
    links: dict[str, str] = field(default_factory=dict)
    config: RunConfig = None  # type: ignore[assignment]  # filled in by __post_init__

    def __post_init__(self) -> None:
        if not isinstance(self.config, RunConfig):
            given: Mapping[str, Any] = self.config or {}
            self.config = RunConfig.stored(
                {
                    "total_steps": self.total_steps,
                    "target_tokens": self.target_tokens,
                    "launched_at": self.launched_at,
                    "timezone": self.timezone,
                    "links": self.links,
                    **given,
                    "slug": self.slug,
                    "name": self.name,
                }
            )

    @classmethod
    def from_config(cls, config: RunConfig) -> RunInfo:
        """What the store keeps of a run from the runs file."""
        return cls(
            slug=config.slug,
            name=config.name,
            total_steps=config.total_steps,
            target_tokens=config.target_tokens,
            launched_at=config.launched_at,
            timezone=config.timezone,
            links=dict(config.links),
            config=config,
        )

    def wandb_chain(self, snapshots: Iterable[RunSnapshot] = ()) -> list[str]:
        """The W&B chain in order: the runs file's list, then runs only the store knows of
        (`snapshots`, oldest first: e.g. forks found by pattern). The one place it is built."""
        return self.config.wandb_chain(s.wandb_run for s in snapshots)


@dataclass(slots=True)
class IncidentMember:
    """One condition (fingerprint) of an incident over an interval: `until` None while it holds."""

    kind: str
    title: str
    since: datetime
    until: datetime | None = None
    seen_at: datetime | None = None  # the last cycle a detector reported it
    resolution: str | None = None  # what cleared it
    last_report_at: datetime | None = None  # reported by people: the latest report
    facts: dict[str, Any] = field(default_factory=dict)  # the detector's evidence, JSON values
    # a crash training came back from: the restart that ended it (stored with its time)
    restart: Restart | None = field(
        default=None,
        metadata=jsoncodec.json_field(
            dump=lambda r: r.timed_json() if r else None, load=Restart.from_timed_json
        ),
    )


@dataclass(slots=True)
class IncidentSignal:
    """A linked event as the alert shows it: when, where, what, and its link."""

    event_id: int | None
    at: datetime
    source: str  # "GitHub #8818", "Discord #hero-run", "W&B <run>"
    text: str
    url: str | None = None


@dataclass(slots=True)
class ReportedCause:
    """What a person wrote about an incident while it was open (a watched Discord channel or a
    tracked GitHub thread): shown as "Reported cause" on the alert, in `/incidents` and in
    `status --json`."""

    text: str
    author: str | None
    source: str  # "Discord #hero-run", "GitHub #8818"
    at: datetime
    url: str | None = None
    event_id: int | None = None


@dataclass(slots=True, frozen=True)
class IncidentAction:
    """A person's action on an incident (a requeue, a drain, a restart, a rollback…), as they
    said it in a watched channel or a tracked thread: who, when, and the sentence saying what."""

    who: str
    at: datetime
    text: str  # the sentence(s) of their post saying what was done
    source: str  # "Discord #hero-run", "GitHub #8818"
    url: str | None = None
    event_id: int | None = None


@dataclass(slots=True, frozen=True)
class Recurrence:
    """An incident of a condition the run had before: the `count`-th incident of it on this
    run (this one included), and the one before it, which had resolved when this one began."""

    count: int
    previous_id: int
    previous_resolved_at: datetime


@dataclass(slots=True)
class PastOutage:
    """An earlier outage of an incident that reopened: its condition's episode from its first
    symptom to its resolution, what it was called and said, and when the condition came back
    (`reopened_at`, the start of the next outage)."""

    since: datetime
    until: datetime
    reopened_at: datetime
    title: str = ""
    fired_at: datetime | None = None
    resolution: str | None = None
    acked_by: str | None = None
    acked_at: datetime | None = None
    action: IncidentAction | None = None
    members: dict[str, IncidentMember] = field(default_factory=dict)


@dataclass(slots=True)
class IncidentDetails:
    """The engine's state of one incident (the `incidents.details` JSON column, parsed once by
    the repository)."""

    group: str | None = None  # e.g. "outage": findings of one group close in time join
    members: dict[str, IncidentMember] = field(default_factory=dict)  # by fingerprint
    signals: list[IncidentSignal] = field(default_factory=list)  # oldest first, at most 50
    threads: list[str] = field(default_factory=list)  # GitHub/Discord threads it was reported in
    flaps: int = 0  # times a cleared member came back
    clear_since: datetime | None = None  # every member clear since then (resolving after a hold)
    fired: bool = False  # passed its pending period
    silent: bool = False  # cleared inside its pending period: never alerted
    history: bool = False  # first found long over (a backfill): recorded, never alerted
    notified: bool = False  # the alert was queued
    fired_outbox_id: int | None = None  # the alert's outbox row (its message has the thread)
    head_hash: str | None = None  # of the alert card last queued, to edit only on change
    edits: int = 0
    resolved_posted: bool = False
    silenced_by: int | None = None  # the silence holding its posts back
    reminders: int = 0
    last_reminder_at: datetime | None = None
    reported_cause: ReportedCause | None = None
    acted_by: str | None = None  # a person who reported acting on it (requeue, restart, drain…)
    action: IncidentAction | None = None  # what they did, when, in their words
    credited: bool = False  # the resolution says who acted
    acted_checked_until: datetime | None = None  # people's posts read for that up to here
    recurrence: Recurrence | None = None  # the run had this condition before (resolved)
    # reopened: its earlier outages, oldest first (the members above are the latest outage's)
    outages: list[PastOutage] = field(default_factory=list)
    reopen_posted: int = 0  # reopenings announced (each once: its dedup keys count them)

    @property
    def reopens(self) -> int:
        return len(self.outages)

    def crash_open(self, crash: str) -> bool:
        member = self.members.get(crash)
        return member is not None and member.until is None

    def clear_time(self) -> datetime | None:
        """When every member had cleared (None while one still holds)."""
        ends = [m.until for m in self.members.values()]
        if not ends or any(end is None for end in ends):
            return None
        return max(end for end in ends if end is not None)


@dataclass(slots=True)
class Incident:
    run_slug: str
    fingerprint: str  # per run and condition, e.g. "wandb-state", "stall", "node-loss"
    kind: str
    title: str
    status: str  # pending | firing | resolved
    started_at: datetime
    severity: str = "warning"
    fired_at: datetime | None = None
    resolved_at: datetime | None = None
    last_seen_at: datetime | None = None
    cause: str | None = None
    resolution: str | None = None
    acked_by: str | None = None
    acked_at: datetime | None = None
    details: IncidentDetails = field(default_factory=IncidentDetails)
    id: int | None = None

    def fingerprints(self) -> set[str]:
        return {self.fingerprint, *self.details.members}

    @property
    def outage_since(self) -> datetime:
        """When its latest outage began: its first symptom, or when it last reopened."""
        outages = self.details.outages
        return outages[-1].reopened_at if outages else self.started_at

    def kinds(self) -> list[str]:
        """Its own kind, then its members' (deduplicated, in order)."""
        found = [self.kind]
        for member in self.details.members.values():
            if member.kind and member.kind not in found:
                found.append(member.kind)
        return found


@dataclass(slots=True)
class Silence:
    """ "Post nothing about this run's <matcher> until <ends_at>", with an owner and a reason."""

    run_slug: str
    matcher: str
    starts_at: datetime
    ends_at: datetime
    owner: str
    reason: str = ""
    created_at: datetime | None = None
    cancelled_at: datetime | None = None
    cancelled_by: str | None = None
    id: int | None = None

    def active(self, now: datetime) -> bool:
        return self.cancelled_at is None and self.starts_at <= now < self.ends_at


@dataclass(slots=True)
class OutboxItem:
    """A post waiting for (or done with) delivery to Discord. payload is platform-neutral JSON:
    {"content": str, "card": {...}} — see bot.render.cards."""

    channel_id: int
    kind: str  # alert | resolved | update | digest | edit
    payload: dict[str, Any]
    dedup_key: str
    run_slug: str | None = None
    status: str = "queued"  # queued | sent | failed
    attempts: int = 0
    created_at: datetime | None = None
    not_before: datetime | None = None
    sent_at: datetime | None = None
    message_id: str | None = None
    last_error: str | None = None
    reply_to: int | None = None  # outbox id whose message (thread) this belongs to
    posted_in: int | None = None  # channel or thread id the message went to, once sent
    anchor_id: int | None = None  # newest message id in the channel before the first send
    abandoned_at: datetime | None = None  # given up after Discord refused it for the hold
    id: int | None = None


@dataclass(slots=True)
class LiveMessage:
    """A run's live status message (runs-file `status_channel`): where it is in Discord and
    what it shows. `message_id` None: not posted yet, or gone (deleted) and to be posted anew."""

    run_slug: str
    channel_id: int | None = None
    message_id: int | None = None
    chart_digest: str | None = None  # SHA-256 (16 hex) of the chart attached (None: none)
    attachment_id: int | None = None  # that chart's attachment (kept while it is unchanged)
    pinned: bool = False
    pin_refused: bool = False  # Discord refused the pin: the bot lacks Manage Messages
    posted_at: datetime | None = None
    edited_at: datetime | None = None
    rendered_at: datetime | None = None  # when the newest queued content was computed
    fingerprint: str | None = None  # state and open incidents it showed


@dataclass(slots=True)
class LLMOutput:
    task: str  # enrich | narrative | digest
    prompt_name: str
    prompt_hash: str
    model: str
    content: str
    created_at: datetime
    run_slug: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    fallback: bool = False  # True when the template text was used instead of the model's
    cache_key: str | None = None
    id: int | None = None


#: The `source_health` source under which each run's incident-detection rounds are recorded
#: (scope: the run's slug): failing while a round fails (`/healthz` says so), ok after a clean one.
DETECTION = "detection"


@dataclass(slots=True)
class SourceHealth:
    source: str
    scope: str
    last_attempt_at: datetime | None = None
    last_success_at: datetime | None = None
    consecutive_failures: int = 0
    next_attempt_at: datetime | None = None
    last_error: str | None = None
    failing_since: datetime | None = None  # the first failure since the last success

    @property
    def failing(self) -> bool:
        return self.consecutive_failures > 0


@dataclass(slots=True, frozen=True)
class PollCycle:
    """The last completed poll cycle, as the poller recorded it."""

    started_at: datetime
    finished_at: datetime
    interval_seconds: float
