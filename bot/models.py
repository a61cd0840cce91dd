"""Domain objects shared by the store, the sources, analysis and rendering. Plain dataclasses:
no I/O, no Discord."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Source = Literal["github", "discord", "wandb", "system"]
SOURCES: tuple[str, ...] = ("github", "discord", "wandb", "system")

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


def content_hash(*parts: object) -> str:
    """Stable hash of an event's user-visible content; an edit changes it, a re-poll does not."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode("utf-8", "replace"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:32]


@dataclass(slots=True)
class Event:
    """One observation from a source: a GitHub issue/PR/comment/review, a Discord message, a W&B
    state change or restart, or a system note. Unique per (run_slug, source, external_id)."""

    run_slug: str
    source: str  # one of SOURCES
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
    incident: bool = False
    severity: str | None = None  # info | warning | critical
    newsworthy: bool = True
    enriched_by: str | None = None  # "rules" or "llm:<prompt>@<hash>"
    id: int | None = None  # database id once stored
    extra: dict[str, Any] = field(default_factory=dict)  # source-specific facts (labels, steps)

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
    """A tracked run as recorded in the store (so commands work without the runs file)."""

    slug: str
    name: str
    total_steps: int | None = None
    target_tokens: float | None = None
    launched_at: datetime | None = None
    timezone: str = "UTC"
    links: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)  # the whole [[runs]] table, as JSON


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
    details: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


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
    id: int | None = None


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


@dataclass(slots=True)
class SourceHealth:
    source: str
    scope: str
    last_attempt_at: datetime | None = None
    last_success_at: datetime | None = None
    consecutive_failures: int = 0
    next_attempt_at: datetime | None = None
    last_error: str | None = None


@dataclass(slots=True, frozen=True)
class PollCycle:
    """The last completed poll cycle, as the poller recorded it."""

    started_at: datetime
    finished_at: datetime
    interval_seconds: float
