"""The development corpus (`tests/data/signal_corpus.jsonl`) turned into events exactly as the
sources record them, enriched by the same function the pipeline calls, and scored.

Shared by `bench/bench_signal.py` (prints the figures next to a naive keyword matcher) and
`tests/enrich/test_signal_corpus.py` (keeps them from regressing). Nothing here knows an entry's
labels while enriching it: labels are read only by `score`.
"""

from __future__ import annotations

import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from bot.enrich.hindsight import (
    FOLLOW_UP,
    confirmed_in_chat,
    dismissed_first,
    dismissed_in_chat,
    follows_up,
    may_be_first_word,
    reported_in_hindsight,
    said_first,
)
from bot.enrich.rules import Enrichment, reports_a_fault, topic_of
from bot.enrich.summary import NO_TEXT
from bot.models import TAGS, Event
from bot.process.pipeline import rules_enrichment
from bot.sources.github_threads import (
    comment_event,
    is_bot,
    issue_event,
    review_event,
    thread_context,
)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "signal_corpus.jsonl"
#: The held-back corpus (issue 40): written before the rules ran on it, never tuned on.
HELDOUT = CORPUS.with_name("heldout_corpus.jsonl")
#: The second held-back corpus: written and committed after the rules it measures, before they
#: ran on it; never tuned on.
HELDOUT2 = CORPUS.with_name("heldout2_corpus.jsonl")
#: The third held-back corpus: another project and voice, written and committed before the rules
#: were generalised (issue 40's second round); never tuned on.
HELDOUT3 = CORPUS.with_name("heldout3_corpus.jsonl")
#: The fourth held-back corpus: another project (a TPU pre-training run's GitHub threads and
#: Discord chat), written, labelled and committed before the rules ran on it; never tuned on.
HELDOUT4 = CORPUS.with_name("heldout4_corpus.jsonl")
#: The fifth: three projects (a genomics model, a French lab, a code model with Sentry and
#: Linear bots), written after the last change it measures and read once; never tuned on.
HELDOUT5 = CORPUS.with_name("heldout5_corpus.jsonl")
#: The sixth: three projects (an RL run beside its base run, a 535B MoE on TPUs, a multimodal
#: startup run), written blind while the rules it measures were changed and read once at the end.
HELDOUT6 = CORPUS.with_name("heldout6_corpus.jsonl")
#: The seventh: three projects (a 400B MoE on TPUs, a code model with an incident template, a
#: multilingual startup run), written blind while the rules it measures were changed and read
#: once at the end.
HELDOUT7 = CORPUS.with_name("heldout7_corpus.jsonl")
#: The eighth: three projects (a 300B MoE with an on-call rotation, a 220B run on TPU slices
#: under Ray, a 90B run told in terse shorthand), written blind while the rules it measures were
#: changed and read once at the end.
HELDOUT8 = CORPUS.with_name("heldout8_corpus.jsonl")
#: The ninth: three projects (a 120B MoE told from phones, a 150B run on a shared university
#: cluster, a 200B code model whose news arrives relayed from Slack, email and pagers), written
#: blind while the rules it measures were changed and read once at the end.
HELDOUT9 = CORPUS.with_name("heldout9_corpus.jsonl")
#: The tenth: three projects (an open lab's MoE on TPU slices whose experiments are issues, a
#: 175B run through a stretch of instability, the final weeks of a 535B MoE with its export),
#: written blind while the rules it measures were changed and read once at the end.
HELDOUT10 = CORPUS.with_name("heldout10_corpus.jsonl")
#: The eleventh: three projects (a national supercomputer's consortium run, a code model fixed
#: forward in pull requests, an RL post-training stage), written blind while the rules it
#: measures were changed and read once at the end.
HELDOUT11 = CORPUS.with_name("heldout11_corpus.jsonl")
#: The twelfth: three projects (a monitoring agent that opens issues itself, a scaling-law
#: team's sweeps beside one main run, a MoE told in replies to an alert bot), written blind
#: while the rules it measures were changed and read once at the end.
HELDOUT12 = CORPUS.with_name("heldout12_corpus.jsonl")
#: The thirteenth: two projects (a code model told in templated issues and pull requests, a
#: colocation provider's SREs and their customer in one Discord), written blind while the rules
#: it measures were changed and read once at the end.
HELDOUT13 = CORPUS.with_name("heldout13_corpus.jsonl")
#: The fourteenth: two projects (a bilingual Portuguese and English team, an on-call rotation
#: whose pages are relayed into Discord), written blind while the rules it measures were
#: changed and read once at the end.
HELDOUT14 = CORPUS.with_name("heldout14_corpus.jsonl")
#: The fifteenth: two projects (a run forked and resumed many times, a team declaring incidents
#: with an incident bot in Discord), written blind while the rules it measures were changed and
#: read once at the end.
HELDOUT15 = CORPUS.with_name("heldout15_corpus.jsonl")
#: The sixteenth: two projects (isolated one-line chat reports told in numbers, incidents that
#: surface first as hotfix pulls), written blind while the rules it measures were changed and
#: read once at the end.
HELDOUT16 = CORPUS.with_name("heldout16_corpus.jsonl")
#: The seventeenth: two projects (W&B alerts relayed into chat and triaged there, a bilingual
#: Chinese-English team), written blind while the rules it measures were changed and read once
#: at the end.
HELDOUT17 = CORPUS.with_name("heldout17_corpus.jsonl")
#: The eighteenth: two projects (silent faults found later in curves and evals, a Slack bridged
#: into Discord), written blind while the rules it measures were changed and read once at the
#: end.
HELDOUT18 = CORPUS.with_name("heldout18_corpus.jsonl")
#: The nineteenth: two projects (an on-call rotation's hand-offs and pages, a lab whose side jobs
#: share the hero run's channels), written blind while the rules it measures were changed and read
#: once at the end.
HELDOUT19 = CORPUS.with_name("heldout19_corpus.jsonl")
#: The twentieth: two projects (a JAX run on TPU pods under Ray, a lab that keeps one issue per
#: experiment or run phase), written blind while the rules it measures were changed and read
#: once at the end.
HELDOUT20 = CORPUS.with_name("heldout20_corpus.jsonl")
#: The twenty-first: two projects (a run on a managed cloud whose provider answers in its threads,
#: an academic group on a university Slurm cluster), written blind while the rules it measures
#: were changed and read once at the end.
HELDOUT21 = CORPUS.with_name("heldout21_corpus.jsonl")
#: The twenty-second: two projects (a run trained in FP8 whose talk is mostly numerics, a run on a
#: national supercomputer whose centre's notices are relayed into its channels), written blind
#: while the rules it measures were changed and read once at the end.
HELDOUT22 = CORPUS.with_name("heldout22_corpus.jsonl")
#: The twenty-third: two projects (a run on a cluster shared with production inference, a run
#: whose repository is mostly bots' issues and comments), written blind while the rules it
#: measures were changed and read once at the end.
HELDOUT23 = CORPUS.with_name("heldout23_corpus.jsonl")
SLUG = "hero"
REPO = "lab/model"
_NUMBER = re.compile(r"#(\d{1,7})\b")
#: The corpus names incident kinds by cause; the rules' names are finer in two places.
KIND_NAMES = {
    "node-loss": "node_loss",
    "restore-failed": "checkpoint",
    "checkpoint-failed": "checkpoint",
    "crash": "other",
    "outage": "other",
    "reported": "other",
}


def load(path: Path = CORPUS) -> list[dict[str, Any]]:
    entries = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                entries.append(json.loads(line))
    return entries


def _at(value: Any) -> str:
    if isinstance(value, str) and value:
        return value
    return "2026-09-01T09:00:00Z"


def _number(entry: dict[str, Any]) -> int:
    for key in ("ref", "url"):
        m = _NUMBER.search(str(entry.get(key) or ""))
        if m:
            return int(m.group(1))
    m = re.search(r"/(?:issues|pull)/(\d+)", str(entry.get("url") or ""))
    if m:
        return int(m.group(1))
    return 1 + zlib.crc32(str(entry.get("thread_title") or entry.get("id")).encode()) % 90_000


def _user(login: Any) -> dict[str, Any]:
    return {"login": str(login or "someone"), "type": "User"}


def _thread_item(entry: dict[str, Any], number: int) -> dict[str, Any]:
    """The thread's issue JSON as GitHub serves it (what the source reads the context from)."""
    title = entry.get("thread_title")
    if title is None and entry.get("kind") in ("issue", "pull"):
        title = entry.get("title")
    item: dict[str, Any] = {
        "number": number,
        "title": title or "",
        "labels": [{"name": str(label)} for label in entry.get("thread_labels") or []],
    }
    if (entry.get("thread_kind") or entry.get("kind")) == "pull":
        item["pull_request"] = {"merged_at": None}
    return item


def to_event(entry: dict[str, Any]) -> Event:
    """One corpus entry as the live source would have stored it."""
    source = entry.get("source") or "github"
    kind = entry.get("kind") or "comment"
    at = _at(entry.get("at"))
    association = entry.get("author_association")
    if source == "discord":
        channel = str(entry.get("thread_title") or entry.get("ref") or "general").lstrip("#")
        return Event(
            run_slug=SLUG,
            source="discord",
            external_id=f"msg:{entry['id']}",
            kind="message",
            at=datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(UTC),
            author=entry.get("author"),
            ref=f"#{channel}",
            url=entry.get("url"),
            body=entry.get("body") or "",
            thread=f"discord:{zlib.crc32(channel.encode())}",
        )
    number = _number(entry)
    thread = _thread_item(entry, number)
    common: dict[str, Any] = {
        "user": _user(entry.get("author")),
        "body": entry.get("body") or "",
        "html_url": entry.get("url"),
        "author_association": association,
    }
    if kind in ("issue", "pull"):
        item = dict(
            thread,
            **common,
            title=entry.get("title") or thread["title"],
            created_at=at,
            updated_at=at,
            state="open",
        )
        return issue_event(SLUG, REPO, item)
    context = thread_context(thread)
    ident = zlib.crc32(str(entry["id"]).encode())
    if kind == "review":
        review = dict(common, id=ident, submitted_at=at, state="COMMENTED")
        return review_event(SLUG, REPO, number, review, "open", context)
    comment = dict(common, id=ident, created_at=at, updated_at=at)
    return comment_event(SLUG, REPO, number, comment, "open", context)


#: The events made of the entries read last, by entry: ``in_threads`` reads an entry's event
#: again after its method has, and each is made once. An entry is held with its event, so its
#: id is never another's while it is here.
_MADE: dict[int, tuple[dict[str, Any], Event]] = {}
#: Entries remembered at most (a corpus and then some; the memory is dropped when full).
MADE_MOST = 40_000


def event_of(entry: dict[str, Any]) -> Event:
    """``to_event(entry)``, made once per entry."""
    made = _MADE.get(id(entry))
    if made is not None and made[0] is entry:
        return made[1]
    if len(_MADE) >= MADE_MOST:
        _MADE.clear()
    event = to_event(entry)
    _MADE[id(entry)] = (entry, event)
    return event


def enrich(entry: dict[str, Any]) -> Enrichment:
    """The live path's deterministic enrichment of one entry."""
    return rules_enrichment(event_of(entry))


# --- scoring ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Scores:
    total: int = 0
    tags_right: int = 0  # the tag, untagged read as "other", equals the label
    entries_shown: int = 0  # entries the timeline shows
    tags_shown: int = 0  # of those, with a tag (not "other")
    shown_right: int = 0  # of those, the labelled tag
    marked: int = 0  # shown with the 🚨 mark (about an incident)
    marked_right: int = 0  # of those, labelled about an incident
    about: int = 0  # labelled about an incident
    about_marked: int = 0  # of those, marked
    live: int = 0  # labelled live reports (incident events)
    live_marked: int = 0  # of those, marked
    unmarked_live: list[str] = field(default_factory=list)  # incident events without a 🚨
    bad_summaries: list[str] = field(default_factory=list)  # heading, title, cut, link, empty
    incidents: int = 0  # labelled incident
    flagged: int = 0  # flagged incident
    found: int = 0  # labelled and flagged
    kinds_right: int = 0  # of those found, with the labelled kind
    substantive: int = 0
    erased: list[str] = field(default_factory=list)  # substantive entries summarised as nothing
    hidden: list[str] = field(default_factory=list)  # substantive entries judged chit-chat
    spam: int = 0
    spam_shown: int = 0
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    misses: list[str] = field(default_factory=list)  # labelled incidents not flagged
    false_alarms: list[str] = field(default_factory=list)
    wrong_tags: list[str] = field(default_factory=list)

    @property
    def agreement(self) -> float:
        return self.tags_right / self.total if self.total else 0.0

    @property
    def shown_agreement(self) -> float:
        """Of the tags the timeline shows, the share that agree with the labels."""
        return self.shown_right / self.tags_shown if self.tags_shown else 1.0

    @property
    def coverage(self) -> float:
        """The share of the timeline's entries that show a tag."""
        return self.tags_shown / self.entries_shown if self.entries_shown else 0.0

    @property
    def mark_precision(self) -> float:
        """Of the 🚨 marks, the share on entries about an incident."""
        return self.marked_right / self.marked if self.marked else 1.0

    @property
    def mark_recall(self) -> float:
        return self.about_marked / self.about if self.about else 1.0

    @property
    def live_mark_recall(self) -> float:
        """Of the incident events (live reports), the share still marked 🚨."""
        return self.live_marked / self.live if self.live else 1.0

    @property
    def summary_problem_rate(self) -> float:
        return len(self.bad_summaries) / self.entries_shown if self.entries_shown else 0.0

    @property
    def recall(self) -> float:
        return self.found / self.incidents if self.incidents else 1.0

    @property
    def precision(self) -> float:
        return self.found / self.flagged if self.flagged else 1.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a method says about one entry."""

    tag: str  # "other": no tag shown
    incident: bool  # a live report
    shown: bool = True
    summary: str = "-"
    kind: str | None = None
    marked: bool = False  # the timeline's 🚨: about an incident


Method = Callable[[dict[str, Any]], Verdict]


def recorded(entry: dict[str, Any]) -> bool:
    """Whether the live source stores the entry at all: by default it leaves out what bots
    post on GitHub, except the issues they open (`bot.sources.github_threads.is_bot_pull`) and
    the comments and reviews the rules read as a live report of a fault
    (`bot.sources.github_tracking.ThreadTracker.wanted`)."""
    if entry.get("source") != "github" or entry.get("kind") == "issue":
        return True
    if not is_bot(_user(entry.get("author"))):
        return True
    return entry.get("kind") != "pull" and reports_a_fault(event_of(entry))


def rules_method(entry: dict[str, Any]) -> Verdict:
    if not recorded(entry):
        return Verdict("other", False, shown=False)
    e = enrich(entry)
    kind = KIND_NAMES.get(e.incident_kind, e.incident_kind) if e.incident_kind else None
    return Verdict(e.tag, e.live_report, e.newsworthy, e.summary, kind, e.incident)


def in_threads(entries: Iterable[dict[str, Any]], method: Method) -> Method:
    """`method`, then the pipeline's thread pass (`bot.process.hindsight`): an issue shown and
    left unmarked is marked 🚨 `incident` when the first marked comment of its thread soon after
    it says it reported one; a marked issue is unmarked (and shows its topic) when a comment
    soon after dismisses it and none is marked. Threads are told apart by URL (numbers repeat
    across projects)."""
    entries = list(entries)
    verdicts = {str(e["id"]): method(e) for e in entries}
    threads: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        if entry.get("source") == "github" and entry.get("url") and recorded(entry):
            threads.setdefault(str(entry["url"]).split("#")[0], []).append(entry)
    for members in threads.values():
        issues = [e for e in members if e.get("kind") == "issue"]
        if len(issues) != 1 or not verdicts[str(issues[0]["id"])].shown:
            continue
        ident, issue = str(issues[0]["id"]), event_of(issues[0])
        comments = [e for e in members if e.get("kind") == "comment"]
        events = [event_of(e) for e in comments]
        replies = sorted(events, key=lambda r: r.at)
        marked = {
            event.external_id
            for event, e in zip(events, comments, strict=True)
            if _marked(verdicts[str(e["id"])])
        }
        told = [r for r in replies if r.external_id in marked and r.at >= issue.at]
        opener = verdicts[ident]
        if opener.marked:
            live = {
                event.external_id
                for event, e in zip(events, comments, strict=True)
                if verdicts[str(e["id"])].incident
            }
            if dismissed_first(issue, replies, _one_of(marked), _one_of(live)):
                verdicts[ident] = replace(opener, marked=False, tag=_shown(topic_of(issue)))
        elif told and reported_in_hindsight(issue, told[0]):
            verdicts[ident] = replace(opener, marked=True, tag="incident")
    _chat_in_hindsight(entries, verdicts)
    return lambda entry: verdicts[str(entry["id"])]


def _chat_in_hindsight(entries: list[dict[str, Any]], verdicts: dict[str, Verdict]) -> None:
    """The pass over chat: a message shown and unmarked is marked when the next marked message
    of its channel comes within `CHAT_HINDSIGHT` and it was that incident's first word."""
    channels: dict[str, list[tuple[Event, str]]] = {}
    for entry in entries:
        if entry.get("source") == "discord":
            event = event_of(entry)
            channels.setdefault(str(event.thread), []).append((event, str(entry["id"])))
    for members in channels.values():
        members.sort(key=lambda pair: pair[0].at)
        for n, (message, ident) in enumerate(members):
            verdict = verdicts[ident]
            if verdict.marked or not may_be_first_word(message, verdict.shown):
                continue
            told = next(
                (m for m, i in members[n + 1 :] if _marked(verdicts[i]) and m.at > message.at),
                None,
            )
            if told is not None and said_first(message, told):
                # a pointer hidden until now shows too, said by its words and its link
                verdicts[ident] = replace(verdict, marked=True, tag="incident", shown=True)
        for n, (message, ident) in enumerate(members):
            verdict = verdicts[ident]
            if verdict.marked or not verdict.shown:
                continue
            answer = members[n + 1] if n + 1 < len(members) else None
            if answer is not None and confirmed_in_chat(message, answer[0]):
                verdicts[ident] = replace(verdict, marked=True, tag="incident")
                if verdicts[answer[1]].shown and not verdicts[answer[1]].marked:
                    verdicts[answer[1]] = replace(verdicts[answer[1]], marked=True, tag="incident")
        for n, (report, ident) in enumerate(members):
            verdict = verdicts[ident]
            if not (verdict.incident and verdict.marked and verdict.shown):
                continue
            for later, other in members[n + 1 :]:
                if later.at - report.at > FOLLOW_UP:
                    break
                then = verdicts[other]
                if then.shown and not then.marked and follows_up(report, later):
                    verdicts[other] = replace(then, marked=True, tag="incident")
        for (message, ident), (reply, _) in pairwise(members):
            verdict = verdicts[ident]
            if verdict.marked and verdict.shown and dismissed_in_chat(message, reply):
                verdicts[ident] = replace(verdict, marked=False, tag=_shown(topic_of(message)))


def _one_of(ids: set[str]) -> Callable[[Event], bool]:
    return lambda event: event.external_id in ids


def _shown(tag: str) -> str:
    return tag if tag in TAGS else "other"


def _marked(verdict: Verdict) -> bool:
    return verdict.marked and verdict.shown


# --- the naive baseline: the first tag whose keyword appears, an incident on any outage word


BASELINE_TAGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ablation", ("ablation", "sweep", "baseline")),
    ("optimizer", ("learning rate", "lr ", "adam", "optimizer", "weight decay", "warmup")),
    ("training-dynamics", ("loss spike", "grad norm", "diverge", "instability", "spike")),
    ("evals", ("eval", "benchmark", "mmlu")),
    ("data", ("dataset", "data mix", "tokenizer", "shard")),
    ("checkpointing", ("checkpoint", "ckpt")),
    ("long-context", ("context length", "long context", "seq len", "rope")),
    ("infra", ("node", "gpu", "tpu", "cluster", "nccl", "throughput", "mfu", "memory")),
    ("spec", ("spec", "architecture", "hyperparameter")),
)
BASELINE_INCIDENT = re.compile(
    r"\b(?:crash\w*|down|oom\w*|hang\w*|hung|lost|ecc|xid|nccl|timeout|timed out|failed"
    r"|preempt\w*|quota|outage)\b",
    re.IGNORECASE,
)


def baseline_method(entry: dict[str, Any]) -> Verdict:
    text = f"{entry.get('title') or ''}\n{entry.get('body') or ''}"
    lowered = text.lower()
    incident = bool(BASELINE_INCIDENT.search(text))
    tag = next((t for t, words in BASELINE_TAGS if any(w in lowered for w in words)), "other")
    return Verdict("incident" if incident else tag, incident, marked=incident)


_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_BARE_LINK = re.compile(r"\S+://\S+")


def summary_problem(summary: str, entry: dict[str, Any]) -> str | None:
    """What makes a summary one a lead would not keep, or None: empty, one of the post's
    markdown headings, a table row, a bare link, a description's title alone, cut mid-phrase
    (ending in an ellipsis), or ending on a colon that introduces what the line cannot show
    ("The job exited at 10:52:")."""
    text = summary.strip()
    low = text.lower().rstrip(".:")
    if not text or text == NO_TEXT:
        return "empty"
    headings = {
        m.group(1).strip().lower().rstrip(".:")
        for m in _HEADING_LINE.finditer(str(entry.get("body") or ""))
    }
    if low in headings:
        return "heading"
    if text.startswith("|") or text.count("|") >= 3:
        return "table row"
    if _BARE_LINK.fullmatch(text):
        return "bare link"
    title = str(entry.get("title") or "").strip().lower().rstrip(".")
    body_text = str(entry.get("body") or "").strip()
    if title and low == title and len(body_text.split()) >= 12:
        return "title only"
    if text.endswith("…"):
        return "cut"
    if text.endswith(":") and not text.endswith("::"):
        return "introduces"
    return None


def _score_shown(s: Scores, entry: dict[str, Any], v: Verdict, ident: str) -> None:
    """The timeline's figures: tags shown and their agreement, the 🚨 mark, summaries."""
    want_tag = str(entry.get("tag") or "other")
    about, live = bool(entry.get("incident")), bool(entry.get("live_report"))
    s.about += about
    s.live += live
    if live and not (v.shown and v.marked):
        s.unmarked_live.append(ident)
    if not v.shown:
        return
    s.entries_shown += 1
    if v.tag != "other":
        s.tags_shown += 1
        s.shown_right += v.tag == want_tag
    s.marked += v.marked
    s.marked_right += v.marked and about
    s.about_marked += v.marked and about
    s.live_marked += v.marked and live
    problem = summary_problem(v.summary, entry) if v.summary != "-" else None
    if problem:
        s.bad_summaries.append(f"{ident} ({problem}): {v.summary[:80]}")


def score(entries: Iterable[dict[str, Any]], method: Method) -> Scores:
    s = Scores()
    for entry in entries:
        v = method(entry)
        ident = str(entry.get("id"))
        _score_shown(s, entry, v, ident)
        s.total += 1
        want_tag = str(entry.get("tag") or "other")
        s.confusion[(want_tag, v.tag)] += 1
        if v.tag == want_tag:
            s.tags_right += 1
        else:
            s.wrong_tags.append(f"{ident}: {want_tag} → {v.tag}")
        labelled = bool(entry.get("live_report"))
        s.incidents += labelled
        s.flagged += v.incident
        s.found += labelled and v.incident
        s.kinds_right += labelled and v.incident and v.kind == entry.get("incident_kind")
        if labelled and not v.incident:
            s.misses.append(ident)
        if v.incident and not labelled:
            s.false_alarms.append(ident)
        empty = not v.summary.strip() or v.summary == NO_TEXT
        if entry.get("spam"):
            s.spam += 1
            s.spam_shown += v.shown
        elif entry.get("substantive"):
            s.substantive += 1
            if empty:
                s.erased.append(ident)
            elif not v.shown:
                s.hidden.append(ident)
    return s


def confusion_table(s: Scores) -> str:
    """Rows: the label; columns: what the method said."""
    tags = [t for t in TAGS if any(t in pair for pair in s.confusion)]
    short = {t: t[:6] for t in tags}
    width = max(len(t) for t in tags) if tags else 5
    lines = [" " * width + " | " + " ".join(f"{short[t]:>6}" for t in tags)]
    for want in tags:
        row = " ".join(f"{s.confusion.get((want, got), 0) or '.':>6}" for got in tags)
        lines.append(f"{want:>{width}} | {row}")
    return "\n".join(lines)
