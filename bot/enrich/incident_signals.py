"""The phrases and shapes that report an incident of the run, and the incident kinds they name.

Data, not judgement: ``bot.enrich.incidents`` runs these over cleaned text and judges every match
in its sentence (negations, questions, history, other workloads) before it counts. A signal is a
regex with the substrings that must be present for it to run (``anchors``), so text without
incident words costs a few substring searches. Most signals name their kind; a ``FAULT`` (an
error stream) takes its kind from the part of the run its sentence names, a ``STALL`` (a phase
never left) is a hang, a ``NOW_STATE`` takes the kind of its state word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from bot.enrich.lowered import lowered

#: Incident kinds, most specific (root cause) first: "crashed after an OOM" is an OOM.
#: "crash" and "hang" say least about the cause, so they come last.
KIND_PRIORITY: Final[tuple[str, ...]] = (
    "hardware",
    "storage",
    "oom",
    "restore-failed",
    "checkpoint-failed",
    "network",
    "preemption",
    "node-loss",
    "hang",
    "crash",
    "outage",
)


@dataclass(frozen=True, slots=True)
class Signal:
    """One phrase that reports an incident of ``kind``.

    ``anchors`` are lower-case substrings of which every match contains at least one: the regex
    only runs on text containing an anchor, which keeps the common case (no incident words) to a
    few substring searches. ``needs_subject`` marks ambiguous words ("stuck", "stalled") that
    only count when the sentence names a part of the system.
    """

    kind: str
    anchors: tuple[str, ...]
    pattern: str
    needs_subject: bool = False

    def compile(self) -> re.Pattern[str]:
        return re.compile(rf"\b(?:{self.pattern})\b", re.IGNORECASE)

    def compile_lowered(self) -> re.Pattern[str] | None:
        """The pattern for lowercased text (``bot.enrich.lowered``), or None when its words
        tell cases apart."""
        return lowered(self.compile())


def _sig(kind: str, anchors: str, pattern: str, *, needs_subject: bool = False) -> Signal:
    return Signal(kind, tuple(anchors.split()), pattern, needs_subject)


_NODE = r"(?:nodes?|hosts?|workers?|vms?|slices?|machines?|tpus?|gpus?|pods?)"
_SUBJ = (
    r"(?:job|jobs|run|training|trainer|trainers|process|processes|worker|workers|task|pod|rank\s*\d+"
    r"|(?:all\s+|every\s+|the\s+)?ranks"
    r"|head(?:\s+node)?|coordinator|driver|learner|controller|launcher)"
)
#: A machine's name: letters and digits twice ("r12n4"), a dashed name ending in a number
#: ("gpu-node-17", "gpu-r2-n4") or a zero-padded number after letters ("b042", "g022"), which
#: a model's name never has ("llama3", "v3").
_HOST = (
    r"(?:[a-z]+\d+[a-z]+\d+[\w-]*|[a-z][a-z0-9]*(?:-[a-z0-9]+)*-[a-z]{0,3}\d+[\w-]*"
    r"|[a-z]{1,8}0\d{1,4}\b)"
)
_FAIL_TO = (
    r"(?:fail(?:ed|s|ing)?\s+to|unable\s+to|could\s+not|couldn't|cannot|can't"
    r"|refus(?:es|ed|ing)\s+to|won't)"
)

#: A fault (an error stream) takes its incident kind from its sentence (``fault_kind``); a
#: stall (a phase never left: a save, a barrier) is a hang whatever the phase.
FAULT: Final = "fault"
#: Since the run's own restart: "since at least the Mar 20 restart", "since the 600 relaunch".
SINCE_RESTART: Final = (
    r"since\s+(?:at\s+least\s+)?(?:the|yesterday's|today's|this\s+morning's|last\s+night's)\s+"
    r"(?:[\w:.,-]+\s+){0,2}?(?:re-?start|re-?launch|resume|requeue|redeploy)\w*"
)
STALL: Final = "stall"
#: The run, a state and a word for now in one clause; its kind is the state's.
NOW_STATE: Final = "now-state"
#: A sentence's subject given by name, with no article, and its copula: "wisp is ", "job ",
#: ", wisp's ". What it names is judged by ``_NOT_A_NAME``.
_NAMED = (
    r"(?:^|(?<=[.;:!?,]\s)|(?<=\band\s)|(?<=\bso\s)|(?<=\bnow\s))(?P<name>[a-z][\w-]*)"
    r"(?:'s|\s+(?:is|got|has\s+been|seems|looks))?\s+(?:still\s+|now\s+|just\s+|totally\s+"
    r"|completely\s+|also\s+)?"
)

SIGNALS: Final[tuple[Signal, ...]] = (
    # hardware faults
    _sig(
        "hardware",
        "nvlink",
        r"nvlink\s+(?:domain\s+|fabric\s+|switch\s+)?(?:errors?|failures?|faults?|down|degraded"
        r"|inactive)",
    ),
    _sig(
        "hardware",
        "nvlink",
        r"(?:errors?|failures?|faults?)\s+on\s+(?:the\s+)?nvlink"
        r"|(?:degraded|flaky|failing|faulty|broken)\s+nvlink",
    ),
    _sig("hardware", "xid", r"s?xid(?:\s*errors?)?\s*\(?\d{1,3}|s?xid\s+errors?"),
    _sig(
        "hardware",
        "uncorrect double dbe",
        r"(?:uncorrectable|uncorrected|double[- ]bit|dbe)\s+(?:ecc|memory|errors?)",
    ),
    _sig("hardware", "ecc", r"ecc\s+(?:errors?|failures?|faults?)"),
    _sig(
        "hardware",
        "ecc",
        # "ECC on GPU3", "GPU 3 threw ECC": how people shorten it in chat
        r"ecc\s+on\s+(?:(?:the\s+)?(?:gpu|device|card|chip|node|host)\s*\d*|[a-z]+-?\d+\b)"
        r"|(?:threw|throws|throwing|hit|hits|got|reported|reports|showing|shows)\s+(?:an?\s+)?"
        r"(?:\w+\s+)?ecc(?!\s+(?:enabled|disabled|mode|support|on\b|off\b|turned|settings?))",
    ),
    _sig("hardware", "bus", r"(?:fell|fallen|falls|dropped)\s+off\s+the\s+(?:pcie\s+)?bus"),
    # a GPU the host no longer sees: "GPU 2 doesn't come back after a reset", "lspci doesn't
    # see it"
    _sig(
        "hardware",
        "lspci come",
        r"lspci\s+(?:doesn't|does\s+not|no\s+longer|can't|cannot)\s+(?:see|show|list)"
        r"|gpu\s*\d*\s+(?:doesn't|does\s+not|won't|didn't|did\s+not)\s+come\s+back\s+after\s+(?:a\s+|the\s+)?"
        r"(?:reset|reboot|power[\s-]cycle)",
    ),
    # network: the fabric between machines
    _sig(
        "network",
        "port link card",
        r"(?:infiniband|ib|roce|nic|hca|network|fabric|switch)\s+(?:port|link|card)s?\s+"
        r"(?:faults?|failures?|failed|flap\w*|down|errors?|went\s+down|dropp\w*|bounc\w*)",
    ),
    _sig("network", "flap", r"(?:link|port)s?\s+(?:kept\s+|keeps\s+|started\s+)?flap\w*"),
    # "IB on rack r14 is flapping", "rail 3 keeps flapping"
    _sig(
        "network",
        "flapping flapped",
        r"(?:infiniband|ib|roce|nic|hca|rail\s+\d+|mlx5_\d+|ib\d+)\s+(?:on\s+(?:rack\s+|leaf\s+)?[\w-]+\s+)?"
        r"(?:is\s+|are\s+|keeps\s+|kept\s+)flapping"
        # "spine-3 in hall B is flapping", "n3↔brd flapped twice, 02:14 and 02:16"
        r"|\b(?:spine|leaf|tor|uplink)[\w-]*\s+(?:in\s+\w+(?:\s+\w)?\s+)?(?:is\s+|are\s+|keeps\s+)flapping"
        r"|[\w-]+\s*(?:↔|<->)\s*[\w-]+\s+(?:link\s+)?(?:is\s+|keeps\s+)?(?:flapping|flapped)\b",
    ),
    _sig("network", "symbol", r"symbol\s+errors?|link\s+(?:down|errors?)\s+on\s+(?:leaf|spine)"),
    _sig(
        "network",
        "nccl net",
        r"nccl\s+(?:warn\s+)?net/(?:ib|socket)|nccl\s+(?:\w+\s+)?(?:network|connection)\s+errors?",
    ),
    _sig(
        "hardware",
        "faulty defective broken dead failing bad",
        r"(?:faulty|defective|broken|dead|failing|bad)\s+(?:infiniband\s+|ib\s+|network\s+)?"
        r"(?:gpus?|hosts?|nodes?|nics?|hcas?|tpus?|chips?|dimms?|ports?|links?|hardware|cables?)",
    ),
    _sig("hardware", "hardware", r"hardware\s+(?:faults?|failures?|errors?|issues?|problems?)"),
    _sig("hardware", "fault failure", r"(?:tpu|gpu|chip)\s+(?:hardware\s+)?(?:faults?|failures?)"),
    _sig("hardware", "machine pcie", r"machine[- ]check(?:\s+exception)?|pcie\s+(?:errors?|aer)"),
    _sig("hardware", "remap", r"row[- ]remap(?:ping)?\s+(?:failures?|pending)"),
    # node / link loss
    _sig("node-loss", "lost", rf"lost\s+(?:\w+\s+){{0,2}}{_NODE}"),
    _sig(
        "node-loss",
        "lost contact went disappeared dropped was were got been became died",
        rf"{_NODE}\s+(?:\S+\s+){{0,3}}?(?:lost\s+connectivity|lost\s+contact"
        r"|went\s+(?:down|offline|away)|disappeared|dropped\s+out|(?:was|were|got|is|are|been)\s+"
        r"(?:lost|drained|unreachable|terminated)"
        r"|became\s+unreachable|died)",
    ),
    _sig(
        "preemption",
        "preempted evicted reclaimed",
        rf"{_NODE}\s+(?:pools?\s+)?(?:\S+\s+){{0,3}}?(?:was|were|got|is|are|been)\s+"
        r"(?:preempted|evicted|reclaimed)",
    ),
    _sig(
        "node-loss",
        "lost down dead gone offline unreachable",
        # "node r12n4 lost", "host a3-12 down": a named machine and what happened to it
        rf"{_NODE}\s+[\w.-]*\d[\w.-]*\s+(?:is\s+|was\s+|went\s+)?"
        r"(?:lost|down|dead|gone|offline|unreachable)",
    ),
    _sig("node-loss", "connectivity", r"lost\s+(?:network\s+)?connectivity"),
    # a count of the fleet gone, as a health agent says it: "64/64 nodes unreachable"
    _sig(
        "node-loss",
        "unreachable offline",
        rf"\b[1-9]\d*\s*/\s*\d+\s+{_NODE}\s+(?:are\s+|went\s+)?(?:unreachable|offline)\b",
    ),
    _sig(
        "node-loss",
        "lost state",
        r"lost\s+(?:the|our)\s+(?:allocation|reservation|capacity)"
        rf"|{_NODE}\s+(?:went|is|are|was|were|got)\s+(?:in(?:to)?\s+)?(?:a\s+)?(?:bad|error|failed"
        r"|broken)\s+state",
    ),
    _sig(
        "node-loss",
        "down gone off dead",
        rf"\d+\s+(?:of\s+(?:our\s+|the\s+)?(?:\d+\s+)?)?{_NODE}\s+(?:are\s+|were\s+|as\s+)?"
        r"(?:down|gone|off|offline|lost|dead)",
    ),
    _sig("node-loss", "power", r"lost\s+power|power\s+(?:event|outage|loss|failure)"),
    _sig(
        "node-loss",
        "vanished disappeared",
        r"[a-z][a-z-]*\d[\w-]*\s+(?:just\s+)?(?:vanished|disappeared|dropped\s+out|went\s+away)",
    ),
    _sig(
        "preemption",
        "preempt",
        r"preempt(?:ed|ions?)(?![- ](?:safe|tolerant|aware|handl\w*|resilien\w*|support|logic))",
    ),
    _sig(
        "preemption",
        "reclaim",
        rf"(?:reclaimed|evicted)\s+(?:\d+\s+(?:of\s+(?:our\s+|the\s+)?\d+\s+)?)?{_NODE}",
    ),
    _sig(
        "node-loss",
        "lost",
        # "lost r02n6": a machine named by a host name (letters with digits in it)
        r"lost\s+(?:node\s+|host\s+)?[a-z][a-z-]*\d[\w-]*(?![\w-]*\s+(?:min|minutes|hours?|steps?"
        r"|tokens?|gpus?))",
    ),
    _sig("node-loss", "pingable powered", r"not\s+pingable|powered\s+(?:off|down)\b"),
    # ECC errors on the rise: "correctable HBM ECC counts climbing, 4,812 now", "a rising
    # correctable ECC rate"
    _sig(
        "hardware",
        "climbing rising increasing growing",
        r"(?:ecc|sbe|dbe|xid)\s+(?:error\s+)?(?:counts?|errors?)\s+(?:\w+\s+){0,2}?(?:climbing|rising"
        r"|increasing|growing)|(?:climbing|rising|increasing|growing)\s+(?:\w+\s+){0,2}?(?:ecc|sbe|dbe)"
        r"\s+(?:error\s+)?(?:rates?|counts?|errors?)",
    ),
    # "restart onto the async-ckpt build is failing: resume from 104000 →"
    _sig(
        "restore-failed",
        "failing",
        r"(?:restart|resume|restore|relaunch)\s+(?:onto|from|of|to)\s+(?:[\w.-]+\s+){0,4}?(?:is|keeps)\s+"
        r"failing",
    ),
    # a checkpoint that will not load, its error beside it: "load ckpt 104000
    # FileNotFoundError: …"
    _sig(
        "restore-failed",
        "error failed fails",
        r"(?:load(?:ing)?|restor(?:e|ing)|resum(?:e|ing))\s+(?:from\s+)?(?:the\s+)?(?:ckpt|checkpoint)\s+"
        r"(?:step[_\s]?)?\d[\d,.]*k?\s+[^\n]{0,20}?(?:\w*Error|failed|fails)",
    ),
    # a shared store too slow to list: "ls /lustre/tsubame/ckpt hangs on the login node"
    _sig(
        "storage",
        "hangs hung hanging",
        r"\b(?:ls|df|du|stat)\s+(?:-\w+\s+)?/\S+\s+(?:\w+\s+){0,2}?(?:hangs|hung|is\s+hanging|just\s+hangs)",
    ),
    # "rank 4411 gone", "ranks 512-519 dropped": a rank named and lost
    _sig(
        "node-loss",
        "gone dropped died dead lost",
        r"ranks?\s+\d+(?:\s*[–-]\s*\d+)?\s+(?:(?:is|are|just|has|have)\s+)?"
        r"(?:gone|dropped(?:\s+out)?|died|dead|lost)(?!\s+(?:from|in)\s+the\s+(?:log|plot|panel))",
    ),
    # "why are 128 of our trn2 nodes in shutting-down??", "nodes terminating"
    _sig(
        "node-loss",
        "shutting terminating terminated",
        rf"{_NODE}\s+(?:are\s+|is\s+|were\s+)?(?:in\s+|being\s+)?(?:shutting[\s-]down|terminating"
        r"|terminated)",
    ),
    _sig(
        "node-loss",
        "died dead gone down",
        # "r12n4 died", "gpu-node-17 is dead": a host name (letters and digits, twice, or a
        # dashed name ending in a number) and its end; not a model name ("llama3 is dead simple")
        rf"{_HOST}\s+(?:just\s+|has\s+)?(?:died|(?:is|was|went)\s+(?:dead|gone|down))"
        r"(?!\s+(?:simple|easy|wrong|on\s+arrival|set\s+on))",
    ),
    _sig(
        "node-loss",
        "cordon drain",
        # "r07n3 is cordoned": a named machine taken out of service
        r"[a-z][a-z-]*\d[\w-]*\s+(?:is|was|got|has\s+been|stays)\s+(?:cordoned|drained)",
    ),
    _sig("node-loss", "gang", r"gang(?:\s+scheduling)?\s+(?:failed|failures?|broke|broken)"),
    # the provider taking spot capacity back: a preemption, however many machines it names
    _sig("preemption", "spot", r"spot\s+(?:reclaim\w*|interruptions?)"),
    _sig("node-loss", "maintenance", r"host\s+maintenance\s+event"),
    _sig(
        "node-loss",
        "unhealthy notready",
        # "node aks-h200-0017 NotReady": a machine, its name, its state
        rf"unhealthy\s+{_NODE}|{_NODE}\s+(?:[a-z][\w.-]*\d[\w.-]*\s+)?(?:is\s+)?(?:marked\s+)?"
        r"(?:unhealthy|notready)",
    ),
    # out of memory
    _sig("oom", "memory", r"out[- ]of[- ]memory|ran\s+out\s+of\s+(?:\w+\s+)?memory"),
    _sig(
        "oom",
        "oom",
        r"oom(?:s|ed|ing|'d|'ing|-?kill(?:ed|er|s)?)?|oom\s+kill(?:ed|er|s)?|out_of_memory",
    ),
    _sig("oom", "exhaust", r"(?:host\s+)?memory\s+exhaust(?:ed|ion)|resource_exhausted"),
    _sig("oom", "killed", r"killed\s+by\s+the\s+(?:container\s+runtime|kernel|oom)"),
    _sig(
        "oom",
        "137 memoryerror allocate",
        r"exit\s+(?:code\s+)?137|memoryerror"
        r"|cannot\s+allocate\s+memory",
    ),
    # restore / checkpoint failures
    _sig(
        "restore-failed",
        "restore resume reload checkpoint ckpt",
        rf"{_FAIL_TO}\s+(?:restore|resume|reload"
        r"|load\s+(?:the\s+|a\s+|from\s+)?(?:\w+\s+)?(?:checkpoint|ckpt))",
    ),
    # "the restart from 195,380 is refusing to load"
    _sig(
        "restore-failed",
        "restart restor resum relaunch",
        rf"(?:restart|restore|resume|relaunch)\b[^.;\n]{{0,30}}?{_FAIL_TO}\s+(?:load|start|come\s+up)",
    ),
    _sig(
        "restore-failed",
        "restor resum checkpoint",
        r"(?:restore|restoring|resume|resuming|checkpoint\s+(?:load|loading|restore))\s+"
        r"(?:is\s+|was\s+|has\s+)?(?:stalled|stuck|hung|hanging|failed|failing|timed\s+out)",
    ),
    _sig(
        "restore-failed",
        "restore resume",
        r"(?:restore|resume)\s+(?:failures?|errors?"
        r"|timeouts?)",
    ),
    _sig(
        "restore-failed",
        "restore resume",
        # "the restore from step 52,500 fails on every attempt", "restore after preemption fails"
        r"(?:restore|resume)\s+(?:[\w,.]+\s+){0,4}?(?:fails|failed|is\s+failing|keeps\s+failing"
        r"|blows\s+up|blew\s+up|crashes|crashed|errors\s+out)",
    ),
    _sig(
        "restore-failed",
        "corrupt",
        r"corrupt(?:ed)?\s+(?:checkpoint|ckpt)|(?:checkpoint|ckpt)\s+(?:is\s+|was\s+)?corrupt",
    ),
    _sig(
        "checkpoint-failed",
        "checkpoint ckpt",
        r"(?:checkpoint|ckpt)(?:ing)?\s+(?:(?:at\s+)?(?:step\s+)?[\d,.]+k?\s+)?"
        r"(?:(?:save|write|upload|commit)s?\s+)?(?:is\s+|was\s+|keeps\s+)?"
        r"(?:failed|failing|failures?|errored|erroring|timed\s+out|timing\s+out)",
    ),
    _sig(
        "checkpoint-failed",
        "checkpoint ckpt",
        r"(?:fail(?:ed|s|ing)?\s+to|unable\s+to|could\s+not|couldn't|cannot|can't|can\s+not)\s+"
        r"(?:save|write|upload|commit|serialize)\s+(?:the\s+|a\s+|any\s+)?(?:\w+\s+)?(?:checkpoint|ckpt)",
    ),
    _sig(
        "checkpoint-failed",
        "checkpoint ckpt",
        r"(?:saving|writing)\s+(?:the\s+)?(?:checkpoint|ckpt)\s+(?:failed|timed\s+out|hung"
        r"|stalled)|(?:checkpoints|ckpts)\s+(?:have\s+)?stopped\s+(?:appearing|landing|being\s+"
        r"(?:written|saved|uploaded))",
    ),
    _sig(
        "checkpoint-failed",
        "save",
        # "the 64,000 save failed", "the hero save at 24k failed", "the step_260000 save just
        # failed on every rank"
        r"(?:the\s+)?(?:(?:[\d,.]+k?|step[_-]?\d+)\s+)?saves?\s+(?:at\s+(?:step\s+)?(?:\d{1,2}:\d\d|[\d,.]+k?)\s+)?"
        r"(?:just\s+|has\s+|have\s+|also\s+|are\s+|all\s+)?(?:failed|failing|is\s+failing|errored|timed\s+out)"
        # "Saves of 32k steps 2,850, 3,000 and 3,150 all failed"
        r"|saves\s+of\s+[^.;\n]{0,50}?\ball\s+(?:failed|errored|timed\s+out)"
        # "save to n3 replica + cold bucket failed (403)": a destination in between
        r"|saves?\s+(?:to|into|on)\s+(?:[^\s.;:,]+\s+){1,5}?(?:failed|errored|timed\s+out)\b"
        # "i think we haven't saved since 258k"
        r"|(?:haven't|hasn't|have\s+not|has\s+not)\s+(?:been\s+)?sav(?:ed|ing)\s+(?:anything\s+)?since",
    ),
    _sig(
        "checkpoint-failed",
        "checkpoint ckpt",
        # "checkpoint save to gs://bucket/path failed with 503": a destination in between
        r"(?:checkpoint|ckpt)\s+(?:[\d,.]+k?\s+)?(?:save|write|upload|commit)s?\s+(?:to|into|on)\b"
        r"(?:\s+\S+){0,4}?\s+(?:failed|failing|errored|timed\s+out"
        r"|keeps?\s+(?:failing|timing\s+out|erroring))",
    ),
    # "checkpoint save for step 318,000 exceeded save_timeout (1800s)"
    _sig(
        "checkpoint-failed",
        "exceeded",
        r"(?:checkpoint|ckpt)\s+(?:save|write|upload)\s+(?:for|of|at)\s+(?:step\s+)?[\d,.]+k?\s+"
        r"(?:exceeded|hit|blew\s+(?:past|through))\s+(?:the\s+|its\s+)?\w*time-?out",
    ),
    # a saved checkpoint found broken by what reads it (an export, a restore test, a verifier,
    # an eval's load): "Export of step_248000 fails: shard … is short", "ckpt-verify failed on
    # gx70-s1 step_171000", "step_0117500 incomplete: 61/64 shards", "can't load step 412000"
    _sig(
        "restore-failed",
        "step_ incomplete truncated mismatch 0-byte fails failed load",
        r"(?:step[_-]?\d{4,}|step\s+\d[\d,]{3,})\b[^.\n?]{0,30}?(?:\b(?:is\s+|are\s+)?"
        r"(?:incomplete|truncated|checksum\s+mismatch|0-byte\s+shards?)\b"
        r"|:\s+(?:shard|manifest|metadata)\b[^.\n]{0,40}?\b(?:is\s+short|truncated|missing|mismatch)\b)"
        r"|(?:export|restore\s+test|ckpt-verify|verif(?:y|ication))\s+(?:of\s+|on\s+|for\s+)?"
        r"(?:\S+\s+){0,2}?(?:step[_-]?\d{4,}|\d{2,4}k)\b[^.\n]{0,12}?\bfail(?:s|ed)\b"
        r"|(?:ckpt-verify|verif(?:y|ication))\s+failed\s+on\s+(?:\S+\s+)?step[_-]?\d{4,}"
        r"|(?:can't|cannot|couldn't|fails?\s+to|failed\s+to)\s+load\s+(?:the\s+)?"
        r"(?:checkpoint\s+)?step[_-]?\s?\d{4,}",
    ),
    # storage
    _sig("storage", "quota", r"quota[\s_]*(?:exceeded|exhausted)|exceeded\s+(?:\w+\s+)?quota"),
    _sig("storage", "full", r"(?:disk|volume|filesystem|bucket)\s+(?:is\s+|was\s+)?full"),
    # the input starving the run, as a share of its step: "loader wait 48% of step time" (a
    # healthy loader waits a few per cent at most)
    _sig(
        "storage",
        "wait",
        r"(?:data|input|dataloader|data\s+loader|loader)\s+wait\s+(?:is\s+|at\s+|of\s+)?~?"
        r"(?:1[5-9]|[2-9]\d)(?:\.\d+)?\s*%\s+of\s+(?:the\s+|each\s+|every\s+)?step",
    ),
    # "did the staging dir just fill up?", "/scratch filled up overnight"
    _sig(
        "storage",
        "fill filled filling",
        r"(?:dir|directory|disk|volume|filesystem|fs|partition|bucket|scratch|staging|/[\w/.-]+)"
        r"\s+(?:just\s+|has\s+|is\s+)?(?:fill|filled|filling)\s+up\b",
    ),
    # an object store out of room: "XMinioStorageFull", "reached its minimum free drive threshold"
    _sig(
        "storage",
        "storagefull insufficient threshold",
        r"\w*storagefull|507\s+insufficient\s+storage"
        r"|reached\s+its\s+minimum\s+free\s+(?:drive|disk)\s+threshold",
    ),
    _sig("storage", "space enospc", r"no\s+space\s+left(?:\s+on\s+device)?|enospc"),
    # a pasted `df` line of a full mount: "weka-ckpt  400T  400T     0 100% /ckpt"
    _sig(
        "storage", "100%", r"\d[\d.]*[kmgtpe]i?\s+\d[\d.]*[kmgtpe]i?\s+0[kmgtpe]?i?\s+100%\s+/\S*"
    ),
    _sig(
        "storage",
        "gcs s3 bucket storage nfs lustre gpfs weka beegfs ceph object",
        # "GPFS /gpfs/work unavailable", "lustre is degraded"
        r"(?:gcs|s3|bucket|storage|nfs|lustre|gpfs|weka|beegfs|ceph|gcsfuse|object\s+store)"
        r"\s+(?:/\S+\s+)?(?:is\s+|was\s+)?(?:5\d\d|unavailable|outage|down|degraded)"
        # and in Spanish: "el MDS0 de lustre está degradado desde ~01:20"
        r"|(?:lustre|gpfs|weka|nfs|storage|bucket)\s+está\s+(?:degradad[oa]|caíd[oa])",
    ),
    _sig(
        "storage",
        "storage read-only",
        r"storage\s+(?:outage|failure|errors?)"
        r"|read-only\s+file\s*system",
    ),
    _sig("storage", "503 500", r"(?:503|500)s?\s+(?:errors?\s+)?from\s+(?:gcs|s3|the\s+bucket)"),
    _sig(
        "storage",
        "reject refus deny denied forbidden 403 fail",
        r"(?:bucket|storage|gcs|s3|filesystem|volume|nfs)\s+(?:is\s+|are\s+)?(?:rejecting|refusing"
        r"|denying)\s+(?:\w+\s+)?(?:writes?|reads?|requests?|uploads?)"
        r"|(?:writes?|uploads?)\s+(?:\w+\s+){0,4}?(?:fail|fails|failing|return|returns)\s+(?:with\s+)?"
        r"(?:a\s+)?(?:403|401|permission\s+denied|access\s+denied|forbidden)",
    ),
    _sig(
        "storage",
        "read-only read only disk",
        # "the FS was remounted read-only", "remounting filesystem read-only", "read-only
        # remounted"
        r"(?<!#\d\d\d\d\s)(?<!#\d\d\d\s)(?:went|is|are|(?:re-?)?mounted|remounting(?:\s+\w+){0,2})"
        r"\s+(?:as\s+)?read[- ]only|read[- ]only\s+re-?mount(?:ed)?\b"
        r"|disk\s+(?:failure|failed|died)",
    ),
    # crashes
    _sig(
        "crash",
        "crash",
        # (not crashes in general: "on every crash", "restarts after crashes", "the crashes")
        r"(?<!pre-)(?<!post-)(?<!pre)(?<!every\s)(?<!each\s)(?<!any\s)crash(?:ed|ing)?"
        r"(?![\s-]+(?:course|courses|test|tests|cart))"
        r"|(?<!after\s)(?<!the\s)(?<!of\s)(?<!any\s)crashes(?![\s-]+(?:courses|tests|carts))"
        r"|crashloop\w*",
    ),
    # what a dead process prints: "CUDA error: an illegal memory access", "ncclSystemError"
    _sig(
        "crash",
        "cuda illegal cublas",
        r"cuda\s+(?:runtime\s+)?errors?|illegal\s+memory\s+access|cudaerror\w+"
        r"|cublas_status_(?!success)\w+",
    ),
    _sig(
        "network",
        "nccl",
        r"nccl\s+(?:system\s+|internal\s+|remote\s+|communicator\s+|collective\s+"
        r"|unhandled\s+(?:\w+\s+)?)?(?:errors?|failures?|failed|aborted)"
        r"|nccl(?:system|internal|remote|unhandledcuda)error",
    ),
    # a diverged run trains nothing: "loss is nan again", "every step since is NaN"
    _sig(
        "crash",
        "nan inf",
        r"loss(?:es)?\s+(?:is|are|was|went|became|becomes|goes|turned|has\s+gone)\s+"
        r"(?:\w+\s+)?(?:nan|inf)s?|(?:nan|inf)\s+loss(?:es)?|loss(?:es)?\s+of\s+(?:nan|inf)"
        r"|(?:every|each|all)\s+(?:\w+\s+){0,2}(?:is|are)\s+nans?|everything(?:'s|\s+is)\s+nans?"
        # "the loss panel just says NaN for the last few points"
        r"|loss(?:\s+\w+){0,4}?\s+(?:says?|shows?|showing|reads?|reports?)\s+(?:only\s+)?nans?",
    ),
    # Slurm's verdicts and a kernel that gave up take the host with them
    _sig("node-loss", "node_fail panic", r"node_fail|kernel\s+panic\w*"),
    _sig(
        "crash",
        "seg sigsegv sigabrt sigbus sigill sigkill core bus",
        r"seg(?:mentation\s+)?fault(?:ed|s)?|sig(?:segv|abrt|bus|ill|kill)|core\s+dumped|bus\s+error",
    ),
    _sig(
        "crash",
        "died exited killed blew errored failed down",
        rf"{_SUBJ}\s+(?:\w+\s+){{0,2}}?(?:died|has\s+died|exited\s+unexpectedly|was\s+killed"
        r"|got\s+killed|blew\s+up|errored\s+out|(?:has\s+|have\s+)?failed(?!\s+to\b)|is\s+down"
        r"|went\s+down(?!\s+(?:by\s+)?~?\d))",
    ),
    _sig(
        "crash",
        "exited",
        r"exited\s+with\s+(?:a\s+)?(?:non-?zero|(?:exit\s+)?code\s+[1-9]|status\s+[1-9])",
    ),
    _sig("crash", "fatal unrecoverable", r"(?:fatal|unrecoverable)\s+error"),
    # a supervisor's log of a worker crash-looping: "decode-worker[17] exited (1), restart 31"
    _sig(
        "crash",
        "restart restarts",
        r"exited\s*\(\s*(?:code\s+|status\s+)?[1-9]\d*\s*\)\s*[,;]?\s*restarts?\s*[:#=]?\s*\d{2,}",
    ),
    # how chat says the run stopped: "training stopped at 102,340", "job exited at 02:03",
    # "slurm killed the job", "the trainer pod keeps restarting", "it died. again."
    _sig(
        "crash",
        "stopped halted exited vanished disappeared",
        rf"{_SUBJ}\s+(?:has\s+|just\s+)?(?:stopped(?!\s+\w+ing\b)|halted|exited|(?:vanished|disappeared)"
        r"(?=\s*(?:$|[.,;!]|from\s+(?:the\s+)?(?:queue|squeue|scheduler|cluster))))\b"
        r"(?!\s+(?:cleanly|normally|successfully|0\b|with\s+(?:exit\s+)?(?:code\s+|status\s+)?0\b"
        r"|(?:because|after|when)\s+(?:i|we)\b))",
    ),
    _sig(
        "crash",
        "killed cancel",
        r"(?:slurm|the\s+scheduler|kubernetes|k8s|the\s+kernel|the\s+oom\s+killer)\s+"
        r"(?:just\s+)?(?:killed|cancell?ed|evicted|terminated)\s+(?:the|our)\s+"
        r"(?:job|run|training|trainer|pods?)|(?:job|run|training)\s+(?:was\s+|got\s+)?"
        r"(?:killed|cancell?ed)\s+by\s+(?:slurm|the\s+scheduler|kubernetes|k8s)",
    ),
    _sig(
        "crash",
        "restart loop respawning",
        r"(?:keeps?|kept)\s+(?:restarting|respawning)"
        r"|restart(?:ing)?\s+(?:from\s+(?:step\s+)?[\d,.]+k?\s+)?(?:in\s+a\s+loop|over\s+and\s+over)"
        r"|(?:restart|restore)[\s-]?loop\w*|boot[\s-]?loop\w*",
    ),
    _sig(
        "crash",
        "died exited",
        r"\bit\s+(?:just\s+)?(?:died|exited)\b(?!\s+(?:down|0\b|cleanly|normally|successfully"
        r"|with\s+(?:exit\s+)?(?:code\s+|status\s+)?0\b))",
    ),
    # "The first job of the 16k tail died on its first step"
    _sig(
        "crash", "died crashed", r"\b(?:job|run)\b[^.,;:\n]{0,30}?\b(?:died|crashed)\b(?!\s+down)"
    ),
    # the whole run taken down: "whole job torn down by megascale", "This took main down.",
    # "s3 aborted at 661,2xx", "loon-main not coming back after the scale-up"
    _sig(
        "crash",
        "torn took aborted coming",
        r"\b(?:job|run|training)\s+(?:was\s+|got\s+)?torn\s+down\b"
        r"|\btook\s+(?:the\s+)?(?:main(?:\s+run)?|run|job|training|everything)\s+down\b"
        r"|\baborted\s+at\s+(?:step\s+)?\d"
        r"|\bnot\s+coming\s+back\b(?!\s+(?:down|to|on))",
    ),
    # a double-bit error counted: "volatile DBE = 1 on bw-019 gpu5"
    _sig("hardware", "dbe", r"\bdbe\s*[=:]\s*[1-9]"),
    # a checkpoint written empty: "three 0-byte shards", "every optim/ shard at 0 bytes"
    _sig(
        "checkpoint-failed",
        "byte empty",
        r"\b(?:0|zero)[- ]?byte\s+(?:shards?|files?)\b|(?:shards?|files?)\b[^.\n]{0,40}?"
        r"\b(?:are|is|at|were|was)\s+(?:0|zero)\s+bytes?\b",
    ),
    # a save that will not end: "has been in the save at 993,000 for 45 min"
    _sig(
        "hang",
        "save",
        r"\b(?:has\s+been|been|is|was)\s+in\s+the\s+save\b[^.\n]{0,30}?\bfor\s+(?:\d+|an?\s+hour|over)",
    ),
    # an RL run's rewards all gone: "every math reward is 0.0 since step 820??"
    _sig(
        "outage",
        "reward",
        r"\b(?:every|all)\s+(?:the\s+)?(?:\w+\s+)?rewards?\s+(?:is|are)\s+(?:now\s+)?(?:0(?:\.0+)?|zero)\b"
        r"|\brewards\s+are\s+(?:exactly\s+|all\s+)(?:0(?:\.0+)?|zero)\b"
        # "reward/mean is exactly 0.000 since iter 836"
        r"|\breward(?:/\w+)?\s+(?:is|has\s+been)\s+exactly\s+(?:0(?:\.0+)?|zero)\s+since\b",
    ),
    # taken off its nodes: "scaup just got kicked off??" (not "we kicked off the run")
    _sig(
        "preemption",
        "kicked",
        r"\b(?:got|was|were|been|getting)\s+kicked\s+(?:off|out)\b(?!\s+(?:the\s+)?(?:run|stage|decay))",
    ),
    # the scheduler forgot it: "big bird is not in squeue anymore", "job 962871 is gone from sacct"
    _sig(
        "outage",
        "squeue queue",
        r"\b(?:not|no\s+longer)\s+in\s+(?:squeue|the\s+(?:slurm\s+)?queue)\s+(?:any\s*more|now)\b"
        # "squeue doesn't show 88412 any more"
        r"|\bsqueue\s+(?:doesn't|does\s+not|no\s+longer)\s+(?:show|list)s?\b[^.\n]{0,30}?\bany\s*more\b",
    ),
    _sig(
        "outage",
        "wrong up",
        r"something(?:'s|\s+is)?\s+(?:wrong|off|broken|up)\s+(?:with\s+(?:the\s+)?(?:run|job|training"
        r"|trainer|cluster|saves|checkpoints|loader|[a-z][\w-]*\s*(?:$|[,.;!?]))|since\s+~?\d)",
    ),
    _sig(
        "outage",
        "dead trained pending training progress",
        # the run is not training, whatever the cause: "hero dead at 80,240", "nothing has
        # trained since midnight", "the job is just pending"
        r"(?:hero|run|job|training|trainer)\s+(?:is\s+)?dead\b|(?:it|(?!(?:grafana|wandb|dashboard|prometheus|tensorboard|slack|discord|jira|vpn|wiki|website|site|email|printer|wifi|laptop|notebook|colab|jupyter|kernel|github|my|i)'s)\w+)'s\s+dead\b(?!\s+(?:simple|easy|code|end|weight))"
        r"|nothing\s+(?:has\s+)?(?:trained|been\s+training|is\s+training)"
        r"|(?:job|run|main)\s+(?:is\s+|has\s+been\s+)?(?:just\s+|still\s+|now\s+)?pending\b"
        r"|(?:no|zero)\s+(?:training\s+)?progress\s+(?:since|for)",
    ),
    _sig(
        "outage",
        "down admitted readmitted pods jobset",
        # "Hero is down", "the run went down": an outage, not "loss is down 0.02"
        r"(?:is|'s|was|went|has\s+gone|are|were)\s+(?:hard\s+|completely\s+)?down"
        r"(?!\s*(?:~?\d|to\b|by\b|from\b|about\b|[\w.]*%|a\s+bit|slightly))"
        # a scheduler that will not take the run back: "knot-300b not readmitted after the
        # restart"; pods the cluster is taking away: "rj-d pods all Terminating, jobset
        # restarting"
        r"|(?:not|never)\s+(?:re-?)?admitted\b|pods?\s+(?:are\s+)?all\s+(?:terminating|evicted|pending)"
        r"|jobset\s+(?:is\s+)?(?:restarting|looping)"
        # "s2-w17 just took the job down"
        r"|(?:just\s+)?took\s+(?:the\s+)?(?:whole\s+)?(?:job|run|training)\s+down",
    ),
    _sig(
        "crash",
        "traceback stack exception",
        r"(?:got|getting|seeing|hit|hitting|saw)\s+(?:this|the\s+following|a|an)\s+"
        r"(?:traceback|stack\s*trace|exception)",
    ),
    # hangs
    _sig(
        "hang",
        "hung deadlock hang",
        r"hung|deadlock(?:ed|s)?|(?<!the )(?<!low-)(?<!low )hang(?:s|ing)?"
        r"(?!\s+(?:on|tight|out|around))",
    ),
    _sig("hang", "nccl", r"nccl\s+(?:\w+\s+){0,2}?(?:time[d -]?outs?|watchdog)"),
    _sig(
        "hang",
        "timing timed",
        r"(?:timing|timed)\s+out\s+(?:in|on|inside|during)\s+(?:the\s+)?(?:nccl|collectives?"
        r"|all-?reduce|all-?gather|reduce-?scatter|barrier)",
    ),
    _sig(
        "hang",
        "heartbeat step point metric log idle trained",
        # "no heartbeat from hero since 3am", "hasn't logged a step in 30 min", "step hasn't
        # moved since 84,310": what a stopped run does not do
        r"no\s+(?:new\s+)?(?:heartbeats?|steps?|step\s+progress|points?|metrics?|log\s+lines?|logs)\s+"
        r"(?:(?:from|logged|reported|written|on)\s+(?:[\w.-]+\s+){0,3})?(?:since|for"
        r"|in\s+(?:the\s+last\s+)?(?:\d+|an?\s+(?:hour|while)|over))\b"
        r"|(?:hasn't|hasnt|has\s+not|haven't|have\s+not)\s+(?:logged|reported|written|had|printed"
        r"|emitted|produced|sent)\s+(?:a\s+|any\s+|one\s+)?(?:new\s+|single\s+)?(?:steps?"
        r"|points?|metrics?|heartbeats?|log\s+lines?|logs?|data|anything)\b"
        r"|not\s+getting\s+(?:any\s+)?(?:new\s+)?steps\b"
        r"|(?:has\s+been|have\s+been|is|are|sitting|sat)\s+idle\s+(?:on\s+\w+\s+\w+\s+)?"
        r"(?:since|for\s+(?:the\s+last\s+|over\s+)?(?:an?|\d+)\s*(?:min|mins|minutes|h|hrs?|hours?)"
        r"\b(?!\s+(?:per|a|each|every)\b))|all\s+(?:ranks|gpus|nodes|hosts)\s+(?:are\s+)?idle"
        r"|(?:step|steps|step\s+counter|iteration|global\s+step|tokens\s+trained['\"]?\s+number)"
        r"\s+(?:on\s+the\s+\w+\s+)?(?:hasn't|hasnt|has\s+not"
        r"|didn't|isn't|is\s+not)\s+(?:moved|changed|advanced|budged|progressed|increased"
        r"|moving|advancing|progressing)",
    ),
    _sig(
        "hang",
        "throughput mfu tokens tok/s util samples steps/s",
        r"(?:throughput|mfu|tokens/s|tok/s|tokens\s+per\s+second|gpu\s+util\w*)"
        r"(?:\s+(?:on|in)\s+(?:the\s+)?[\w&-]+)?\s+(?:has\s+)?"
        r"(?:dropped|fell|went|is|at|down)\s+(?:to\s+)?(?:zero|0(?![.,]?\d))"
        # "no tokens/s on the board", "zero throughput"
        r"|(?:no|zero)\s+(?:tokens/s|tok/s|throughput|samples/s|steps/s)\b"
        r"(?!\s+(?:loss|regression|change|difference|drop|impact|hit|penalty|cost|gain))"
        # a status line's field at zero, dated: "throughput: 0 tok/s since 03:12 UTC",
        # "pipeline egress 0 tok/s for 10m"
        r"|(?:throughput|egress|ingest)\s*[:=]?\s*0\s*(?:tok(?:ens)?/s|samples/s)\s+(?:since|for)\b",
    ),
    _sig(
        "outage",
        "training",
        r"(?:is|are|was|has\s+been)\s+(?:still\s+)?not\s+training\b(?!\s+(?:on|with|well|as)\b)"
        r"|isn't\s+training\b(?!\s+(?:on|with|well|as)\b)",
    ),
    # an agent's structured status: "**Status:** stalled", "## Status: 🔴 blocked" (not "blocked
    # on #1002": a dependency, not an outage)
    _sig(
        "hang",
        "status state",
        r"(?:status|state)\s*[:=]\s*(?:[^\w\s]+\s*)?(?:blocked|stalled|stuck|hung|hanging|frozen)"
        r"\b(?!\s+(?:on|by|until|behind|waiting|pending|for\s+review))",
    ),
    _sig(
        "outage",
        "status state",
        r"(?:status|state)\s*[:=]\s*(?:[^\w\s]+\s*)?(?:failed|failing|crashed|down|dead|broken"
        r"|degraded|not\s+training|red)\b",
    ),
    _sig(
        "hang",
        "time",
        r"(?:collective|all-?reduce|all-?gather|reduce-?scatter|barrier)s?\s+"
        r"(?:operations?\s+)?(?:time[d -]?outs?|timed\s+out)",
    ),
    _sig("hang", "watchdog", r"watchdog\s+(?:caught|timeout|timed\s+out|fired)"),
    # an on-call's shorthand for a run gone quiet: "hb stale", "wandb last point 03:12", "tok/s
    # flat since 02:10"
    _sig(
        "hang",
        "stale last flat",
        r"(?:hb|heartbeats?)\s+(?:is\s+|are\s+|went\s+|gone\s+)?stale(?!\s*(?:>|over\s+\d))"
        r"|(?:w&b|wandb|tensorboard)\s+last\s+(?:point|step|log|update)\s+(?:at\s+)?~?\d{1,2}:\d\d"
        r"|(?:tok(?:ens)?/s|throughput|step\s+count(?:er)?)\s+(?:is\s+|has\s+been\s+)?(?:dead\s+)?"
        r"flat(?:lined)?\s+since\s+~?\d{1,2}:\d\d",
    ),
    # the run said to crawl: "main is crawling since 13:40 (~6x slower steps)"
    _sig(
        "outage",
        "crawling",
        r"(?:main|hero|training|the\s+(?:main\s+)?(?:run|job))\s+(?:is\s+|has\s+been\s+)?"
        r"(?:just\s+|now\s+)?crawling\b",
    ),
    # the fabric's retry errors as a process prints them: "ibv_poll_cq: RETRY_EXC_ERR"
    _sig("network", "retry_exc_err", r"(?:ibv_wc_)?retry_exc_err"),
    _sig(
        "hang",
        "heartbeat",
        r"heartbeats?\s+(?:stopped|missing|missed|lost|timed\s+out)|stopped\s+(?:sending\s+heartbeats"
        r"|heartbeating)"
        # "site hlx missed outer heartbeat ×3" (not "treats a missed heartbeat as a hang": any)
        r"|(?<!\ba\s)missed\s+(?:\w+\s+)?heartbeats?\b",
    ),
    _sig(
        "hang",
        "stopped progress",
        r"stopped\s+(?:logging|reporting|making\s+progress)|not\s+making\s+(?:any\s+)?progress",
    ),
    _sig(
        "hang",
        "stuck stall froze wedged progress",
        # not a plan or a spec that is settled: "Spec v3 (frozen)", "the config is frozen"
        # (not a save's pause measured: "38s / 41s stall", "stall per save 15 s")
        r"stuck|(?<![\d.]s\s)(?<![\d.]\ss\s)stall(?:s|ed|ing)?(?!\s+(?:per|time|duration)\b)"
        r"|froze|wedged|no\s+progress"
        # "frozen" only said of the run or a part of it: a spec, a table, a mixture, weights or
        # an lr are "frozen" when settled ("Updated and frozen.", "the frozen table")
        r"|(?:job|run|training|trainer|process|everything|it|rank\s*\d+|node\s+\S+|host\s+\S+)"
        r"\s+(?:is\s+|was\s+|seems\s+|looks\s+|'s\s+)?(?:completely\s+|totally\s+)?frozen\b",
        needs_subject=True,
    ),
    # --- the same faults as other stacks and people put them (issue 40: breadth, not phrases)
    # an agent's or a monitor's status field, whatever its name: "Condition: UNHEALTHY",
    # "**Health:** ❗ DEGRADED", "State: not progressing since 07:41"
    _sig(
        "outage",
        "status state condition health",
        r"(?:status|state|condition|health|phase|run\s+state|job\s+state)\s*[:=]\s*(?:[^\w\s]+\s*)*"
        r"(?:unhealthy|degraded|critical|failed|failing|crashed|down|dead|broken|error|erroring"
        r"|attention\s+required|needs?\s+(?:attention|a\s+human)|blocked(?!\s+(?:on|by))|stalled"
        r"|not\s+(?:progressing|training|running|healthy)|no\s+progress|stopped|halted|red)\b",
    ),
    # a monitor's state change: "state changed to crashed", "status went from running to failed"
    _sig(
        "crash",
        "changed went moved now",
        r"(?:state|status)\s+(?:has\s+)?(?:changed|went|moved|is\s+now|flipped)\s+(?:from\s+\W*\w+\W*\s+)?"
        r"(?:to\s+)?\W*(?:crashed|failed|killed|dead|errored|preempted|lost)\b",
    ),
    # what a scheduler says about a workload it cannot keep up: Kubernetes, Ray, slurm
    _sig(
        "crash",
        "backoff errimage containercannotrun",
        r"(?:imagepull|crashloop)backoff|errimagepull|containercannotrun|createcontainererror",
    ),
    _sig(
        "node-loss",
        "pending notready down drain rebooted power-cycled power restarted",
        rf"{_NODE}\s+(?:are\s+|is\s+)?(?:all\s+|still\s+)?(?:stuck\s+)?(?:in\s+)?"
        r"(?:pending|notready|down\*?|drain(?:ed|ing)?\*?)\s+(?:since|for|after)\b"
        rf"|{_NODE}\s+(?:\S+\s+){{0,3}}?(?:were|was|got|have\s+been|has\s+been)\s+"
        r"(?:rebooted|power[- ]cycled|restarted\s+(?:by|without))"
        r"|(?:keeps?|kept)\s+(?:rebooting|power[- ]cycling)",
    ),
    _sig(
        "oom",
        "oom_kill outofmemoryerror",
        r"oom_kill\w*|outofmemoryerror|running\s+low\s+on\s+memory",
    ),
    # a chip the runtime gave up on: "TPU chip 3 is unhealthy: device lost", "HBM errors"
    _sig(
        "hardware",
        "unhealthy lost hbm",
        r"(?:chip|device|tpu|gpu|accelerator)s?\s*\d*\s+(?:is\s+|are\s+|went\s+)?"
        r"(?:unhealthy|lost)\b|device\s+lost|hbm\s+(?:\w+\s+){0,2}?(?:errors?|failures?)",
    ),
    # the interconnect between chips and slices, and what a slow fabric shows
    _sig(
        "network",
        "ici dcn link retransmit",
        r"(?:ici|dcn|nvlink|ib|infiniband|roce)\s+(?:\w+\s+)?(?:link|port)?\s*"
        r"(?:errors?|error\s+counters?|failures?|flap\w*|down|drops?)"
        r"|(?:high|many|\d+)\s+(?:\w+\s+)?retransmits?",
    ),
    # chat's words for a run that died: "lumen fell over", "the job is toast", "run is borked"
    _sig(
        "crash",
        "fell fallen toast borked hosed keeled",
        r"(?:fell|fallen|falls|keeled)\s+over|(?:is|'s|was)\s+(?:toast|borked|hosed|kaput)",
    ),
    # a run that does not move, in any grammar: "training is not moving anymore", "the
    # training is stop", "58k and nothing after", "nothing in wandb since 06:30"
    _sig(
        "hang",
        "moving progressing stop nothing flat updating",
        rf"(?:{_SUBJ}|it)\s+(?:is\s+|are\s+|has\s+)?(?:not|no\s+longer|isn't|stopped)\s+"
        r"(?:moving|progressing|advancing|updating)\b"
        r"|(?:training|run|job)\s+is\s+stop\b"
        r"|\d(?:[\d,]|\.\d)*k?\s+(?:and\s+)?(?:then\s+)?nothing\s+(?:after|since|else)"
        r"|nothing\s+(?:new\s+)?(?:logged\s+)?(?:in|on|from)\s+(?:the\s+)?"
        r"(?:wandb|w&b|tensorboard|logs?|dashboard|metrics)\s+(?:since|for)\b"
        r"|(?:tensorboard|wandb|w&b|charts?|graphs?|curves?|plots?|dashboard)\s+(?:is\s+|are\s+"
        r"|has\s+been\s+|have\s+been\s+)?(?:flat|frozen|empty|not\s+updating|stopped\s+updating"
        r"|hasn't\s+(?:moved|updated))\s+(?:since|for)\b"
        r"|no\s+(?:new\s+)?(?:step|steps|iteration|iterations)\s+(?:after|past|beyond)\s+\d+",
    ),
    # storage a run cannot work with: "the PD for the cache is 100% full", "lustre is slow",
    # "dataloader starving"
    _sig(
        "storage",
        "full slow starv crawl",
        r"(?:disk|pd|volume|filesystem|fs|bucket|lustre|nfs|storage|gcs|s3)\s+(?:\S+\s+){0,4}?"
        r"(?:is\s+|are\s+)?(?:\d+%\s+)?full\b(?!\s+(?:text|name|paper|stack|precision|set|list|run"
        r"|sweep|attention|context|batch|width|rank|model|weights))"
        # not "when the bucket is slow": a condition, not a report
        r"|(?<!when\sthe\s)(?:storage|lustre|nfs|gcs|s3|filesystem|bucket|disk|io)\s+(?:is\s+|are\s+)?"
        r"(?:(?:very|so|really|painfully)\s+)?(?:slow|crawling|unresponsive)\b"
        r"|(?:data\s*loaders?|loaders?|input\s+pipeline|gpus?|tpus?)\s+(?:are\s+|is\s+)?starv\w*",
    ),
    # a capacity the run needs that is not there: "can't recreate the slice", "no capacity"
    _sig(
        "preemption",
        "recreate capacity available reservation",
        rf"{_FAIL_TO}\s+(?:re-?create|re-?schedule|allocate|get)\s+(?:the\s+|a\s+|our\s+)?{_NODE}"
        r"|no\s+capacity\s+(?:to|for|left|in)"
        r"|no\s+(?:\w+\s+)?(?:nodes|gpus|tpus|capacity|hosts)\s+(?:are\s+)?available"
        r"|reservation\s+(?:has\s+)?(?:ended|expired|ran\s+out|was\s+reclaimed)",
    ),
    # "progress stopped at step 9,114", "rank 77 not responding", "slate just exited"
    _sig(
        "hang",
        "stopped halted responding",
        r"(?:progress|stepping)\s+(?:has\s+)?(?:stopped|halted)\s+(?:at|since)\b"
        r"|(?:rank|node|host|worker|process|trainer)\s+[\w-]*\d[\w-]*\s+(?:\([^)]*\)\s+)?"
        r"(?:is\s+)?not\s+responding",
    ),
    _sig("crash", "just", r"just\s+(?:exited|died|stopped|fell\s+over|crashed)\b"),
    _sig(
        "crash",
        "being getting",
        r"(?:keeps?|kept)\s+(?:being|getting)\s+(?:killed|evicted|preempted|oom\w*|restarted)",
    ),
    _sig(
        "network",
        "rendezvous diststoreerror clients",
        r"rendezvous\s+(?:time[d ]?\s*out|timeouts?|failed)|diststoreerror|waiting\s+for\s+clients"
        r"|(?:timeouts?|timed\s+out)\s+on\s+(?:the\s+)?rendezvous",
    ),
    # ranks waiting for input, logs that stopped: "half the ranks are waiting on data", "log is
    # not updated since 3 hours"
    _sig(
        "storage",
        "waiting starv",
        r"(?:ranks?|workers?|gpus?|tpus?|trainers?)\s+(?:are\s+|is\s+)?(?:waiting|starved|starving)"
        r"\s+(?:on|for)\s+(?:the\s+)?(?:data|batches|loader|dataloader|input)",
    ),
    _sig(
        "hang",
        "updat",
        r"(?:log|logs|metrics|wandb|w&b|tensorboard|dashboard|loss|step\s+counter)\s+(?:is\s+|are\s+"
        r"|has\s+|have\s+)?(?:not|n't|never)\s+(?:been\s+)?updat\w*\s+(?:since|for|in)\b",
    ),
    # a monitor or agent that declares it: "incident opened", "W&B alert: loss > 3.0"
    _sig(
        "outage",
        "incident alert",
        r"incident\s+(?:opened|declared|started|ongoing|in\s+progress)"
        r"|(?:w&b|wandb|grafana|prometheus|datadog|pagerduty)\s+alert(?=\s*:)",
    ),
    # "every step fails its first all-to-all", "checkpoint 30000 seems incomplete"
    _sig("crash", "every each", r"(?:every|each)\s+step\s+(?:fails|is\s+failing|errors|crashes)"),
    _sig(
        "checkpoint-failed",
        "incomplete partial truncated corrupt missing died",
        r"(?:checkpoint|ckpt)\s+(?:[\d,.]+k?\s+)?(?:seems|is|looks)\s+(?:\w+\s+)?(?:incomplete|partial"
        r"|truncated|missing)|saves?\s+(?:must\s+have\s+|has\s+|have\s+)?(?:died|crashed)"
        # as a title names it: "checkpoint step_300000 missing"
        r"|(?:checkpoint|ckpt)\s+(?:step[_\s-]?)?\d[\d,]*k?\s+missing",
    ),
    _sig("crash", "reboot", r"reboot(?:ing|s)?\s+in\s+a\s+loop"),
    # a quota or a lease run out: "hit its inode quota", "our allocation expired at midnight"
    _sig(
        "storage",
        "quota",
        r"(?:hit|hitting|reached|exceeded|over)\s+(?:its|the|our|their|my)\s+(?:\w+\s+)?quota",
    ),
    _sig(
        "preemption",
        "expired ended",
        r"(?:allocation|reservation|lease|time\s+limit)\s+(?:has\s+)?(?:expired|ended|ran\s+out)",
    ),
    # Slurm holding the job because the group's allocation is spent: "sitting in PD with
    # `AssocGrpGRESMinutes`" (not "Priority" or "Resources": waiting its turn)
    _sig(
        "preemption",
        "assocgrp qosgrp",
        r"(?:assoc|qos)grp\w*(?:minutes|runmins)",
    ),
    _sig(
        "outage",
        "off offline down idle dead",
        r"(?:has\s+been|have\s+been|'s\s+been)\s+(?:off|offline|down|idle|dead)\s+for\s+(?:\d|an?\s)",
    ),
    # one straggler holding the step: "gpu 3 on gn12 is at 0% util", "the step is waiting for it"
    _sig(
        "hang",
        "util wait straggl 0",
        r"at\s+0\s*%\s+(?:gpu\s+|sm\s+)?(?:util\w*|utili[sz]ation)"
        r"|(?:step|collective|all-?reduce)\s+is\s+waiting\s+(?:for|on)\s+(?:it|them|rank|node|host|gpu)"
        # one part sets the pace: "everyone waits on s3", "all other stages waiting on stage 5"
        r"|(?:everyone|everybody|all\s+(?:the\s+)?(?:other\s+)?(?:ranks|stages|slices|nodes|hosts)"
        r"|every\s+(?:other\s+)?(?:rank|stage|slice|node|host))"
        r"\s+(?:is\s+|are\s+)?(?:wait(?:s|ing)|stuck\s+waiting)\s+(?:on|for)\s+"
        r"(?:it|them|(?:stage|rank|slice|node|host|rack)\s+\d|\S*\d"
        r"|the\s+\d+\s+(?:nodes|hosts|ranks|gpus)\s+(?:behind|on|in|under))"
        r"|logs?\s+ends?\s+mid-?step"
        # nothing moving: "anyone else seeing 0 tok/s", "tgs at 0"
        r"|(?:seeing|showing|shows|at|is|stuck\s+at)\s+(?:a\s+flat\s+)?0(?:\.0+)?\s*"
        r"(?:tok(?:ens)?/s(?:ec)?|tgs|steps?/s|samples/s|tflops)"
        # a straggler that sets the pace: "straggler: b-0566 at 1.9× the others"
        r"|straggl\w*\b[^.\n]{0,40}?\b(?:[2-9](?:\.\d+)?|1\.[3-9]\d*)\s*[x×]\s+(?:the\s+)?(?:others|rest)",
    ),
    # a run its guard stopped: "Run paused by the agent", "paused at 41,088 pending a human"
    _sig(
        "outage",
        "paused halted guard watchdog",
        r"(?:(?:run|job|training)\s+(?:was\s+|is\s+|has\s+been\s+)?)?(?:paused|halted|stopped)\s+by\s+"
        r"(?:the\s+)?(?:agent|monitor|watchdog|guard|nan[-_]?guard|bot)"
        r"|paused\s+at\s+(?:step\s+)?[\d,.]+k?\s+(?:pending|until|awaiting|waiting)"
        # the guard as the subject: "the NaN guard halted curlew at step 499,310"
        r"|(?:guard|watchdog|nan[-_]?guard)\s+(?:has\s+|just\s+)?(?:halted|stopped|paused|killed)\s+"
        r"(?:the\s+)?(?:run|job|training|[a-z][\w-]*\s+at\s+(?:step\s+)?\d+)",
    ),
    # the guard's own words: "gannet-mt-v1 auto-halted", "❌ auto-halt · r09", "halt guard
    # fired", "Guard stopped the job before the optimizer step", "spikeguard halted the job"
    _sig(
        "outage",
        "halt guard watchdog",
        r"auto-?halt(?:ed)?"
        r"(?!\s*(?:-|guard|check|hook|logic|flag|feature|threshold|test|on|when|if|for)\b)"
        r"|(?:halt\s+guard|auto-?halt)\s+(?:fired|tripped|triggered)"
        r"|(?:\w*guard|watchdog)\s+(?:stopped|halted|killed)\s+(?:the\s+)?"
        r"(?:job|run|training)",
    ),
    # machines a health check refused: "2 nodes failed health checks", "failing dcgm diag"
    _sig(
        "hardware",
        "health diag dcgm burn",
        rf"{_NODE}\s+(?:\S+\s+)?(?:failed|failing|fail)\s+(?:the\s+)?(?:health\s*checks?|\w*\s*diag\w*"
        r"|dcgm\w*|burn-?in|validation)|health\s*checks?\s+failed\s+on",
    ),
    # a loss that runs away now: "loss is going up and up since 41k"
    _sig(
        "outage",
        "going exploding blowing diverg",
        r"loss\s+(?:is\s+|keeps\s+)?(?:going\s+up(?:\s+and\s+up)?|exploding|blowing\s+up|diverging)"
        r"\s+(?:since|for|again)\b",
    ),
    # a chat line of a name and its state: "schist down", "hero dead again"
    _sig(
        "outage",
        "down dead",
        r"^\W*[a-z][\w-]*\s+(?:is\s+)?(?:down|dead)(?:\s+again)?\W*$",
    ),
    # "we're stalled", "we are down": the team speaking for its run
    _sig(
        "hang",
        "stalled stuck idle blocked",
        r"we(?:'re|\s+are)\s+(?:now\s+|still\s+)?(?:stalled|stuck|idle|blocked)\b(?!\s+(?:on|with|by))",
    ),
    _sig(
        "outage",
        "down dead stopped",
        r"\bwe(?:'re|\s+are)\s+(?:now\s+|still\s+)?(?:down|dead|stopped)\b"
        r"(?!\s+(?:to|by|from|on|with|at|for)\b)",
    ),
    # the workload taken away: "the whole job was evicted by k8s", "job got terminated"
    _sig(
        "crash",
        "evicted terminated preempted",
        rf"{_SUBJ}\s+(?:\w+\s+)?(?:was|were|got|has\s+been)\s+(?:evicted|terminated)",
    ),
    _sig("hardware", "halted", r"core\s+halted|chip\s+\d*\s*halted"),
    _sig(
        "checkpoint-failed",
        "save",
        r"save\s+(?:at\s+(?:step\s+)?[\d,.]+k?\s+)?(?:has\s+been|is|'s)\s+(?:running|going|hanging|stuck)"
        r"\s+for\s+(?:\d|an?\s+hour|over)",
    ),
    _sig("oom", "pressure", r"(?:node|host)?\s*memory\s*pressure|memorypressure"),
    # the control plane a run cannot be seen or scheduled without
    _sig(
        "outage",
        "unreachable unavailable down",
        r"(?:api\s+server|control\s+plane|head\s+node|coordinator|scheduler|slurmctld|ray\s+head)"
        r"\s+(?:is\s+|went\s+|was\s+)?(?:unreachable|unavailable|down|not\s+responding)",
    ),
    _sig(
        "preemption",
        "enough",
        r"not\s+enough\s+(?:free\s+)?(?:gpus|tpus|nodes|hosts|capacity|resources|quota)",
    ),
    # an alert that is firing now: "[FIRING:1] TrainingStalled hero (no step for 20m)"
    _sig("outage", "firing", r"(?<=\[)firing(?=(?::\d+)?\])|alert\s+firing|firing\s+alert"),
    # "the run is hanging on the barrier", "stuck on all-reduce": a hang at a named collective
    _sig(
        "hang",
        "hanging stuck",
        r"(?:hanging|hangs|stuck|waiting)\s+(?:on|in|at)\s+(?:the\s+|a\s+)?(?:barrier|collective"
        r"|all-?reduce|all-?gather|reduce-?scatter|nccl|p2p|recv|send)",
    ),
    # "not stepping since 03:23", "no longer training": a stall said without a subject
    _sig(
        "hang",
        "stepping training progressing",
        r"(?:not|isn't|aren't|no\s+longer)\s+(?:stepping|training|progressing|advancing)\s+"
        r"(?:since|for|anymore|any\s+more)\b",
    ),
    # "all trainers show disconnected", "workers lost their connection"
    _sig(
        "node-loss",
        "disconnect connection",
        r"(?:trainers?|workers?|actors?|ranks?|hosts?|nodes?)\s+(?:\w+\s+)?(?:show|are|got|were"
        r"|went|have)?\s*(?:disconnected|lost\s+(?:their|the|its)\s+connection)",
    ),
    # --- shapes rather than phrases (issue 40, the incident half) ----------------------------
    # a part of the run that errs, whatever the error: "the input pipeline is throwing IO
    # errors", "checkpoint save at 42k is getting 429 Too Many Requests", "writes keep failing
    # with 503"; its kind is what the sentence names (``fault_kind``)
    _sig(
        FAULT,
        "getting throwing returning returns hitting spewing raising erroring failing fails",
        r"(?:getting|throwing|returning|returns|hitting|spewing|raising|erroring\s+with"
        r"|failing\s+with|fails\s+with)\s+(?:\w+\s+){0,2}?\(?(?:[45]\d\d(?:s|\s+errors?)?"
        r"|errors|exceptions|timeouts|too\s+many\s+requests|service\s+unavailable"
        r"|permission\s+denied|transport\s+endpoint)",
    ),
    # what a run does not do any more, in any grammar: "isn't logging anything since 3:10",
    # "hasn't trained a step in 3 hours", "stopped writing metrics for 40 minutes"
    _sig(
        "hang",
        "logging logged reporting reported writing written printing printed emitting trained"
        " training stepping taken advanced moved progressed budged",
        r"(?:isn't|is\s+not|aren't|are\s+not|hasn't|has\s+not|haven't|have\s+not|not|stopped"
        r"|no\s+longer)\s+(?:been\s+)?(?:logging|logged|reporting|reported|writing|written"
        r"|printing|printed|emitting|emitted|training|trained|stepping|taken|advanced|moved"
        r"|progressed|budged)\s+(?:anything"
        r"|a\s+(?:single\s+)?step|any\s+(?:steps?|metrics?|logs?|lines?|data)|steps|metrics"
        r"|logs)?\s*(?:since|for|in)\s+(?:the\s+last\s+|over\s+|about\s+|~)?(?:\d+|an?\s|half)",
    ),
    # an agent's field and its note: "Step: 74,880 (unchanged since 06:12)"
    _sig(
        "hang",
        "unchanged change moved moving same stuck frozen flat",
        r"(?:step|iteration|iter|global\s+step|progress)\s*[:=]\s*\**\s*[\d,.]+k?\s*\(?\s*"
        r"(?:unchanged|no\s+change|not\s+moved|not\s+moving|same|stuck|frozen|flat)"
        r"\s+(?:since|for)\b"
        # "gyrfalcon's been at the same step since 02:40", "stuck on the same step for 40 min"
        r"|(?:been|is|sits|stuck|sitting)\s+(?:at|on)\s+the\s+same\s+(?:step|iteration|iter)"
        r"\s+(?:since\s+~?\d+|for\s+(?:\d+|an?\s|over|about|~))",
    ),
    # the same failure over and over: "restarted itself 4 times in the last hour", "dies at the
    # same step every time"
    _sig(
        "crash",
        "times same keeps fails dies die crash restarts",
        r"(?:restarted|relaunched|requeued|rebooted|crashed|died|failed)\s+(?:itself\s+)?"
        r"(?:\d+|two|three|four|five|six|several|many)\s+times\s+(?:in\s+(?:the\s+)?(?:last|past)"
        r"|since|today|tonight|this\s+morning|overnight|in\s+a\s+row)"
        r"|(?:dies|crashes|fails|hangs|ooms|dying|crashing|failing|hanging)\s+(?:at|on|in)\s+"
        r"the\s+same\s+(?:step|spot|place|batch|point|iteration|line)"
        # "resume keeps dying, checksum mismatch on 373k"
        r"|(?:resume|restart|restore|relaunch|job|run|training)s?\s+keeps?\s+(?:on\s+)?"
        r"(?:dying|crashing|failing|hanging|ooming|getting\s+killed)"
        # "every worker dies at restore", "two restarts in an hour, pods Evicted"
        r"|(?:every|all)\s+(?:the\s+)?(?:workers?|ranks?|pods?|hosts?)\s+(?:dies?|die|crash(?:es)?|fails?)"
        r"\s+(?:at|on|during|in)\b"
        r"|(?:two|three|four|five|\d+)\s+restarts\s+in\s+(?:an?|the\s+last|\d+)\s+(?:hour|h|min)"
        # "Restart after last night's image bump fails at load"
        r"|(?:restart|resume|restore|relaunch)s?\b[^.\n]{0,50}?\b(?:fails|dies|crashes)\s+(?:at|on|to|with"
        r"|every|again)",
    ),
    # two named hosts down together: "qsn-0408 and qsn-0409 both down, same chassis"
    _sig(
        "node-loss",
        "down dead notready not_responding gone answering",
        r"\b[a-z][a-z0-9]*-[a-z0-9-]*\d\s+and\s+[a-z][a-z0-9]*-[a-z0-9-]*\d\s+(?:are\s+|went\s+)?"
        r"(?:both\s+)?(?:down|dead|notready|not_responding|gone\s+from\s+the\s+job"
        r"|stopped\s+answering)\b",
    ),
    # a machine leaving and what it took: "kelp-g044 dropped off slurm", "took the job with it"
    _sig(
        "node-loss",
        "dropped fell",
        r"(?:dropped|fell)\s+(?:off|out\s+of)\s+(?:slurm|the\s+(?:cluster|network|fabric|pool"
        r"|partition|allocation|job|mesh)|k8s|kubernetes)",
    ),
    _sig(
        "crash",
        "took",
        r"took\s+(?:the|our|its)\s+(?:whole\s+)?(?:job|run|training|trainer|step)\s+(?:down\s+)?"
        r"with\s+(?:it|them)",
    ),
    # a run that cannot come back: "can't bring plover back", "unable to get the job back up"
    _sig(
        "outage",
        "back",
        rf"{_FAIL_TO}\s+(?:bring|get)\s+(?:\S+\s+){{0,2}}?back(?:\s+up|\s+online)?\b",
    ),
    # a symptom named as a title names it: "Loss NaN at step 88,410", "loss: nan"
    _sig("crash", "nan inf", r"loss(?:es)?\s*[:=]?\s*(?:nan|inf)\b(?!\s*(?:guard|check))"),
    # a mount full, named by its path: "/scratch on kelp is 100% full"
    _sig(
        "storage",
        "full",
        r"(?<=/)[\w.-]+\s+(?:\S+\s+){0,3}?(?:is\s+|are\s+)?(?:\d+\s*%\s+)?full\b",
    ),
    # a quota named by its metric, and a checkpoint named by its step: "Quota 'TPUS_PER_PROJECT'
    # exceeded", "can't write step_84000"
    _sig(
        "storage",
        "quota",
        r"quota\s+(?!['\"]?\w*(?:tpu|gpu|cpu|chip|accelerator|instance))(?:\S+\s+){1,2}?"
        r"(?:exceeded|exhausted)",
    ),
    _sig(
        "preemption",
        "quota",
        r"quota\s+['\"]?\w*(?:tpu|gpu|cpu|chip|accelerator|instance)\w*['\"]?\s+"
        r"(?:exceeded|exhausted)",
    ),
    _sig(
        "checkpoint-failed",
        "step",
        rf"{_FAIL_TO}\s+(?:save|write|upload|commit)\s+(?:the\s+)?step[_-]?\d+",
    ),
    # a named thing and its state, as chat writes a headline: "wisp is wedged", "job down",
    # ", wisp paused", "wisp's stuck producing nans". A bare name with no article is a proper
    # name (the run's, a host's); common nouns and tools are ruled out when judged (_NOT_A_NAME)
    _sig(
        "hang",
        "wedged hung hanging stuck stalled paused halted",
        rf"{_NAMED}(?:wedged|hung|hanging|stuck|stalled|paused|halted)\b"
        r"(?!\s+(?:on|with|by|behind|waiting|until|for\s+(?:review|now)|at\s+(?:the\s+)?"
        r"(?:same|\d)))",
    ),
    _sig(
        "outage",
        "down dead borked toast broken gone offline running training",
        rf"{_NAMED}(?:down|dead|borked|toast|broken|gone|offline|not\s+running|not\s+training"
        r"|isn't\s+running|isn't\s+training)\b(?!\s*(?:\d|to\b|by\b|from\b|[\w.]*%|a\s+bit))"
        # "llama3 is dead simple", "down the line": a word, not a state
        r"(?!\s+(?:simple|easy|wrong|serious|set\s+on|on\s+arrival|cent(?:er|re)|end|weight|code"
        r"|the\s+(?:line|road|hall|stairs)|here|there)\b)",
    ),
    # a phase a run sits in for too long, or never leaves: "sitting in the save for 50 min", "the
    # checkpoint at 120k never finished writing": a hang, whatever the phase
    _sig(
        STALL,
        "sitting stuck hanging hung waiting spinning blocked",
        r"(?:sitting|stuck|hanging|hung|waiting|spinning|blocked)\s+(?:in|on|at|inside)\s+"
        r"(?:the\s+|a\s+|an\s+)?(?:\w+\s+){0,2}?(?:save|restore|checkpoint\w*|barrier"
        r"|collective|all[-_]?\w+|init\w*|compil\w*|rendezvous|load\w*|step(?:\s+[\d,.]+k?)?)\s+"
        r"(?:for|since)\s+(?:\d|an?\s|half|over|the\s+last)",
    ),
    _sig(
        STALL,
        "never",
        r"never\s+(?:finished|completed|landed|came\s+back|returned)",
    ),
    # a loss that ends in NaN, and a run that produces nothing else: "loss spiked to 11 then nan",
    # "stuck producing nans"
    _sig(
        "crash",
        "nan",
        r"loss(?:es)?\s+(?:\S+\s+){1,5}?(?:then|to|into)\s+nans?\b"
        r"|(?:producing|spitting|emitting|outputting|giving|logging|returning)\s+(?:out\s+)?"
        r"(?:only\s+)?nans?\b",
    ),
    _sig("hardware", "uncorrectable reset", r"(?:hbm|ecc|dram)\s+uncorrectables?|gpu\s+reset"),
    _sig("network", "partition", r"network\s+partition(?:ed)?|partitioned\s+from"),
    # a rate at zero and time without progress: "tps 0 since", "step rate 0 for 15 min", "45
    # minutes without a step"
    _sig(
        "hang",
        "tps tok/s tokens/s throughput sps samples/s steps/s steps/min steps/h it/s rate without",
        r"(?:tps|tok/s|tokens/s|throughput|sps|samples/s|steps/(?:s|min|h)|it/s|step\s+rate)\s*"
        r"(?:is\s+|at\s+|[:=]\s*)?"
        r"(?:0|zero)\s+(?:since|for)\b"
        r"|(?:\d+|an?|two|three|several)\s+(?:min|mins|minutes|h|hrs?|hours?)\s+without\s+"
        r"(?:a\s+|any\s+|one\s+)?(?:(?:new|single)\s+)?(?:step|checkpoint|heartbeat|progress|log"
        r"|metric)",
    ),
    # an operation that fails now, said of the operation: "writes to the checkpoint bucket time
    # out since 09:00", "reads from lustre keep failing"; the kind is the sentence's
    _sig(
        FAULT,
        "time timing timed fail failing hang hanging",
        r"(?:writes?|uploads?|saves?|reads?|requests?|downloads?|puts?|gets?)\s+(?:(?:to|from|on)\s+"
        r"(?:\S+\s+){1,3}?)?(?:(?:keep|keeps|still|all)\s+)?(?:time\s+out|timing\s+out|fail"
        r"|failing|hang|hanging)\s+(?:since|for|again|every|on\s+every)\b",
    ),
    # a part of the run waiting on storage: "the input workers are all blocked on GCS reads"
    _sig(
        "storage",
        "blocked waiting stuck starved",
        r"(?:blocked|waiting|stuck|starved)\s+on\s+(?:the\s+)?(?:\w+\s+)?(?:reads?|writes?|io"
        r"|gcs|s3|storage|disk|bucket|nfs|lustre|gcsfuse)\b",
    ),
    # a run that went NaN, said as a verb: "kelvin NaN'd"
    _sig("crash", "nan", r"nan(?:'d|-?ed)|went\s+nan"),
    # a step read again and again: "step 500,120 → 500,120 → 500,120"
    _sig(
        "hang",
        "step",
        # (not "step 240,240 → 244,700": a number's own comma)
        r"step\s*:?\s*(?P<step>\d[\d,.]*k?)(?:\s*(?:→|->|=>|then)\s*|\s*,\s+)(?P=step)(?![\d,.])",
    ),
    # the alarm asked as who did it: "ok who killed the job?"
    _sig(
        "crash",
        "killed stopped cancel nuked took",
        r"(?:who|what|someone|somebody|something)\s+(?:just\s+)?(?:killed|stopped|cancell?ed|nuked"
        r"|took\s+down)\s+(?:the|our)\s+(?:job|run|training|trainer)",
    ),
    # a run that cannot get going: "ibis won't schedule", "the job can't start since 05:20"
    _sig(
        "outage",
        "won't can't cannot couldn't refuses fails",
        r"(?P<name>[a-z][\w-]*)\s+(?:won't|can't|cannot|couldn't|refuses\s+to|fails\s+to)\s+"
        r"(?:schedule|start|launch|come\s+up|be\s+scheduled)\b"
        # not the scheduler's rule: "Slurm won't start (or requeue) a job that would overlap it"
        r"(?!\s+(?:\([^)]{0,30}\)\s+)?(?:a|an|any|new|jobs?)\b)",
    ),
    # the run held up by its own machinery, or gone the wrong way since it came back:
    # "training is blocked because save is sync", "loss diverging after restart"
    _sig(
        "hang",
        "blocked",
        r"(?:training|the\s+run|the\s+job)\s+is\s+blocked\b(?!\s+(?:on|by)\s+(?:review|approval|#))",
    ),
    _sig(
        "crash",
        "diverg",
        r"(?:loss|training|run)\s+(?:is\s+|has\s+|started\s+)?diverg\w*\s+(?:after|since)\s+"
        r"(?:the\s+|this\s+morning's\s+|today's\s+|yesterday's\s+)?(?:re-?start|resume|relaunch|restore)",
    ),
    # back on the wrong settings: "the run is training on a different config than intended",
    # "the restart loaded the wrong RoPE base", "has been training on mix-v6 instead of v7"
    _sig(
        "outage",
        "different wrong stale",
        r"(?:training|running|trains|runs|resumed|relaunched|restarted|launched|came\s+back|is|are)"
        r"\s+(?:on|with|from)\s+(?:a\s+|the\s+)?(?:different|wrong|stale)\s+(?:\w+\s+)?"
        r"(?:config\w*|settings|mix\w*|tokenizer|data|yaml|rope|overlay|base)"
        r"|(?:loaded|picked\s+up|used|resolved)\s+(?:the\s+|a\s+)?(?:wrong|stale)"
        r"\s+(?:\w+\s+)?(?:config\w*|tokenizer|mix\w*|yaml|rope|checkpoint|ckpt|data|settings|base)",
    ),
    _sig(
        "outage",
        "instead",
        r"(?:has|have)\s+been\s+(?:training|running)\s+on\s+[\w.-]+\s+instead\s+of\b",
    ),
    # data read again after a resume: "re-reading the beginning of the mix since then", "the
    # loader is re-serving something", "~2.6M sequences seen twice"
    _sig(
        "outage",
        "reading serving replaying feeding twice replayed started restarted went",
        r"(?:re-?reading|re-?serving|replaying|re-?feeding)\s+(?:the\s+)?(?:same\s+|old\s+)?"
        r"(?:beginning|start|first|data|shards?|batches|samples|sequences|something|tokens|epoch)"
        r"|(?:sequences|samples|tokens|batches|shards|documents|data)\s+(?:\w+\s+){0,2}?"
        r"(?:seen|read|served|trained\s+on)\s+twice"
        r"|steps\s+of\s+replayed\s+data|(?:has|have)\s+been\s+(?:replaying|re-?reading|re-?serving)\b"
        r"|(?:loader|sampler)\s+(?:\w+\s+){0,2}?(?:started|restarted|went\s+back)\s+(?:from|to)\s+the\s+"
        r"(?:beginning|start)\s+of\s+(?:the\s+)?(?:epoch|data|mix|dataset|shards?)",
    ),
    # since a restart the run is not where it was: "a fresh warmup after this morning's
    # restart", "loss since the restart too good?", "started Sat 03:10 from random init",
    # "the loss went back up to 10.9??"
    _sig(
        "outage",
        "warmup warm-up",
        r"(?:fresh|new|second|another)\s+(?:lr\s+)?warm-?up\s+(?:after|since)\s+(?:the\s+|this\s+"
        r"morning's\s+|today's\s+|last\s+night's\s+)?(?:[\w:.,-]+\s+)?(?:re-?start|resume|relaunch"
        r"|requeue)",
    ),
    _sig(
        "outage",
        "good",
        r"loss\s+(?:since|after)\s+the\s+(?:[\w:.,-]+\s+)?(?:re-?start|resume|relaunch)\w*\s+(?:is\s+)?"
        r"(?:too|suspiciously)\s+good|loss\s+(?:is\s+)?(?:too|suspiciously)\s+good\s+(?:since|after)"
        r"\s+the\s+(?:[\w:.,-]+\s+)?(?:re-?start|resume|relaunch)",
    ),
    _sig(
        "outage",
        "scratch init counter back",
        # (not "relaunched with CP 4 from scratch", a choice)
        r"(?:started|resumed|came\s+(?:back|up)|began)\s+(?:\w+\s+){0,4}?from\s+(?:random\s+init\w*"
        r"|scratch|step\s+0\b)|(?:restarted|relaunched)\s+(?:\w+\s+){0,4}?from\s+random\s+init\w*"
        r"|step\s+counter\s+(?:is\s+)?(?:at|back\s+to|reset\s+to)\s+0\b"
        r"|loss\s+(?:went\s+|is\s+)?back\s+(?:up\s+)?to\s+(?:9|1[0-2])(?:\.\d+)?\b",
    ),
    # what the run reads is gone: "the run is training without arxiv right now"
    _sig(
        "outage",
        "without",
        r"(?:training|running)\s+without\s+(?:the\s+|any\s+)?[\w-]+(?:\s+(?:data|source|shards?"
        r"|split))?\s+(?:right\s+now|now|since)\b",
    ),
    # a compile that should take minutes: "it's been in compile for 45 min"
    _sig(
        "hang",
        "compil",
        r"(?:been|still|stuck)\s+(?:in\s+)?compil(?:e|ing|ation)\s+for\s+(?:\d+|an?)\s*"
        r"(?:min|mins|minutes|h|hrs?|hours?)\b",
    ),
    # a scheduler watcher's line: "🔴 [slurm-watch] job 88911 (curlew-200b-s1) FAILED exit=1"
    _sig(
        "crash",
        "failed timeout out_of_memory",
        r"job\s+\d{3,}\s+(?:\([\w.-]+\)\s+|`?[\w.-]+`?\s+)?(?:→\s*|->\s*|is\s+|was\s+)?"
        r"(?-i:FAILED|OUT_OF_MEMORY|NODE_FAIL)\b",
    ),
    # an RL run's rewards missing: "rewards coming back null for ~40% of groups"
    _sig(
        "outage",
        "null none nan empty missing",
        r"rewards?\s+(?:are\s+|is\s+)?(?:coming\s+back\s+|come\s+back\s+|returning\s+)?(?:null|none"
        r"|nan|empty|missing)\s+for\s+~?\d+(?=\s*%)",
    ),
    # "~2% packet loss in mtr"
    _sig(
        "network",
        "packet",
        r"~?\d+(?:\.\d+)?\s*%\s+packet\s+loss|packet\s+loss\s+(?:of\s+|at\s+|is\s+)?~?\d+(?:\.\d+)?(?=\s*%)"
        # "hlx↔n3 is dropping packets, ~3% loss since around 06:10"
        r"|(?:is|are|keeps|started|been)\s+dropping\s+packets\b",
    ),
    # a store's own words: "LustreError: … operation ost_write … failed: rc = -107",
    # "/lustre/scr2 degraded", "OST index 42 (scr2-OST002a) is unavailable"
    _sig("storage", "lustreerror", r"lustreerror"),
    _sig(
        "storage",
        "degraded unavailable",
        r"(?<=/)[\w.-]+\s+(?:is\s+)?degraded"
        r"|\b(?:ost|mdt|oss|mds)\s+(?:index\s+\d+\s+)?(?:\([\w-]+\)\s+)?(?:is|are)\s+(?:unavailable"
        r"|down|offline)",
    ),
    # the chart went flat: "the line stopped moving ~20 min ago"
    _sig(
        "hang",
        "stopped",
        r"(?:line|chart|graph|curve|plot|panel)s?\s+(?:has\s+)?stopped\s+(?:moving|updating|going)",
    ),
    # a cloud's scheduled stop of one of the run's hosts: "instance-stop at 10:40 UTC today"
    _sig(
        "node-loss",
        "instance",
        r"instance[-_ ](?:stop|terminat\w*|retire\w*)\s+(?:at|in|on|scheduled)\s+(?:\*\*)?\d",
    ),
    # the cluster kept from the run: "All partitions remain unavailable"
    _sig(
        "outage",
        "unavailable offline",
        r"(?:partitions?|the\s+cluster|nodes|filesystems?)\s+(?:remain|are\s+still|still|stay)\s+"
        r"(?:unavailable|offline)",
    ),
    # the newest sign of life is old: "the run's last checkpoint is from 14 hours ago", "the
    # last logged step is 212,340 at 01:29 UTC and nothing since"
    _sig(
        "hang",
        "last",
        r"last\s+(?:logged\s+)?(?:checkpoint|step|log\s+line|heartbeat|point)\s+(?:\S+\s+){0,3}?"
        r"(?:is|'s)\s+(?:from\s+)?(?:\d+\s+(?:hours?|h|minutes?|min)\s+ago"
        r"|[\d,.]+k?\s+at\s+\d{1,2}:\d\d\b[^.;\n]{0,20}\bnothing\s+since)",
    ),
    # chat's obituary for the run: "rip run 💀", "RIP hero"
    _sig("outage", "rip", r"rip\s+(?:the\s+|our\s+)?(?:run|job|training|hero)(?!\s+\()"),
    # the run's charts went quiet: "the main run's W&B stopped updating around 12:40"
    _sig(
        "hang",
        "stopped stops froze updating",
        r"(?:run|job|hero)(?:'s)?\s+(?:w&b|wandb|metrics|logging|dashboard|charts?)\s+(?:has\s+)?"
        r"(?:stopped|stops|froze|isn't\s+updating|hasn't\s+updated)",
    ),
    # the same asked of a colleague: "did someone stop hero?", "did anyone kill the job?"
    _sig(
        "crash",
        "someone somebody anyone",
        r"(?:did|has)\s+(?:someone|somebody|anyone)\s+(?:just\s+)?(?:stop(?:ped)?|kill(?:ed)?"
        r"|cancel(?:l?ed)?|nuked?)\s+(?:(?:the|our)\s+(?:job|run|training|trainer)\b|[a-z][\w-]*(?=\s*\?))",
    ),
    # capacity a provider takes back: "Azure took back 8 of our spot H200s"
    _sig(
        "preemption",
        "back",
        r"(?:took|taken|taking|takes)\s+back\s+(?:\d+\s+(?:of\s+)?)?(?:our\s+|the\s+)?(?:spot\s+)?"
        r"(?:vms?|nodes?|hosts?|gpus?|tpus?|machines?|instances?|capacity|slices?|[a-z]+\d+\w*s)\b",
    ),
    # the machines a scheduler or console reports lost: "all 4 slices report 'chips unavailable'"
    _sig(
        "node-loss",
        "report show unavailable unhealthy",
        rf"{_NODE}\s+(?:all\s+)?(?:report|reports|show|shows|are|is)\s+['\"]?(?:\w+\s+)?"
        r"(?:unavailable|unhealthy)",
    ),
    _sig("network", "connection pipe", r"connection\s+reset\s+by\s+peer|broken\s+pipe"),
    # the run's referent, a state and a word for now in one clause: "now it's flat out dead",
    # "the job is in CG state forever", "now it's all NaN"; its kind is the state's
    _sig(
        NOW_STATE,
        "dead down hung stuck stalled wedged frozen nan idle silent halted aborted state",
        r"(?:now|still|again|currently)\s+(?:it|the\s+(?:run|job|training|trainer))(?:'s|\s+is"
        r"|\s+are)\s+(?:\w+\s+){0,2}?(?:dead|down|hung|stuck|stalled|wedged|frozen|nans?|idle"
        r"|silent|halted|aborted)\b"
        r"|(?:the\s+)?(?:run|job|training|trainer)\s+(?:is|'s|are)\s+(?:\w+\s+){0,2}?"
        r"(?:in\s+\S+\s+state|dead|hung|stuck|stalled|wedged|frozen|idle|silent|halted)\s+"
        r"(?:forever|for\s+(?:\d|an?\s|half|hours|ages)|since\s+\d|all\s+(?:morning|night|day))",
    ),
    _sig(
        "hang",
        "doing anything nothing",
        rf"(?:{_SUBJ}|it)\s+(?:is\s+|are\s+)?(?:alive\s+but\s+)?(?:not\s+doing\s+anything"
        r"|doing\s+nothing)",
    ),
    # a run that cannot come back: "so marten can't restart", "the job cannot resume"
    _sig(
        "outage",
        "restart relaunch resume start launch",
        rf"{_FAIL_TO}\s+(?:re-?start|re-?launch|resume|start\s+(?:again|back\s+up)|launch)\b"
        r"(?!\s+(?:the\s+)?(?:eval|notebook|demo|sweep|ablation))",
    ),
    # a checkpoint with nothing in it: "checkpoint 36000 is 0 bytes on lustre", "ckpt 710k: 0 B"
    _sig(
        "checkpoint-failed",
        "bytes empty missing ckpt checkpoint every all",
        r"(?:checkpoint|ckpt)\s+(?:at\s+)?(?:step\s+)?(?:[\d,.]+k?\s*)?"
        r"(?:in\s+(?:the\s+[\w-]+\s+(?:mirror|bucket)|s3|gcs|the\s+bucket)\s+)?"
        r"(?:(?:is|are|was|came\s+out)\s+|:\s*)(?:(?:0|zero)\s*(?:bytes|B\b)|empty|missing)"
        # "every file in it is 0 bytes"
        r"|\b(?:every|all\s+the)\s+(?:files?|shards?|objects?)\s+(?:in\s+\S+\s+)?(?:is|are)\s+"
        r"0\s*(?:bytes|B\b)",
    ),
    # a part of the run timing out: "the dataloaders are timing out"; the kind is the part's
    _sig(
        FAULT,
        "timing erroring failing ing since",
        r"(?:is|are|keeps?|kept)\s+(?:timing\s+out|erroring(?:\s+out)?)"
        # "s3 mirror has been failing since midnight"
        r"|(?:has|have)\s+been\s+(?:failing|erroring|timing\s+out|[45]\d\ding)\s+since\b"
        # "the loader is already failing on some ranks"
        r"|(?:is|are)\s+(?:already\s+|now\s+)?failing\s+on\s+(?:some|several|many|all|every|\d+)\b",
    ),
    # something amiss with a part of the run, or since the run's restart, said as such at the
    # start of a sentence: "something's off with lustre metadata: `ls` takes 38 s", "⚠️
    # something is off with the data since the Mar 20 restart", "something is off since the
    # 600 restart"; the kind is the part's
    _sig(
        FAULT,
        "something",
        r"(?<!\w[ \t])something(?:'s|\s+is|\s+seems)\s+(?:off|wrong|broken|weird|up)\s+"
        r"(?:(?:with|on|in)\s+(?:the\s+)?[\w/-]+(?:\s+[\w/-]+)?"
        rf"|{SINCE_RESTART})",
    ),
    # a slope in what the run does, told as one: "are saves getting slower each time?"
    _sig(
        "checkpoint-failed",
        "getting",
        r"\b(?:saves?|checkpoints?|ckpts?)\s+(?:are\s+|is\s+|keep\s+)?getting\s+(?:slower|longer)\b",
    ),
    # a store on one leg: "storage array HB-STOR-2 … running in degraded mode"
    _sig("storage", "degraded", r"\bin\s+(?:a\s+)?degraded\s+(?:mode|state)\b"),
    # what torch's launcher prints when a rank dies, cause unsaid: "ChildFailedError",
    # "exitcode : -9"
    _sig(
        "outage",
        "childfailederror exitcode",
        r"childfailederror|exitcode\s*:\s*-?[1-9]\d*",
    ),
    # a run that has not moved since: "it has not trained since", "none of them logs a single
    # step", "the panel still says 41,2xx now"
    _sig(
        "hang",
        "trained logs logged still since",
        r"\b(?:has|have)(?:\s+not|n't)\s+(?:trained|logged\s+a\s+(?:single\s+)?step)\b"
        r"|\bnone\s+of\s+them\s+(?:logs?|logged|trains?|trained)\s+a\s+(?:single\s+)?step\b"
        r"|\bstill\s+(?:says|shows|reads)\s+(?:step\s+)?(?:\d{1,3}(?:,\d{3})+|\d+,?\d*xx)\b"
        # a step held since a time: "step 965,000 since 11:20"
        r"|^\W*step\s+(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?k)\s+since\s+~?\d{1,2}:\d\d\b"
        r"|\bstill\s+(?:sits\s+at|be\s+at)\s+(?:step\s+)?(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?k|\d+,?\d*xx)\b",
    ),
    # a restart that never holds: "restarting every ~12 minutes", "three attempts in ninety
    # minutes, each ending at restore"
    _sig(
        "crash",
        "restarting requeue attempts",
        r"\b(?:restarting|requeu\w*|relaunch\w*)\s+every\s+(?:~?\d+|few|couple\s+of)\s*"
        r"(?:min|minutes|m\b|s\b|sec)"
        r"|\battempts?\b[^.\n]{0,30}?\beach\s+(?:ending|failing|dying|crashing)\b",
    ),
    # a checkpoint written short: "Total Size: 0", "the 63 missing shards", "only 1,089 are present"
    _sig(
        "checkpoint-failed",
        "total missing present restored",
        r"\btotal\s+size\s*:\s*0\b|\b\d[\d,]*\s+(?:shards?|files?)\s+(?:are\s+)?missing\b"
        r"|\bmissing\s+shards?\b|\bonly\s+\d[\d,]*\s+(?:of\s+(?:them|the\s+\d[\d,]*)\s+)?"
        r"(?:are|were)\s+(?:present|there)\b"
        r"|\b(?:this|the|that)\s+checkpoint\s+(?:could|can)\s*(?:not|n't)\s+be\s+restored\b",
    ),
    # a GPU throttled or counting double-bit errors: "HW Thermal Slowdown: Active", "gpu5 dbe 3
    # (0 at 06:00)", "this node is cooking"
    _sig(
        "hardware",
        "slowdown dbe cooking melting",
        r"\bhw\s+(?:thermal\s+|power\s+brake\s+)?slowdown\s*:\s*active\b"
        r"|\b(?:showing|shows|reports?|reporting)\s+hw\s+(?:thermal\s+)?slowdown\b"
        r"|\bgpu\s*\d+\s+dbe\s+[1-9]"
        r"|\b(?:node|gpu|host|box)\b[^.?!\n]{0,20}?\bis\s+(?:cooking|melting|overheating)\b",
    ),
    # the checkpoint store refusing: "ckpt bucket 403", "checkpoint bucket returning 503s"
    _sig(
        "storage",
        "bucket store",
        r"\b(?:ckpt|checkpoint)\s+(?:bucket|store)\s+(?:is\s+)?(?:returning\s+|giving\s+|throwing\s+)?"
        r"(?:40[134]|50[0234])(?:s\b|\b)",
    ),
    # the newest checkpoint hours behind: "last ckpt is 14h old" (not "2h old", an interval)
    _sig(
        "checkpoint-failed",
        "old",
        r"\b(?:last|latest|newest)\s+(?:ckpt|checkpoint|save)\s+(?:is|was)\s+(?:already\s+)?(?:[\w.-]+,\s+)?"
        r"(?:(?:[6-9]|[1-9]\d)(?:\.\d)?\s*(?:h|hrs?|hours?)|\d+\s*(?:d|days?)|a\s+day)\s+old\b",
    ),
    # a resume from an older step than the newest save: "continuing from 226,000 rather than
    # 228,000", "2,000 steps were recomputed", "did we go back in time at the 02:55 resume?"
    _sig(
        "restore-failed",
        "rather instead recomputed redone back backwards overlaps",
        r"\b(?:restarted|resumed|continuing|continued|picked\s+up|came\s+back)\s+from\s+(?:step\s+)?"
        r"(?:(?:waypoint|checkpoint|ckpt)\s+)?[\d,.]+k?\s+(?:rather\s+than|instead\s+of)\s+"
        r"(?:(?:step\s+)?[\d,.]+k?|(?:from\s+)?the\s+(?:newest|latest|last)\b)"
        r"|\b[\d,.]+k?\s+steps\s+(?:were|got|have\s+been)\s+(?:recomputed|redone|lost)\b"
        r"|\b(?:go|went|gone|going)\s+back(?:wards)?\s+in\s+time\b"
        r"|\bstep\s+counter\s+(?:went|jumped|is\s+going|has\s+gone)\s+backwards?\b"
        r"|\bcurve\s+overlaps\s+itself\b",
    ),
    # the scheduler's own limit holding the run: "QOSMaxGRESPerUser", "reason QOSGrpGRES"
    _sig("outage", "qos", r"\bqos(?:max|grp)\w+"),
    # a run named by its id dying at a time: "main-r3 died 02:47"
    _sig(
        "crash",
        "died crashed",
        r"^\W*(?!(?:my|the|our|an?|this|it|evals?|abl\w*|tests?|dev|ci)\b)(?:[a-z][\w-]*\d[\w-]*\s+(?:died|crashed)"
        r"\s+(?:at\s+)?~?\d{1,2}:\d\d\b|[a-z][\w-]*\s+(?:died|crashed)\s+at\s+step\s+[\d,.]+k?\b)",
    ),
    # the cloud taking the run's machines: "billing account has been suspended", "all 64 VMs are
    # STOPPED", "All 32 p5 instances went to `shutting-down`", "32k job killed at 10:58"
    _sig(
        "outage",
        "billing vms instances nodes killed reservation",
        r"\bbilling\s+account\s+(?:has\s+been\s+|was\s+|is\s+)?(?:suspended|disabled|closed)\b"
        r"|\breservation\s+(?:shows\s+as|is|was|has\s+been|got)\s+['\"]?suspended\b"
        r"|\b(?:all\s+)?(?:\d+\s+)?(?:\w+\s+)?(?:vms|instances|nodes)\s+(?:are|were|went)\s+(?:all\s+)?"
        r"(?:to\s+)?`?(?:stopped|terminated|shutting[- ]down|shut\s+down)\b"
        r"|\b(?:job|run|training)\s+(?:was\s+|got\s+)?killed\s+at\s+~?\d{1,2}:\d\d\b",
    ),
    # the room itself failing: "PDU B3 tripped in row 7", "r7n17–r7n24 are dark", "CRAH-2 ALARM",
    # "LEAK DETECT — CDU-3"
    _sig(
        "hardware",
        "tripped dark alarm leak",
        r"\b(?:pdu|breaker|psu|ups|rpp)\b[\w\s-]{0,30}?\b(?:tripped|trip)\b"
        r"|\b(?:nodes?|hosts?|racks?|rows?|\w*\d+(?:[–-]\w*\d+)?)\s+(?:are|is|went|gone)\s+dark\b"
        r"|\b(?:crah|crac|cdu|chiller|cooling)[\w-]*\s+(?:unit\s+)?(?:alarm|failure|fault)\b"
        r"|\bleak\s+(?:detect\w*|alarm)\b",
    ),
    # a model that stopped learning, seen from its checkpoints: "step_0291250 is at chance",
    # "nine checkpoints score identical", "the run diverged after the decay started"
    _sig(
        "outage",
        "chance identical diverged",
        r"\bstep[_\s-]?\d[\d,]*\s+(?:is|scores?|scored)\s+at\s+chance\b"
        r"|\b(?:checkpoints|steps)\s+score\s+identical(?:ly)?\b"
        r"|\b(?:the|our)\s+(?:main\s+)?(?:run|training)\s+has\s+diverged\b|\bmain\s+(?:has\s+)?diverged\b"
        r"|\b(?:the|our)\s+(?:main\s+)?(?:run|training)\s+diverged\s+(?:after|since|at)\b",
    ),
    # steps stopped: "no new steps after 41,000 and the job says RUNNING"
    _sig(
        "hang",
        "steps step",
        r"\bno\s+(?:new\s+)?steps?\s+(?:after|since)\s+(?:step\s+)?\d[\d,.]*k?\b",
    ),
    # saves stopped: "no checkpoint since step_0271750", "no new ckpt since 02:41"
    _sig(
        "checkpoint-failed",
        "checkpoint ckpt save",
        r"\bno\s+(?:new\s+)?(?:checkpoints?|ckpts?|saves?)\s+since\s+(?:step[_\s-]?)?\d",
    ),
    # capacity taken back: "spot pool B just got reclaimed", "48 of 96 rollout replicas gone"
    _sig(
        "preemption",
        "reclaimed gone",
        r"\b(?:just\s+)?got\s+reclaimed\b|\b\d+\s+of\s+\d+\s+(?:\w+\s+)?(?:replicas|nodes|hosts|vms)\s+gone\b",
    ),
    # a save whose upload stopped: "1,214 of 1,280 shards done, the rest not moving"
    _sig(
        "hang",
        "moving",
        r"\b(?:the\s+rest|the\s+remaining\s+\w+|shards?|uploads?)\s+(?:are\s+|is\s+)?not\s+moving\b",
    ),
    # more of the run's own words for a fault: "s3 403 on save??", "503 SlowDown" from the object
    # store, "Failed to connect to 2 of 512 hosts", "run fulmar-7b-main failed at step 545,881",
    # "GXDoubleBitECC", "worker pod evicted"
    _sig(
        "storage", "403 401", r"\b40[13]\s+on\s+(?:the\s+|every\s+)?(?:save|upload|put|write)s?\b"
    ),
    _sig("storage", "slowdown", r"\b503\s+slow\s?down\b"),
    _sig("node-loss", "connect", r"\bfailed\s+to\s+connect\s+to\s+\d+\s+of\s+\d+\s+hosts\b"),
    _sig("crash", "failed crashed", r"\brun\s+[\w.-]+\s+(?:failed|crashed)\s+at\s+step\s+[\d,]+"),
    _sig("hardware", "doublebit", r"\w*doublebit(?:ecc)?\w*"),
    _sig(
        "preemption",
        "evicted",
        r"\b(?:worker|trainer|leader)\s+pods?\s+(?:got\s+|was\s+|were\s+)?evicted\b",
    ),
    # NCCL's InfiniBand error, printed per failed work request
    _sig("network", "completion", r"\bgot\s+completion\s+with\s+error\b"),
    # a port going up and down: "mlx5_5 bouncing between Active and Down"
    _sig(
        "network",
        "bouncing flipping",
        r"\b(?:bouncing|flipping|flapping)\s+between\s+\w+\s+and\s+down\b",
    ),
    # the accelerators waiting: "GPUs at 0% meanwhile", "gpu util 0% on every rank"
    _sig(
        "hang",
        "gpus tpus",
        r"\b(?:gpus|tpus)\s+(?:are\s+|sit\s+|sitting\s+|idle\s+)?at\s+0(?=\s*%)",
    ),
    # a divergence watched as it grows: "grad norm 40 and climbing", "grad norm is doubling"
    _sig(
        "outage",
        "climbing rising growing doubling exploding went climbed jumped",
        r"\bgrad(?:ient)?[\s_-]?norm\s+(?:is\s+|at\s+|=\s*)?~?\d+(?:\.\d+)?\s+and\s+"
        r"(?:still\s+)?(?:climbing|rising|growing)\b"
        # "grad norm is roughly doubling every 150 steps"
        r"|\bgrad(?:ient)?[\s_-]?norm\s+(?:is\s+)?(?:roughly\s+|about\s+|now\s+)?(?:doubling|exploding)\b"
        # climbing in steps: "grad norm went 0.9 → 14 → 31"
        r"|\bgrad(?:ient)?[\s_-]?norm\s+(?:went|climbed|jumped)\s+(?:from\s+)?[\d.]+\s*(?:→|->)\s*[\d.]+\s*(?:→|->)\s*\d+",
    ),
    # the run's log gone quiet at a time: "main's log stopped at 09:41"; its last step old:
    # "the last step in the metrics file is from 02:17"
    _sig(
        "hang",
        "log last chart curve graph panel line",
        r"\b(?:main|the\s+run|the\s+job|trainer|training)(?:'s)?\s+logs?\s+"
        r"(?:stopped|stops|ended|ends|went\s+quiet)\s+(?:at\s+|around\s+|~\s*)?\d{1,2}:\d\d\b"
        # "the wandb chart for main stops at 09:12"
        r"|\b(?:chart|curve|graph|panel)s?\s+for\s+(?:main|the\s+run)\s+(?:stopped|stops|ends|ended)\s+"
        r"(?:at\s+|around\s+)?\d{1,2}:\d\d\b"
        # "the loss line just stops at step 506,290"
        r"|\b(?:loss|step)\s+(?:line|chart|curve|graph)\s+(?:just\s+)?(?:stops|stopped|ends)\s+at\s+"
        r"(?:step\s+)?\d[\d,.]*k?\b"
        r"|\blast\s+(?:step|heartbeat|log\s+line|point)\b[^.\n]{0,40}?\b(?:is|was)\s+(?:from\s+)?"
        r"(?:~?\d{1,2}:\d\d|yesterday|last\s+night)\b",
    ),
    # a restart that keeps coming: "restarted about a dozen times since 03:00", "5 restarts
    # since 09:41"
    _sig(
        "crash",
        "times restarts requeues",
        r"\b(?:restarted|requeued|relaunched|crashed|died)\s+(?:about\s+|roughly\s+|~\s*|some\s+)?"
        r"(?:a\s+dozen|\d+|several|many)\s+times\s+(?:since|in\s+the\s+last|overnight|today)\b"
        r"|\b\d+\s+(?:restarts|requeues|relaunches)\s+since\s+~?\d{1,2}:\d\d\b",
    ),
    # dead at once: "the 32k stage launched at 10:05 and has died on its first step"
    _sig(
        "crash",
        "died crashed",
        r"\b(?:died|crashed)\s+(?:on|at)\s+(?:its|the)\s+(?:very\s+)?first\s+step\b",
    ),
    # a job said gone by its number: "job 8931008 exited 11:24"; a run not running from a
    # time: "training not running from 10:20 KST"
    _sig(
        "crash",
        "exited running",
        r"\bjob\s+\d{4,}\s+(?:exited|died|failed)\s+(?:at\s+)?~?\d{1,2}:\d\d\b"
        r"|\b(?:training|the\s+run|the\s+job|main)\s+(?:is\s+)?not\s+running\s+(?:since|from)\s+"
        r"~?\d{1,2}:\d\d\b(?!\s*(?:to|until|till|[-–])\s*~?\d)",
    ),
    # the scheduler ending the job: "slurm killed 880213 at step 413,497"
    _sig(
        "crash",
        "killed",
        r"\b(?:slurm|the\s+scheduler|kueue)\s+killed\s+(?:job\s+)?(?:\d{4,}|main|the\s+(?:run|job))\b",
    ),
    # a machine's state said outright: "went NOT_RESPONDING", "is NOT_RESPONDING"
    _sig("node-loss", "not_responding", r"\b(?:went|is|are|now)\s+not_responding\b"),
    # a number held where it should move: "it's been 1.684 on the nose for the last hour"
    _sig(
        "hang",
        "nose unchanged",
        r"\b(?:it's|it\s+has|has|have)\s+been\s+(?:at\s+)?~?\d[\d,.]*\s+(?:on\s+the\s+nose|unchanged)"
        r"\s+for\b",
    ),
    # minutes gone and no step made: "sitting in spout init for 38 min, 0 steps"
    _sig(
        "hang",
        "steps",
        r"\bfor\s+~?\d+\s*(?:min\w*|m|h|hrs?|hours?)[,;]\s+(?:0|zero|no)\s+(?:new\s+)?steps\b",
    ),
    # the loader holding the run: "data_wait 60% since restart"
    _sig(
        "hang",
        "wait",
        r"\b(?:data|loader|input)[\s_]wait\s+(?:is\s+|at\s+)?~?(?:[3-9]\d|100)(?:\.\d+)?\s*%\s+"
        r"(?:since|after|for|of\s+(?:the\s+)?step|and\s+(?:still\s+)?(?:climbing|rising))\b",
    ),
    # a save pointed at and not there: "the latest pointer says step 637000 but fetching it
    # gives NoSuchKey"
    _sig(
        "checkpoint-failed",
        "nosuchkey",
        r"\b(?:gives|gave|returns|returned|throws|getting|get)\s+`?nosuchkey\b",
    ),
    # a save not where it should be, said plainly: "checkpoint of this night is not there",
    # "folder step_348000 has only 37 of 320 files"
    _sig(
        "checkpoint-failed",
        "there only",
        r"\b(?:checkpoint|ckpt|save)\s+(?:of\s+(?:this|last|the)\s+\w+\s+|from\s+\w+\s+)?"
        r"(?:is|was)\s*(?:not|n't)\s+there\b"
        r"|\bhas\s+only\s+\d+\s+of\s+(?:the\s+)?\d+\s+(?:files|shards|objects)\b",
    ),
    # a guard that stopped the run: "the nan-guard stop the job by itself", "then is NaN"
    _sig(
        "outage",
        "guard nan",
        r"\b(?:nan[- ]?guard|the\s+guard)\s+(?:stop|stops|stopped|halt|halts|halted|killed)\s+"
        r"(?:the\s+)?(?:job|run|training|main)\b"
        r"|\band\s+then\s+(?:is|it's|it\s+is|goes|went)\s+nan\b",
    ),
    # a watcher's structured line about a run that says it is not well: "run=tt-280
    # state=PENDING … ok=false why=step_not_advancing", {"run": "tt-280", "status": "ERROR"}
    _sig(
        "outage",
        "false status",
        r"\brun\"?\s*[=:]\s*\"?[\w.-]+\"?[^`]{0,400}?(?:\bok\"?\s*[=:]\s*false\b"
        r"|\b(?:status|state)\"?\s*[=:]\s*\"?(?:error|failed|stalled|crashed|hung|halted)\b)",
    ),
    # a watcher repeating itself: "tickbird has said step=473604 in its last 3 posts"
    _sig(
        "hang",
        "said shown reported",
        r"\b(?:said|shown|reported|logged)\s+(?:the\s+same\s+step|step\s*[=:]?\s*\d[\d,]*)\s+"
        r"(?:in\s+its\s+last|for\s+the\s+last)\s+(?:\d+|few|several)\b",
    ),
    # machines counted gone: "2 nodes lost 02:10", "3 hosts gone since the PDU trip"
    _sig(
        "node-loss",
        "lost gone dropped",
        r"\b\d+\s+(?:nodes|hosts|gpus|slices|machines)\s+(?:lost|gone|dropped)\s+"
        r"(?:at\s+|since\s+)?(?:~?\d{1,2}:\d\d|overnight|this\s+morning)",
    ),
    # a GPU's double-bit error counter above zero: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL=2"
    _sig("hardware", "dbe", r"\b\w*ecc_dbe\w*\s*[=:]\s*[1-9]"),
    # a metric summary's number that says the run barely trains: "mfu 8%", "tok/s 0 · mfu 0%"
    _sig(
        "hang",
        "mfu tok/s",
        r"\bmfu\s*[=:]?\s*(?:\d|1[0-2])(?:\.\d+)?(?=\s*%)"
        r"|\btok/s\s*[=:]?\s*0(?:\.0+)?\s*[mk]?(?![\d.])(?!\s*from\s+\d{1,2}:\d\d\s+to\b)",
    ),
    # a save cut short: "250k save: 3 of 768 shards written"; a run stopped at a step: "It
    # stopped at 258,9xx and squeue shows (Resources)"
    _sig(
        "checkpoint-failed",
        "shards",
        r"\b\d+\s+of\s+\d+\s+shards\s+(?:written|uploaded|saved|committed)\b",
    ),
    _sig(
        "crash",
        "stopped",
        r"\b(?:it|the\s+job|the\s+run|training|main)\s+stopped\s+at\s+(?:step\s+)?"
        r"\d[\d,.]*(?:k|x{2,3})?(?![\d:])(?!\s*\(?\s*(?:clean|on\s+purpose|as\s+planned))",
    ),
    # a machine leaving its pool: "node s-r12n05 left the Nomad pool at 02:14"
    _sig(
        "node-loss",
        "left",
        r"\bnode\s+\S+\s+(?:left|dropped\s+out\s+of|fell\s+out\s+of)\s+the\s+(?:\w+\s+)?"
        r"(?:pool|cluster|job|partition)\b",
    ),
    # a run said much slower, no metric named: "it's 40% slower"
    _sig(
        "outage",
        "slower",
        r"\b(?:it's|it\s+is|(?:the\s+)?(?:run|job|training|main)\s+is|now)\s+(?:about\s+|~)?"
        r"(?:[3-9]\d|1\d\d)\s*%\s+slower\b",
    ),
    # a run that trains nothing: "lr 0.0 since the 08:37 restart"
    _sig("outage", "lr", r"\blr\s+(?:is\s+|at\s+|=\s*)?0(?:\.0+)?\s+since\b"),
    # the checkpoint's copy failing: "the S3 mirror upload failed on every shard"
    _sig(
        "checkpoint-failed",
        "upload",
        r"\b(?:mirror|s3|gcs|checkpoint|ckpt)\s+(?:mirror\s+)?uploads?\s+(?:has\s+)?failed\b",
    ),
    # a heartbeat gone stale, said with how long: "heartbeat stale 25 min", "last beat 40 min
    # ago" (not a rule's "stale > 20 min", nor "last beat 2 min ago")
    _sig(
        "hang",
        "stale beat",
        r"\bheartbeat\s+(?:has\s+been\s+|is\s+|went\s+)?stale\s+(?:for\s+)?~?\d+\s*(?:min|m|h)\b"
        r"|\blast\s+(?:heart)?beat\s+(?:was\s+)?(?:(?:1[5-9]|[2-9]\d|\d{3})\s*(?:min|minutes|m)"
        r"|\d+\s*(?:h|hours?))\s+ago\b",
    ),
    # the run's charts ending at a time: "W&B stopped at 15:31", "nothing plotted after about
    # 02:10", "the last W&B point is 07:31"
    _sig(
        "hang",
        "w&b wandb nothing last",
        r"\b(?:w&b|wandb)\s+(?:just\s+)?(?:stopped|stops|ends|ended)\s+at\s+~?\d{1,2}:\d\d\b"
        r"|\bnothing\s+(?:plotted|logged|new\s+(?:plotted|logged))\s+(?:after|since)\s+"
        r"(?:about\s+|around\s+|~\s*)?\d{1,2}:\d\d\b"
        r"|\blast\s+(?:w&b|wandb|logged)\s+(?:point|step)\s+(?:on\s+(?:w&b|wandb)\s+)?(?:is|was)\s+"
        r"(?:from\s+)?(?:(?:step\s+)?\d[\d,.]*k?\s+at\s+)?~?\d{1,2}:\d\d\b",
    ),
    # a watcher that has seen nothing come: "evalwatch has seen NOTHING since the 421k save"
    _sig(
        "hang",
        "nothing",
        r"\b(?:seen|got|gotten|received)\s+nothing\s+(?:new\s+)?since\s+(?:the\s+)?"
        r"(?:\d[\d,.]*k?\s+(?:save|checkpoint|ckpt)|~?\d{1,2}:\d\d)\b",
    ),
    # a run making nothing: "doing 0 tok/s for 20 min", "GPU util 0 % on every node"
    _sig(
        "hang",
        "tok/s util",
        r"\b(?:doing|making|pushing|getting)\s+0(?:\.0+)?\s*(?:tok(?:ens)?/s|steps?/s|samples/s)"
        r"|\bgpu\s+util(?:i[sz]ation)?\s+(?:is\s+|at\s+)?0\s*%\s+(?:on|across)\s+(?:every|all)\b",
    ),
    # a run diverging now: "we're diverging and the guard hasn't fired", "Divergence from
    # ~176.4k", "the loss is 2.6 and not coming down"
    _sig(
        "outage",
        "diverg coming recovering",
        r"\b(?:we(?:'re|\s+are)|the\s+run\s+is|main\s+is|training\s+is)\s+(?:slowly\s+|now\s+|still\s+)?"
        r"diverging\b"
        r"|(?m:^)divergence\s+(?:from|since|at)\s+(?:step\s+)?~?\d[\d,.]*k?\b"
        r"|\bloss\s+(?:is\s+)?[\d.]+\s+and\s+not\s+(?:recovering|coming\s+(?:back\s+)?down)\b"
        r"|\bloss\s+not\s+recovering\b",
    ),
    # a panel or a run state that says it: "grad norm panel shows NaN at 296,518", "the run
    # state went to \"halted\""
    _sig(
        "outage",
        "nan state",
        r"\b(?:loss|grad(?:ient)?[\s_-]?norm)\s+(?:panel\s+|chart\s+|plot\s+)?shows\s+nan\b"
        r"|\b(?:run|job)(?:'s)?\s+state\s+(?:went\s+to|is|changed\s+to|flipped\s+to)\s+[\"'`]?"
        r"(?:halted|failed|crashed|stopped|error)\b",
    ),
    # a save said failed by its step: "❌ save 90k failed on all ranks at upload", "save
    # step_348000 FAILED verification"
    _sig(
        "checkpoint-failed",
        "save",
        r"\bsave\s+(?:of\s+)?(?:step\s+|step_)?~?\d[\d,.]*k?\s+(?:has\s+)?failed\b",
    ),
    # nothing new for hours: "newest dir is step_262000 … nothing since, ~30h"
    _sig("hang", "nothing", r"\bnothing\s+(?:new\s+)?since\s*,?\s*~?\d+\s*h\b"),
    # a run-state bot's answer pasted: "/runstate → FAILED (NCCL watchdog timeout) · since 22:14"
    _sig(
        "crash",
        "failed crashed halted",
        r"(?:(?<=→\s)|(?<=->\s)|(?<=state:\s)|(?<=state=))(?-i:FAILED|CRASHED|HALTED)\b",
    ),
    # a rack gone, or a job that will not come back: "whole rack 5 gone", "the job won't come
    # back: RuntimeError … on restore of 223,000"
    _sig(
        "node-loss",
        "rack",
        r"\b(?:whole|entire)\s+rack\s+\w+\s+(?:is\s+)?(?:gone|down|dead|lost|offline)\b",
    ),
    _sig(
        "restore-failed",
        "come",
        r"\b(?:job|run|training|main)\s+(?:won't|will\s+not|doesn't|does\s+not|can't|cannot)\s+"
        r"come\s+back\b",
    ),
    # a rank far behind the others: "rank 311 is 2.3× the median step time"
    _sig(
        "hang",
        "rank",
        r"\brank\s+\d+\s+(?:is|at)\s+(?:[2-9](?:\.\d+)?|1\.[3-9]\d*)\s*[x×]\s+(?:the\s+)?"
        r"(?:median|others|rest)\b",
    ),
    # a rank slow once more, told as the straggler it is: "rank 611 slow again", "rank 88 is
    # lagging again since 06:20"
    _sig(
        "hang",
        "slow lagging straggling",
        r"\brank\s*\d+\s+(?:is\s+|'s\s+)?(?:slow|lagging|straggling)\s+again\b",
    ),
    # the run called "main" in chat: "main died at 11:02", "main crashed", "main is down"
    _sig(
        "crash",
        "main",
        r"\bmain(?:\s+run)?\s+(?:just\s+|has\s+)?(?:died|crashed|(?:is|went)\s+down\b(?!\s+(?:by\s+)?~?\d))",
    ),
    # a named host that stopped answering: "hx-r11-03 unresponsive, BMC reports CPU IERR"
    _sig(
        "node-loss",
        "unresponsive responding",
        # (not an NFS client's "server fs-02 not responding": the storage's hang)
        rf"(?<!server\s)(?<![\w-]){_HOST}\s+(?:is\s+|went\s+|became\s+|has\s+become\s+)?"
        r"(?:unresponsive|not\s+responding)\b",
    ),
    # an alert's condition met, with its value: "`perf/tokens_per_sec` = 1.31M < 1.5M for 15 min"
    _sig(
        "outage",
        "< > below under less",
        r"(?:tok(?:en)?s?[_/]?(?:per[_/]?)?s(?:ec)?|throughput|mfu|samples[_/]?per[_/]?s(?:ec)?"
        r"|step[_ ]?time|steps?[_/]?per[_/]?s(?:ec)?)\S*\s*=\s*~?[\d.,]+\s*[kmb]?\s*[<>]=?\s*"
        r"[\d.,]+\s*[kmb]?\s+for\s+(?:the\s+last\s+)?\d+\s*(?:min(?:utes?)?|m|h|hours?|s)\b"
        # in words: "perf/tokens_per_s = 0.97M, below 1.10M for 10 minutes"
        r"|(?:tok(?:en)?s?[_/]?(?:per[_/]?)?s(?:ec)?|throughput|mfu)\S*\s*=\s*~?[\d.,]+\s*[kmb]?,?\s+"
        r"(?:below|under|less\s+than)\s+[\d.,]+\s*[kmb]?\s+for\s+(?:the\s+last\s+)?\d+\s*"
        r"(?:min(?:utes?)?|m|h|hours?)\b",
    ),
    # a job the orchestrator gave up on: "knot-300b is Failed, out of restarts"
    _sig("crash", "restarts", r"\bout\s+of\s+restarts\b|\bran\s+out\s+of\s+(?:retries|restarts)\b"),
    # a restart that does not take: "restart after the node swap is failing: FileNotFoundError"
    _sig(
        "restore-failed",
        "failing",
        r"\b(?:restart|resume|relaunch|requeue)s?\s+(?:after\s+[^,.:;\n]{1,40}?\s+)?(?:is|are|keeps?)\s+"
        r"failing\b",
    ),
    # a part of the run slowing since a time: "checkpoint saves have been getting slower since
    # ~06:00", "steps got way slower since the 14:00 restart"
    _sig(
        "outage",
        "slower",
        r"\b(?:saves?|checkpoints?|ckpts?|steps?|step\s+times?|the\s+run|training|loader|uploads?"
        r"|throughput|all-?reduces?)\s+(?:ha(?:s|ve)\s+been\s+|is\s+|are\s+)?(?:getting|got|gotten)"
        r"\s+(?:much\s+|a\s+lot\s+|way\s+|steadily\s+)?slower\s+since\b",
    ),
    # a run held stopped: "the run has been stopped since 00:00 UTC today"
    _sig(
        "outage",
        "stopped",
        r"\b(?:the\s+)?(?:run|job|training|main)\s+(?:has\s+been|is|was)\s+stopped\s+since\b",
    ),
    # a machine that keeps falling over: "gc-c210 (node panics, reboots itself …)"
    _sig(
        "node-loss",
        "panic reboot",
        r"\b(?:node|host)\s+(?:\S+\s+)?(?:keeps\s+panicking|panics)\b|\breboots\s+itself\b",
    ),
    # the scheduler taking the job away: "all 160 nodes went to DRAIN", "job killed mid-step"
    _sig(
        "node-loss",
        "drain",
        r"\ball\s+\d+\s+nodes\s+(?:went|are|got)\s+(?:to\s+|into\s+)?drain(?:ed|ing)?\b",
    ),
    _sig(
        "crash",
        "killed",
        r"\b(?:job|run|training|trainer)\s+(?:was\s+|got\s+)?killed\s+(?:mid-?step|mid-?save"
        r"|by\s+(?:slurm|the\s+scheduler|the\s+provider))\b",
    ),
    # the same said in Spanish, as a bilingual team's chat says it: "el run se cayó otra vez",
    # "se quedó en 117,548", "loss en NaN desde el step 102,317", "perdimos el rack R07"
    _sig(
        "crash",
        "cayó cae murió crasheó petó mataron muriendo",
        r"\b(?:el\s+|la\s+)?(?:run|job|entrenamiento|training|main|loader)\s+(?:se\s+)?(?:nos\s+)?"
        r"(?:cayó|murió|crasheó|petó|reventó|está\s+muriendo)"
        r"|\bse\s+(?:nos\s+)?(?:cayó|murió)\s+(?:el\s+)?(?:run|job|entrenamiento|training|main)\b"
        r"|\b(?:lo|la)\s+mataron\b|\bmataron\s+(?:el|al)\s+(?:job|run|entrenamiento)\b",
    ),
    _sig(
        "hang",
        "corriendo avanza mueve parado colgado atorado congelado quedó hay sigue parou",
        r"\b(?:el\s+)?(?:run|job|entrenamiento|training|main|step)\s+(?:no\s+(?:está\s+corriendo"
        r"|avanza|se\s+mueve|entrena)|está\s+(?:parado|colgado|atorado|congelado|trabado))"
        r"|\bno\s+avanza\s+el\s+(?:step|run|job|entrenamiento)|\bno\s+avanza\s+(?:nada|para\s+nada)\b"
        # "no hay ningún paso nuevo, sigue en 87,500"; in Portuguese "de novo parado?", "o
        # gráfico parou em 118,1xx"
        r"|\bno\s+hay\s+(?:ningún\s+)?pasos?\s+nuevos?|\bsigue\s+en\s+(?:el\s+step\s+)?\d"
        r"|\b(?:de\s+novo|está|tá)\s+parad[oa]\b|\bparou\s+em\s+\d"
        r"|\bse\s+quedó\s+(?:en\s+(?:el\s+step\s+)?\d|pegado|colgado|atorado|trabado)",
    ),
    _sig(
        "outage",
        "nan guard",
        r"\bloss\s+(?:en|es|está\s+en)\s+nan\b"
        r"|\b\w*guard\s+(?:paró|detuvo|mató)\s+(?:el\s+)?(?:job|run|entrenamiento)\b",
    ),
    _sig(
        "checkpoint-failed",
        "falló",
        r"\b(?:save|checkpoint|ckpt|guardado)\s+(?:del?\s+(?:step\s+)?[\d,.]+k?\s+)?falló\b"
        r"|\bfalló\s+el\s+(?:save|checkpoint|guardado)\b",
    ),
    # the same said in Hinglish (Hindi in Latin letters or Devanagari, mixed into English): "bhai
    # run gir gaya", "node mar gaya lagta hai", "रन फिर से गिर गया", "gpu-a03-09 ping nahi ho raha"
    _sig(
        "crash",
        "gir gaya mar gaya band ho gaya गिर गया रुक गया",
        r"\b(?:run|job|training|main|node|trainer)\s+(?:phir\s+se\s+|fir\s+se\s+|wapas\s+)?"
        r"(?:gir|mar|crash\s+ho|band\s+ho)\s+(?:gaya|gayi|gya)\b"
        # (a vowel sign is no word character: the match ends before the last one)
        r"|(?:रन|जॉब|नोड)\s+(?:फिर\s+से\s+)?(?:गिर|मर|बंद\s+हो|रुक)\s+गय(?=ा)",
    ),
    _sig(
        "node-loss",
        "ping nahi",
        rf"\b{_NODE}?[\w-]*\d[\w-]*\s+(?:ka\s+)?ping\s+nahi\s+(?:ho\s+raha|aa\s+raha|lag\s+raha)",
    ),
    # the same said in Japanese, mixed into English as such a team writes it: "jobがまた止まっ
    # た", "step 94,213 から進んでない", "run 落ちてません？", "ckpt保存失敗 at 88k". Kana run on
    # without spaces, so each pattern takes the whole run of letters around its words.
    _sig(
        "hang",
        "止まっ 止まる 進んで 進まな",
        r"\w*?(?:step|run|job|ジョブ|学習|グラフ|wandb)[^\n。]{0,30}?(?:止まっ|止まる|進んで(?:い)?な"
        r"|進まな)\w*",
    ),
    _sig(
        "crash",
        "落ち",
        r"\w*?(?:job|run|ジョブ|学習)\s*(?:が|は|も)?\s*(?:また)?落ち(?:ました|た|てる|てます|てません"
        r"|てない)\w*",
    ),
    _sig(
        "checkpoint-failed",
        "失敗 保存でき",
        r"\w*?(?:ckpt|checkpoint|save|保存)\w*?失敗\w*|\w*?保存でき(?:な|ませ)\w*",
    ),
    _sig(
        "node-loss",
        "perdimos nodos",
        r"\bperdimos\s+(?:el\s+rack|el\s+nodo|\d+\s+nodos|los\s+nodos|dos\s+nodos)\b"
        r"|\b\d+\s+nodos\s+(?:\([^)]*\)\s+)?(?:sin\s+corriente|caídos|muertos)\b",
    ),
)
