"""Whole posts and threads about incidents (issue 40): where incident words do not report an
incident of the run (a crash in an ablation, a change to make, a retrospective, a post that says
the run is fine or back), follow-ups in an incident's own thread, and posts about one specific
incident without reporting it live (its diagnosis, its fix, a recovery note, its post-mortem).

``bot.enrich.incidents`` finds and judges the signals sentence by sentence; this module judges
what a post as a whole is about, over the same cleaned text. ``bot.enrich.rules`` combines them.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from bot.enrich.context import ThreadContext
from bot.enrich.incidents import (
    ALL_FINE,
    BENCHMARKS,
    CALLED_REAL,
    CAME_BACK_WORDS,
    DETECT_LIMIT,
    HISTORY,
    MONTHS,
    NOT_A_DRILL,
    SENTENCE_SPLIT,
    find_incident,
    is_agent_post,
    names_another_workload,
    said_planned,
    sentence_bounds,
    sharper_kind,
    signals_heard,
)
from bot.enrich.lowered import Words

# --------------------------------------------------------------------------------------------
# Where incident words do not report an incident of the run

#: Threads about small experiments: a crash there is a result, not an outage of the run. Not
#: "experiment" alone: a big run's own tracking issue is often labelled that way.
_EXPERIMENT = re.compile(
    r"\b(?:abl(?:at\w*)?|sweeps?|small[- ]scale|toy|proxy(?:\s+(?:runs?|models?))?"
    r"|(?:scaling\s+)?ladder|scaling\s+laws?|hparam\s+search|hyper-?parameter\s+search)\b",
    re.IGNORECASE,
)
#: A week named by its dates: "week 09-22 → 09-28", "week of Sep 22 – 28" (its digest).
_WEEK_BY_DATES = (
    rf"week\s+(?:of\s+)?(?:\d{{1,2}}[-/.]\d{{1,2}}|(?:{MONTHS})\.?\s+\d{{1,2}})"
    r"\s*(?:→|->|–|—|-|to)\s*\d+"
    # "merlin-watch · weekly · 2032-07-06 → 07-12", "Week 26 recap:"
    r"|weekly\W{1,6}\d{4}-\d{2}-\d{2}\s*(?:→|->|–|—|to)\s*\d+"
    r"|week\s+\d{1,2}\s+(?:recap|summary|review|notes|digest)"
)
#: Threads and posts that look back: post-mortems, retrospectives, write-ups.
_RETROSPECTIVE = re.compile(
    r"\b(?:post-?mortems?|retrospectives?|retro|lessons\s+learned|root[- ]cause\s+analysis"
    r"|incident\s+(?:review|write-?up|summary)|write-?up\s+of|what\s+went\s+wrong"
    r"|weekly\s+(?:run\s+|status\s+)?(?:summary|recap|report|review|notes|digest|roundup|progress)"
    r"|recap\s+of"
    rf"|(?:week|month)\s+in\s+review|{_WEEK_BY_DATES}"
    # a period's review, and a tally over one: "October reliability review", "six
    # interruptions in October", "three outages this quarter"
    rf"|(?:reliability|uptime|availability|monthly|quarterly|{MONTHS}|q[1-4])"
    r"\s+(?:review|report|recap|summary|retro)"
    r"|(?:two|three|four|five|six|seven|eight|nine|ten|\d+)\s+(?:interruptions|incidents|outages"
    rf"|failures|restarts|crashes|preemptions)\s+(?:(?:in|during|over)\s+(?:{MONTHS}"
    r"|the\s+(?:month|quarter|year)|(?:the\s+)?(?:last|past)\s+(?:month|quarter|year))"
    r"|(?:this|last)\s+(?:month|quarter|year)))\b",
    re.IGNORECASE,
)


_RETROSPECTIVE_WORDS: Final = Words(_RETROSPECTIVE)


#: A thread whose title opens with an eval or a benchmark ("Long-context eval OOMs on 64k
#: prompts", "Benchmark: step time with FP8") or a proposal: its failures are not the run's.
#: A period's review named: "October reliability review", "Retrospective: June", "Q3 uptime".
_PERIOD_REVIEW = re.compile(
    rf"\b(?:(?:reliability|uptime|availability|monthly|quarterly|{MONTHS}|q[1-4])\s+(?:\d{{4}}\s+|fy\d+\s+)?"
    r"(?:incidents?\s+|program\s+)?(?:review|report|recap|summary|retro(?:spective)?|reliability|uptime)"
    rf"|(?:retrospective|retro|review|recap)\s*[:—-]\s*(?:{MONTHS}|q[1-4]|(?:the\s+)?(?:last\s+)?"
    r"(?:week|month|quarter|year))"
    # "retro: merlin-70b stage 1, June–July": months from one to another
    rf"|(?:retrospective|retro|review|recap)\s*[:—-][^\n]{{0,60}}?\b{MONTHS}(?:\s+\d{{1,2}})?\s*"
    rf"(?:–|—|-|to)\s*{MONTHS}"
    # "Retro over all of May, not any single incident", "May retro: 5 interruptions" (May by
    # itself is a verb too often)
    r"|may\s+(?:retro(?:spective)?|recap)"
    rf"|(?:retrospective|retro|review|recap)\s+(?:over|of|for)\s+(?:all\s+of\s+)?(?:{MONTHS}|may"
    r"|the\s+(?:last\s+|past\s+)?(?:week|month|quarter))\b"
    # a stage's: "Stage 2 retrospective: what kept going wrong"
    r"|(?:stage|phase)\s+\d+\s+(?:retrospective|retro|review|recap)"
    # a look back over a stretch, all its incidents rolled up: "A look back over the last month
    # of stage 1", "Stage 1 lost time, all incidents together", "this is the roll-up"
    rf"|look(?:ing)?\s+back\s+(?:over|at|on)\s+(?:the\s+)?(?:(?:last|past)\s+(?:\w+\s+)?)?(?:weeks?"
    rf"|months?|quarters?|stages?|phases?|years?|run|{MONTHS})"
    # "All restarts of the main run, 2052-07-14 → 2052-12-16"
    r"|all\s+(?:the\s+)?(?:restarts|incidents|outages|interruptions|failures)\s+of\s+(?:the\s+)?"
    r"(?:main\s+)?run|(?:the|a)\s+roll-?up|all\s+(?:the\s+)?incidents\s+together"
    r"|lost[- ]time\s+(?:total|tally|report|summary|by\s+cause)"
    # a week's digest recaps what happened in it: "Weekly notes — Aug 13 → Aug 19"
    r"|weekly\s+(?:run\s+|status\s+)?(?:notes|digest|summary|recap|report|review|roundup"
    r"|progress)"
    # a week by its number: "Week 10: where kittiwake stands", "week 14 update"
    r"|^\W*week\s+\d{1,3}(?:(?=\s*[:—–-])|\s+(?:update|status|digest|summary|notes|recap))"
    rf"|{_WEEK_BY_DATES})\b",
    re.IGNORECASE,
)
_PERIOD_REVIEW_WORDS: Final = Words(_PERIOD_REVIEW)
#: One count of a tally: "4 halts", "two NODE_FAILs", "three preemptions".
_TALLY = re.compile(
    r"\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\s+(?:halts|interruptions|incidents"
    r"|outages|failures|restarts|crashes|preemptions|hangs|ooms|node\s+losses|node_fails?|nans"
    r"|reclaims|evictions)\b",
    re.IGNORECASE,
)
_TALLY_WORDS: Final = Words(_TALLY)
#: A post that says the failure it tells is not the main run's: "cpt-32k is stuck … not main",
#: "the eval OOMed; the main run is fine".
_DISOWNED = re.compile(
    r"\bnot\s+(?:the\s+)?main(?:\s+run)?\b|\bmain(?:\s+run)?\s+(?:is\s+|was\s+)?(?:obviously\s+|clearly\s+)?(?:not\s+affected"
    r"|unaffected|fine|untouched)\b"
    # "nothing to do with the main run", "it's the eval node, not the run"
    r"|\bnothing\s+to\s+do\s+with\s+(?:the\s+)?(?:main\s+)?run\b|,\s+not\s+the\s+(?:main\s+)?run\b(?!')"
    # a provider's notice of another pod: "Pod P4 is … not affected", "No P4 nodes are involved"
    r"|\b(?:pod|pool|cluster|partition|rack|row|hall|zone)\s+[\w-]*\d[\w-]*\s+(?:is|are)\s+(?:on\s+[^.\n]{0,40}"
    r"\s+and\s+is\s+)?(?:not\s+affected|unaffected)\b|\bno\s+[\w-]+\s+nodes\s+are\s+involved\b"
    # "Eval infra issue, the hero run is not involved"
    r"|\b(?:hero|main|training|the)\s+run\s+(?:is|was)\s+not\s+(?:involved|affected|impacted|touched)\b"
    # "This is the SFT side job, not r7."
    r"|\b(?:this|it)\s+(?:is|was|'s)\s+(?:the|an?|our|my)\s+(?:[\w-]+\s+){0,2}side\s+(?:jobs?|runs?)\b"
    # a teaching cluster's outage, a product's: "the teaching cluster is down", "chat API 5xx",
    # "stalls for EU users, ~12% of sessions", "failed over EU traffic"
    r"|\b(?:(?:teaching|student|class|course)\s+(?:cluster|partition|nodes?)"
    r"|(?:eu|us|apac|end|paying|api|chat)\s+(?:users|customers)|(?:of|for)\s+(?:user\s+)?sessions"
    r"|(?:chat|completions?|public)\s+api|(?:eu|us|user|customer)\s+traffic)\b",
    re.IGNORECASE,
)
_DISOWNED_WORDS: Final = Words(_DISOWNED)
#: A change that adds a safeguard: a watchdog, an alert, paging. It may cite the failure that
#: moved it ("On 14 Sep the main run sat hung for 48 minutes"), and is no incident's fix.
_SAFEGUARD = re.compile(
    r"\b(?:watchdog|alert(?:s|ing)?|pag(?:e|ing)|monitor(?:s|ing)?|health[- ]?check)\b", re.I
)


@functools.lru_cache(maxsize=256)
def disowns(prose: str) -> bool:
    """The post says the failure it tells is not the main run's."""
    return _DISOWNED_WORDS.found(prose[:DETECT_LIMIT])


def adds_a_safeguard(title: str | None) -> bool:
    """A change titled as adding a watchdog, an alert or paging."""
    return bool(title and _SAFEGUARD.search(title))


#: A title that names a change to make, as a pull's does: "Add a hang watchdog that kills the
#: job", "Support resuming from a partial checkpoint". The thread is about the change.
_CHANGE_TITLE = re.compile(
    r"^\W*(?:\[[^\]]*\]\s*)?(?:\w+(?:[ -]\w+){0,2}(?:\([^)]*\))?:\s*)?(?:auto-?)?"
    r"(?:add|implement|support|enable|introduce|overlap|stripe|split|speed\s+up"
    r"|allow|refactor|document|automate|build|create|write|set\s+up|wire\s+up|expose|rename"
    r"|remove|clean\s+up|make|use|switch|upgrade|bump|migrate|port|drain|retry|requeue|alert"
    r"|detect|handle|catch|warn|avoid|prevent|reduce|increase|decrease|limit|cap|pin|replace"
    r"|retain|preserve|archive|delete|schedule"
    r"|keep(?!\s+(?:getting|seeing|hitting|failing|crashing|dying|losing|running\s+out)))\b"
    # an alert asked for: "wandb alert if step doesn't move in 10 min", "ping us when saves lag"
    r"|^\W*(?:[\w/&-]+\s+){0,3}(?:alerts?|alarms?|pings?|notifications?|pages?|paging)\s+"
    r"(?:us\s+|me\s+|on-?call\s+)?(?:if|when|whenever)\b"
    # a setting moved for what comes next: "Adam eps 1e-8 → 1e-6 for phase 2?"
    r"|^\W*(?:[\w.-]+\s+){1,3}\S*\d\S*\s*(?:→|->)\s*\S*\d\S*\s+(?:for|in|from)\s+"
    r"(?:phase|stage|the\s+next|next|round|step)\b",
    re.IGNORECASE,
)
_OTHER_SUBJECT_TITLE = re.compile(
    r"^\W*(?:(?:[\w-]+\s+)?(?:evals?|evaluations?|benchmarks?|benchmarking)\b"
    r"|(?:proposal|rfc|idea|design\s+(?:notes?|docs?|proposals?))\b"
    # a benchmark named first, after a bracketed tag: "[exp] MMLU 5-shot vs 0-shot CoT"
    rf"|(?:\[[^\]]{{1,20}}\]\s*)?{BENCHMARKS}\b)",
    re.IGNORECASE,
)


#: A benchmark's name at the start of a table row: "MMLU        62.4   63.1".
_SCORE_ROW = re.compile(
    rf"^\W*(?:{BENCHMARKS}[\w+-]*|math|piqa|winogrande|triviaqa|belebele|xnli|flores|lambada)\b",
    re.IGNORECASE | re.MULTILINE,
)


#: A table's header naming a benchmark among its columns: "ckpt  asr-read  MMLU  tts-intel".
_SCORE_HEADER = re.compile(rf"^\W*\w[^\n]*?(?:\s|\|){BENCHMARKS}\b", re.IGNORECASE | re.MULTILINE)
#: A row of a checkpoint's scores: its step, then figures only ("700k  5.6  11.5  50.3").
_FIGURES_ROW = re.compile(
    r"^\W*(?:step[\s_]*)?\d[\d,.]*k?\b(?:[\s|]+[-+]?~?\d+(?:[.,]\d+)?%?){2,}[\s|]*$",
    re.IGNORECASE | re.MULTILINE,
)


def reports_scores(code: str) -> bool:
    """Pasted rows that are benchmark scores, two or more: an eval's table, a benchmark a row
    or a column (checkpoints down the side, figures only)."""
    if len(_SCORE_ROW.findall(code)) >= 2:
        return True
    return bool(_SCORE_HEADER.search(code)) and len(_FIGURES_ROW.findall(code)) >= 2


#: A post that asks for a human without naming the failure in its prose: an agent's "needs
#: attention", "Status: 🔴", "paging on-call", whose log excerpt says what broke.
_ATTENTION = re.compile(
    r"\b(?:needs?\s+(?:attention|a\s+human|eyes|someone)|paging|paged|page\s+on-?call"
    # an alert passed on: "wren-watch sent me this, … can someone look"
    r"|(?:can|could)\s+(?:someone|anyone|somebody)\s+(?:please\s+|pls\s+)?(?:look|check"
    r"|take\s+a\s+look|have\s+a\s+look)|sent\s+me\s+this"
    # the pasted fault back: "again. 099 is behind leaf-14, same as 09-08"
    r"|^\W*(?:and\s+|here\s+we\s+go\s+)?again\b"
    r"|(?:status|state)\s*[:=]\s*(?:[^\w\s]+\s*)?(?:red|error|attention|alert)\b"
    # a person asking whether the pasted log is a problem: "Is this something I should worry
    # about?", "should we be worried?"
    r"|something\s+(?:i|we)\s+should\s+worry\s+about|should\s+(?:i|we)\s+(?:be\s+)?worr(?:y|ied)"
    r"|something\s+to\s+worry\s+about"
    # an agent's alert: "🤖 plover-data · alert", "recommended action: check the loader" (not
    # "recommended action: none")
    r"|recommended\s+action\s*:\s*(?!none\b|no\s+action\b|n/a\b)\w)|·\s*alert\s*$|🔴|🚨"
    # a hedged ask before a pasted log: "not sure who to ask, sorry", "not sure if this counts",
    # "apologies if I'm reading it wrong"
    r"|not\s+sure\s+(?:who\s+to\s+ask|if\s+this\s+counts|(?:if|whether)\s+this\s+is\s+(?:a\s+)?(?:real|bad))"
    r"|(?:apologies|sorry)\s+if\s+i'?m\s+(?:reading|misreading)"
    # the log said to be the run's own: "I'm seeing this in main's log from 21:14"
    r"|\b(?:in|from)\s+(?:main|the\s+run|the\s+job|the\s+trainer)(?:'s)?\s+(?:logs?|stderr)\b"
    # the run said dead before its log: "leg 42 is dead", "leg 54 gone:"
    r"|\b(?:is|are|'s)\s+(?:dead|down|gone)\b|\bgone\s*:"
    # a fault found late, its log pasted: "sorry, saw this at 11 but was out all day:"
    r"|(?:sorry|apologies),?\s+(?:i\s+)?(?:only\s+(?:just\s+)?)?(?:saw|found|noticed)\s+this\b"
    # a line that introduces the alert it pastes: "DCGM alert:"
    r"|^\W*[\w-]+\s+alert\s*:\s*$"
    # or the log: "from nid000233 dmesg:"
    r"|^\W*(?:from\s+)?[\w.-]+(?:'s)?\s+(?:dmesg|logs?|stderr|journal(?:ctl)?|syslog)\s*:\s*$"
    # said in two words: "rank 1642 gone, job down 06:49"
    r"|\b(?:job|run|main|rank\s*\d+)\s+(?:down|dead|gone)\b",
    re.IGNORECASE | re.MULTILINE,
)


def asks_attention(prose: str) -> bool:
    """The post asks for a human's attention (and its log may say why)."""
    return bool(_ATTENTION.search(prose[:DETECT_LIMIT]))


def names_a_change(title: str) -> bool:
    """The title names a change to make (an issue asking for one), not a failure."""
    return bool(_CHANGE_TITLE.match(title))


@functools.lru_cache(maxsize=256)
def thread_is_experiment(context: ThreadContext) -> bool:
    """The thread is about an experiment (by its title prefix, labels or title), an eval or a
    benchmark named first in its title, or a proposal (a pure function of the thread, asked
    about for each of its posts by several rules, so judged once)."""
    return bool(
        context.known
        and (_EXPERIMENT.search(context.topic) or _OTHER_SUBJECT_TITLE.match(context.title))
    )


#: A post that says the change its thread is about broke the run: "since this landed the train
#: loop hangs", "after merging this, step 212k NaNs", "this broke the main run".
_BROKE_THE_RUN = re.compile(
    r"\b(?:since\s+(?:this|it)\s+(?:landed|was\s+merged|merged|went\s+in)"
    r"|after\s+merging\s+(?:this|it)|this\s+(?:pr\s+|change\s+)?broke\s+the\s+(?:main\s+)?run"
    r"|this\s+(?:pr\s+|change\s+)?took\s+(?:the\s+)?(?:main(?:\s+run)?|run|training)\s+down)\b"
    # a post that says it is about something else than its thread: "Unrelated to the
    # proposal itself, but urgent: the step_260000 save just failed"
    r"|^\W*(?:unrelated\s+to\s+(?:this|the)\b[^:\n]{0,40}?\bbut\b"
    r"|off[- ]topic\b[^:\n]{0,30}?\bbut\b|(?:separate|different)\s+(?:thing|topic|issue)\s*:)",
    re.IGNORECASE,
)
#: A test of the alarms on purpose: "Game day 2033-01-07: simulated rack loss", "[GAME DAY —
#: EXERCISE] SEV2 declared", "[DRY-RUN] node loss".
_EXERCISE = re.compile(
    r"\b(?:game[- ]?days?|(?<!\bmy\s)(?<!onboarding\s)exercise|drills?|dry[- ]run|simulated"
    r"|chaos\s+tests?|tabletop)\b",
    re.IGNORECASE,
)
_EXERCISE_WORDS: Final = Words(_EXERCISE)

#: A post that says its failure is real, in a week of drills.
_NOT_EXERCISE = re.compile(
    rf"{NOT_A_DRILL}|\breal\s+(?:page|alert|incident|outage)\b|\bthis\s+is\s+real\b",
    re.IGNORECASE,
)


#: An announcement of planned work ahead: "heads up: planned maintenance on spine switches sp-2
#: and sp-3 thu jun 19 02:00-03:30 UTC", "scheduled downtime for the Lustre upgrade on Monday".
#: What it warns may happen ("a few link flaps") is the plan's, not a fault.
_ANNOUNCED = re.compile(
    r"^\W*(?:(?:heads[\s-]up|fyi|reminder|notice|announcement|psa)\s*[:,!-]*\s*)?"
    r"(?:(?:a|the|our|next\s+week's|tomorrow's)\s+)?(?:planned|scheduled)\s*[—–:-]?\s+(?:\w+\s+){0,2}?"
    r"(?:maintenance|downtime|outage|window|upgrade|swap|reboot|migration)\s+(?:on|for|of|at|in|fn-|wave"
    # dated: "planned provider maintenance Sat 04-26 02:00–04:00 UTC"
    r"|(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*|\d{1,2}[-/.:]\d\d)\b",
    re.IGNORECASE,
)


#: The planned work told as past: "planned maintenance on r12 is done but 3 nodes did not come
#: back" is no announcement ahead of it.
_WORK_DONE = re.compile(
    r"\b(?:(?:is|was|are|were)\s+(?:done|over|finished|complete[d]?)|finished|completed|went"
    r"|overran|wrapped\s+up|ended)\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=256)
def announces_planned_work(prose: str) -> bool:
    """The post opens by announcing planned work on the cluster, ahead of it."""
    opening = prose.lstrip()[:200].split("\n", 1)[0]
    return (
        _ANNOUNCED.search(opening) is not None
        and not _NOT_EXERCISE.search(opening)
        and not _WORK_DONE.search(opening)
    )


@functools.lru_cache(maxsize=256)
def is_exercise(title: str, prose: str) -> bool:
    """The post or its title opens by saying it is an exercise, a drill or a simulation: its
    failures are make-believe."""
    opening = prose.lstrip()[:120].split("\n", 1)[0]  # not a task listed later ("export dry-run")
    if _NOT_EXERCISE.search(opening):
        return False  # "NOT A DRILL. real page just now: …"
    return _EXERCISE_WORDS.found(title) or _EXERCISE_WORDS.found(opening)


#: The main run named: "heads up: main's 847,500 save just failed", "the main run's loader",
#: a sentence about it ("Main is in a restart loop since 05:50").
_MAIN_NAMED = re.compile(
    r"\b(?<!not\s)(?:main's|(?:the\s+)?main\s+(?:run|job)(?:'s)?)\s+(?!is\s+fine|is\s+unaffected)"
    r"|(?:^|[.!?]\s+)(?-i:Main)\s+(?:is|has|was)\s+(?!fine|unaffected|ok\b)"
    # after a colon that sets it apart: "fyi unrelated to the proxy: main is crawling"
    r"|[:;]\s*main\s+(?:is|has|was|just)\s+(?!fine|unaffected|ok\b)",
    re.IGNORECASE | re.MULTILINE,
)


def speaks_of_the_main_run(prose: str, context: ThreadContext) -> bool:
    """In an experiment's thread or channel ("#ladder", an ablation issue), a post about the
    main run: its failure is the run's."""
    return bool(
        context.known and _EXPERIMENT.search(context.topic) and _MAIN_NAMED.search(prose[:300])
    )


#: A save of the run named in a title: "step_0271750", "412000", "307k", "waypoint", "latest".
_A_SAVE = re.compile(
    r"\b(?:step[_ ]?0*\d{3,}|\d{2,4}(?:[.,]\d+)?k|\d{3}[,.]?\d{3}|ckpt|checkpoints?"
    r"|waypoints?|saves?)\b",
    re.IGNORECASE,
)
#: What is wrong with it, in the save's own terms (never an evaluator's OOM or timeout):
#: "three 0-byte shards", "incomplete metadata", "can't load", "missing exp_avg_sq for …",
#: "no checkpoint since …", "not on the bucket".
_SAVE_BROKEN = re.compile(
    r"\b(?:0|zero)[- ]byte|\bincomplete\s+(?:metadata|shards?|uploads?|saves?)|\bcorrupt\w*"
    r"|\btruncated|(?:can't|cannot|can\s+not|fails?\s+to|unable\s+to)\s+(?:load|restore|open)\b"
    r"|\bmissing\s+(?:shards?|files?|exp_avg\w*|optimizer|[\w.]+\s+for\b)"
    r"|\bno\s+(?:new\s+)?checkpoints?\s+since|\bnot\s+on\s+the\s+bucket"
    # "checkpoint step_300000 missing", "something is wrong with the checkpoint"
    r"|\b(?:checkpoint|ckpt)\s+(?:step[_\s-]?)?\d[\d,]*k?\s+(?:is\s+)?missing\b"
    r"|\bsomething(?:'s|\s+is)\s+wrong\s+with\s+(?:the\s+|this\s+)?(?:checkpoint|ckpt|save)",
    re.IGNORECASE,
)


def names_a_broken_save(title: str) -> bool:
    """An issue titled by a save of the run that is broken, whoever found it (an eval that
    cannot load it, a nightly restore test, a pruning dry run): "waypoint 432000 has three
    0-byte shards", "evals can't load step 412000: incomplete metadata". The save is the run's,
    so its fault is the run's whatever thread it is found in; a review of one is not a report."""
    return bool(
        _A_SAVE.search(title)
        and _SAVE_BROKEN.search(title)
        and not HISTORY.search(title)
        and not _RETROSPECTIVE_WORDS.found(title)
    )


def breaks_the_run(prose: str) -> bool:
    """The post says its thread's change broke the run: whatever the thread is about (an eval
    set, an experiment's code), the failure it tells is the run's."""
    return bool(_BROKE_THE_RUN.search(prose[:DETECT_LIMIT]))


@functools.lru_cache(maxsize=256)
def reviews_a_period(prose: str, thread_title: str = "") -> bool:
    """A review of a period, not of one incident: "Retrospective: June", "October reliability
    review", "4 halts, 2 preemptions, goodput 91%"."""
    return bool(
        _PERIOD_REVIEW_WORDS.found(thread_title)
        or _PERIOD_REVIEW_WORDS.found(prose[:300])
        or _TALLY_WORDS.count(prose[:300]) >= 2
    )


def is_retrospective(prose: str, thread_title: str = "") -> bool:
    """A post-mortem or retrospective (said in the thread title or the post's opening), or a
    tally of failures by kind: "4 halts, 2 preemptions, goodput 91%"."""
    head = prose[:300]
    return (
        _RETROSPECTIVE_WORDS.found(thread_title)
        or _RETROSPECTIVE_WORDS.found(head)
        or _TALLY_WORDS.count(head) >= 2
    )


# --------------------------------------------------------------------------------------------
# Follow-ups in an incident's own thread

#: A follow-up saying the problem persists: "still down", "52,000 also fails", "same on the retry".
_ONGOING = re.compile(
    r"\b(?:(?:still|remains?)\s+(?:down|stuck|hung|hanging|failing|fails|broken|dead|crashing"
    r"|oom\w*|erroring|pending|paused|queued|waiting|blocked|offline"
    r"|not\s+(?:back|up|running|training|progressing)|no\s+(?:steps?|progress|luck))"
    r"|(?:also|again)\s+(?:fails?|failed|failing|crashe[sd]|oom\w*|hangs?|hung|dies|died)"
    r"|(?:fails?|failed|crashed|died|hung|hangs|oom\w*)\s+again"
    r"|same\s+(?:error|failure|crash|hang|thing|problem|result)\b(?!\s+(?:as\s+)?(?:last|before))"
    r"|same\s+(?:thing\s+)?on\s+the\s+(?:\w+\s+)?(?:retry|rerun|attempt|restart|relaunch|try)"
    r"|no\s+luck|not\s+back\s+yet"
    r"|keeps?\s+(?:failing|crashing|dying|hanging|timing\s+out)|not\s+(?:yet\s+)?resolved)\b",
    re.IGNORECASE,
)
#: The follow-up that ends it: the run is running again.
_BACK = re.compile(
    r"\b(?:back\s+(?:up|online|to\s+normal)|running\s+again|training\s+again|resumed|recovered"
    r"|(?:is|are)\s+healthy|total\s+downtime|closing\s+(?:this|as)|resolved|all\s+good"
    r"|(?:step|steps)\s+[\d,.]+k?\s+(?:logged|reached|done))\b",
    re.IGNORECASE,
)
_INCIDENT_LABEL = re.compile(r"\b(?:incidents?|outages?|sev\s*\d|p0|firefight\w*)\b", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def thread_incident(context: ThreadContext) -> str | None:
    """The incident kind a thread is about (its labels, prefix or a live report in its title),
    or None when the thread is not an incident's own (judged once per thread, as
    ``thread_is_experiment``)."""
    if not context.known or thread_is_experiment(context):
        return None
    if _RETROSPECTIVE_WORDS.found(context.title):
        return None
    if (context.kind == "pull" or names_a_change(context.title)) and not declares_incident(context):
        return None  # a pull's title names a change ("lower the NCCL timeout"), not an outage
    found = find_incident("", context.title) if context.title else None
    if found is not None:
        return found[0]
    return "outage" if declares_incident(context) else None


def reports_ongoing(prose: str) -> bool:
    """A follow-up that says the incident is not over."""
    head = prose[:DETECT_LIMIT]
    return bool(_ONGOING.search(head)) and not _BACK.search(head)


#: A note that opens by saying the run is back, or the problem fixed: "Back up from 15,000 on
#: r11n2", "Restarted from step 11,500 on the spare node", "Fixed by #1234, the hang came from …".
_RECOVERY_LEAD = re.compile(
    r"^\W*(?:(?:hero|the\s+run|the\s+job|training|we(?:'re|\s+are))\s+(?:is\s+)?)?"
    r"(?:back\s+(?:up|online|at|to\s+training)|(?:restarted|relaunched|resumed|requeued|recovered)"
    r"\b(?![^.;]*\b(?:fail|crash|oom|again|stuck|hung|di(?:es|ed|e)\b|dying|dead\b|hangs?\b"
    r"|errors?\b|\d+\s+times))"
    # "Fixed by #1234, the hang came from …": the post is about the fix
    r"|(?:fixed|resolved|mitigated|closing|closed)\b(?![^.;]*\b(?:again|still|but|yet)\b))",
    re.IGNORECASE,
)


def is_recovery_note(prose: str) -> bool:
    """The post opens by saying the run is running again: talk about an incident that is over."""
    return bool(_RECOVERY_LEAD.match(prose.lstrip()))


#: The incident is over and the post says how it ended: a recap, not a report.
_DONE = re.compile(
    r"\b(?:total\s+downtime|downtime\s+(?:of\s+|was\s+)?(?:\d|about|roughly|~)"
    r"|(?:is|are)\s+(?:back\s+up|running\s+again"
    r"|training\s+again|healthy\s+again)|back\s+(?:up|online)\s+(?:from|at|on|since)"
    r"|running\s+again|resumed\s+(?:from|at)\s+(?:step\s+)?[\d,.]+k?)",
    re.IGNORECASE,
)


#: What puts a failure after a recovery in time: "; by 199,040 the loss is nan", "then".
_LATER = re.compile(
    r"^[^.!?\n]{0,40}?(?:[;,]\s*|\.\s+)(?:by\s+(?:step\s+)?[\d,.]+k?|then|but|and\s+then"
    r"|within|after\s+(?:\d+|a\s+few|an?)\s+\w+|\d+\s+\w+\s+later)\b"
    # the same sentence going on: "relaunched for mix v3.2 (#1450) and rank 0 OOMs on step 1"
    r"|^(?:[^.!?\n]|\.(?=\S)){0,80}?\s+and\s+(?:(?:it|the\s+job|the\s+run|rank\s*\d+)\s+)?"
    r"(?:immediately\s+|instantly\s+|promptly\s+)?(?:ooms?|oom'?(?:ed|d)|crash(?:es|ed)|died|dies"
    r"|fails?|failed|hangs?|hung|segfaults?|segfaulted)\b(?!\s+again)",
    re.IGNORECASE,
)


#: A caveat right after an all-clear: what follows is not fine.
_CAVEAT = re.compile(r"\s*[,;:—–-]?\s*(?:but|except|although|though)\b", re.IGNORECASE)


def all_clear(prose: str) -> bool:
    """The post says the run is fine, or that the incident it tells of is over (and not that it
    came back: "resumed from 48k, then crashed again")."""
    head = prose[:DETECT_LIMIT]
    return bool(ALL_FINE.search(head) or _DONE.search(head)) and not _ONGOING.search(head)


def settled(prose: str) -> bool:
    """The post says the run came back or is fine, and reports no failure after saying so:
    not "Resumed at 13:00 from 199,000; by 199,040 the loss is nan on every host"."""
    head = prose.lstrip()[:DETECT_LIMIT]
    lead = _RECOVERY_LEAD.match(head)
    if lead is None and not all_clear(head):
        return False
    said = lead or ALL_FINE.search(head) or _DONE.search(head)
    after = head[said.end() :] if said is not None else ""
    if lead is None and _CAVEAT.match(after):
        return False  # "training itself is fine, but 25k isn't in the bucket": a part is not
    return _LATER.search(after) is None or find_incident(after) is None


def declares_incident(context: ThreadContext) -> bool:
    """The thread is labelled (or prefixed) as an incident's own."""
    return bool(_INCIDENT_LABEL.search(" ".join([context.prefix, *context.labels])))


# --------------------------------------------------------------------------------------------
# About a specific incident, without reporting it live

#: A failure named: any incident signal (unjudged), or the words people use for one.
_FAILURE_WORDS = re.compile(
    r"\b(?:incident|outage|crash\w*|hang|hung|deadlock\w*|oom\w*|out\s+of\s+memory|node\s+loss"
    r"|nans?|power\s+(?:event|outage|loss|failure)|kernel\s+panic|node_fail|soft\s+lockup"
    r"|the\s+(?:\w+\s+)?error\s+(?:at|on|from)"
    r"|lost\s+(?:a\s+|the\s+)?(?:node|host)|xid|ecc|nvlink|nccl\s+timeout|preempt\w*|went\s+down"
    r"|evicted|reclaimed|went\s+away|uncorrectable|(?:job|run)\s+(?:exited|died)"
    r"|were\s+down|down\s+for\s+(?:\d|an?\s|about|~)"
    r"|was\s+down|downtime|failed\s+(?:save|restore|checkpoint)|restore\s+fail\w*"
    r"|stalled"  # "fixes the stalled save from #238"
    # how an agent's daily words it: "left the Ray cluster (raylet heartbeat lost)",
    # "NHC: gpu_health FAIL", "made no progress between 01:12 and 03:52"
    r"|heartbeats?\s+(?:lost|missed|stopped)|stopped\s+heartbeating|left\s+the\s+(?:ray\s+)?cluster"
    r"|(?:health|nhc)\w*\s*:?\s*\w*\s+fail(?:ed|s|ure)?|made\s+no\s+progress)\b",
    re.IGNORECASE,
)
_FAILURES: Final = Words(_FAILURE_WORDS)
#: Words that tie a post to one incident: its diagnosis, fix, recovery or post-mortem.
_ABOUT_ONE = re.compile(
    r"\b(?:root[- ]?caus\w*|caused\s+by|(?:was|were)\s+caused|the\s+cause\s+(?:of|was|is)"
    r"|(?:traced|tracked)\s+(?:it\s+)?(?:down\s+)?to|turned\s+out|post-?mortem|retro(?:spective)?"
    r"|incident\s+(?:review|report|write-?up|summary)|what\s+went\s+wrong|lessons\s+learned"
    r"|fix(?:es|ed)?\s+(?:for\s+)?(?:the|this|that|today's|yesterday's|last\s+night's)\b"
    r"|(?:this|the)\s+(?:pr|change|patch)\s+(?:fixes|should\s+fix|prevents)"
    r"|follow-?up\s+(?:to|from|for)\s+#\d+"
    r"|back\s+up\s+(?:from|at|on)"
    r"|(?:restarted|resumed|relaunched|requeued)\s+(?:itself\s+)?(?:from|at|on)"
    r"|rolled\s+back\s+to|recovered\s+(?:from|at)|total\s+downtime|downtime\s+(?:was|of)"
    r"|after\s+(?:the|that|this|last\s+night's|yesterday's)\s+(?:[\w,.-]*\d[\w,.-]*\s+)?(?:crash"
    r"|hang|outage|incident|failure|oom|preemption)\b"
    r"|(?:yesterday|last\s+night|this\s+morning|on\s+\w+day)(?:'s)?\s+(?:crash|hang|outage|incident"
    r"|failure|oom|node\s+loss)"
    r"|(?:the|that|this)\s+(?:[\w,.-]*\d[\w,.-]*\s+)?(?:crash|hang|outage|incident|failure|oom|nan"
    r"|node\s+loss|preemption|power\s+event)"
    r"\s+(?:on|at|in|of|from|was|is|came|happened|started|began|yesterday|last))",
    re.IGNORECASE,
)


def mentions_failure(text: str) -> bool:
    return _FAILURES.found(text[:DETECT_LIMIT])


#: A post that opens by proposing a general change: "We should add a watchdog", "Proposal:
#: requeue on Xid 79", "Let's put reservation end dates into the dashboard".
_PROPOSAL_LEAD = re.compile(
    r"^\W*(?:proposal\b|i\s+(?:propose|suggest)|we\s+(?:should|could|ought\s+to)|let's\b"
    r"|lets\s|suggest\w*|how\s+about|maybe\s+we|what\s+if\s+we|idea\b"
    # a question past the incident at hand: "General question, not just about this one: …"
    r"|(?:a\s+)?(?:more\s+)?general\s+(?:question|point|thought)\b|more\s+generally\b)",
    re.IGNORECASE,
)
#: A routine update ("Daily update", "Weekly summary") that mentions faults in passing: "no
#: interruptions", "three interruptions (…)" is a log of the run, not one incident's story.
_PERIODIC = re.compile(
    r"\b(?:daily|weekly|nightly|overnight|hourly)\s+(?:update|summary|recap|report|status)\b",
    re.IGNORECASE,
)
_IN_PASSING = re.compile(
    r"\b(?:no\s+(?:interruptions?|incidents?|restarts?|failures?|crashes)"
    r"|(?:two|three|four|five|six|several|\d+)\s+(?:interruptions|incidents|restarts|failures"
    r"|crashes))\b",
    re.IGNORECASE,
)
_TEMPLATE = re.compile(
    r"\b(?:templates?|issue_template|(?:incident|issue|report(?:ing)?)\s+forms?)\b", re.IGNORECASE
)
#: A thread about a test, not the run: "CI: test_packer is flaky", "[ci] …", "Flaky test: …",
#: "INC-TEST-3 · Test incident (alert routing)".
_TEST_TITLE = re.compile(
    r"^\W*ci\b\W|\bflaky\b|\bflakes?\b|\btest\s+(?:incident|page|alert|notification)s?\b"
    # a test named: "Hang in unit test test_dataloader", "test_packer fails on 3.12"
    r"|\bunit\s+tests?\b|\btest_\w+",
    re.IGNORECASE,
)


def opens_with_proposal(prose: str) -> bool:
    """The post opens by proposing a change ("Proposal: drain nodes on …", "We should …")."""
    return bool(_PROPOSAL_LEAD.match(prose.lstrip()))


@functools.lru_cache(maxsize=256)
def is_template(title: str) -> bool:
    """A thread that is a form to fill in ("Template: incident note"): its example failures
    happened to no one."""
    return bool(_TEMPLATE.search(title))


#: A runbook's own title: "runbook: what to do when the run dies", "Playbook: node drain".
_RUNBOOK_TITLE = re.compile(
    r"^\W*(?:\[[^\]]*\]\s*)?(?:draft\s+)?(?:runbooks?|playbooks?)\b|\bwhat\s+to\s+do\s+(?:when|if)\b",
    re.IGNORECASE,
)


def is_runbook(title: str) -> bool:
    """An issue that is a runbook: the failures its steps name happened to no one (its
    replies may still tell of one that did: "adding to the runbook from last night")."""
    return bool(_RUNBOOK_TITLE.search(title))


@functools.lru_cache(maxsize=256)
def is_test_report(title: str) -> bool:
    """A thread about a failing or flaky test ("CI: test_segment_ids_roundtrip is flaky") or a
    test of the alerting ("Test incident"): its failures are the test's, never the run's."""
    return bool(_TEST_TITLE.search(title))


def is_general_post(prose: str, title: str) -> bool:
    """A proposal, a template or a routine update: talk near incidents, about none of them."""
    head = prose[:DETECT_LIMIT]
    return bool(
        opens_with_proposal(prose)
        or is_template(title)
        or (_PERIODIC.search(head[:300]) and _IN_PASSING.search(head))
    )


#: What was wrong and what was changed to fix it. Routine operations (a node drained, a spare
#: swapped in, the time lost) are not enough: a run log records those after every restart, and
#: such a note is the log's (a checkpointing or infra entry), not the incident's.
_REMEDY = re.compile(
    r"\b(?:patched|disabled|turned\s+off|rolled\s+back|removed|remounted|fixed|pinned|moved"
    r"|filtered|reverted|raised|capped|lowered|resized|deleted|re-?pushed|by\s+mistake|skipping"
    r"|rebuilt|recompiled|upgraded|downgraded|failed\s+over|cleaned\s+up|freed"
    r"|(?:network|storage|cluster|filesystem|api\s+server|scheduler|fabric)\s+is\s+back"
    r"|(?:the|a)\s+(?:cause|leak|problem|issue|culprit)|because|turned\s+out)",
    re.IGNORECASE,
)
_CHOSEN = re.compile(
    r"\b(?:myself|on\s+purpose|deliberately|intentionally|as\s+planned|planned|nothing\s+(?:is\s+)?"
    r"wrong|not\s+an\s+outage|to\s+(?:pick\s+up|apply|swap|change|roll|rotate|switch|update))\b",
    re.IGNORECASE,
)


#: Hours lost: "5h39m down", "down for 3 hours".
_HOURS_DOWN = re.compile(
    r"\b\d+\s*h(?:ours?)?\s*(?:\d+\s*m(?:in)?\s*)?(?:down|lost)\b|\bdown\s+(?:for\s+)?\d+\s*h",
    re.IGNORECASE,
)


def routine_preemption(prose: str) -> bool:
    """A line that tells a preemption the run came back from by itself ("preempted in us-east
    · recovering in eu-west · resumed at 182,000 after 9 min"): a spot run's routine, not an
    incident, unless it says what was wrong and changed."""
    head = prose[:DETECT_LIMIT]
    if len(head.split()) > 40 or not CAME_BACK_WORDS.found(head) or _REMEDY.search(head):
        return False
    if _HOURS_DOWN.search(head):
        return False  # "… resumed from 236,900 at 08:51. 5h39m down": no routine
    found = find_incident(head)
    return found is not None and found[0] == "preemption"


def came_back_after_fault(prose: str) -> bool:
    """The post says the run came back after a fault was dealt with (and not by choice)."""
    head = prose[:DETECT_LIMIT]
    return bool(CAME_BACK_WORDS.found(head) and _REMEDY.search(head) and not _CHOSEN.search(head))


#: The people on it, or the agent, speaking of one incident: "Ack. R7's switch is rebooting",
#: "incident resolved", "Root cause from the network team: …".
_ON_IT = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so)\W+)?(?:ack(?:ed|nowledged)?|on\s+it|looking(?:\s+into\s+it)?"
    r"|investigating|checking|found\s+(?:it|the\s+(?:cause|culprit|problem|bug)))\b",
    re.IGNORECASE,
)
_CLOSED_OR_CAUSED = re.compile(
    r"\bincident\s+(?:resolved|closed|mitigated|over)\b"
    r"|\broot[- ]?cause\s+(?:from|of|for|was|is|:)",
    re.IGNORECASE,
)


#: A day or an hour that makes a failure one incident: "this morning", "on Jan 28", "from
#: 23:40 to 08:30", "Apr 6", "since 03:10", "since it landed".
_DATED = re.compile(
    r"\b(?:this\s+morning|last\s+night|yesterday(?:'s)?|tonight|overnight|earlier\s+today"
    r"|on\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b"
    r"|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b"
    r"|\d{4}-\d{2}-\d{2}|from\s+\d{1,2}:\d{2}\s+(?:to|until|till)\s+\d{1,2}:\d{2}"
    # the hour it began, or the change it began with: "since 03:10", "since it landed"
    r"|since\s+~?\d{1,2}:\d{2}|since\s+(?:it|this|#\d+)\s+(?:landed|was\s+merged|merged))",
    re.IGNORECASE,
)
_FAILED = re.compile(
    r"\b(?:fail(?:ed|s|ing)?|failure|hung|hangs|stuck|slowdown|throttl\w*|collapsed|silently"
    r"|truncated|corrupt\w*|missing|killed|lost|dies|died|crash(?:es|ed)?|ooms?|oom'?ed)\b",
    re.IGNORECASE,
)
#: How far into a change's description its motivation is told: its first blocks.
_MOTIVE_BLOCKS = 2
#: The run's failure at an hour of today, or the run down now: "main crashed at 02:14", "main
#: lost rkh-n0417 at 04:47", "main is down." (a hotfix opened while the run waits for it).
_FAILED_AT = re.compile(
    r"\b(?:crashed|died|oom'?e?d|hung|exited|went\s+down|failed|lost\s+\S+)\s+at\s+~?\d{1,2}:\d{2}\b"
    r"|^\W*(?:main|the\s+(?:main\s+)?run|training|the\s+job)\s+is\s+(?:down|dead)\b",
    re.IGNORECASE,
)


def fixes_a_told_failure(prose: str) -> bool:
    """A change's description that opens with the one failure it fixes, dated: "On Jan 28 slice
    0 was preempted …; the restore then failed …", "The job hung in an all-reduce from 23:40
    to 08:30 last night". A change that cites failures in general ("restarts are slow when a
    node dies") is no incident's."""
    head = "\n".join(prose[:DETECT_LIMIT].splitlines()[:_MOTIVE_BLOCKS])
    for sentence in SENTENCE_SPLIT.split(head):
        if HISTORY.search(sentence):
            continue
        if _FAILED_AT.search(sentence):
            return True
        if _DATED.search(sentence) and (mentions_failure(sentence) or _FAILED.search(sentence)):
            return True
    return False


#: The time an incident cost, as its recovery note counts it: "lost ~1h40", "~3h gone",
#: "5.5h lost", "about 4h lost all in", "1h50 down".
_DOWNTIME = re.compile(
    r"\b(?:(?:lost|gone|down)\s+(?:~|about\s+|roughly\s+)?\d+(?:\.\d+)?\s*(?:h\d*|hours?|min"
    r"|minutes?|days?)\b"
    r"|~?\d+(?:\.\d+)?\s*(?:h\d*|hours?|min|minutes?|days?)\s+(?:\w+\s+)?(?:lost|gone|down)\b)",
    re.IGNORECASE,
)


_BACK_AGAIN = re.compile(
    r"\b(?:back\s+(?:up|on|at|to|from)|running\s+again|stepping|training\s+again|resumed"
    r"|relaunched|restarted|requeued|swapped|replaced)\b",
    re.IGNORECASE,
)


def counts_its_downtime(prose: str) -> bool:
    """A recovery note that counts what the incident cost: "running again from 93,500. ~3h
    gone", "back up from ckpt 52,000, lost ~1h40". Not a planned stop's ("~20 min down for the
    jax bump"), a question about an old outage, or a budget counting lost days."""
    head = prose[:DETECT_LIMIT]
    return bool(
        _DOWNTIME.search(head)
        and _BACK_AGAIN.search(head)
        and not _CHOSEN.search(head)
        and "?" not in head
        and not is_recovery_note(head)  # "Back up from 15,000 on r11n2. Lost 25 min": the log's
    )


#: A reply that opens by dismissing what its thread reported: "false alarm, the exporter
#: restarted", "not an incident: the planned stop", "not kiln: arm 4 of the ablation",
#: "Warning only. 81 °C is inside spec", "test page, ignore".
_DISMISSAL = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|fyi|ah|nope|no)\W+)?(?:(?:this\s+(?:is|was)\s+|it\s+(?:is|was)\s+|it's\s+)?"
    r"(?:a\s+|just\s+a\s+)?false\s+(?:alarm|positive)"
    r"|not\s+an?\s+(?:real\s+)?(?:incident|outage|issue\s+for\s+the\s+run)"
    # "That's not this PR — gpu-ci-07 has been timing out all week", "not about the stall but:"
    r"|(?:that's|that\s+is|it's|this\s+is)\s+not\s+(?:this|the|your)\s+(?:pr|change|patch|diff)\b"
    r"|not\s+about\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?\s+but\b"
    # "not kiln:", "not ours:"; not "not us:" (we did not stop it: a diagnosis)
    r"|not\s+(?:ours|our\s+run|the\s+(?:main\s+)?run"
    r"|(?!(?:sure|yet|really|quite|much|great|good|ideal|certain|only|exactly|entirely|now|bad"
    r"|urgent|critical|expected|normal|planned|intended|ok|okay|fine|right|correct|clear|known"
    r"|obvious|likely|happy|again|anymore|working|running|training|moving|us|me|i|we|you|them"
    r"|that|this|it)\b)[a-z][\w-]*)\s*[:—–]"
    r"|warning\s+only|(?:just\s+)?(?:a\s+)?test\s+(?:page|alert|incident|notification)"
    # a triage's one word: "noise, closing.", "flake, the exporter restarted", "staging. xid 13
    # is my kernel" (not "noise in the loss", "staging the new config")
    r"|(?:just\s+|pure\s+|probably\s+)?(?:noise|(?:a\s+)?flake|flaky|staging)"
    r"(?=\s*(?:[,.:;!—–-]|$)|\s+(?:again|closing)\b)"
    r"|harmless|benign|(?:a\s+)?known[- ]harmless|nothing\s+to\s+worry\s+about"
    r"|ignore\s+(?:the\s+|these\s+|this\s+|that\s+)?(?:alerts?|pages?|one|it)\b"
    # in chat, the alert's next message: "ignore, that's the planned drain", "flaky exporter
    # again", "mine, not the run"
    r"|ignore\s*[,:.!—–-]|(?:that's|this\s+is|it's)\s+(?:just\s+)?(?:the|a|our)\s+planned\b"
    r"|flaky\s+(?:\w+\s+)?(?:exporter|alert|check|probe|monitor)\b"
    r"|mine\s*[,:—–]\s*not\s+the\s+(?:main\s+)?run"
    r"|expected(?:\s+behaviou?r)?\s*[:.,—–]|no\s+(?:job\s+|run\s+)?impact\b"
    # "It is paused on purpose", "This time the run is fine:" (not "fine now", "fine again")
    r"|(?:it|the\s+(?:main\s+)?(?:run|job))\s+(?:is|was|'s)\s+(?:paused|stopped|down|off)\s+on\s+purpose"
    r"|(?:this\s+time\s+)?the\s+(?:main\s+)?(?:run|job)\s+is\s+fine\b(?!\s+(?:now|again)))",
    re.IGNORECASE,
)
#: A courtesy before the answer: "Thank you, Oskar.", "Please never apologise for asking."
_COURTESY = re.compile(
    r"^\W*(?:thanks?|thank\s+you|please\s+never|good\s+(?:question|catch|morning)|hi|hello"
    r"|welcome|sorry|no\s+worries|dear)\b[^.!?\n]*[.!?]\s+",
    re.IGNORECASE,
)


#: A post that says near its start that it is about no incident: "Planned fleet maintenance,
#: not tied to an incident.", "this is the roll-up, not a new incident".
_NO_INCIDENT = re.compile(
    r"\b(?:not\s+(?:tied|related|linked|due)\s+to\s+(?:an?|any)\s+(?:incident|outage)"
    r"|unrelated\s+to\s+any\s+(?:incident|outage)|not\s+a\s+new\s+(?:incident|outage)"
    # "Not about one incident; the details are in the linked issues", "Not a postmortem of
    # any one thing (those are linked)"
    r"|not\s+about\s+(?:one|a\s+single|any\s+one|any\s+(?:particular|specific)|a\s+(?:particular"
    r"|specific))\s+(?:incident|outage|breakage|failure|fault)"
    r"|not\s+a\s+post-?mortem\s+of\s+(?:any\s+)?one)\b",
    re.IGNORECASE,
)


#: A question asked for a runbook, a checklist or the docs, not about the run now: "asking
#: because I'm writing the stage 2 launch checklist", "Writing the stage 2 runbook — are …".
_FOR_THE_DOCS = re.compile(
    r"\b(?:writing|drafting|updating|preparing)\s+(?:the\s+|a\s+|our\s+|my\s+)?(?:[\w-]+\s+){0,3}?"
    r"(?:runbooks?|checklists?|playbooks?|wiki|docs|documentation|onboarding\s+\w+|faq)\b"
    # "for the on-call runbook I'm writing: …"
    r"|\bfor\s+the\s+(?:[\w-]+\s+){0,2}(?:runbook|checklist|playbook|wiki|docs)\s+i'?m\s+writing\b"
    r"|\bnewbie\s+question\b|\bhypothetical(?:ly)?\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=256)
def asks_for_the_docs(prose: str) -> bool:
    """The post asks its question for a runbook, a checklist or the docs: what it names is a
    case to write down, not the run's state."""
    return _FOR_THE_DOCS.search(prose[:300]) is not None


#: A person's answer that what is above is real, its caret or not: "^ confirmed", "real, and
#: not the save pause this time".
_CONFIRMS = re.compile(rf"^\W{{0,3}}(?:\^+\s*)?(?:{CALLED_REAL})", re.IGNORECASE)


def confirms(prose: str) -> bool:
    """The post opens by saying that what was reported above it is real."""
    return _CONFIRMS.match(prose) is not None and not dismisses(prose)


@functools.lru_cache(maxsize=256)
def dismisses(prose: str) -> bool:
    """The post opens (after a courtesy) by dismissing what was reported: a false alarm, not an
    incident, not the run's, a warning, a test, a pause on purpose; or says near its start that
    it is about no incident. About no incident of the run, whatever thread it is in."""
    courtesy = _COURTESY.match(prose)
    opening = prose[courtesy.end() :] if courtesy else prose
    return bool(_DISMISSAL.match(opening) or _NO_INCIDENT.search(opening[:200]))


def about_incident(prose: str, title: str, context: ThreadContext) -> bool:
    """The post is about a specific incident of the run without reporting it live: its
    diagnosis, its fix, a recovery note, its post-mortem, or a follow-up in the incident's own
    thread. Not a crash inside an experiment, not a general proposal ("we should add a
    watchdog"), not a template, not a routine update that names faults in passing, not a
    retrospective over a period ("September reliability")."""
    if (
        thread_is_experiment(context)
        or is_general_post(prose, title)
        or reviews_a_period(prose, context.title)
        or dismisses(prose)
        or is_test_report(context.title)
        or is_template(context.title)
        or is_exercise(context.title, prose)
        or asks_for_the_docs(prose)
        or disowns(prose)
        or announces_planned_work(prose)
    ):
        return False
    text = f"{title}\n{prose}" if title else prose
    if thread_incident(context) is not None or declares_incident(context):
        return bool(prose.strip())
    if _RETROSPECTIVE_WORDS.found(context.title) and mentions_failure(context.title):
        return True  # the post-mortem of one incident, named in its title
    if routine_preemption(prose):
        return False
    if came_back_after_fault(prose) or counts_its_downtime(prose):
        return True
    if _ON_IT.search(prose[:300]) and (mentions_failure(text) or find_incident(prose) is not None):
        return True
    if _CLOSED_OR_CAUSED.search(prose[:300]):
        return True  # "incident resolved", "Root cause from the network team: …"
    if CAME_BACK_WORDS.found(prose[:DETECT_LIMIT]) and mentions_failure(prose):
        # a post that names the failure the run recovered from: "had a GPU fall off the bus
        # (Xid 79) …; training again from 17,000", an agent's daily recapping a lost node
        return True
    about = _ABOUT_ONE.search(text[:DETECT_LIMIT])
    return mentions_failure(text) and about is not None and not _asks_of_the_past(text, about)


def _asks_of_the_past(text: str, m: re.Match[str]) -> bool:
    """The words tying a post to an incident sit in a question about the past: "btw was the
    outage in march the one where the rack lost power?" names an old incident in passing."""
    left, right = sentence_bounds(text, m.start(), m.end())
    sentence = text[left:right].strip()
    return sentence.endswith("?") and HISTORY.search(sentence) is not None


# --------------------------------------------------------------------------------------------
# A report set apart inside a long post about something else: a weekly review's "Separately:
# the trainer has been sitting in the weight push since 06:40", an experiment report's
# "Unrelated, but it touches the main run" section, an agreement write-up's "The other thing".

#: "Not part of the review, but …": what the post is there for, set aside.
_NOT_PART_OF = (
    r"not\s+(?:part\s+of|about)\s+(?:the|this)\s+(?:review|pr|pull\s+request|postmortem|change)"
)
#: The words that set a paragraph apart from the post around it (as its opening or as the
#: heading before it).
_SET_APART = re.compile(
    r"^\W*(?:(?:but|and|oh|also)\W+)?(?:separately|separate\s+(?:thing|note|issue)|unrelated(?:ly)?|fyi"
    r"|(?:the|one)\s+(?:other|more)\s+thing|p\.\s?s\b|ps\b"
    rf"|{_NOT_PART_OF}"
    r"|meanwhile|(?:also,?\s+)?(?:right\s+now(?=\s*(?:[:,—–-]|$))|as\s+of\s+(?:this\s+(?:morning|afternoon|evening)|now|today))"
    r"|something\s+(?:that\s+is\s+|that's\s+|which\s+is\s+)?(?:happening|going\s+on)\s+(?:right\s+)?now"
    r"|while\s+(?:writing|collecting|checking|looking\s+at|pulling)\b[^.\n]{0,60}?\bi\s+(?:noticed|saw|found))",
    re.IGNORECASE,
)


#: What sets apart even a post's opening: "Unrelated to this PR but urgent: …", "Not part of
#: the review, but …".
_UNRELATED = re.compile(rf"^\W*(?:unrelated\b|{_NOT_PART_OF}\b)", re.IGNORECASE)


def buried_report(prose: str) -> str | None:
    """The incident kind a paragraph set apart reports, in a post the rules otherwise read as
    about something else (a review, an experiment's results), or None. The words that set it
    apart open the paragraph, a sentence in it ("Approving, the design is fine. But FYI: the
    main run has been down since 06:20"), or the heading before it."""
    blocks = prose[:DETECT_LIMIT].splitlines()
    for n, block in enumerate(blocks):
        if n > 0 and _SET_APART.match(blocks[n - 1]):
            told = block
        else:
            starts = [0] + [m.end() for m in SENTENCE_SPLIT.finditer(block)]
            told = next((block[i:] for i in starts if _SET_APART.match(block[i:])), "")
            if told is block and n == 0 and not _UNRELATED.match(told):
                continue  # "fyi the arm died overnight" opens the post: its subject, not aside
        if not told or names_another_workload(told) or ALL_FINE.search(told):
            continue
        found = find_incident(told)
        if found is not None:
            return found[0]
    return None


# --------------------------------------------------------------------------------------------
# An agent's status post that flags a fault: "🤖 knot-watch daily … ⚠️ jobset restarted once at
# 03:12: pod exited 1 … TPUHBMUncorrectable". The agent writes each day of what happened in it,
# so a flagged line is the fault's first word even when it tells the recovery too; not a line
# that points at where it was handled ("(#425)", "handled in #rl-infra", "(fixed)"), nor one
# about another workload.

#: A line the post flags: "⚠️ …", "❌ …", "🔴 …", after a bullet or not.
#: A flagged item: from its "⚠️", "❌" or "🔴" to the line's end or the next item's mark (chat
#: runs an agent's checklist into one line: "✅ loss 1.716 ⚠️ 3 restarts since 04:10 ✅ evals").
#: A flagged line this short is a heading over the paragraph that tells the fault.
_HEADING_WORDS: Final = 8
_ROW_MARKS = re.compile(r"⚠️?|❌|🔴")
_FLAGGED = re.compile(r"(?:⚠️?|❌|🔴)\s*(?P<line>[^\n✅☑⚠❌🔴🟢]+)")
#: A line that says what the marks mean, not what they flag: "Legend: 🔴 straggler = rank …".
_LEGEND = re.compile(r"\W*(?:legend|key|marks|symbols|icons)\s*:", re.IGNORECASE)
#: An agent's status field marked as not well: "Status: 🔴 1 straggler", "Status: 💾 disk — next
#: save will not fit", "Status: ⏸ stalled" (not "✅ all green", nor "🟡 1 possible straggler").
_STATUS_FLAGGED = re.compile(
    r"^\W*(?:status|state|health)\s*:\s*(?:🔴|❌|⚠️?|🟠|⏸️?|💾|❗|‼️?|🚨|⛔)\s*(?P<line>[^\n]+)",
    re.IGNORECASE | re.MULTILINE,
)
#: Told elsewhere already: where it is handled ("(#425)", "(Xid 79 on r09, #363)", "see
#: #425", "tracked in #425"), "handled", "fixed"; not an issue named for what it holds ("the
#: config in #19 has …").
_TOLD_ELSEWHERE = re.compile(
    r"\(\s*#\d+|#\d+\s*\)|(?:see|tracked\s+in|handled\s+in|filed\s+(?:as|in)|opened|→|->)\s*#\d+"
    r"|\bhandled\b|\bfixed\b",
    re.IGNORECASE,
)
#: The agent hands what it flagged to a person: "Flagging for a human", "needs a human
#: decision", "paging @lead", "Please check." (not "please check numbers before quoting", a
#: footer every digest carries).
_ASKS_A_HUMAN = re.compile(
    r"\b(?:flag(?:ging|ged)?\s+(?:this\s+|it\s+)?for\s+(?:a\s+)?human|needs?\s+(?:a\s+)?human"
    r"|human\s+(?:decision|eyes|attention|call)|paging\s+@|needs?\s+(?:your\s+)?attention"
    r"|please\s+(?:check|look|advise|take\s+a\s+look)(?!\s+(?:the\s+)?numbers)\b)",
    re.IGNORECASE,
)


#: An agent's heading that names an alert or an anomaly: "run-watch alert — loss spike …".
_AGENT_ALERT = re.compile(r"\b(?:alert|anomal(?:y|ies))\b.*", re.IGNORECASE)
#: An agent's field naming an anomaly, not "Anomalies: none".
_ANOMALY_FIELD = re.compile(
    r"(?:^|[.!?]\s+)\W*anomal(?:y|ies)\W*:\W*(?!none|n/?a\b|nothing|no\b|—|-)\w.*$",
    re.IGNORECASE | re.MULTILINE,
)


def agent_flags_fault(prose: str, rows: tuple[str, ...] = ()) -> str | None:
    """The incident kind of the fault an agent's post ("🤖 …") flags in a line or in a table
    row (``Document.flagged_rows``), or None."""
    if not is_agent_post(prose):
        return None
    head = prose[:DETECT_LIMIT]
    lines = []
    for m in _FLAGGED.finditer(head):
        if _LEGEND.match(head, head.rfind("\n", 0, m.start()) + 1):
            continue  # "Legend: 🔴 straggler = … · ⚠️ loss spike = …": what a mark would mean
        line = m.group("line")
        if len(line.split()) <= _HEADING_WORDS:
            # a flagged heading ("⚠️ Data order after the Jul 7 restart"): its paragraph tells
            line += " " + head[m.end() :].lstrip("\n").split("\n", 1)[0]
        lines.append(line)
    # a table row, its mark in any cell: "| save step 70000 | failed after 3 retries | ❌ |"
    lines.extend(_ROW_MARKS.sub(" ", row) for row in rows)
    status = _STATUS_FLAGGED.search(head)
    if status is not None and not (
        names_another_workload(status.group(0)) or said_planned(status.group(0))
    ):
        # the agent's own verdict, of the kind its lines tell
        told = find_incident(prose)
        return sharper_kind(told[0] if told else "outage", status.group("line"))
    fresh = [
        line
        for line in lines
        if not (names_another_workload(line) or _TOLD_ELSEWHERE.search(line) or said_planned(line))
    ]
    for line in fresh:
        if signals_heard(line):
            return sharper_kind("outage", line)
    if not _ASKS_A_HUMAN.search(head):
        return None
    if fresh:
        # "⚠️ L30/E23 is taking 39.6% of layer-30 tokens … needs a human decision": what it
        # flags is told in numbers, and it hands it to a person
        return sharper_kind("outage", " ".join(fresh))
    # its heading an alert ("run-watch alert — loss spike not recovering … Paging @lead"), or
    # a field of the post an anomaly ("**Anomaly:** tokens_counted per step dropped …")
    first = head.split("\n", 1)[0]
    alerted = _AGENT_ALERT.search(first) or _ANOMALY_FIELD.search(head)
    if alerted is None or names_another_workload(alerted.group(0)):
        return None
    return None if find_incident(prose) is not None else sharper_kind("outage", alerted.group(0))
    return None
