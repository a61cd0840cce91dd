"""The one place internal identifiers become the words people read.

Sources, run states, incident kinds, detector conditions and severities are identifiers inside
Runscribe (`wandb`, `wandb-state`, `critical`); cards, terminal text, narratives and digests
name them through these functions, so no identifier reaches a reader and a new one has one
place to be worded. Unknown identifiers fall back to a readable form of themselves, never to
"Someone"."""

from __future__ import annotations

from bot.models import SOURCE_SPECS

SOURCE_NAMES: dict[str, str] = {spec.name: spec.label for spec in SOURCE_SPECS}

#: How a run's state reads in a title ("Hero — running").
STATE_WORDS: dict[str, str] = {
    "running": "running",
    "pending": "waiting to start",
    "preempting": "being preempted",
    "preempted": "preempted",
    "crashed": "crashed",
    "failed": "failed",
    "killed": "stopped by hand",
    "stalled": "stalled (no new step)",
    "finished": "finished",
    "unknown": "state unknown",
}

#: An incident's kind (`status --json` `open_incidents[].kind`) in words.
INCIDENT_KIND_WORDS: dict[str, str] = {
    "crash": "crash",
    "stall": "training stalled",
    "heartbeat": "heartbeat lost",
    "nan": "loss became NaN",
    "spike": "loss spike",
    "throughput": "throughput drop",
    "drift": "metric off its forecast",
    "reported": "reported by a person",
    "monitor": "W&B unreachable",
}

#: Detector conditions (incident fingerprints, silence conditions) in words.
CONDITION_WORDS: dict[str, str] = {
    "wandb-state": "W&B run state",
    "heartbeat": "heartbeat",
    "stall": "no new step",
    "loss-nan": "NaN loss",
    "loss-spike": "loss spike",
    "throughput": "throughput",
    "monitor-stale": "W&B unreachable",
    "drift": "forecast drift",
    "report": "a person's report",
}

SEVERITY_WORDS: dict[str, str] = {
    "critical": "critical",
    "warning": "needs a look",
    "info": "for information",
}


def _readable(identifier: str) -> str:
    return identifier.replace("_", " ").replace("-", " ").strip() or "unknown"


def source_name(source: str) -> str:
    """`wandb` → "W&B", `github` → "GitHub"."""
    return SOURCE_NAMES.get(source, _readable(source))


def credit(author: str | None, source: str) -> str:
    """Who to credit for an entry: the person's name, else the source that produced it
    ("W&B" for the monitor's own events). Never "Someone"."""
    name = (author or "").strip()
    return name or source_name(source)


def state_words(state: str) -> str:
    return STATE_WORDS.get(state, _readable(state))


def incident_kind_words(kind: str) -> str:
    return INCIDENT_KIND_WORDS.get(kind, _readable(kind))


def condition_words(fingerprint: str) -> str:
    """A fingerprint such as `wandb-state`, `drift:train/loss` or `report:oom:github:o/r#1`."""
    head, _, rest = fingerprint.partition(":")
    if head in CONDITION_WORDS:
        word = CONDITION_WORDS[head]
        if head == "drift" and rest:
            return f"{word} ({rest})"
        if head == "report" and rest:
            return f"{word} ({_readable(rest.partition(':')[0])})"
        return word
    return _readable(head)


def severity_words(severity: str) -> str:
    return SEVERITY_WORDS.get(severity, _readable(severity))
