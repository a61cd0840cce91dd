"""Rule-based incident detection: is this text reporting that the run is (or was just) broken?
The signals themselves (phrases and shapes, and the incident kinds) are in
``bot.enrich.incident_signals``; this module judges their matches and whole posts.

Precision matters as much as recall: training-run threads talk about OOMs, hangs and crashes all
the time without anything being broken ("no OOMs since the fix", "to avoid OOM", "would hang if",
"Fix OOM in loader"). So every signal match is judged in its sentence:

* a negation, fix or hypothetical cue earlier in the same clause discards it;
* a question ("Did the job crash?") discards it, except a short one about the run's state now,
  which is how chat often first reports a failure ("is it hung?", "anyone else seeing the run
  stalled?": ``live_question``);
* words like "stuck" or "stalled" only count with a system subject (job, rank, restore...) and
  not right after a training-dynamics noun ("the gate is stuck closed", "loss stalled");
* text about CI, unit tests, someone's laptop, or an ablation or sweep is not the run;
* a signal about the past ("two weeks ago"), in an aside "(…)" or compared with ("as a hang")
  does not count.

Whole posts and threads are judged in ``bot.enrich.incident_posts`` (``bot.enrich.rules``
combines them): a thread about a small experiment, a post-mortem or weekly recap, a note that
opens with the run back up or the fix, and a post that says the run is fine report no incident;
in an incident's own thread a follow-up that says it goes on ("still down", "52,000 also
fails") does.

Signals cover what a stopped run does not do ("no heartbeat since 3am", "step hasn't moved"), what
a dead process prints ("CUDA error", "NCCL error", "loss is nan"), an agent's structured status
("Status: 🔴 blocked", not "blocked on #1002") and how chat says it ("job exited", "slurm killed
the job", "we lost the allocation"). Threads whose title leads with an eval, a benchmark or a
proposal are not the run's, and a failure the same sentence calls fixed is over.

Issue 40 asked for signals that hold on text they were not written against, so the later ones are
shapes more than phrases: a part of the run that errs, its kind read from the part it names ("the
input pipeline is throwing IO errors"); a bare name and its state, as chat writes a headline
("wisp is wedged", "job down"); what a run has not done for a while ("45 minutes without a
step"); a phase never left; the same failure over and over. Ruled out the same way: a failure
after "when" in the present (a habit), a job with another purpose, a review of a period, an
issue titled with a change to make, a post opening with a proposal, a pasted log judged as
machine text (no asides or negations there), and a recovery only settles a post when no failure
is told after it.

Code blocks never reach this module (``bot.enrich.markdown`` drops them); log-looking lines are only
used when a message has no prose at all, or when its prose asks for a human ("needs attention",
"paging on-call") and the log excerpt says why.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, Final

from bot.core.months import MONTH_NAMES_BUT_MAY
from bot.enrich.incident_signals import (
    FAULT,
    KIND_PRIORITY,
    NOW_STATE,
    SIGNALS,
    SINCE_RESTART,
    STALL,
    Signal,
)
from bot.enrich.lowered import Words, aligned

#: The benchmarks an eval team names, as a pattern: "MMLU", "GSM8K", "RULER", "needle".
BENCHMARKS: Final = (
    r"(?:mmlu|gsm8k|humaneval|mbpp|hellaswag|arc-?[ce]|gpqa|ifeval|ruler|needle|longbench|bbh"
    r"|math-?500)"
)
CRITICAL: Final = "critical"
WARNING: Final = "warning"

_CRITICAL_KINDS: Final = frozenset(
    {"hardware", "storage", "oom", "node-loss", "preemption", "restore-failed", "crash", "outage"}
)

#: How much prose is examined (a long comment's incident report is near its top).
DETECT_LIMIT: Final = 12_000

#: Each anchor once, with the signals (their places in ``SIGNALS``) it lets run.
_BY_ANCHOR: Final = dict(
    (anchor, frozenset(n for n, s in enumerate(SIGNALS) if anchor in s.anchors))
    for anchor in dict.fromkeys(a for s in SIGNALS for a in s.anchors)
)


@functools.cache
def compiled(n: int) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """Signal ``n``'s pattern and its twin for lowercased text (None where its words tell cases
    apart), compiled when first heard: the table is most of this module's import, and most
    processes (a CLI command, the chart drawer) never read a post."""
    signal = SIGNALS[n]
    return signal.compile(), signal.compile_lowered()


def _trie(words: list[str]) -> str:
    """A pattern matching any of ``words``, as a trie of alternatives (the engine then tries a
    letter once, not once per word), the longest word first wherever one extends another."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for letter in word:
            node = node.setdefault(letter, {})
        node[""] = {}

    def branch(node: dict[str, Any]) -> str:
        alternatives = [re.escape(c) + branch(rest) for c, rest in sorted(node.items()) if c]
        if not alternatives:
            return ""
        either = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
        return f"(?:{either})?" if "" in node else either

    return branch(root)


@functools.cache
def _anchor_reader() -> tuple[re.Pattern[str], dict[str, frozenset[int]]]:
    """A pattern that finds, at every place of a text, the longest anchor starting there; and
    for each anchor the signals of every anchor inside it (found with it, wherever it is)."""
    pattern = re.compile(f"(?=({_trie(list(_BY_ANCHOR))}))")
    within = {
        anchor: frozenset(n for inner, ns in _BY_ANCHOR.items() if inner in anchor for n in ns)
        for anchor in _BY_ANCHOR
    }
    return pattern, within


@functools.lru_cache(maxsize=256)
def _anchored(lowered: str) -> tuple[int, ...]:
    """The places in ``SIGNALS`` of the signals with an anchor in ``lowered``, in order (the
    text is read once for every anchor at once; a text asked about again is not read again)."""
    pattern, within = _anchor_reader()
    heard: set[int] = set()
    for anchor in {m.group(1) for m in pattern.finditer(lowered)}:
        heard |= within[anchor]
    return tuple(sorted(heard))


def _listening(text: str, lowered: str) -> Iterator[tuple[Signal, re.Pattern[str], str]]:
    """The signals with an anchor in the text, each with the pattern to run and the text to run
    it on: lowercased where the signal allows and lowering kept every place (matches then point
    into ``text`` as well)."""
    exact = aligned(text, lowered)
    for n in _anchored(lowered):
        signal, (pattern, fast) = SIGNALS[n], compiled(n)
        if exact and fast is not None:
            yield signal, fast, lowered
        else:
            yield signal, pattern, text


#: At most this many matches are judged per text (a wall of "no crash" is not worth more).
MAX_JUDGED: Final = 64

# Cues in the clause before a signal that make it not a live incident.
_NEGATION = re.compile(
    r"""\b(?:no|not|never|without|zero|nor|none|neither
      |avoid\w*|prevent\w*|fix|fixes|fixed|fixing|resolv\w*|mitigat\w*|reduc\w*|workaround\w*
      |(?:guard|guards|guarding|protect\w*|safe|robust|resilient)\s+against|handl\w*|detect\w*
      |recover(?:s|ing)?\s+from|retry\s+on|survive[sd]?
      |(?:acts?|reacts?|triggers?|alerts?|pages?)\s+(?:only\s+)?(?:on|to)
      |if|unless|whether|in\s+case|whenever|each\s+time|every\s+time|in\s+the\s+event
      |when\s+(?:\w+\s+){0,3}?(?:shows|is|are|gets|hits|goes|has|happens|fails|dies|crashes)
      |would|could|might(?!\s+(?:have|be|well)\b)|may(?!\s+(?:have|be|well)\b)|should|shall|will|gonna|going\s+to|about\s+to|wouldn't|couldn't|shouldn't|won't|cannot|can't
      |doesn't|don't|didn't|isn't|aren't|wasn't|weren't|hasn't|haven't|hadn't|can\s+(?:cause|lead)
      |instead\s+of|rather\s+than|risk\w*|chance|likelihood|prone|susceptible|expect\w*
      |hopefully|hope|unlikely|simulat\w*|inject\w*|test|tests|testing|tested|postmortem
      |post-mortem|retro|lessons?|rare|rarely|occasional\s+false|false\s+positive\w*
      |propos\w*|suggest\w*|consider\w*|plan\s+to|planning\s+to|let's|lets|e\.g|i\.e|example
      |si|cuando|nunca|sin|podría|en\s+caso\s+de|por\s+si|ejemplo
      )\b""",
    re.IGNORECASE | re.VERBOSE,
)
#: An alarm named by what is missing, just before the signal: "🔴 [main] No heartbeat / No
#: metrics logged for 15 minutes" is the alert's name and its line, not a denial.
_ALARM_NAMED = re.compile(
    r"\bno\s+(?:heartbeats?|metrics|progress|steps?|data|logs?)\W*$", re.IGNORECASE
)
# Cues right before a signal ("any OOMs", "the last crash", "after the crash").
_NEAR_CUE = re.compile(
    r"\b(?:any(?:\s+(?:more|further|new|other))?|past|previous|prior|earlier|last|potential|their"
    r"|yesterday's|(?:last|previous|past)\s+(?:week|night|month|year|time)(?:'s)?"
    # "like a crash" compares; "looks like a fresh warmup" hedges a report
    r"|possible|known|hypothetical|future|as\s+(?:a|an|the)"
    r"|(?<!looks\s)(?<!seems\s)(?<!smells\s)(?<!sounds\s)like\s+(?:a|an|the)"
    r"|(?:after|since|before)\s+(?:the|that|this|a|an)(?:\s+[\w-]+){0,2}"
    # a setting changed: "Separate NCCL timeouts for learner collectives", "raise the NCCL
    # timeout to 30 min"
    r"|(?:separate|split|raise|increase|bump|lower|shorten|lengthen|tune)(?:\s+(?:the|our|all))?"
    # a count of none: "spot: 0 preemptions so far" (not "rank 0 stuck")
    r"|(?:^|(?<=[:,;(•*-])|(?<=[:,;(•*-]\s)|(?<=\bwith\s)|(?<=\bhad\s)|(?<=\bsaw\s)|(?<=\band\s))0)\s+$",
    re.IGNORECASE,
)
# Words right after a signal that make it a topic, not an event ("OOM risk", "crash handler").
_AFTER_CUE = re.compile(
    r"[\s-]*(?:risk|margin|headroom|safety|threshold|guard|protection|handling|handler|detection"
    r"|detector|test|tests|repro|reproducer|checks?|tolerance|tolerant|resilien\w*|recovery"
    r"|watchdogs?|alerts?|alarms?|monitors?|runbooks?|playbooks?"
    r"|retr(?:y|ies)|rates?|budget|analysis|bug|fix|report|stats|counts?|probability)\b",
    re.IGNORECASE,
)
#: A figure of the fault, then what it became: "stall 95 s → 11 s".
_MEASURED = re.compile(
    r"\s*(?:time|duration)?\s*[:=]?\s*~?(\d+(?:\.\d+)?)\s*[a-z]{0,3}\s*(?:→|->)\s*~?(\d+(?:\.\d+)?)"
)
# Anywhere in the sentence: it is about the past ("two weeks ago", "back in August").
#: Months by name (not "may": a verb more often than a month).
MONTHS: Final = MONTH_NAMES_BUT_MAY  # "may" is the verb far more often
_NOT_SINCE: Final = r"(?<!since\s)" + "".join(
    rf"(?<!since\s{day}day\s)" for day in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")
)
HISTORY = re.compile(
    r"\b(?:(?:\d+|a\s+few|a\s+couple\s+of|couple\s+of|two|three|four|several|many)\s+"
    r"(?:days?|weeks?|months?)\s+ago(?!\s+(?:just|has\s+just|finally|actually)\s+happened)|"
    # "last week" (not "since tuesday last week": a start, and it has gone on since)
    + _NOT_SINCE
    + r"last\s+(?:week|month|year|quarter|spring|summer|autumn|fall|winter)"
    r"|back\s+in|in\s+the\s+past"
    r"|historically|used\s+to|previously|earlier\s+this\s+(?:month|year)|once\s+again\s+like"
    # and in Spanish: "hace dos semanas", "la semana pasada", "el mes pasado"
    r"|hace\s+(?:\d+|dos|tres|unos|unas)\s+(?:días|semanas|meses)|la\s+semana\s+pasada"
    r"|el\s+mes\s+pasado"
    r"|remember\s+when|back\s+when|good\s+times|(?-i:in\s+May)"
    # a count over months: "a117 has died 3 times since november", "twice this quarter"
    rf"|\b(?:\d+|two|three|four|five|several|many)\s+times\s+(?:since\s+{MONTHS}\b"
    r"|this\s+(?:month|quarter|year)|in\s+the\s+(?:last|past)\s+(?:\w+\s+)?(?:weeks|months))"
    # a month named: "the outage on the gannet run in march" (not "in May", a verb's tense)
    r"|\bin\s+(?:january|february|march|april|june|july|august|september|october|november"
    r"|december)\b(?!\s+\d)"
    # another place and time: "at my last job a fabric upgrade gave us two NCCL timeouts"
    r"|at\s+my\s+(?:last|previous|old)\s+(?:job|company|lab|place|employer)"
    r"|what\s+happened\s+(?:around|on|in|during|at|there|exactly|\d{1,2}[-/]\d{1,2}\b)"
    r"|what\s+exactly\s+happened"
    r"|was\s+that\s+an?\s+(?:crash|outage|restart|incident)"
    rf"|(?:in|during)\s+(?:early\s+|mid-?|late\s+)?{MONTHS}"
    # a month of a year gone by: "Feb '55 was different"
    rf"|{MONTHS}\s+'\d\d\b"
    # "the February restart loop", "September's outage": one named by its month is over
    rf"|the\s+{MONTHS}(?:'s)?\s+(?!\d)(?:\w+\s+){{0,2}}?(?:outages?|incidents?|loops?"
    r"|crash(?:es)?|hangs?|failures?|restarts?|downtime|preemptions?)"
    # "the Dec 27 preemption" (not "since the Apr 6 restart", which is now)
    # and "the 07-01 hang"
    rf"|(?<!since\s)the\s+(?:{MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}[-/]\d{{1,2}})"
    r"\s+(?:\w+\s+){0,3}?(?:outages?"
    r"|incidents?|crash(?:es)?|hangs?|stalls?|failures?|downtime|preemptions?|issues?|timeouts?))\b",
    re.IGNORECASE,
)
#: An alert muted for work someone is doing: "alerts muted until 12:00 UTC by tobi".
ALERT_MUTED: Final = r"alerts?\s+(?:are\s+|is\s+)?(?:muted|silenced)\s+(?:until|till|for|by)"
# In the sentence: it was planned ("preempted on schedule, as expected", "drained for maintenance").
_EXPECTED = re.compile(
    r"\b(?:as\s+expected|on\s+schedule|as\s+planned|as\s+scheduled|is\s+expected(?!\s+to\b)"
    # "planned maintenance went wrong: r12 never came back": planned, and it broke the run
    r"|planned\s+maintenance(?![^.]*\b(?:went\s+wrong|overran|over-?ran|ran\s+over|broke"
    r"|never\s+(?:came\s+back|restarted|came\s+up)|did(?:n't|\s+not)\s+come\s+back)\b)"
    r"|(?<=\()(?:as\s+)?(?:expected|planned)(?=\))"
    # "64 nodes terminated (host maintenance, scheduled)"
    r"|(?<=\()(?:[\w-]+\s+){0,2}maintenance,\s+(?:scheduled|planned)(?=\))"
    r"|end\s+of\s+(?:the\s+)?(?:stage|phase|schedule|training|run)|reached\s+the\s+end"
    rf"|{ALERT_MUTED}"
    # "hero paused for the driver upgrade": stopped on purpose, for work on the cluster (not
    # slurm's reason "Reserved for maintenance", which names a reservation, planned or not)
    r"|(?<!reserved\s)for\s+(?:the\s+|a\s+)?(?:scheduled\s+|planned\s+)?(?:[\w-]+\s+){0,2}?(?:upgrade|maintenance"
    r"|migration|firmware\s+update|window)(?![^.]*\b(?:didn't|did\s+not|unannounced|unplanned|unexpected"
    r"|nobody|no\s+one|not\s+told|without\s+(?:notice|warning))\b))\b",
    re.I,
)
#: "why is nothing in wandb since 06:30?", "why are the pods pending?": asks the cause of a state
#: it reports (not "why did the job crash?", which looks back).
_WHY_NOW = re.compile(
    r"why\s+(?:is|are|has|have|isn't|aren't)\b"
    # "why did ousel just lose 8 nodes?": what just happened, asked
    r"|why\s+did\s+(?:\S+\s+){1,3}?just\b"
    # "did the staging dir just fill up?": what just happened, asked as a guess
    r"|did\s+(?:\S+\s+){1,3}?just\b"
    # "is it just me or has the step counter been stuck since 03:40?": an alarm, asked
    r"|is\s+it\s+just\s+me\s+or\b"
    # "is the job supposed to be sitting at step 36,412 for half an hour?": a doubt about now
    r"|(?:is|are)\s+(?:\S+\s+){1,3}?supposed\s+to\s+(?:still\s+)?(?:be|print|show|say|log|sit)\b"
    # "anyone know why main has been PENDING for 3 hours?"
    r"|(?:does\s+)?(?:anyone|anybody|someone|any\s+idea)\s+(?:know\s+)?why\s+(?:\S+\s+){0,3}?"
    r"(?:is|are|has|have|keeps?)\b"
    # and in Spanish: "¿alguien sabe por qué el job aparece como PREEMPTED en sacct?"
    r"|¿?\s*(?:alguien\s+sabe\s+)?por\s*qu[eé]\s+(?:\S+\s+){0,4}?(?:está|aparece|sigue|se\s+cayó)\b"
    # "is the run restarting from 352,000 in a loop?"
    r"|(?:is|are)\s+(?:it|the\s+(?:run|job|training)|main|[a-z][\w-]*)\s+(?:restarting|crashing)\b[^?]*"
    r"\bin\s+a\s+loop"
    # "ok who killed the job?": the alarm, asked
    r"|(?:who|what)\s+(?:just\s+)?(?:killed|stopped|cancell?ed|nuked|took\s+down)\b"
    r"|(?:did|has)\s+(?:someone|somebody|anyone)\s+(?:just\s+)?(?:stop|kill|cancel|nuke)"
    # a report asked as a doubt: "is it normal for the loss panel to say NaN?", "is an Xid 48
    # on bry-gpu-088 something to worry about?"
    r"|(?:is|are)\s+(?:it|this|that)\s+(?:normal|expected|ok|okay|fine)\s+(?:for|that)\b"
    r"|(?:is|are)\b[^?]{0,80}\bsomething\s+to\s+worry\s+about"
    r"|should\s+(?:i|we)\s+(?:be\s+)?worr(?:y|ied)"
    # a doubt that presumes the fault: "should the run have died at 02:04?", "should the new
    # queued resource be stuck in WAITING_FOR_RESOURCES for 2h?"
    r"|should\s+(?:\S+\s+){1,5}?(?:have\s+(?:died|crashed|stopped|failed)"
    r"|be\s+(?:stuck|dead|down|hanging|hung|failing|crashing))\b"
    # "has main actually been stuck since 09:12?": a stop dated, asked
    r"|(?:has|have)\s+(?:it|the\s+(?:run|job|training)|main)\s+(?:actually\s+|really\s+)?been\s+"
    r"(?:stuck|down|dead|hung|stalled)\s+since\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"(?:¿|did|does|do|is|are|was|were|has|have|had|could|can|would|will|should|any|anyone"
    r"|anybody|how|why|what|when|where|which|who|whether|shall)\b",
    re.IGNORECASE,
)
# Later in the sentence: the failure is already dealt with.
_SETTLED = re.compile(
    r"\b(?:fixed\s+(?:by|in|with|since|now)|(?:was|were|has\s+been|have\s+been)\s+fixed"
    r"|went\s+away|gone\s+away|stopped\s+happening|handled\s+it|dealt\s+with\s+it|took\s+care\s+of"
    r"|since\s+fixed)\b",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(
    r"[,;:()—–]|\s-\s|\b(?:but|however|though|although|yet|whereas)\b"
    r"|\band\s+(?=(?:the|then|so|now|our|its|it|we|hero)\b)"
)
_DYNAMICS_BEFORE = re.compile(
    r"\b(?:loss|losses|gates?|routers?|norms?|gradients?|grads?|weights?(?!\s+(?:sync|transfer|push))"
    r"|logits?|experts?"
    r"|accuracy|perplexity|evals?|metrics?|embeddings?|activations?|lr|learning\s+rate|heads?"
    r"|sigmoid|softmax|curve|scores?|plateau|mfu|throughput|speed|utili[sz]ation|tokens?"
    r"|latency|memory|usage|cost|rate|count|bpb|val(?:idation)?)\b[^.!?\n,;]{0,20}$",
    re.IGNORECASE,
)
#: An alert line: its parenthesis says what fires, not an aside.
_FIRING = re.compile(r"\[firing(?::\d+)?\]", re.IGNORECASE)
#: Earlier in the sentence: what would happen, not what did.
_HYPOTHETICAL = re.compile(
    r"\b(?:otherwise|or\s+else|by\s+design|in\s+theory|nightmare|worst\s+case|what\s+if)\b"
    # "64k needs ring attention or we OOM": what would happen without it
    r"|\bor\s+(?:we|it|you|they)\s+(?:will\s+|would\s+|'ll\s+)?$",
    re.IGNORECASE,
)
#: A workload other than the run named right before a fault: "the eval OOMs", "inference
#: server crashed", "my notebook died".
_OTHER_WORKLOAD_BEFORE = re.compile(
    r"\b(?:evals?|evaluations?|inference|benchmarks?|notebooks?|sweeps?|ablations?|harness"
    r"|(?:eval|humaneval\S*)\s+sandbox|exporter|conversion|dashboards?|grafana|prometheus"
    r"|tensorboard|sidecar|demo"
    r"|inference\s+server|interactive\s+(?:node|session|job|shell)|wiki|confluence|notion"
    r"|website|docs?\s+site|vpn|email|coffee\s+machine|github|gitlab|slack|discord|jira)"
    r"\s+(?:\w+\s+)?$",
    re.IGNORECASE,
)
#: An RL run's own parts, as named in its reports ("rollout fleet looks wedged").
_RL_PARTS = (
    r"rollouts?|replicas?|fleet|vllm|sampler|learner|wsync|weight\s+sync|verifier|grader|sandbox"
)
_SYSTEM_SUBJECT = re.compile(
    r"\b(?:job|jobs|run|training|trainer|step|steps|ranks?|process\w*|workers?|nodes?|hosts?"
    r"|collectives?|nccl|all-?reduce|dataloader|loader|restor\w*|resum\w*|checkpoint\w*|saving"
    r"|compil\w*|initiali[sz]\w*|pods?|slices?|tpus?|gpus?|queue|pending|scheduler|cluster"
    rf"|throughput|io|upload\w*|download\w*|{_RL_PARTS})\b",
    re.IGNORECASE,
)
_NOT_THE_RUN = re.compile(
    r"\b(?:ci|pytest|unit\s+tests?|test\s+suite|integration\s+tests?|linter|lint|docs?\s+build"
    r"|jenkins|buildkite|circleci|travis|gitlab\s+runners?|merges?|merge\s+queue|pull\s+requests?"
    # someone's own workload: "my interactive node got OOM killed", "my debug job"
    r"|my\s+(?:\S+\s+)?(?:interactive|debug|dev|test|personal|local)|interactive\s+(?:node|session|job|shell)s?"
    r"|dev\s*(?:vms?|box(?:es)?|tpus?|machines?|instances?)|arms?\s+(?:\d|[a-h]\b|seed\s+\d)"
    r"|\d+\s*%\s+arm\b|\barms?\s+(?:fell|died|crashed|oom\w*)"
    r"|(?:smoke|canary|dry|test|debug|toy)[- ](?:runs?|tests?|jobs?)"
    # "tokenizer side job for longdoc v2 (not the one training uses)", "32k bench on the spares"
    r"|side\s+(?:jobs?|runs?|tasks?)|not\s+the\s+one\s+(?:the\s+)?(?:training|main|run)\s+uses"
    r"|bench(?:mark)?s?\s+on\s+(?:the\s+)?spares?|spare[- ]pool\s+(?:tests?|runs?|jobs?)"
    r"|tests?\s+on\s+(?:the\s+)?spares?|(?:\d+b\s+)?ladder\s+runs?|ladder-v?\d+"
    # an eval's suite, a student's homework, someone's small run, a prep job, a dev replica:
    # "OOM on the 64k needle suite", "my 124M run for the NLP assignment"
    rf"|(?:eval|benchmark|{BENCHMARKS})\s+suites?|homework|assignments?"
    r"|dev\s+(?:runs?|nodes?|jobs?|pool)|harness\s+(?:checks?|tests?|runs?)"
    r"|not\s+what\s+(?:the\s+)?(?:run|training|main)\s+(?:reads|uses|trains\s+on)|not\s+ours\b"
    # life outside the run: "my home NAS", "my phone", "the canteen dosa machine"
    r"|my\s+(?:home|phone|house|car)\b|wedding|family\s+drive|canteen|(?:coffee|espresso)\s+(?:machine|maker)"
    r"|course\s*work|class\s+project|my\s+\d+(?:\.\d+)?[mb]\s+(?:run|model|job|replication|repro)"
    # someone's own job of another kind: "my vit job OOM'd", "my lora job died at 24:00:00"
    r"|my\s+(?:vit|lora|sft|dpo|ppo|grpo|rlhf|fine-?tun\w*|thesis|hobby|baseline)\s+(?:jobs?|runs?)"
    # "my ASR finetune has been pending since 9am", "my thesis chapter 3 has fallen off the bus"
    r"|my\s+(?:[\w-]+\s+)?(?:fine-?tun(?:e|ing)|thesis)\b"
    r"|not\s+the\s+training\s+(?:mix|run|job|data)|prep\s+jobs?|dev\s+replicas?"
    r"|just\s+a\s+probe|nothing\s+prod(?:uction)?\s+(?:was\s+)?touched"
    # a job with another purpose: "the tokenizer job OOMed", "the export script died"
    r"|(?:tokeni[sz]\w*|preprocess\w*|download|upload|export|conversion|convert|dedup\w*"
    r"|filter\w*|scrap\w*|crawl\w*|sampling|inference|serving|reshard\w*|transcod\w*)(?:-[\w-]+)?"
    r"\s+(?:jobs?|scripts?|pods?|tasks?"
    r"|workers?|runs?)"
    r"|github\s+actions|locally|my\s+(?:laptop|machine|workstation|desktop)|notebooks?|jupyter"
    r"|colab|on\s+mac(?:os)?"
    # a batch job kept off the run: "(offline batch, training unaffected)"
    r"|offline\s+(?:batch|jobs?|runs?|pipeline)"
    # a pipeline's job array: "18 of the 212 array tasks … died with the Slurm OOM kill"
    r"|array\s+tasks?|job\s+arrays?"
    # another namespace's or an eval's pod: "in the `eval` namespace", "eval-v48-209k-longctx"
    r"|(?:eval|notebooks?|dev|staging|sandbox)\s+namespace|(?<![\w-])eval-[\w.-]*\d[\w.-]*"
    r"|stress\s+arm|arm\s+[`'\"]?[a-z][\w.]*-[\w.-]+"
    # a test of the alarms on purpose: "chaos test", "game day", "[DRILL]"; a sandbox cluster
    # kept for trials ("the 2-node sandbox", "mi job del sandbox"), not an RL run's code
    # sandbox, which is the run's own ("sandbox-svc ingress cert expired")
    r"|chaos\s+tests?|game\s*days?|drills?|(?:\d+-node|test|dev|staging)\s+sandbox"
    r"|sandbox\s+(?:cluster|nodes?)\b|job\s+del\s+sandbox|sandbox-(?:[a-z]*\d+[a-z]*-)?\d+"
    r"|probe\s+(?:jobs?|runs?)"
    r"|on\s+my\s+(?:\d+\s*x\s*)?(?:\d{4}s?|rtx\s*\d+|laptop|desktop|mac\w*)\b"
    # side work named as such: "godwit-abl-e64", "godwit-240b-staging", "gke-knot-test",
    # "knot-evals", "the 3B proxy's loss", "rung 5", a sidecar, an eval fleet, "not main"
    r"|[a-z0-9][\w.-]*?-(?:abl|ablations?|staging|stg|test|dev|proxy|probe|sweep|canary|smoke|evals?"
    r"|ruler\w*|needle\w*|mmlu\w*|gsm8k\w*|humaneval\w*|mbpp\w*)"  # not "cy-HellaSwag", a task
    r"(?:-[\w.-]+)?|(?<![\w-])abl-[\w.-]+"
    r"|proxy(?:'s)?|rungs?\s+\d+|sidecars?|eval-?\w*\s*fleet|eval-[\w-]+\s+(?:pods?|jobs?)"
    r"|not\s+(?:the\s+)?main|sibling\s+(?:runs?|jobs?)"
    # the eval as the subject: "the eval has been at the same step since yesterday"
    r"|(?<![\w-])(?:the|our|my)\s+evals?(?=\s+(?:has|have|is|are|was|were)\b)"
    # a profiler's own run: "rocprofv3 --hip-trace segfaults", "the nsys profiling job"
    r"|rocprof\w*|nsys|profil(?:er|ing)\s+(?:runs?|jobs?)|profiling"
    r"|ablat\w*|sweeps?|small[- ]scale|toy\s+(?:run|model)s?|proxy\s+(?:run|model)s?"
    r"|preprocess\w*|tokeni[sz]ation\s+jobs?|debug\s+(?:pods?|jobs?|runs?)|my\s+own"
    r"|eval(?:uation)?s?\s+(?:jobs?|harness|sandbox|workers?|tasks?|pipeline|cluster|pods?|nodes?"
    r"|pool|box)"
    # a benchmark's own job: "the HumanEval+ job for 60k died with exit 137"
    rf"|{BENCHMARKS}\S*\s+(?:jobs?|runs?)"
    # an eval of a checkpoint: "gsm8k eval on 260k OOM'd"
    r"|eval(?:uation)?s?\s+(?:on|of|for)\s+(?:the\s+)?(?:ckpt\s+|checkpoint\s+|step\s+)?\d[\d,.]*k?)\b",
    re.IGNORECASE,
)
_NOT_THE_RUN_WORDS: Final = Words(_NOT_THE_RUN)
_RECOVERED = re.compile(
    r"\b(?:resumed|resuming|recovered|auto-?(?:resumed|restarted|recovered)|back\s+up"
    r"|back\s+online|running\s+again|reporting\s+again|healthy\s+again|training\s+again"
    r"|picked\s+(?:\w+\s+){0,2}back\s+up|replacement\s+(?:node|host|attempt|slice|vm)"
    r"|rescheduled|retried\s+successfully|succeeded\s+on\s+retry|resolved|mitigated"
    r"|no\s+(?:further\s+)?action\s+(?:is\s+)?needed|fine\s+now|(?:has|have)\s+been\s+fixed"
    r"|restarted|restarting|relaunched)\b",
    re.IGNORECASE,
)
_DEGRADED = re.compile(
    r"\b(?:degraded|slower|slowdown|slowed\s+down|reduced\s+throughput|(?:single|one)\s+"
    r"(?:task|worker|rank|eval|shard|host)\s+(?:\w+\s+)?(?:failed|died|crashed|was\s+lost)"
    r"|still\s+(?:training|running|making\s+progress)|keeps?\s+training|continued\s+training"
    r"|(?:training|main\s+job|run)\s+(?:itself\s+)?(?:is\s+|was\s+)?(?:fine|unaffected|healthy)"
    r"|(?:eval|evaluation|export|conversion|inference|sampling)\s+(?:jobs?|tasks?|workers?))\b",
    re.IGNORECASE,
)
_STOPPED = re.compile(
    r"\b(?:(?:training|run|job)\s+(?:has\s+|is\s+)?(?:stopped|halted|dead|down)"
    r"|no\s+steps?\s+(?:logged|since|for)|not\s+training|zero\s+throughput)\b",
    re.IGNORECASE,
)
_SENTENCE_BOUNDARY = re.compile(r"[.!?…](?=\s)|\n")
#: A chat line's lead-in before the question it asks: "btw was the outage in march …?"
_FILLER = re.compile(
    r"^\W*(?:btw|by\s+the\s+way|hey|ok(?:ay)?|so|also|quick\s+q(?:uestion)?|q|sorry|hmm+|oh"
    r"|uh+|um+|random\s+(?:q|question)|fwiw|out\s+of\s+curiosity)\b\W*",
    re.IGNORECASE,
)
#: A failure after "when" and its subject is a condition or a habit: "when the run hangs in
#: a collective we lose hours", "whenever a host dies".
_WHEN = re.compile(r"\bwhen(?:ever)?\s+(?:\S+\s+){1,3}$", re.IGNORECASE)
_PAST = re.compile(
    r"\b(?:\w+ed|hung|lost|went|was|were|fell|froze|got|kept|took|ran|broke|threw)\b", re.I
)
#: Bare subjects that are not the run: pronouns, quantities, metrics, tools, other workloads.
_NOT_A_NAME = re.compile(
    r"(?:i|you|he|she|they|this|that|these|those|what|which|who|something|nothing|everything"
    r"|anything|one|some|all|both|each|either|neither|loss|losses|grads?|gradients?|norms?|lr"
    r"|mfu|throughput|tok|tokens|tps|speed|samples|bandwidth|bw|busbw|algbw|memory|util|utili[sz]ation|accuracy|perplexity|curve|chart|plots?|metrics?"
    r"|evals?|evaluation|benchmarks?|ci|tests?|lint|docs?|wandb|w&b|grafana|prometheus"
    r"|tensorboard|dashboard|github|discord|slack|jira|notebook|colab|jupyter|kernel|demo"
    r"|inference|sweep|ablation|arm|pr|branch|review|merge|deploy|website|site|api|vpn|email"
    r"|coffee|printer|wifi|lunch|meeting|it's|thats|here|there|yes|no|ok|okay|not|still|also"
    r"|just|then|now|so|but|and|or|if|when|because|upload|download|tokenizer|exporter|sidecar"
    r"|progress|work|plan|idea|proposal|pipeline|queue|data|dataset|mix|schedule|budget|price"
    r"|cost|market|weather|gate|gates|router|routers|expert|experts|head|heads|layer|layers"
    r"|spec|specs|config|configs|design|version|schema|format|stage|back|manifest|manifests"
    r"|vocab|readme|doc|table|list|snapshot|dedup|filter|trending|drifting|ticking|going|heading"
    r"|hf|huggingface|hub|pypi"
    r"|sloping|creeping"
    # a benchmark's score held flat: "humaneval flat-ish at 270→280"
    rf"|{BENCHMARKS}\S*|arc|math|code)$",
    re.IGNORECASE,
)
#: A part of the run, named before a fault ("the input pipeline is throwing IO errors").
_RUN_PART = re.compile(
    r"\b(?:job|run|training|trainer|train\s+loop|step|ranks?|workers?|hosts?|nodes?|pods?"
    r"|slices?|checkpoint\w*|ckpt|saves?|saving|restor\w*|resum\w*|orbax|writer|input\s+pipeline|mirror"
    r"|uploads?|uploaders?"
    r"|data\s*loaders?|loaders?|gcsfuse|mounts?|bucket|storage|lustre|nfs|gcs|s3|collectives?"
    rf"|nccl|all-?reduce|rendezvous|coordinator|rank\s*\d+|hero|{_RL_PARTS})\b",
    re.IGNORECASE,
)
_SINCE_RESTART = re.compile(rf"\b{SINCE_RESTART}\b", re.IGNORECASE)
#: Which kind a fault is, by the part its sentence names, most specific first.
_FAULT_PARTS: Final = (
    ("checkpoint-failed", re.compile(r"\b(?:checkpoint\w*|ckpt|saves?|saving|orbax)\b", re.I)),
    ("restore-failed", re.compile(r"\b(?:restor\w*|resum\w*)\b", re.I)),
    (
        "storage",
        re.compile(
            r"\b(?:gcsfuse|mounts?|bucket|storage|lustre|nfs|gcs|s3|disk|io|filesystem|mirror"
            r"|input\s+pipeline|data\s*loaders?|loaders?)\b",
            re.I,
        ),
    ),
    ("network", re.compile(r"\b(?:nccl|rendezvous|network|fabric|ib|collectives?)\b", re.I)),
)
#: Other vendors' names for the same things, read as the ones the signals know: AMD's RCCL is
#: NCCL, a HIP error is a CUDA error.
_ALIASES: Final = (
    (re.compile(r"\brccl", re.IGNORECASE), "nccl"),
    (re.compile(r"\bhip(?=\s+(?:error|out\s+of\s+memory|runtime))", re.IGNORECASE), "cuda"),
)


#: An emphasis that says nothing of its own: "NOT A DRILL: r4-n12 Xid 79" tells the Xid.
NOT_A_DRILL: Final = r"\bnot\s+a\s+(?:drill|test|exercise)\b"
_EMPHATIC = re.compile(rf"(?:\bthis\s+is\s+)?{NOT_A_DRILL}[.:!,]*", re.IGNORECASE)
#: Chat's shorthand for a timeout: "nccl to on r7".
_NCCL_TO = re.compile(
    r"\b(nccl|rccl|collective)\s+to\b(?=\s+(?:on|in|at|again)\b|\s*[,.!?]?\s*$)", re.I
)
#: A contraction typed without its apostrophe: "w&b hasnt moved", "it isnt saving".
_BARE_NOT = re.compile(r"\b(has|is|does|was|did|have|are|were|ca|could|would|should)nt\b", re.I)


#: A hedge on a verb, read as the verb: "the run may have stopped", "seems to have died",
#: "appears to be hanging". The hedge is the writer's manners; what they saw is the report.
_HEDGED = re.compile(
    r"\b(?:seems?|appears?)\s+to\s+(have|be)\b|\b(?:may|might)\s+(have|be)\b(?=\s+(?!(?:no|some|any)thing\b)\w+(?:ed|en|ing)\b)",
    re.IGNORECASE,
)


def _unhedged(m: re.Match[str]) -> str:
    return "has" if (m.group(1) or m.group(2)).lower() == "have" else "is"


@functools.lru_cache(maxsize=256)
def _canonical(text: str) -> str:
    """``text`` with aliases, emphasis and hedges said one way (a pure function of its text:
    ``find_incident`` and ``signals_heard`` rewrite the same post)."""
    for alias, name in _ALIASES:
        text = alias.sub(name, text)
    text = _NCCL_TO.sub(r"\1 timeout", _EMPHATIC.sub("", text))
    text = _HEDGED.sub(_unhedged, text)
    return _BARE_NOT.sub(r"\1n't", text)


def sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of the sentence around ``text[start:end]`` (searching at most 300 chars away)."""
    lo = max(0, start - 300)
    left = lo
    for m in _SENTENCE_BOUNDARY.finditer(text, lo, start):
        left = m.end()
    m2 = _SENTENCE_BOUNDARY.search(text, end, end + 300)
    right = m2.end() if m2 else min(len(text), end + 300)
    return left, right


def _counts(text: str, m: re.Match[str], signal: Signal, *, machine: bool = False) -> bool:
    """Whether one signal match reports a live incident, judged within its sentence.

    ``machine`` text is a pasted log: it has no asides, negations or questions, only what a
    process printed, so only what says it is not the run (a CI job, an ablation) rules it out.
    """
    start, end = m.span()
    left, right = sentence_bounds(text, start, end)
    sentence = text[left:right].strip()
    before = text[left:start]
    if machine:
        return not (_NOT_THE_RUN_WORDS.found(sentence) or _EXPECTED.search(sentence))
    clause = _CLAUSE_BREAK.split(before)[-1][-80:] if before else ""
    if _NEGATION.search(_ALARM_NAMED.sub("", clause)) or _NEAR_CUE.search(before[-40:]):
        return False
    if _WHEN.search(clause) and not _PAST.search(m.group(0)):
        return False  # "when the run hangs we lose hours"; not "when its port kept flapping"
    if _AFTER_CUE.match(text, end, min(len(text), end + 30)):
        return False
    fell = _MEASURED.match(text, end, min(len(text), end + 40))
    if fell is not None and float(fell.group(2)) < float(fell.group(1)):
        return False  # the fault measured and smaller: "stall 95 s → 11 s" (a fix's result)
    if _PAUSE_WORD.search(m.group(0)) and _BRIEF.match(text, end, min(len(text), end + 20)):
        return False  # a pause measured in seconds: "train paused 14 s" while a save committed
    if _THEN_DO.search(text, end, right) or _PROPOSED.match(sentence):
        return False  # a rule or a plan: "job exited / any Xid → page me", "Proposal: if …"
    if (
        before.count("(") > before.count(")")
        and ")" in text[end:right]
        and not (_FIRING.search(sentence) or _annotation(text, start, end))
    ):
        return False  # an aside: "(relaunched after the second NVLink fault)"; not a
        # parenthesis that runs on past its sentence ("(On another topic: our job was …")
    asked = _FILLER.sub("", sentence, count=1)
    if (
        asked.endswith("?")
        and _QUESTION_START.match(asked)
        and not (_WHY_NOW.match(asked) or _OR_IMAGINED.search(asked))
    ):
        return False
    if asked.endswith("?") and _ANSWERED_NO.match(text[right:].lstrip(" \t\n.…")):
        return False  # "billing account suspended? no, that was the sandbox project"
    if signal.kind == FAULT and not (
        _RUN_PART.search(text, left, end) or _SINCE_RESTART.search(text, left, right)
    ):
        return False  # "the download script is getting 429s": not a part of the run
    if "name" in m.groupdict() and m.group("name") and _NOT_A_NAME.match(m.group("name")):
        return False  # "loss stuck at 2.1", "grafana down", "everything down?": not the run
    if _SETTLED.search(text, end, right):
        return False  # "crashed at startup with a cuBLASLt error, fixed by #1009"
    if _NOT_THE_RUN_WORDS.found(_own_part(text, left, start, right)):
        return False
    contrast = _BUT.search(before)
    said = text[left + contrast.end() : right] if contrast else sentence
    if HISTORY.search(said) or _EXPECTED.search(said):
        return False  # not "the folder was created on schedule, but every file in it is 0 bytes"
    if _HYPOTHETICAL.search(before):
        return False  # "should be 48, otherwise a partial gang starts and then hangs"
    if _OTHER_WORKLOAD_BEFORE.search(before[-40:]):
        return False  # "the long-context eval OOMs on 32k prompts": not the run
    if signal.kind in ("hang", "crash", "outage") and _DYNAMICS_BEFORE.search(before[-40:]):
        return False
    return not (signal.needs_subject and not _SYSTEM_SUBJECT.search(sentence))


#: A question that doubts the asker, not the fault: "are saves getting slower each time or am I
#: imagining it?" is an alarm asked.
_OR_IMAGINED = re.compile(
    r"\bor\s+(?:am\s+i\s+(?:imagining|seeing|making|misreading)|is\s+it\s+(?:just\s+me|my\s+eyes))"
    r"\b[^?]*\?$",
    re.IGNORECASE,
)
#: A pause counted in seconds right after the word: "paused 14 s", "stalled 0.8 s".
#: (not a pause that grew: "stall 11 s → 95 s")
_BRIEF = re.compile(
    r"\s*~?\d+(?:\.\d+)?\s*(?:ms|s|secs?|seconds)\b(?!\s*(?:→|->|to\b))", re.IGNORECASE
)
_PAUSE_WORD = re.compile(r"paus|stall", re.IGNORECASE)
#: What to do when it happens, a runbook's arrow: "NCCL timeout → page me", "-> ignore".
_THEN_DO = re.compile(
    r"(?:→|->|=>)\s*(?:page|ping|call|wake|escalate|ignore|restart|requeue)\b", re.IGNORECASE
)
#: A sentence that proposes: "Proposal: if a run's step has not moved, post …".
_PROPOSED = re.compile(r"^\W*(?:proposal|proposed|suggestion|idea)\s*:", re.IGNORECASE)
#: A contrast before a match: what came before it ("on schedule", "last week") is not what
#: the match tells.
_BUT = re.compile(r"^.*,\s+but\s+", re.DOTALL)
#: The main run named after a colon: "sweep postponed: main NaN'd at 517,310".
_MAIN_AFTER_COLON = re.compile(r"[:;]\s*(?:the\s+)?(?:main|prod\s+run|big\s+run)\b", re.IGNORECASE)


#: A consequence told after the fault: "…, so the 259k ckpt for the eval will be late".
_CONSEQUENCE = re.compile(r"\s(?:so|which\s+means)\s+(?:the|we|i|it|our|my)\b", re.IGNORECASE)


def _own_part(text: str, left: int, start: int, right: int) -> str:
    """The part of the sentence a match is about: after a colon that names the main run
    ("sweep postponed: main NaN'd"), else the whole sentence; before a consequence it goes on
    to ("main is crawling, so the ckpt for the eval baseline will be late")."""
    # the colon before the match, the main run's name at its start or before it
    named = [
        m
        for m in _MAIN_AFTER_COLON.finditer(text, left, min(right, start + 12))
        if m.start() < start
    ]
    consequence = _CONSEQUENCE.search(text, start, right)
    end = consequence.start() if consequence else right
    return text[named[-1].start() : end] if named else text[left:end]


def _annotation(text: str, start: int, end: int) -> bool:
    """The match is the whole of its parenthesis, one token: a state stamped on what comes
    before it, "kelp-g044 dropped off (NODE_FAIL)", not an aside about something else."""
    return (
        not any(c.isspace() for c in text[start:end])
        and text[max(0, start - 2) : start].strip().endswith("(")
        and text[end : end + 2].strip().startswith(")")
    )


def fault_kind(sentence: str) -> str:
    """The incident kind of a fault by the part of the run its sentence names."""
    for kind, names in _FAULT_PARTS:
        if names.search(sentence):
            return kind
    return "crash"


def _kind(signal: Signal, text: str, m: re.Match[str]) -> str:
    if signal.kind == STALL:
        return "hang"  # a save that never finished is a hang, as its thread calls it
    if signal.kind == NOW_STATE:
        said = m.group(0).lower()
        if "nan" in said:
            return "crash"
        return "outage" if re.search(r"\b(?:dead|down|halted|aborted)\b", said) else "hang"
    if signal.kind != FAULT:
        return signal.kind
    left, right = sentence_bounds(text, m.start(), m.end())
    sentence = text[left:right]
    part = _SINCE_RESTART.sub("", sentence)  # "since the 441k resume" names no faulty part
    if part == sentence:
        return fault_kind(sentence)
    kind = fault_kind(part)
    return "outage" if kind == "crash" else kind  # "off since the 600 restart": running, wrong


def severity_of(kind: str, context: str) -> str:
    """ "critical" when training stopped, "warning" when degraded or already recovered."""
    recovered = _RECOVERED.search(context) is not None
    if kind in _CRITICAL_KINDS:
        return WARNING if recovered or _DEGRADED.search(context) else CRITICAL
    if _STOPPED.search(context) and not recovered:
        return CRITICAL
    return WARNING


def sharper_kind(kind: str, logs: str) -> str:
    """The kind a post's pasted log names when it is more specific than ``kind``: an agent's
    "Condition: UNHEALTHY" over a log line with ``oom_kill`` is an OOM."""
    if kind not in KIND_PRIORITY or not logs.strip():
        return kind
    logs = _canonical(logs[:DETECT_LIMIT])[:DETECT_LIMIT]
    lowered = logs.lower()
    named = [
        _kind(signal, logs, m)
        for signal, pattern, said in _listening(logs, lowered)
        if (m := pattern.search(said)) is not None
    ]
    # a log is machine text: "Detected 1 oom_kill event" is no negation
    return min([kind, *named], key=KIND_PRIORITY.index)


#: The run is fine and the post says so: "we're fine", "training was fine the whole time",
#: "preempted on schedule, as expected. nothing to do".
ALL_FINE = re.compile(
    r"\b(?:we(?:'re|\s+are)\s+(?:fine|ok|okay|good)|not\s+the\s+(?:training\s+)?run|no\s+impact"
    r"|(?:job|run)\s+impact\s*:\s*none"
    # a spike or a stall that ended by itself: "recovered by 51.2k", "recovered on its own"
    r"|recovered\s+(?:by\s+(?:step\s+)?[\d,.]+k?|within\s+\d+|on\s+its\s+own|by\s+itself)"
    r"|(?:training|the\s+run|the\s+job|hero|it)"
    r"(?:\s+itself)?\s+(?:was|is|stays|stayed)\s+(?:fine|ok|okay|unaffected|healthy)|nothing\s+to\s+do"
    r"|no\s+action\s+(?:is\s+)?needed(?!\s+from\s+(?:anyone|anybody)\s+else)|(?<!raise\sa\s)(?<!sound\sa\s)false\s+alarm"
    r"|not\s+an\s+incident|not\s+a\s+(?:fault|real\s+(?:problem|issue))"
    # "training is unaffected" (not "pairs within a rack are unaffected": a part, not the run)
    r"|(?:training|run|job|main|hero|it|we|jobs?)(?:\s+\w+){0,2}?\s+(?:is|was|are|were|stays?|stayed)"
    r"\s+unaffected"
    r"|no\s+action\s+(?:for\s+us|required)|recommended\s+action\s*:\s*(?:none|no\s+action|n/a)"
    # "Not urgent, nothing is failing: the bucket is at 81 %", "nothing broke, that was the …"
    r"|nothing\s+(?:is\s+|was\s+|has\s+)?(?:failing|failed|broken|broke)"
    r"|(?:main(?:\s+run)?|the\s+run|training)\s+(?:was\s+|is\s+)?not\s+affected"
    # "speed has been normal since", "recovered without intervention"
    r"|(?:speed|throughput|step\s+time|training|everything)\s+(?:has\s+been|is)\s+(?:back\s+to\s+)?normal"
    r"\s+(?:since|again)|recovered\s+(?:without|with\s+no)\s+(?:intervention|action|help|a\s+restart))\b",
    re.IGNORECASE,
)
#: A note that the run came back after something was done about a fault: "Lowered num_workers
#: and restarted from iteration 14,000", "w-4 excluded; it trains again from 52,000". Not a
#: restart someone chose ("restarted it myself to pick up the new config").
CAME_BACK = re.compile(
    r"\b(?:(?:restarted|resumed|relaunched|requeued|restarting|resuming|first\s+step)\b[^.;\n]{0,40}?"
    r"\b(?:from|at)\s+(?:the\s+)?(?:step\s+|iteration\s+|iter\s+|update\s+)?[\d,.]+k?\b"
    r"|back\s+at\s+(?:step\s+)?[\d,.]+k?\b|back\s+in\s+the\s+queue"
    r"|(?:running|training|stepping)\s+(?:again\s+)?since\s+\d"
    r"|(?:throughput|mfu|step\s+time|tokens/s)\s+(?:is\s+)?back\s+(?:at|to)\b"
    r"|(?:works|working|saving|loading|loads|saves)\s+again"
    r"|(?:trains?|training|running|stepping|steps?\s+flowing)\s+again"
    r"|(?:rolling|rolled|roll)\s+back\s+to\s+(?:step\s+)?[\d,.]+k?\b|[\d.]+\s*s\s+again"
    r"|(?:step\s+time|throughput|mfu)\s+(?:is\s+)?(?:back\s+to\s+)?[\d.,]+\s*\S*\s+again)",
    re.IGNORECASE,
)
#: ``CAME_BACK`` asked yes or no, on lowercased text where that is exact.
CAME_BACK_WORDS: Final = Words(CAME_BACK)


def signals_heard(text: str) -> bool:
    """Whether any incident signal's words are in ``text``, judged or not. Where they are, the
    rules have read the post and their judgement stands: ``bot.enrich.rules`` lets its learned
    scorer add a report only to a post the rules heard nothing in. The words are the signals',
    the states a run is held in ("dead", "down", "stuck"), a speed compared ("step time 17 s ->
    26 s") and a run come back or fine ("requeued from 44,000", "no impact")."""
    text = _canonical(text[:DETECT_LIMIT])
    lowered = text.lower()
    shapes: tuple[Words, ...] = _HEARD
    if _SPEED_SAID.search(lowered):  # the speed shapes each need a metric or a "vs"
        shapes += _SPEED_HEARD
    if any(shape.found(text, lowered) for shape in shapes):
        return True
    return any(pattern.search(said) is not None for _, pattern, said in _listening(text, lowered))


#: An alerting system's page: "[FIRING:1] TrainingStalled …", "[TRIGGERED] #4821 …", a
#: monitor's "Monitor triggered: trainer step rate = 0" or "🔴 Triggered: `a2a busbw`".
_PAGE = re.compile(
    r"\[(?:firing(?::\d+)?|triggered)\]|^[^\w\n]*(?-i:FIRING|TRIGGERED)\b"
    r"|\bmonitor\s+triggered\b|^[^\w\n]*triggered:|^[^\w\n]*\[alerting\]"
    # a paging service's line: "[PagerDuty] TRIGGERED #Q7W2K …", "[Opsgenie] P2 `RuffCkpt…`"
    r"|^[^\w\n]*\[(?:p[12]|sev-?[12])\]"
    # a status bot's line: "🔴 **CRIT** `petrel-main` checkpoint save …", "⚠️ **WARN** …", and a
    # cloud monitor's "**ALARM** `dipper-efa-errors` entered ALARM at …"
    # (not a log level's "CRITICAL: please review #123 before 5pm")
    r"|^[^\w\n]*(?-i:CRIT|CRITICAL|WARN)\b(?![^\w\n]*:)(?=[^\w\n]*\s[^\n]*\d)"
    r"|\bentered\s+(?-i:ALARM)\b"
    r"|\[(?:pagerduty|opsgenie|incident\.io|firehydrant|victorops|splunk\s+on-?call)\]\W*"
    r"(?:(?-i:TRIGGERED|FIRING|ALERT)|p[1-5]|sev-?[1-5])\b"
    # a bridge bot's line: "[Datadog] Triggered: step_rate < 0.05", "[PagerDuty] #4417 triggered:"
    r"|\[(?:pagerduty|opsgenie|datadog|grafana|new\s*relic|sentry)\]\s*(?:#\d+\s+)?triggered\b",
    re.IGNORECASE | re.MULTILINE,
)
#: A page that is not the run's emergency: low severity, a test, another service.
_PAGE_NOISE = re.compile(
    r"\b(?:test\s*alert|test\s+(?:page|notification)|please\s+(?:ignore|acknowledge)|TEST)\b"
    # an alert rule named as a test: "RedwingWatchdogTestPage", "NcclDrillAlert"
    r"|(?-i:[A-Za-z]*(?:Test|Drill)(?:Page|Alert|Notification)\w*)"
    r"|\bservice\s*[:=]\s*(?:eval|monitoring|ci)|\b(?:staging|canary)\b"
    # labelled with another cluster or environment: "cluster=eval", "env: dev", "namespace=ci"
    r"|\b(?:cluster|env|environment|namespace)\s*[:=]\s*[\"'`]?"
    r"(?:evals?|dev|test|ci|sandbox|inference|serving)\b(?![\w-]*prod)"
    r"|\b(?:node[_\s-]?)?exporter\s+down\b"
    # a temperature threshold: a warning, whatever its bridge calls it
    r"|\bgpu[_.]?temp\w*\s*>",
    re.IGNORECASE,
)
#: A page of low severity: noise, unless its name says the run's part failed or is full.
_LOW_SEVERITY = re.compile(
    r"\bseverity\s*[:=]\s*(?:info|warning|warn|low|minor|p[3-5])\b|\((?:info|warning|warn|low|minor)\)"
    r"|\burgency\s*[:=]\s*low\b|\blow\s+urgency\b|\]\W*(?:p|sev-?)[3-5]\b",
    re.IGNORECASE,
)
#: An alert named for a failure or a full store: "GrebeCheckpointUploadFailed",
#: "ScratchVolumeAlmostFull" (not "NodeExporterDown", "StepTimeHigh").
_GRAVE_ALERT = re.compile(
    r"\b(?![A-Za-z]*(?:Eval|Ablation|Sandbox|Dev|Ci|Test)[A-Z])[A-Z][A-Za-z]*(?:Failed|Failure|Full"
    r"|OutOfSpace)\b"
)


def said_planned(text: str) -> bool:
    """The text says what it tells is expected or planned ("as planned", "for the firmware
    update")."""
    return _EXPECTED.search(text) is not None


def names_another_workload(text: str) -> bool:
    """The text names a workload that is not the run: a test, a sandbox, an eval job, an
    ablation, someone's own job ("se cayó mi job del sandbox")."""
    return _NOT_THE_RUN_WORDS.found(text[:DETECT_LIMIT])


def alert_page(text: str) -> str | None:
    """ "page" when ``text`` is an alert firing for the run, "noise" when it is an alert that
    pages nobody about it (a warning, a test, another service's), None when it is no alert."""
    m = _PAGE.search(text[:DETECT_LIMIT])
    if m is None:
        return None
    line_end = text.find("\n\n", m.end())
    page = text[m.start() : line_end if line_end > 0 else len(text)]
    if _PAGE_NOISE.search(page) or _NOT_THE_RUN_WORDS.found(page):
        return "noise"
    return "noise" if _LOW_SEVERITY.search(page) and not _GRAVE_ALERT.search(page) else "page"


#: A post that pages a person: "paging @infra-oncall", "paged @mira" (not "don't page @oncall").
_PAGES_SOMEONE = re.compile(r"\b(?:paging|paged)\s+@\w", re.IGNORECASE)
#: What a person says of a report above to call it real: "real, and not the save pause this
#: time", "this one's real", "ack. real:", "yep, legit", "not a flap" (not "real quick
#: question", not "real?").
CALLED_REAL: Final = (
    r"(?:(?:ack|yep|yes|yeah|yup)\b[,.!:]?\s*)?"
    r"(?:(?:this|that)(?:\s+one)?(?:'s|\s+is)\s+|it(?:'s|\s+is)\s+)?"
    r"(?:real|legit|confirmed)\b(?!\s*\?|\s+(?:quick|fast|talk|question|data|run|test))"
    r"|not\s+a\s+(?:false\s+alarm|flap|drill)\b"
)
#: A reply that says the alert above it is real, or back: "^ real", "^ again".
_CONFIRMS_ABOVE = re.compile(rf"^\W{{0,3}}\^+\s*(?:again\b|{CALLED_REAL})", re.IGNORECASE)
#: A line a status post checks off as fine: "✅ no restart since 07-16 (#161)", "✅ the NaN from
#: yesterday: resumed fine". What it names is well; the lines around it may not be.
_CHECKED_OFF = re.compile(r"^[ \t]*(?:[-*•][ \t]*)?(?:✅|✔️?|☑️?|🟢).*$", re.MULTILINE)


_WARNED = re.compile(r"⚠|❌|🔴|🟠|🟡|❗|‼|🚨|✖|⛔")


def is_agent_post(prose: str) -> bool:
    """The post is an agent's, posted on a person's account as they do: it opens with "🤖"."""
    return prose.lstrip().startswith("\U0001f916")


def all_checked(prose: str) -> bool:
    """A status post that checks its items off, or an agent's post ("🤖 grebe-watch daily"),
    that flags nothing: no "⚠️" or "❌" anywhere."""
    marked = _CHECKED_OFF.search(prose) is not None or is_agent_post(prose)
    return marked and _WARNED.search(prose) is None


#: A standup's labels ("Yesterday", "Stuck", "Blockers: —"): headings, not states of the run.
_STANDUP_LABEL = re.compile(
    r"^\W*(?:yesterday|today|done|doing|stuck|blockers?|blocked|next)\s*[:-]?\s*(?:[-—–]|none|n/?a)?\s*$"
    r"|(?<=\s)(?-i:Stuck|Blockers?|Doing|Done|Today|Next):\s*$",
    re.IGNORECASE | re.MULTILINE,
)


@functools.lru_cache(maxsize=512)
def find_incident(prose: str, title: str = "", logs: str = "") -> tuple[str, str] | None:
    """``(kind, severity)`` of the incident reported by already-cleaned text, or None (a pure
    function of its text, so a thread's title read for each of its replies is judged once).

    ``prose`` is cleaned body text (one block per line), ``title`` an issue title, ``logs`` the
    log-looking lines, used only when there is no prose at all.
    """
    prose = _STANDUP_LABEL.sub("", _CHECKED_OFF.sub("", prose))
    text = f"{title}\n{prose}" if title else prose
    machine = not text.strip()
    if machine:
        text = logs
    text = _canonical(text[:DETECT_LIMIT])
    page = alert_page(text)
    if page == "noise":
        return None  # "[FIRING:1] GPUTempHigh (severity=warning)": not an emergency of the run
    lowered = text.lower()
    kinds: set[str] = set()
    judged = 0
    for signal, pattern, said in _listening(text, lowered):
        if signal.kind in kinds:
            continue
        for m in pattern.finditer(said):
            judged += 1
            if _counts(text, m, signal, machine=machine):
                kinds.add(_kind(signal, text, m))
                break
            if judged >= MAX_JUDGED:
                break
    slower = slowdown(text)
    if slower is not None:
        kinds.add(slower)
    if not kinds and not machine and loss_shift(text):
        kinds.add("outage")
    if not kinds and not machine and checkpoint_behind(text):
        kinds.add("checkpoint-failed")
    if not kinds and not machine:
        held = state_held(text)
        if held is not None:
            kinds.add(held)
    if not kinds and page == "page":
        kinds.add("outage")
    if not kinds and not machine and _CONFIRMS_ABOVE.match(text):
        kinds.add("outage")  # "^ real.", "^ again, different node this time"
    if not kinds and not machine and _PAGES_SOMEONE.search(text):
        kinds.add("outage")  # "⚠️ eu-west4 capacity unavailable for 3h00m … paging @oncall"
    if not kinds:
        asked = live_question(text) or emoji_alarm(text)
        if asked is None:
            return None
        kinds.add(asked)
    kind = next(k for k in KIND_PRIORITY if k in kinds)
    return kind, severity_of(kind, text)


# --------------------------------------------------------------------------------------------
# An alarm said with an emoji and the part it is about, nothing more: "🔥 main", "☠️ r3 again",
# "🚑 ckpt", "📉📉 tok/s", "🐢 data wait 41%". Not a cheer ("🔥🔥 mmlu 74.9", "🚀 450k!"), a trend
# ("📈 spike") or a side run ("☠️ arm C").

_ALARM_EMOJI = re.compile(r"☠|💀|🚑|🧯|🔥|🛑|⛔|💥|🆘|📉|🐌|🐢|❌")
_ALARMED_PARTS: Final = (
    ("checkpoint-failed", r"ckpts?|checkpoints?|saves?"),
    ("storage", r"/\S+|mirror|bucket|s3|gcs|lustre|scratch|storage|disks?|nfs"),
    ("network", r"all-?reduce|all-?gather|all-to-all|nccl|ib|network|fabric|links?"),
    (
        "outage",
        r"main|(?:the\s+)?(?:run|job|training|trainer)|tok/s|throughput|mfu|step\s+time"
        r"|data\s+wait(?:\s+\d+\s*%)?|loader",
    ),
    ("node-loss", r"[a-z]{1,8}-?\d{1,4}[a-z]?"),
)
_ALARMED = re.compile(
    r"^(?:" + "|".join(f"(?P<k{n}>{p})" for n, (_, p) in enumerate(_ALARMED_PARTS)) + r")"
    r"(?:\s+(?:again|down|dead|gone|too))?$",
    re.IGNORECASE,
)


def emoji_alarm(text: str) -> str | None:
    """The incident kind a bare alarm emoji and a part of the run name, or None."""
    said = text.strip()
    if len(said.split()) > 5 or _ALARM_EMOJI.search(said) is None:
        return None
    rest = re.sub(r"[^\w\s/%.-]+", " ", _ALARM_EMOJI.sub(" ", said)).strip(" .")
    rest = re.sub(r"\s+", " ", rest)
    m = _ALARMED.match(rest)
    if m is None or _NOT_THE_RUN_WORDS.found(rest):
        return None
    return _ALARMED_PARTS[int(str(m.lastgroup)[1:])][0]  # the part's group, "k<n>"


# --------------------------------------------------------------------------------------------
# A state held for a while: the shape under most live reports whatever their words. The run (or
# a part of it, or a bare name) as the subject, a state word within a few words after it, and in
# the same sentence a duration or a word for now: "bison's been quiet in wandb for about an hour",
# "it's been sitting on the same step for 40 minutes", "node aks-h200-0017 NotReady, … pod on it
# is Unknown", "nothing saved since 410k". Each is then judged like any signal (``_counts``).

_STATES: Final = (
    ("crash", r"nans?|garbage|crashlooping|crash-?looping"),
    ("outage", r"dead|down|gone|on\s+the\s+floor|paused|halted"),
    ("node-loss", r"notready|not\s+ready|unknown"),
    ("storage", r"read-?only"),
    (
        "checkpoint-failed",
        r"nothing\s+(?:saved|checkpointed|written\s+to\s+(?:the\s+)?(?:bucket|disk))",
    ),
    (
        "hang",
        r"(?<!first\s)quiet|silent|stuck|sitting|idle|frozen|flat|wedged|hung|hanging|stalled|pending"
        r"|not\s+(?:moving|stepping|training|logging|saving|progressing|running|doing\s+anything)"
        r"|nothing\s+(?:logged|new)",
    ),
)
_STATE_WORD = re.compile(
    r"\b(?:" + "|".join(f"(?P<k{n}>{words})" for n, (_, words) in enumerate(_STATES)) + r")\b",
    re.IGNORECASE,
)
_HELD_FOR = re.compile(
    r"\b(?:for\s+(?:about\s+|over\s+|almost\s+|nearly\s+|the\s+(?:last|past)\s+|~)?(?:\d+|an?"
    r"|half|two|three|several|hours|ages)\b|since\s+(?:~?\d|step|the\s+\w+|we\b|this|last)"
    r"|and\s+counting|all\s+(?:morning|night|day|weekend)|forever|ever\s+since"
    r"|(?:right\s+)?now\b|currently\b|at\s+the\s+moment\b|still\b|again\b|after\s+that\b)",
    re.IGNORECASE,
)
#: A run held at a step: "it's stuck at 52k", "sitting at step 88,000" (not "loss stuck at
#: 2.1", nor "frozen at 714,000": a spec's, nor "GSM8K down at step 230,000": a benchmark's).
_HELD_AT_STEP = re.compile(
    r"\b(?:stuck|sitting|hung|hanging|stalled|wedged)\s+(?:again\s+|paused\s+|idle\s+)?(?:at|on)\s+"
    r"(?:step\s+\d|\d[\d,.]*k\b|\d{1,3}(?:,\d{3})+\b)",
    re.IGNORECASE,
)
#: A state counted in evals or checkpoints is a benchmark's: "hellaswag flat for 3 evals now".
_OVER_EVALS = re.compile(
    r"\bfor\s+(?:the\s+)?(?:last\s+)?(?:\d+|two|three|four|five|several)\s+"
    r"(?:evals?|evaluations?|checkpoints?|ckpts?|eval\s+rounds?)\b",
    re.IGNORECASE,
)
_DETERMINER = re.compile(r"(?:the|a|an|my|our|your|their|his|her|its|this|that|some)$", re.I)
_RECURRING = re.compile(
    r"\b(?:per|each|every)\s+(?:\d[\d,.]*k?\s+)?(?:steps?|iterations?|batch|save|checkpoint|epoch|eval)\b",
    re.I,
)
_RUN_WORDS = re.compile(
    r"(?:run|job|training|trainer|it|ranks?|pods?|workers?|nodes?|hosts?|slices?|everything"
    r"|step|steps|checkpoints?|saves?|mounts?|hero|rollouts?|replicas|fleet|verifier|grader)$",
    re.IGNORECASE,
)


#: The run itself right before its state: "run's", "the job is", "training is".
_NOW_SUBJECT = re.compile(
    r"^\W*(?:the\s+|our\s+)?(?:run|job|training|trainer|hero(?:\s+run)?)(?:'s|\s+is|\s+seems)"
    r"(?:\s+(?:completely|totally|just))?\s*$",
    re.IGNORECASE,
)
#: A state with nothing else, as chat says it: "down again", "still dead", "wedged again!"
_BARE_STATE = re.compile(
    # "Frozen." alone closes a spec; "still frozen" is the run
    r"^\W*(?:still\s+(?:down|dead|hung|stuck|wedged|frozen|gone)|(?:down|dead|hung|stuck|wedged|gone))"
    r"(?:\s+again|\s+still)?\W*$|^\W*frozen\s+(?:again|still)\W*$",
    re.IGNORECASE,
)


def _held_subject(clause: str, *, near: int = 6) -> bool:
    """The clause before a state names the run or a part of it (in its last ``near`` words),
    or opens with a bare name (not a tool, a metric, or a common noun with its article: "the
    wiki", "the grad norm")."""
    words = [w.lower().removesuffix("'s") for w in re.findall(r"[\w'&-]+", clause)]
    if any(_RUN_WORDS.match(w) for w in words[-near:]):
        return True
    return (
        bool(words)
        and len(words) <= 4
        and not words[0].isdigit()  # "#2117 is read-only now": an issue, not the run
        # nor a metric anywhere in it: "LR: hold active, 1.7e-4 flat", "per-leaf busbw flat"
        and not any(_NOT_A_NAME.match(w) for w in words)
        and not (_DETERMINER.match(words[0]))
    )


def _said_now(sentence: str, clause: str) -> bool:
    """A state said of the run in a headline's few words, with no time needed: "run's not
    moving", "the job is wedged"."""
    words = re.findall(r"[\w'&-]+", sentence)
    return len(words) <= 6 and bool(_NOW_SUBJECT.search(clause))


def state_held(text: str) -> str | None:
    """The incident kind of a state the run has held for a while, or None."""
    text = text[:DETECT_LIMIT]
    for m in _STATE_WORD.finditer(text):
        left, right = sentence_bounds(text, m.start(), m.end())
        clause = _CLAUSE_BREAK.split(text[left : m.start()])[-1]
        if _RECURRING.search(text, left, right) or _OVER_EVALS.search(text, left, right):
            continue  # "idle for 10 s per step during checkpointing": a pattern, not a state
        sentence = text[left:right]
        if _BARE_STATE.match(sentence):
            pass  # the state alone, again or still: "down again", as chat says it
        elif not (
            _HELD_FOR.search(sentence)
            or _said_now(sentence, clause)
            or _HELD_AT_STEP.match(text, m.start())
        ):
            continue
        elif m.group(0).lower().startswith("nothing"):
            # "…, nothing saved since 410k": no subject but the sentence's run words
            if not _held_subject(sentence, near=40):
                continue
        elif not _held_subject(clause):
            continue
        kind = next(k for n, (k, _) in enumerate(_STATES) if m.group(f"k{n}"))
        if _counts(text, m, Signal(kind, (), "")):
            return kind
    return None


# --------------------------------------------------------------------------------------------
# A run that got slow and stays slow: "step time went from 1.9 s to 6.4 s at 13:52 and has stayed
# there", "MFU dropped from 47% to 31% an hour ago", "all-reduce bw is 40 GB/s instead of 180".
# A speed metric, a worse value now than before, and the present: not "up from 165 after the
# fused kernel", not a benchmark table, not "if the bucket is slow".

_TIME_METRIC = (
    r"(?:step|iteration|iter|batch|all-?reduce|all-?gather|collective)[\s-]+times?"
    r"|s/step|sec/step|seconds\s+per\s+step|s/it|(?:every|each)\s+step"
    r"|(?:data|input|dataloader|loader)\s+wait|w(?:eight\s+)?sync(?:\s+(?:p\d\d|time))?"
    r"|(?:checkpoints?|ckpts?|saves?)\s+(?:are\s+)?(?:arriving|landing|coming)"
    r"|(?:checkpoint\s+|ckpt\s+)?saves?\s+(?:took|takes|taking)"
    r"|(?:all-?reduce|all-?gather|all-to-all|a2a|reduce-?scatter)(?=\s+(?:takes?|taking)\b|$)"
    r"|steps?(?=\s+(?:take|takes|taking|are|is|got|became|have\s+gotten)\b)"
    # a monitor's line for one step: "step 233,412 took 58.3s (p50 15.4s)"
    r"|step\s+\d[\d,]*\s+took"
)
_RATE_METRIC = (
    r"(?:all-?reduce|all-?gather|all-to-all|collective|ici|dcn|network|nccl)\s+(?:bw|bandwidth|busbw)"
    r"|throughput|mfu|tflops(?:/gpu|\s+per\s+gpu)?|tok(?:ens)?/s(?:ec)?|tokens?\s+per\s+sec(?:ond)?"
    r"|samples/s|bandwidth|bw|busbw|algbw|tgs"
    # as a monitor names them: "rollout/samples_per_sec dropped 68%"
    r"|(?:tokens?|tok|samples?|sequences|seqs)_per_s(?:ec(?:ond)?)?"
    r"|(?:gpu|tpu|sm)\s+util\w*|goodput|steps?/s"
)
_NUM = r"(\d+(?:[.,]\d+)?)"
_FROM_TO = re.compile(
    rf"\b(?P<metric>{_TIME_METRIC}|{_RATE_METRIC})\b[^.!\n]{{0,40}}?"
    rf"(?:(?:from|was)\s+(?:about\s+|around\s+|roughly\s+)?~?{_NUM}[^\d\n]{{0,12}}?\s*(?:to|→|->)\s*"
    rf"(?:about\s+|around\s+|roughly\s+)?~?{_NUM}"
    rf"|~?{_NUM}[^\d\n]{{0,12}}?\s*(?:→|->|(?:down|dropped|fell)\s+to)\s*~?{_NUM}"
    rf"|(?:(?:is|are|at|now|takes?|taking)\s+)?~?{_NUM}[^\d\n]{{0,16}}?\s*instead\s+of\s+~?{_NUM})",
    re.IGNORECASE,
)
#: "9 s/step vs 4 s yesterday": now first, then what it was.
_NOW_VS_THEN = re.compile(
    # the metric said before the number too: "step time 3.1 s since this morning vs 2.6 s"
    rf"(?:(?P<metric0>{_TIME_METRIC}|{_RATE_METRIC})\s+(?:p\d\d\s+)?(?:\([^()\n]{{1,20}}\):?\s+)?"
    r"(?:is\s+|at\s+)?)?"
    rf"~?{_NUM}\s*(?:(?P<metric>{_TIME_METRIC}|{_RATE_METRIC})|(?:s|sec|ms|[kmgt]i?b/s|[kmgt]bps)\b)?"
    r"(?:\s+since\s+(?:[\d:]+|this\s+morning|yesterday|last\s+night|lunch))?"
    r",?\s+(?:vs\.?|versus|compared\s+to|against)"
    rf"\s+~?{_NUM}\s*\S*\s+(?:(?:yesterday|before|earlier|usual(?:ly)?|normal(?:ly)?|last\s+week"
    r"|the\s+(?:day|week|month)\s+before)\b"
    # a monitor's window for what it compares with: "vs 22.4s (24h p50)"
    r"|\([^()\n]{0,12}?(?:p50|median|avg|average|mean|baseline)\))"
    # "iteration time 9.8 s (baseline 6.1 s)"
    # "W&B step time says 31s since about 14:00, it was 17s all week"
    # "tokens/s for the whole job is 3,310, down from ~3,940"
    # an agent's table row: "step time p50 (last 2h) 51.8 s (7-day median 37.2 s, +39%)"
    rf"|(?P<metric2>{_TIME_METRIC}|{_RATE_METRIC})\s+(?:p\d\d\s+)?(?:\([^()\n]{{1,20}}\):?\s+)?"
    r"(?:for\s+the\s+(?:whole\s+)?(?:job|run)\s+)?"
    # "MFU since the 04:38 relaunch is 38.2%, was 41.3 before"
    r"(?:since\s+(?:the\s+)?[\w:.~-]+(?:\s+(?:re-?start|re-?launch|resume|redeploy))?\s+)?"
    rf"(?:is\s+|of\s+|says\s+)?~?{_NUM}\s*\S*"
    r"(?:\s+of\s+(?:the\s+|each\s+|every\s+)?step)?"
    r"(?:\s+since\s+(?:about\s+|around\s+)?~?[\d:]+(?:\s+[A-Za-z]{2,4})?)?"
    r"(?:\s+(?:lol|lmao|now|rn|today))?\s*[(,;]\s*(?:[^()\n;]{1,20};\s*)?(?:it\s+)?"
    r"(?:baseline|was|normally|usually|normal|expected|down\s+from"
    r"|(?:\d+-day\s+)?(?:median|p50|average|avg|mean|typical)(?:\s+over\s+(?:the\s+)?last\s+\d+)?"
    r"|\d+-day)"
    rf"\s*:?\s*~?{_NUM}"
    # "180 tok/s/gpu, normally 2.4k", "2.1M tok/s since ~13:40 (was 3.0M)"
    rf"|~?{_NUM}[kmb]?\s*(?P<metric3>{_TIME_METRIC}|{_RATE_METRIC})(?:/\w+)?"
    rf"(?:\s+since\s+(?:~?[\d:]+|the\s+\w+))?(?:\s*\([^()\n]{{1,20}}\))?"
    r"\s*[,;(]\s*(?:normally|usually|typically|baseline|was)"
    rf"\s*:?\s*~?{_NUM}"
    # "throughput panel flat at ~3.1M since lunch? it was 4.7M this morning"
    rf"|(?P<metric4>{_TIME_METRIC}|{_RATE_METRIC})\b[^.!?\n]{{0,30}}?\bat\s+~?{_NUM}\s*\S*"
    r"(?:\s+since\s+[^.!?,\n]{1,30})?[?.,;]*\s+(?:and\s+)?(?:it\s+)?was\s+(?:at\s+)?~?"
    rf"{_NUM}"
    # asked, then what it was: "MFU 32%?? it was 38 before the bump"
    rf"|(?P<metric6>{_TIME_METRIC}|{_RATE_METRIC})\s+~?{_NUM}\s*%?\s*\?+\s*(?:it\s+)?was\s+~?{_NUM}"
    # dated, then now against then: "bad since last night though, 24.8 s/step vs 21.1"
    rf"|\bsince\s+[^.!?\n]{{1,30}}?[,;]?\s+~?{_NUM}\s*(?P<metric5>{_TIME_METRIC}|{_RATE_METRIC})"
    rf"\s+(?:vs\.?|versus|against)\s+~?{_NUM}\b(?!\s*(?:%|x\b|×))",
    re.IGNORECASE,
)
#: "2.4k": a figure in thousands, read as its value.
_THOUSANDS = re.compile(r"\b(\d+(?:\.\d+)?)(k|K|M)\b")
_WORSE_WORD = re.compile(
    rf"\b(?P<metric>{_TIME_METRIC}|{_RATE_METRIC})\b[^.!?\n]{{0,30}}?\b(?:(?:dropped|fell|tanked|sagg\w+"
    r"|collapsed|plummeted|cratered)|(?:halved|cut\s+in\s+half|dropped\s+by\s+half)"
    r"|(?:doubled|tripled|quadrupled|\d+(?:\.\d+)?\s*(?:x|×|times)\s+(?:slower|longer|higher|what))"
    r"|\s(?:×|x)\s?[2-9](?:\.\d)?(?=\s+(?:since|now|today|overnight)\b)"
    r"|(?:is|are)\s+(?:only\s+)?(?:about\s+|roughly\s+|~)?(?:a\s+(?:third|quarter|fraction)|half)\s+of"
    r"|(?:is|are)\s+(?:only\s+)?(?:about\s+|roughly\s+|~)?(?:a\s+(?:third|quarter)|half)\s+what\s+it\s+was"
    r"|(?:down|dropped)\s+(?:by\s+)?~?(?:a\s+third|a\s+quarter|half|(?:1[5-9]|[2-9]\d)\s*%)"
    r"|(?:went|dropped|fell)\s+to\s+(?:0|zero)\b|(?:is|are|at)\s+(?:0|zero)\b(?!\.\d)"
    r"|(?:is\s+)?(?:like\s+|only\s+|~)?[1-6]?\d\s*%\s+of\s+(?:the\s+)?(?:\w+\s+)?(?:normal|usual|baseline"
    r"|expected|what)"
    # "throughput down to 27k tok/s since ~08:30"
    r"|(?:is\s+)?(?:down|dropped|fell)\s+to\s+~?\d"
    # a slope told with its start: "tok/s has been drifting down since tuesday"
    r"|(?:drifting|sliding|creeping|slipping)\s+down\s+since)",
    re.IGNORECASE,
)
#: A step a tenth longer or more, dated to a time of day: "step time +18% since 09:30".
_TIME_PLUS = re.compile(
    rf"\b(?P<metric>{_TIME_METRIC})\s+(?:is\s+|went\s+)?(?:up\s+(?:by\s+)?~?|\+\s?)(?:1\d|[2-9]\d|\d{{3}})"
    r"(?:\.\d+)?\s*%\s+since\s+(?:around\s+|about\s+)?~?\s*\d{1,2}:\d\d\b",
    re.IGNORECASE,
)
#: A step time said to climb, which a rate's words cannot say: "step time creeping up every
#: day since the 8k switch?".
_TIME_CREEP = re.compile(
    rf"\b(?P<metric>{_TIME_METRIC})\b[^.!?\n]{{0,20}}?\b(?:creeping|crept|drifting|drifted|inching"
    r"|inched|ticking|ticked|climbing|climbed|crawling|crawled)\s+up\b",
    re.IGNORECASE,
)
_STAYS = re.compile(
    r"\b(?:since|overnight|(?:has|have)\s+(?:stayed|been)|stays?|still|now|right\s+now|ago|just"
    r"|yesterday|(?:is|are)\s+(?:crawling|slow)|(?:over|in)\s+the\s+(?:last|past)|normally"
    r"|usually|typically|(?:at|around|from)\s+~?\d{1,2}:\d\d"
    r"|for\s+the\s+last|this\s+morning|tonight|hasn't\s+(?:come\s+back|recovered)"
    r"|after\s+(?:the|last\s+night's|this\s+morning's|\w+day(?:\s+night)?'s)\s+(?:re)?start"
    r"|(?:not|never)\s+(?:come|came|coming)\s+back"
    r"|in\s+(?:the\s+last\s+)?(?:\d+|two|five|ten|fifteen|twenty|thirty|a\s+few)\s+min(?:ute)?s"
    r"|and\s+(?:still\s+)?(?:dropping|falling|climbing|rising)"
    # a cause going on as it is told: "GPUs at 84-88C and throttling, step time 54.6 → 83s"
    r"|(?:and|are|is)\s+throttling)\b"
    # a monitor's own span: "step time 4.0s → 9.6s (last 50 steps)"
    r"|\(\s*(?:over\s+the\s+)?last\s+\d+\s+steps\s*\)"
    # an alert's window: "samples_per_sec dropped 68% (15 min window)"
    r"|\(\s*\d+\s*-?\s*(?:min(?:ute)?s?|s|h)\s+window\s*\)",
    re.IGNORECASE,
)
_IMPROVED = re.compile(
    r"\b(?:up\s+from|faster|improv\w*|speed-?up|gain|after\s+(?:the|we|i)\b|with\s+the\s+(?:new|fused))",
    re.IGNORECASE,
)
_FABRIC = re.compile(
    r"\b(?:fabric|network|ib|infiniband|ici|dcn|nccl|all-?reduce|all-?gather|interconnect"
    r"|links?|ports?|retransmits?|nics?|bandwidth|bw|vpc|firewall)\b",
    re.IGNORECASE,
)
_IO = re.compile(
    r"\b(?:storage|lustre|nfs|gcs|s3|bucket|disk|io|reads?|data\s*loaders?|loaders?|input)\b",
    re.IGNORECASE,
)


#: How much worse a speed must be to be a report by its numbers alone (a step a quarter
#: longer, a rate 15 % lower), and when the writer says it worries them ("something in the
#: fabric?", "anyone else seeing slower jobs?"): then a few per cent beyond a day's noise.
PLAIN_MARGIN: Final = 0.25
WORRIED_MARGIN: Final = 0.04
#: And when the writer dates its start to a time of day ("since ~09:00", "since last night"):
#: a day's noise has no start, a level that moved does.
ONSET_MARGIN: Final = 0.10
_ONSET = re.compile(
    r"\bsince\s+(?:~\s*|about\s+|around\s+|roughly\s+|the\s+)?(?:\d{1,2}:\d\d(?:\s*(?:utc|z))?"
    r"|\d{1,2}\s*(?:am|pm)|last\s+night|this\s+morning|lunch|midnight|noon)\b",
    re.IGNORECASE,
)
#: The writer's worry about a speed: a cause asked for, others asked whether they see it.
_WORRIED = re.compile(
    r"\bsomething(?:'s|\s+is|\s+seems)?\s+(?:off|wrong|weird|fishy)\b"
    r"|\banyone\s+(?:else\s+)?(?:\w+\s+){0,3}?(?:see|seeing|notice|noticed|touch|touched"
    r"|change|changed)\b"
    r"|\bis\s+(?:it\s+)?just\s+me\b|\bwhat\s+changed\b|^\W*(?:uh+|hm+|huh)\b"
    r"|\b(?:did|has)\s+(?:someone|anyone|somebody)\s+(?:change|changed|touch|touched|push|pushed)\b"
    r"|\bsomething\s+(?:in|with)\s+the\s+(?:fabric|network|storage|switch|filesystem)\b"
    # a cause asked for in a word or two: "any idea?", "network?", "is pip slower to you?"
    r"|\bany\s+ideas?\b|\b(?:network|fabric|storage|lustre|nccl|ib|io)\s*\?"
    r"|\bslower\s+to\s+you\b",
    re.IGNORECASE,
)


def _worse(metric: str, before: float, now: float, margin: float = PLAIN_MARGIN) -> bool:
    """Worse by more than ``margin``: a step that much longer, a rate 0.6 of it lower."""
    if re.search(_TIME_METRIC, metric, re.IGNORECASE):
        return now >= (1 + margin) * before
    return now <= (1 - 0.6 * margin) * before


def _slower(m: re.Match[str], margin: float = PLAIN_MARGIN, *, now_first: bool = False) -> bool:
    """Whether the match says a speed got worse by more than ``margin`` (``now_first``: the
    figure now is said before the one it is held against, as "now vs then" says it)."""
    values = [g for g in m.groups() if g is not None and g[0].isdigit()]
    if len(values) != 2:
        return True  # a word said it: "dropped", "halved", "3x slower"
    first, second = (float(v.replace(",", "")) for v in values)
    said = m.group(0).lower()
    now_first = now_first or "instead" in said
    before, now = (second, first) if now_first else (first, second)
    named = m.groupdict()
    metric = (
        named.get("metric0")
        or named.get("metric")
        or named.get("metric2")
        or named.get("metric3")
        or named.get("metric4")
        or named.get("metric5")
        or named.get("metric6")
    )
    metric = metric or said
    return before > 0 and _worse(metric, before, now, margin)


#: "2m50s", "20 ms", "9 min", "2 h 05": durations read as seconds, so "from 20 ms to 1.9 s"
#: compares like with like.
_DURATION = re.compile(
    r"\b(?P<min>\d+)\s*m\s*(?P<sec>\d+)\s*s\b"
    r"|\b(?P<ms>\d+(?:\.\d+)?)\s*ms\b"
    r"|\b(?P<mins>\d+(?:\.\d+)?)\s*min(?:utes?|s)?\b"
    r"|\b(?P<hours>\d+(?:\.\d+)?)\s*h(?:rs?|ours?)?(?:\s*(?P<hmin>\d{1,2})(?:\s*m(?:in)?)?)?\b"
)


def _in_seconds(m: re.Match[str]) -> str:
    if m.group("min"):
        return f"{int(m.group('min')) * 60 + int(m.group('sec'))}s"
    if m.group("ms"):
        return f"{float(m.group('ms')) / 1000:g} s"
    if m.group("mins"):
        return f"{float(m.group('mins')) * 60:g} s"
    return f"{float(m.group('hours')) * 3600 + int(m.group('hmin') or 0) * 60:g} s"


def _in_units(m: re.Match[str]) -> str:
    return f"{float(m.group(1)) * (1e6 if m.group(2) == 'M' else 1e3):.0f}"


#: A rate said as a share of itself, now: "tok/s is at ~30% since 13:00" (not MFU, which is a
#: share by nature).
_RATE_AT_SHARE = re.compile(
    r"\b(?:tok(?:ens)?/s(?:ec)?|throughput|tokens?\s+per\s+sec(?:ond)?|samples/s|steps?/s|goodput"
    r"|tgs)\s+(?:is|are|'s)\s+(?:at\s+)?(?:like\s+|only\s+|about\s+|around\s+|~)?[1-6]?\d\s*%"
    r"(?!\s+(?:higher|lower|up|down|better|worse|faster|slower|more|less|above|below|over|under))"
    # the run at a share of its speed: "turnstone is at ~40% speed"
    r"|\b(?:is|'s|are)\s+(?:running\s+)?at\s+(?:like\s+|only\s+|about\s+|around\s+|~)?[1-6]?\d\s*%"
    r"\s+(?:speed|throughput|of\s+(?:normal|usual|its\s+usual|full)(?:\s+speed)?)\b",
    re.IGNORECASE,
)


#: What every speed comparison names: a metric, a "vs", or a share of a speed. Text without
#: any is not read further (the comparisons are the rules' costliest patterns). Its words are
#: all lower case and it reads lowercased text: folding case as it matches costs several times
#: as much.
#: A speed metric's name, never inside a word.
_METRIC = rf"(?<![^\W\d_])(?:{_TIME_METRIC}|{_RATE_METRIC})"
_SPEED_SAID = re.compile(
    # never inside a word: the engine then tries the metrics' many words only where one starts
    rf"{_METRIC}|\b(?:vs|versus|compared\s+to|against)\b"
    r"|%\s+(?:speed|throughput|of)\b"
)


_METRIC_NAME = re.compile(_METRIC, re.IGNORECASE)


def _nearest_metric(pattern: re.Pattern[str], text: str, m: re.Match[str]) -> re.Match[str]:
    """``m``, or where the figures it reads belong to a metric named after the one it starts
    at, the match from that one: in "egress 402k tok/s · step time 4.0s → 9.6s" the figures
    are the step time's, not the rate's."""
    if "metric" not in pattern.groupindex or m.group("metric") is None:
        return m
    for later in reversed(list(_METRIC_NAME.finditer(text, m.end("metric"), m.end()))):
        again = pattern.match(text, later.start())
        if again is not None:
            return again  # the last metric named before the figures that still reads them
    return m


def _lead_in(text: str, left: int) -> str:
    """The line before ``text[left:]`` when it introduces what follows (ends with a colon)."""
    before = text[:left].rstrip(" \t\n")
    line = before.rsplit("\n", 1)[-1]
    return line if line.endswith(":") else ""


def slowdown(text: str) -> str | None:
    """``network``, ``storage`` or ``outage`` when a sentence says the run is slower now than it
    was (a speed metric worse, in the present), else None."""
    if _SPEED_SAID.search(text.lower()) is None:
        return None
    text = _DURATION.sub(_in_seconds, _THOUSANDS.sub(_in_units, text))
    head = text[:DETECT_LIMIT]
    worried = _WORRIED.search(head) is not None
    low = head.lower()
    for shape in _SPEED_SHAPES:
        pattern = shape.pattern
        for found in shape.finditer(head, low):
            m = _nearest_metric(shape.pattern, head, found)
            left, right = sentence_bounds(text, m.start(), m.end())
            sentence = text[left:right]
            if sentence.rstrip().endswith("?") and not _QUESTION_START.match(sentence):
                # an alarm, not a question: "tok/s halved?? 1.9M → 0.95M since 12:40"
                line_end = text.find("\n", right)
                sentence = text[left : line_end if line_end >= 0 else len(text)]
            clause = _CLAUSE_BREAK.split(text[left : m.start()])[-1]
            doubt = _WHY_NOW.match(clause.lstrip())
            if doubt is not None:  # "is it expected that step time went …?": asked, not denied
                clause = clause.lstrip()[doubt.end() :]
            # said alone, as chat says it now: "tok/s halved"
            alone = pattern is _WORSE_WORD and len(text.split()) <= 6 and "\n" not in text.strip()
            # or a sentence of its own that is only the change: "tok/s 835k → 455k."
            alone = alone or (pattern is _FROM_TO and len(sentence.split()) <= 5)
            # now against then says it is now: "data wait 38% of step (was 2%)", "is taking
            # ~9 min per update instead of ~40 s"
            against = pattern is _NOW_VS_THEN or "instead" in m.group(0).lower()
            # a worry is about now: "is it just me or is main slower? step time 34 s → 47 s"
            # or under a line that dates what follows: "since the 03:10 rollover:"
            onset = bool(_ONSET.search(sentence) or _ONSET.search(_lead_in(text, left)))
            now = alone or against or worried or onset or _STAYS.search(sentence)
            then = pattern is _NOW_VS_THEN
            slower = (
                _slower(m, now_first=then)
                or (worried and _slower(m, WORRIED_MARGIN, now_first=then))
                or (onset and _slower(m, ONSET_MARGIN, now_first=then))
            )
            if not slower or not now or _IMPROVED.search(sentence):
                continue
            if against and pattern is _NOW_VS_THEN:
                # "vs 7.1 s last week" is the baseline it is compared to, not when it happened
                sentence = sentence.replace(text[m.start() : m.end()], " ")
            if not _denied_or_not_now(clause, sentence):
                return _slow_kind(text)
    for m in _RATE_AT_SHARE.finditer(text[:DETECT_LIMIT]):
        left, right = sentence_bounds(text, m.start(), m.end())
        sentence = text[left:right]
        if not _denied_or_not_now(sentence, sentence):
            return _slow_kind(text)
    return None


#: The comparisons, read on lowercased text where that is exact.
_SPEED_SHAPES: Final = tuple(
    Words(p) for p in (_FROM_TO, _WORSE_WORD, _TIME_CREEP, _NOW_VS_THEN, _TIME_PLUS)
)
#: What ``signals_heard`` listens for besides the signals (the speed shapes only where a speed
#: is said).
_HEARD: Final = (Words(_STATE_WORD), CAME_BACK_WORDS, Words(ALL_FINE))
_SPEED_HEARD: Final = tuple(w for w in _SPEED_SHAPES if w.pattern not in (_TIME_CREEP, _TIME_PLUS))


#: A speed said as a change in per cent: "step time +4% since 09:30", "tok/s down 3%".
_PER_CENT_CHANGE = re.compile(
    rf"\b(?:{_TIME_METRIC}|{_RATE_METRIC})\b[^.!?\n]{{0,20}}?(?:\+|\bup\s+|\bdown\s+|-)\s?~?"
    r"(\d+(?:\.\d+)?)\s*%",
    re.IGNORECASE,
)
#: Figures this close (a share of the larger) say nothing changed: a speed within 6 % (MFU is
#: said in whole per cents, so "38 → 36" is two steps of rounding), the loss within 1 %.
SAME_SPEED: Final = 0.06
SAME_LOSS: Final = 0.01


def _close(values: list[str], margin: float) -> bool:
    first, second = (float(v.replace(",", "")) for v in values)
    return abs(first - second) <= margin * max(first, second)


def figures_unchanged(text: str) -> bool:
    """The text compares figures of a speed or of the loss, and every comparison says they
    hardly moved ("MFU since the relaunch is 41.2%, was 41.3 before", "loss is 2.05 after the
    restart, it was 2.04", "step time +4% since 09:30"): numbers the rules read, saying nothing
    changed."""
    found = _figure_comparisons(text)
    return bool(found) and all(found)


def _figure_comparisons(text: str) -> list[bool]:
    """For each comparison of a speed's or the loss's figures in the text, whether they hardly
    moved."""
    head = text[:DETECT_LIMIT]
    found: list[bool] = []
    for m in _LOSS_RISE.finditer(head):
        values = [g for g in m.groups() if g]
        found.append(len(values) == 2 and _close(values, SAME_LOSS))
    if _SPEED_SAID.search(head.lower()) is not None:
        head = _DURATION.sub(_in_seconds, _THOUSANDS.sub(_in_units, head))
        low = head.lower()
        found.extend(float(m.group(1)) < 100 * SAME_SPEED for m in _PER_CENT_CHANGE.finditer(head))
        for shape in _SPEED_SHAPES:
            for m in shape.finditer(head, low):
                values = [g for g in m.groups() if g and g[0].isdigit()]
                found.append(len(values) == 2 and _close(values, SAME_SPEED))
    return found


def _denied_or_not_now(clause: str, sentence: str) -> bool:
    """A speed said not to have changed, another workload's, or one of the past."""
    return bool(
        _NEGATION.search(clause) or _NOT_THE_RUN_WORDS.found(sentence) or HISTORY.search(sentence)
    )


def _slow_kind(text: str) -> str:
    if _FABRIC.search(text):
        return "network"
    return "storage" if _IO.search(text) else "outage"


# --------------------------------------------------------------------------------------------
# The newest checkpoint far behind the run: "newest thing in ckpt/ is step_150500 and W&B says
# 154.3k", "the newest directory is step_232000, and the log says the run is at 234,6xx". Not
# "the newest checkpoint is step_40000 and the run is at 40,1xx" (a save is due).

_BEHIND = re.compile(
    r"\b(?:newest|latest)\s+(?:thing|checkpoint|ckpt|dir(?:ectory)?|save)\b[^.\n]{0,80}?"
    r"\bstep[_ ]?(?P<saved>\d[\d,]*)\b[^.\n]{0,30}?\b(?:and|but|while)\b[^.\n]{0,30}?"
    r"\b(?:w&b|wandb|the\s+log|the\s+run|main|training|the\s+job)\b[^.\n]{0,30}?"
    r"(?:says|shows|is\s+at|reports)\s+(?:the\s+run\s+is\s+at\s+|step\s+)?(?:about\s+|~\s*)?"
    r"(?P<at>\d[\d,.]*)(?P<k>k|xx|x{3})?",
    re.IGNORECASE,
)
#: How far behind the run its newest checkpoint must be, as a share of the step.
BEHIND_SHARE: Final = 0.01


def checkpoint_behind(text: str) -> bool:
    """The text says the newest checkpoint is well behind the step the run is at."""
    for m in _BEHIND.finditer(text[:DETECT_LIMIT]):
        saved = float(m.group("saved").replace(",", ""))
        at_text = m.group("at").replace(",", "")
        suffix = (m.group("k") or "").lower()
        try:
            at = float(at_text) * 1000 if suffix == "k" else float(at_text)
        except ValueError:
            continue
        if suffix.startswith("x"):
            at *= 10 ** len(suffix)  # "234,6xx": the digits known, the rest unknown
        if saved > 0 and at - saved >= BEHIND_SHARE * saved:
            return True
    return False


# --------------------------------------------------------------------------------------------
# A loss that moved and stayed: "loss went 1.768 → 2.11 at 357,8xx and it's 2.09 four hundred
# steps later", "held-out code loss +0.14 since the Apr 6 restart". A spike comes back within a
# few hundred steps; a shift that stays is a fault of the run (a bad shard, a bad restore). A
# level, a rise, and something that says it stayed; not a spike that recovered or an expected
# change.

#: After the run's own restart: a level that moved there moved with it, not a spike.
_AFTER_RESTART = (
    r"(?:after|since)\s+(?:(?:the|yesterday's|today's|this\s+morning's|last\s+night's)\s+"
    r"(?:[\w:.,-]+\s+){0,2}?)?(?:re-?start|re-?launch|resume|redeploy)\w*(?:\s+at\s+[\d:.,k]+)?"
)
_LOSS_RISE = re.compile(
    rf"\bloss(?:es)?\b[^.!\n]{{0,30}}?(?:"
    rf"(?:jumped|went|rose|climbed|spiked|shot)\s+(?:up\s+)?(?:from\s+)?~?{_NUM}\s*(?:→|->|to)\s*~?{_NUM}"
    # "after restart loss 1.826 → 2.071 at 441,0xx and not come down": the two levels alone
    rf"|~?{_NUM}\s*(?:→|->)\s*~?{_NUM}"
    rf"|(?:is\s+|went\s+|jumped\s+|rose\s+)?(?:up\s+)?(?:by\s+)?\+\s?~?{_NUM}"
    rf"|(?:jumped|is\s+up|went\s+up|rose)\s+(?:by\s+)?~?{_NUM}(?![\d,.]*k)"
    rf"|(?:at\s+\S+\s+)?is\s+~?{_NUM}[,;]?\s+(?:at\s+\S+\s+)?it\s+was\s+~?{_NUM}"
    # "4.7 since the 15:50 redeploy, was 1.98 right before": now, then what it was
    rf"|(?:is\s+)?~?{_NUM}\s+since\b[^,;.\n]{{0,40}}?[,;]\s*(?:it\s+)?was\s+~?{_NUM}"
    # "is 6.9 after the relaunch at 14:00 😬 it was 2.21 before"
    # "supposed to be ~2.31 after the restart? it was 2.05 before"
    rf"|(?:is|be)\s+~?{_NUM}\s+{_AFTER_RESTART}[^.!\n]{{0,25}}?\bit\s+was\s+~?{_NUM})",
    re.IGNORECASE,
)
_STAYED = re.compile(
    rf"\b(?:since|still|later|stay(?:s|ed)?|hasn't\s+(?:come\s+back|recovered|moved)|{_AFTER_RESTART}"
    r"|not\s+(?:recovering|coming\s+back|one\s+of\s+the\s+spikes)|isn't\s+one\s+of\s+the\s+spikes"
    r"|(?:not|hasn't|has\s+not|didn't|did\s+not)\s+(?:come|coming|came|going|gone)\s+(?:back\s+)?down"
    r"|(?:at|from)\s+the\s+(?:last|latest)\s+checkpoint)\b",
    re.IGNORECASE,
)
_SETTLES = re.compile(
    r"\b(?:recover\w*|came\s+back|coming\s+back\s+down|back\s+(?:down\s+)?(?:to|on)|settled"
    r"|expected|as\s+usual|normal\s+for|warm-?up|ablation|arm|sweep|proxy|decay\s+start\w*)\b",
    re.IGNORECASE,
)


def loss_shift(text: str) -> bool:
    """A sentence says a loss rose and stayed there (not a spike that came back, not an
    expected change)."""
    for m in _LOSS_RISE.finditer(text[:DETECT_LIMIT]):
        left, right = sentence_bounds(text, m.start(), m.end())
        sentence = text[left:right]
        values = [float(v.replace(",", "")) for v in m.groups() if v is not None]
        if len(values) == 2 and re.search(r"\bwas\s+~?\d", m.group(0), re.IGNORECASE):
            values.reverse()  # "is 2.13, at 178k it was 1.83": now first
        if len(values) == 2 and values[1] <= values[0] * 1.03:
            continue
        if len(values) == 1 and values[0] < 0.05:
            continue  # "+0.01": noise
        if not _STAYED.search(sentence) or _SETTLES.search(text):
            continue
        if _NEGATION.search(text[left : m.start()]) or HISTORY.search(sentence):
            continue
        return True
    return False


#: How chat asks whether the run is alive, which is how a failure is often first reported: "is
#: it hung?", "job died?" (no question word, a signal already), "anyone else seeing the run
#: stalled?", "is hero down or is it just my wandb?". Present tense about the run itself: not
#: "did the job crash overnight?", "is the eval job stuck?", "is loss down?".
_LIVE_QUESTION = re.compile(
    r"^\W*(?:is\s+it\s+(?:just\s+)?me\s+or\s+)?(?:(?:is|are)\s+(?P<subject>it|this|that|everything|things|we|the\s+(?:main\s+|hero\s+)?(?:run|job|training"
    r"|trainer|cluster)|[a-z][\w-]*)"
    r"|(?:anyone|anybody|someone)\s+else\s+(?:seeing|see|getting|noticing|notice)\s+"
    r"(?P<seen>it|the\s+(?:run|job|training)|[a-z][\w-]*)"
    r"|(?:did|has)\s+(?P<did>it|the\s+(?:run|job|training)|[a-z][\w-]*)\s+just"
    # "did the run die", "has it crashed": asked now, with no time that would make it history
    r"|(?:did|has)\s+(?P<now>it|the\s+(?:run|job|training|trainer))(?=\s+(?:die|crash|hang"
    r"|oom|died|crashed|hung|stopped|stop)\b(?![^?.!\n]*\b(?:overnight|yesterday|last|earlier"
    r"|before|ever|at\s+\d|on\s+\w+day)\b))"
    # a fragment: "basalt stuck?", "wren dead again??", "job hung?"
    r"|(?P<frag>(?:the\s+)?[a-z][\w-]*(?:\s+[a-z][\w-]*)?)(?=\s+(?:still\s+|also\s+|got\s+|was\s+)?(?:hung"
    r"|stuck|stalled|frozen|wedged|down|dead|crashed|died|killed|preempted|evicted)(?:\s+again)?\s*\?))"
    r"(?:\s+got|\s+was)?"
    r"\s+(?:still\s+|just\s+|also\s+)?(?P<state>hung|hanging|stuck|stalled|frozen|wedged"
    r"|deadlocked|down|dead|crash|crashed|crashing|die|died|dying|hang|oom\w*|stopped|stop"
    r"|crawling|so\s+slow|killed|preempted|evicted|paused|halted)\b"
    # "is it down to the tokenizer?", "are we stuck with bf16?": not the run's state
    r"(?!\s+(?:to|by|from|with|simple|\d))",
    re.IGNORECASE,
)
_NOT_A_RUN_SUBJECT = re.compile(
    r"^(?:wandb|w&b|github|discord|slack|ci|jira|colab|notebook|grafana|dashboard|prometheus|hf"
    r"|huggingface|hub|pypi)$",
    re.IGNORECASE,
)
_QUESTION_KINDS: Final = {
    "down": "outage",
    "paused": "outage",
    "halted": "outage",
    "dead": "outage",
    "crawling": "outage",
    "so slow": "outage",
}
_QUESTION_WORDS = 15
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n")


#: The asker's own answer right after the question: "is the run down? nope, just wandb".
_ANSWERED_NO = re.compile(
    # (not Spanish "no" before its verb: "¿…PREEMPTED? no teníamos nada agendado")
    r"^\W*(?:no(?:pe|t\s+really)?(?!\s+(?:hay|había|hubo|ten[eí]\w*|est[aá]\w*|sé|sabemos)\b)|nah|never\s*mind|nvm|false\s+alarm|all\s+good"
    r"|(?:it's|its)\s+(?:fine|ok|okay))\b",
    re.IGNORECASE,
)


def live_question(text: str) -> str | None:
    """The incident kind a short question about the run's state asks about, or None."""
    if "?" not in text and len(text.split()) > _QUESTION_WORDS:
        return None
    sentences = SENTENCE_SPLIT.split(text)
    for n, sentence in enumerate(sentences):
        sentence = _FILLER.sub("", sentence.strip(), count=1)  # "hey is sparrow down?"
        if n + 1 < len(sentences) and _ANSWERED_NO.match(sentences[n + 1]):
            continue
        # a short chat line asks without its question mark: "did the run die"
        asked = sentence.endswith("?") or len(text.split()) <= _QUESTION_WORDS
        if not asked or len(sentence.split()) > _QUESTION_WORDS:
            continue
        m = _LIVE_QUESTION.match(sentence)
        if m is None or (m.group("state").lower() in ("stopped", "stop") and not m.group("now")):
            continue
        named = ("subject", "seen", "did", "now", "frag")
        subject = next((m.group(g) for g in named if m.group(g)), "").split()[-1]
        asked_of = sentence[: m.start("state")]
        if _NOT_A_RUN_SUBJECT.match(subject) or _DYNAMICS_BEFORE.search(asked_of):
            continue  # "is wandb down?", "is loss stuck?"
        if _NOT_THE_RUN_WORDS.found(sentence) or HISTORY.search(sentence):
            continue
        state = m.group("state").lower()
        if state.startswith("oom"):
            return "oom"
        if state in ("crash", "crashed", "crashing", "die", "died", "dying", "stop", "stopped"):
            return "crash"
        if state in ("killed", "evicted"):
            return "crash"
        if state == "preempted":
            return "preemption"
        return _QUESTION_KINDS.get(state, "hang")
    return None
