"""Deterministic (no-LLM) enrichment: a one-line summary, a tag, an incident flag and a
newsworthiness flag for one event's text, read in the context of its thread.

This is what users without an API key get, and what the bot falls back to when the LLM is down,
so it has to hold up on real text. The work is split by concern:

* ``bot.enrich.markdown``  markdown → cleaned blocks (never drops a paragraph of prose);
* ``bot.enrich.summary``   sentences, fillers, the one-line summary;
* ``bot.enrich.context``   the thread or channel around an event;
* ``bot.enrich.incidents`` live incident reports told apart from talk about incidents, over
  the phrases and shapes in ``bot.enrich.incident_signals``;
* ``bot.enrich.incident_posts`` whole posts and threads: not the run's, about one incident;
* ``bot.enrich.tags``      weighted phrase scoring into ``bot.models.TAGS``, thread-aware;
* ``bot.enrich.learned``   learned second opinions: a live-report scorer and a tag classifier
  that gates the rules' tag;
* ``bot.enrich.spam``      promotional posts by strangers.

``enrich_event`` is the one entry point the pipeline, the LLM fallback and the incident engine
share; ``enrich_text`` is the same for text without an event. A body is parsed once and the same
cleaned blocks feed every judgement. Cost is bounded by ``markdown.SCAN_LIMIT`` characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Final

from bot.enrich.context import ThreadContext
from bot.enrich.conversations import summarize_burst
from bot.enrich.incident_posts import (
    about_incident,
    adds_a_safeguard,
    agent_flags_fault,
    announces_planned_work,
    asks_attention,
    asks_for_the_docs,
    breaks_the_run,
    buried_report,
    declares_incident,
    dismisses,
    disowns,
    fixes_a_told_failure,
    is_exercise,
    is_recovery_note,
    is_retrospective,
    is_runbook,
    is_template,
    is_test_report,
    names_a_broken_save,
    names_a_change,
    opens_with_proposal,
    reports_ongoing,
    reports_scores,
    reviews_a_period,
    routine_preemption,
    settled,
    speaks_of_the_main_run,
    thread_incident,
    thread_is_experiment,
)
from bot.enrich.incidents import (
    ALERT_MUTED,
    CAME_BACK_WORDS,
    DETECT_LIMIT,
    SENTENCE_SPLIT,
    alert_page,
    all_checked,
    figures_unchanged,
    find_incident,
    names_another_workload,
    severity_of,
    sharper_kind,
    signals_heard,
)
from bot.enrich.learned import (
    LEARNED_KINDS,
    LiveModel,
    TagModel,
    features,
    gate,
    issue_features,
    load_issue_model,
    load_model,
    load_tag_model,
    tag_features,
)
from bot.enrich.markdown import Document, clean_line, parse_post, relayed_words
from bot.enrich.spam import is_spam
from bot.enrich.summary import (
    NO_TEXT,
    compose_summary,
    is_chitchat,
    link_line,
    table_summary,
    words,
)
from bot.enrich.tags import choose_tag
from bot.models import Event

__all__ = ["Enrichment", "enrich_event", "enrich_text"]

#: Kinds whose text describes a change, not the run's condition: "Fix OOM in loader" is a PR,
#: not an outage.
NO_INCIDENT_KINDS: Final = frozenset({"pull", "review"})
#: Kinds that are news by themselves (a new issue, a W&B state change, a restart, a note).
ALWAYS_NEWS_KINDS: Final = frozenset({"issue", "pull", "state", "restart", "note"})
#: Kinds whose title belongs to the event itself (for comments it is the thread's title).
TITLED_KINDS: Final = frozenset({"issue", "pull"})
#: Default tag for run-state events that mention no topic.
_STATE_KINDS: Final = frozenset({"state", "restart"})
_GIF_HOSTS: Final = ("tenor.com", "giphy.com", "gfycat.com")
_SPEAKER = re.compile(r"^[^:\n]{1,80}:\s+")
#: Something a report of the run names: a number, the run or a part of it, a metric, a tool
#: that shows it, or a failure. A post with none of these is no report, whatever its words.
_OF_A_RUN = re.compile(
    r"\d|\b(?:run|job|train\w*|loss|step|node|gpu|tpu|host|rank|slice|rack|pod|nccl|rccl|ckpt"
    r"|checkpoint|throughput|mfu|tok|tokens|tgs|goodput|util\w*|w&b|wandb|grafana|dashboard|panel"
    r"|slurm|squeue|sacct|queue|oom\w*|nan|crash\w*|error\w*|fail\w*|dead|down|stuck|hang\w*"
    r"|hung|stall\w*|slow\w*|broke\w*|died|dying|killed|preempt\w*|evict\w*|restart\w*"
    r"|resum\w*|lost|disk|storage|bucket|network|ib|link|memory|hbm|ecc|xid|driver|kernel"
    r"|[a-z]+-\d|pager|alert\w*|page[ds]?)\b|[📉📈💀🔥🚨]",
    re.IGNORECASE,
)
#: A post that calls what it tells expected or normal: "loss went up 0.02 since the mix change,
#: expected", "that's by design." (not "expected?", a doubt).
_CALLED_EXPECTED = re.compile(
    r"(?:^|[,;:.—–-])\s*(?:(?:this|that|it)(?:'s|\s+is|\s+was)\s+)?(?:all\s+)?(?:expected|as\s+expected"
    r"|intended|by\s+design|planned|normal|nothing\s+to\s+worry\s+about|on\s+schedule|as\s+scheduled)"
    r"\s*(?:[.!)]|$)"
    r"|\bas\s+expected\b|\bdon't\s+panic\b"
    # or fine: "… and the run is at 40,1xx, all good", "is tok/s halved? no, it's the same"
    r"|(?:^|[,;:.—–-])\s*(?:all\s+good|(?:looks?\s+)?fine|(?:all\s+)?ok(?:ay)?)\s*(?:[.!)]|$)"
    r"|\bno,?\s+(?:it'?s|it\s+is|they'?re|still)\s+(?:the\s+same|fine|ok|normal)\b"
    r"|\b(?:the\s+)?same\s+as\s+(?:before|usual|yesterday|last\s+week)\b"
    # a doubt its writer answers at once: "tok/s halved after the fix? no"
    r"|\?\s*(?:no|nope|nah)\s*[.!]*\s*$"
    # or says the run is going well: "run's moving along nicely, 140k"
    r"|\b(?:moving|going|chugging|humming|running|training)\s+(?:along\s+)?(?:nicely|smoothly|well)\b"
    # an alert that says it is muted for work someone is doing
    rf"|\b{ALERT_MUTED}\b",
    re.IGNORECASE | re.MULTILINE,
)
#: The scorer judges a post of at least this many words: fewer hold too little for a reading
#: of words ("loss stuck?" is the rules' to read).
_FEWEST_WORDS: Final = 4
#: A word in any script ("체크포인트", "又挂了", "ckpt").
_ANY_WORD = re.compile(r"[^\W_]+")
#: A post this short whose figures did not move says nothing changed (a longer one, an agent's
#: daily say, has more to tell than its figures).
_SHORT_POST: Final = 40
#: A sentence that opens with a condition says what happens then, not what happened.
_CONDITIONAL = re.compile(r"^\W*(?:if|when|whenever|unless|in\s+case|once)\b", re.IGNORECASE)
#: A question about what to do next asks for a plan, not about a fault: "are we keeping the 20k
#: ckpt or can it go?", "should we move the eval to Friday?" (not "should we be worried …").
_ASKS_A_PLAN = re.compile(
    r"^\W*(?:are|should|can|could|do|shall|will|would)\s+we\b(?![^?]*\bworr(?:y|ied)\b)[^?]*\?\s*$",
    re.IGNORECASE,
)
# "Bump pyyaml from 6.0.1 to 6.0.2": an automated dependency bump (from an outside account)
_DEPENDENCY_BUMP = re.compile(
    r"\s*(?:build\(deps\):\s*|chore\(deps\):\s*)?bump\s+\S+\s+from\s+\S+\s+to\s+\S+\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Enrichment:
    """What the rules say about one event's text."""

    summary: str  # one line, <= 200 characters, never empty
    tag: str  # one of bot.models.TAGS
    incident: bool  # about a specific incident: its report, diagnosis, fix or post-mortem
    severity: str | None  # "critical" | "warning" | None when not a live report
    incident_kind: str | None  # one of bot.enrich.incident_signals.KIND_PRIORITY
    newsworthy: bool  # False for chit-chat, empty entries and strangers' advertising
    live_report: bool = False  # a report of a failure happening now: what may raise an alert


def _a_change(kind: str, title: str | None) -> bool:
    """A pull, or an issue asking for a change ("Stripe the packed shards across 8 OSTs")."""
    return kind == "pull" or (kind == "issue" and title is not None and names_a_change(title))


def not_the_runs(doc: Document, title: str | None, context: ThreadContext) -> bool:
    """About no incident of the run's whatever its words: a crash in an ablation, an issue or a
    post asking for a change, a post-mortem of a period, a reply dismissing an alert."""
    return (
        (
            thread_is_experiment(context)
            and not breaks_the_run(doc.prose)
            and not speaks_of_the_main_run(doc.prose, context)
            and not (title is not None and names_a_broken_save(title))
        )
        or is_exercise(title or "", doc.prose)
        or announces_planned_work(doc.prose)
        or (
            title is not None
            and (
                names_a_change(title)
                or is_template(title)
                or is_runbook(title)
                or is_test_report(title)
            )
        )
        # a reply in a thread about a test ("CI: test_moe_dispatch times out on the CPU
        # runner"): the deadlock it explains is the test's
        or (title is None and is_test_report(context.title) and not breaks_the_run(doc.prose))
        or opens_with_proposal(doc.prose)
        or is_retrospective(doc.prose, context.title)
        # a week's or a month's review tells what happened in it; what is happening now it sets
        # apart ("## Right now"), and that part is read as a report (``buried_report``)
        or reviews_a_period(doc.prose, context.title)
        or dismisses(doc.prose)
        or disowns(doc.prose)
        or asks_for_the_docs(doc.prose)
    )


def _incident(
    doc: Document, title: str | None, context: ThreadContext
) -> tuple[bool, str | None, str | None]:
    found = find_incident(doc.prose, clean_line(title) if title else "", _logs(doc))
    if (
        found is None
        and doc.code
        and (
            asks_attention(doc.prose)
            # not "❌ CI failed on a91f2c0": the log is that workload's
            or (len(words(doc.prose)) <= 8 and not names_another_workload(doc.prose))
        )
    ):
        # "needs attention. The last lines from rank 0 are:" and the log says what broke; a
        # pasted log with a few words of its own ("schist down", "second time tonight") too
        # a machine's event names as they are ("state=NODE_FAIL"), and read as words:
        # "loader_workers_oom_killed"
        code = "\n".join(doc.code)
        found = find_incident("", "", code) or find_incident("", "", code.replace("_", " "))
    if found is None and title is not None and names_a_broken_save(title):
        found = ("checkpoint-failed", "warning")  # the title tells what the body shows
    if found is not None:
        kind, severity = found
        return True, severity, sharper_kind(kind, "\n".join(doc.code))
    if title is not None and declares_incident(context) and doc.prose:
        # an issue opened in the incident's own label: its description is the report
        return True, severity_of("outage", doc.prose), "outage"
    # "Still down", "52,000 also fails": a follow-up in the incident's own thread
    thread_kind = thread_incident(context) if title is None else None
    if thread_kind is not None and reports_ongoing(doc.prose):
        return True, severity_of(thread_kind, doc.prose), thread_kind
    return False, None, None


def _judge(
    doc: Document,
    title: str | None,
    kind: str,
    source: str,
    context: ThreadContext,
    learned: LiveModel | bool,
) -> tuple[bool, bool, str | None, str | None]:
    """``(live report, about an incident, severity, incident kind)`` of one post."""
    ruled_out = kind in NO_INCIDENT_KINDS or not_the_runs(doc, title, context)
    if ruled_out and kind != "pull" and (buried := buried_report(doc.prose)):
        # a weekly review, an experiment's report or a code review with a paragraph set apart
        # that tells of now ("Unrelated to this PR but urgent: the restore … fails")
        return True, True, severity_of(buried, doc.prose), buried
    flagged = None if ruled_out else agent_flags_fault(doc.prose, doc.flagged_rows)
    if flagged is not None:  # the agent's ⚠️ line: the fault's first word, recovered or not
        return True, True, severity_of(flagged, doc.prose), flagged
    recovered = not ruled_out and settled(doc.prose)
    live, severity, incident_kind = (
        (False, None, None) if ruled_out else _incident(doc, title, context)
    )
    # "slice 2 went away at 119.3k, back at 04:05, resumed from 119k": the fault it came back
    # from is told, so it is about that incident, and no alert (it is over). A note that opens
    # with the run back up is the run log's ("Back up from 15,000 on r11n2. …").
    told_over = (
        recovered and live and not is_recovery_note(doc.prose) and not routine_preemption(doc.prose)
    )
    if recovered:
        live, severity, incident_kind = False, None, None
    elif (
        not (live or ruled_out)
        # a pull request's thread discusses its change: a failure there is told in the rules'
        # words ("this broke the run"), and the scorer reads its explanations as reports
        and context.kind != "pull"
        and (added := _learned_report(doc, title, kind, source, context, learned))
    ):
        live, (severity, incident_kind) = True, added
    if live or told_over:
        return live, True, severity, incident_kind
    # about a specific incident (a fix PR, a diagnosis, a post-mortem, a recovery note); a fix
    # whose description opens with the dated failure it fixes is that incident's; chit-chat is
    # never about anything
    about = not is_chitchat(doc.prose) and (
        about_incident(doc.prose, clean_line(title) if title else "", context)
        or (
            _a_change(kind, title)
            and not thread_is_experiment(context)
            and not adds_a_safeguard(title or context.title)
            and fixes_a_told_failure(doc.prose)
        )
    )
    return False, about, None, None


def names_the_run(text: str) -> bool:
    """The text names something a report of the run would: a number, the run or a part of
    it, a metric, a tool that shows it, or a failure."""
    return _OF_A_RUN.search(text) is not None


def _logs(doc: Document) -> str:
    """The log-looking lines, or for a post that is only a pasted log, its first lines."""
    return doc.logs or ("" if doc.prose else "\n".join(doc.code))


def _learned_report(
    doc: Document,
    title: str | None,
    kind: str,
    source: str,
    context: ThreadContext,
    learned: LiveModel | bool,
) -> tuple[str, str] | None:
    """``(severity, kind)`` of a live report the learned scorer finds in a post the rules did
    not rule out, or None: a reply by the replies' scorer, an issue's description by the
    issues' (``learned`` True; a model given is used for both). Where the rules heard incident
    words and judged them no report, the scorer must be surer to overrule them (``over``, not
    ``threshold``). Its kind is the most specific one the rules' signals name anywhere in the
    post, its pasted log included (unjudged: the scorer has judged it a report), else
    ``outage``."""
    issue = kind == "issue" and source == "github" and bool(title)  # as the scorer learned it
    if learned is False or not (issue or kind in LEARNED_KINDS) or not doc.prose.strip():
        return None
    sentences = [s for s in SENTENCE_SPLIT.split(doc.prose.strip()) if s]
    if all(_CONDITIONAL.match(s) for s in sentences):
        return None  # "if the job is wedged we requeue it": a rule, not a report
    if all(_ASKS_A_PLAN.match(s) for s in sentences):
        return None  # "are we keeping the 20k ckpt or can it go?": a plan asked about
    if not names_the_run(f"{title or ''}\n{doc.prose}"):
        return None  # "anyone grabbing lunch?": nothing of a run to report on
    if CAME_BACK_WORDS.found(doc.prose[:DETECT_LIMIT]):
        return None  # "evicted again around 14:20, it's back in the queue": told over
    if _CALLED_EXPECTED.search(doc.prose[:DETECT_LIMIT]):
        return None  # "loss went up 0.02 since the mix change, expected"
    if len(_ANY_WORD.findall(doc.prose)) < _FEWEST_WORDS:
        return None  # "loss stuck?": too few words for a reading of words to judge
    if len(_ANY_WORD.findall(doc.prose)) <= _SHORT_POST and figures_unchanged(doc.prose):
        return None  # "MFU since the relaunch is 41.2%, was 41.3 before": nothing moved
    model = learned
    if model is True:
        model = load_issue_model() if issue else load_model()
    heard = signals_heard(f"{title}\n{doc.prose}" if title else doc.prose)
    if all_checked(doc.prose) and not heard:
        return None  # an agent's daily that flags nothing, every line ✅: the run is well
    if names_another_workload(doc.prose[:300]):
        return None  # "the eval has been at the same step since yesterday": not the run
    if not heard and reports_scores("\n".join(doc.code)):
        return None  # "80k:" and a table of MMLU, GSM8K …: an eval's numbers
    if alert_page(doc.prose) == "noise":
        return None  # "[PagerDuty] TRIGGERED … run=abl-rope-yarn urgency: low": pages nobody
    bar = model.over if heard else model.threshold
    names = issue_features(doc, title, context) if issue else features(doc, title, kind, source)
    if model.probability(names) <= bar:
        return None
    text = "\n".join(part for part in (title or "", doc.prose, *doc.code) if part)
    found = sharper_kind("outage", text)
    return severity_of(found, doc.prose), found


def _newsworthy(doc: Document, body: str, kind: str, tag: str, incident: bool) -> bool:
    if incident or kind in ALWAYS_NEWS_KINDS:
        return True
    prose = doc.prose
    if not prose:
        if doc.had_code or doc.blocks:
            return True  # a pasted log or config is worth a line
        lowered = body.lower()
        return "://" in lowered and not any(host in lowered for host in _GIF_HOSTS)
    if is_chitchat(prose):
        return False
    tokens = words(prose)
    # "same here", "oh wow": two words, no number, no topic
    return not (len(tokens) <= 2 and tag == "other" and not any(c.isdigit() for c in prose))


def _topic(
    doc: Document,
    own_title: str | None,
    kind: str,
    source: str,
    context: ThreadContext,
    tag_model: TagModel | bool,
) -> str:
    """The tag of an event that is not about an incident: the rules' choice, gated by the tag
    classifier (``bot.enrich.learned.gate``) unless ``tag_model`` is False."""
    default = "infra" if kind in _STATE_KINDS or source == "wandb" else "other"
    tag = choose_tag(
        doc,
        title=own_title,
        kind=kind,
        context=context,
        default=default,
        incident_thread=thread_incident(context) is not None,
    )
    if tag_model is False or (tag == "other" and is_chitchat(doc.prose)):
        return tag  # chit-chat is given no topic, however sure the classifier
    model = load_tag_model() if tag_model is True else tag_model
    return gate(tag, model.ranking(tag_features(doc, own_title, kind, source, context)))


def topic_of(event: Event) -> str:
    """The tag the rules give ``event`` as a post about no incident: an alert its thread
    dismissed shows its topic (``bot.enrich.hindsight``)."""
    doc = parse_post(event.body or "", event.source)
    own_title = event.title if event.kind in TITLED_KINDS else None
    return _topic(doc, own_title, event.kind, event.source, ThreadContext.of(event), True)


def _junk(
    title: str | None, own_title: str | None, body: str, kind: str, context: ThreadContext
) -> bool:
    """A stranger's advertisement, or an untrusted dependency-bump pull."""
    return bool(
        is_spam(f"{own_title or ''}\n{body}", context)
        or (kind == "pull" and context.trusted is False and _DEPENDENCY_BUMP.match(title or ""))
    )


def enrich_text(
    *,
    title: str | None,
    body: str,
    kind: str,
    source: str,
    context: ThreadContext | None = None,
    learned: LiveModel | bool = True,
    tag_model: TagModel | bool = True,
) -> Enrichment:
    """Summary, tag, incident flag and newsworthiness of one event, without an LLM.

    ``kind`` is the event kind (issue | pull | comment | review | message | conversation | state
    | restart | note) and ``source`` github | discord | wandb | system; ``context`` the thread
    or channel around it. Issues and pulls lean on their title; other kinds use it only when the
    body has nothing to say. Pulls and reviews are never incidents (they describe fixes).

    An entry with nothing to summarise, and a stranger's advertisement, are not newsworthy.

    ``learned`` is the live-report scorer that may add a report the rules missed (never remove
    one): True for the committed one (``bot.enrich.learned``), False for the rules alone.
    ``tag_model`` likewise is the tag classifier that gates the rules' tag (never "incident").
    """
    context = context or ThreadContext()
    body = body or ""
    doc = parse_post(body, source)
    own_title = title if kind in TITLED_KINDS else None
    summary = compose_summary(doc, own_title)
    if own_title is None and title and summary == NO_TEXT:
        summary = compose_summary(doc, title)
    if summary == NO_TEXT:
        summary = table_summary(body) or NO_TEXT  # a post that is only a table

    # a bridged chat message is judged by its speaker's words, summarised with their name
    judged = relayed_words(doc) if source == "discord" else doc
    live, incident, severity, incident_kind = _judge(
        judged, own_title, kind, source, context, learned
    )
    tag = "incident" if incident else _topic(doc, own_title, kind, source, context, tag_model)
    newsworthy = _newsworthy(doc, body, kind, tag, live) and summary != NO_TEXT
    if not newsworthy and kind == "message":
        # "👀 <link>", "uhh <link>": hidden as too short to show, yet said by its words and
        # its link (what the timeline shows should the chat pass mark it)
        summary = link_line(doc.prose, body) or summary
    if newsworthy and _junk(title, own_title, body, kind, context):
        newsworthy = incident = live = False
        severity = incident_kind = None
    if not newsworthy and not live:
        tag, incident = "other", False  # chit-chat and junk have no topic
    return Enrichment(
        summary=summary,
        tag=tag,
        incident=incident,
        severity=severity,
        incident_kind=incident_kind,
        newsworthy=newsworthy,
        live_report=live,
    )


def enrich_event(
    event: Event, *, learned: LiveModel | bool = True, tag_model: TagModel | bool = True
) -> Enrichment:
    """``enrich_text`` for a stored event, in the context its source recorded. The pipeline,
    the LLM's fallback and the incident engine all call this, so they agree (``learned`` and
    ``tag_model`` as for ``enrich_text``: benches and tests compare without them)."""
    body = event.body or ""
    if event.kind == "conversation":
        # "author: text" lines: summarise what was said, not who said it first.
        body = "\n".join(_SPEAKER.sub("", line, count=1) for line in body.splitlines())
    enrichment = enrich_text(
        title=event.title,
        body=body,
        kind=event.kind,
        source=event.source,
        context=ThreadContext.of(event),
        learned=learned,
        tag_model=tag_model,
    )
    if event.kind == "conversation":
        # Context for its messages, never an entry nor a verdict of its own: each message with
        # substance is judged and shown by itself (`bot.enrich.conversations`).
        said = summarize_burst(event.body or "")
        return replace(
            enrichment,
            summary=said or enrichment.summary,
            newsworthy=False,
            live_report=False,
            severity=None,
            incident_kind=None,
        )
    return enrichment


def reports_a_fault(event: Event) -> bool:
    """Whether the rules read `event` as a live report of a fault in the run (what marks it
    🚨 and may page): how a source decides to keep what it otherwise leaves out."""
    return enrich_event(event, learned=False, tag_model=False).live_report
