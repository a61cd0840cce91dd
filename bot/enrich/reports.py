"""What a person's message says, sentence by sentence: the sentences that report a fault (the
reported cause of an incident), and whether a message has any substance at all (a report, an
action, a decision, a number) or is chit-chat ("Morning all", "+1", "anyone grabbing lunch?").

Pure and deterministic: the incident engine quotes `fault_excerpt` as an incident's reported
cause, and the no-key conversation summary (`bot.enrich.conversations.summarize_burst`) is built
from the substantive messages only."""

from __future__ import annotations

import re
from typing import Final

from bot.enrich.incidents import find_incident
from bot.enrich.markdown import parse_post, strip_mentions
from bot.enrich.summary import is_chitchat, iter_split, strip_filler, truncate

#: What a reported cause may quote (a few sentences, never a whole chat burst).
EXCERPT_LIMIT: Final = 300

# Someone did something to the job or its nodes, or decided to.
_ACTION = re.compile(
    r"\b(re-?queu\w*|restart\w*|re-?launch\w*|re-?submit\w*|re-?schedul\w*|drain\w*|cordon\w*|"
    r"reboot\w*|swap(?:s|ped|ping)?|fail(?:ed|ing)? (?:it )?over|kill(?:ed|ing)?|resum\w*|"
    r"roll(?:ed|ing)? back|rollback|revert\w*|bump\w*|lower\w*|rais\w*|set|merg\w*|fix\w*|"
    r"patch\w*|deploy\w*|moved?|moving|decid\w*|agreed|going with|let's|we'll|will)\b",
    re.IGNORECASE,
)
# Words of the trade: a message that names a part of the system says something about it.
_TECHNICAL = re.compile(
    r"\b(node|host|gpu|nccl|ecc|xid|oom|loss|lr|step|checkpoint|ckpt|shard|rank|job|run|"
    r"slurm|k8s|pod|cluster|eval\w*|grad\w*|nan|spike|throughput|tokens?|batch|data\w*|"
    r"config|optimizer|warmup|restore|crash\w*|fail\w*|error\w*|down|hang\w*|stall\w*|spares?|"
    r"pool|reservation|queue)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")


def sentences(text: str, source: str = "discord") -> list[str]:
    """The cleaned sentences of a message (markdown, code, quotes and mentions dropped), in
    order, read by the markdown of the place it was posted (``source``: Discord's unless said
    otherwise, where "> " quotes one line only)."""
    doc = parse_post(text, source)
    out = []
    for line in doc.prose.splitlines():
        out += [" ".join(strip_mentions(s).split()) for s in iter_split(line)]
    return [s for s in out if s]


def is_chatter(sentence: str) -> bool:
    """Greetings, acks, banter and idle questions: nothing about the run."""
    bare = strip_filler(sentence)
    if not bare or is_chitchat(bare):
        return True
    technical = _TECHNICAL.search(bare) or _NUMBER.search(bare)
    if bare.endswith("?") and not technical:
        return True  # "anyone grabbing lunch?"
    return not technical and not _ACTION.search(bare)


def is_substantive(text: str, source: str = "discord") -> bool:
    """Whether a message says anything about the run: a report, an action or decision, a
    number, a technical remark. "Morning all", "nice 🎉", "+1" and lunch plans do not."""
    return any(not is_chatter(s) for s in sentences(text, source))


def reports_action(text: str, source: str = "discord") -> bool:
    """Whether a message says something was done or decided (a requeue, a rollback, a fix)."""
    return any(_ACTION.search(s) for s in sentences(text, source) if not is_chatter(s))


def reports_fault(sentence: str) -> bool:
    """Whether one sentence reports a live fault, by the same rules that flag incidents."""
    return find_incident(sentence) is not None


def fault_excerpt(text: str, limit: int = EXCERPT_LIMIT, source: str = "discord") -> str | None:
    """The sentences of a message that report its fault: from the first one the incident rules
    flag, with the substantive sentences that follow it (the diagnosis, what is being done)
    until a question or chit-chat; the greeting before it is left out. None when no sentence
    reports a fault on its own (the caller then quotes the message's substance)."""
    found = sentences(text, source)
    start = next((i for i, s in enumerate(found) if reports_fault(s)), None)
    if start is None:
        return None
    kept = [strip_filler(found[start]) or found[start]]
    for sentence in found[start + 1 :]:
        if is_chatter(sentence) or sentence.endswith("?"):
            break
        kept.append(sentence)
    return truncate(" ".join(kept), limit)


def substance(text: str, limit: int = EXCERPT_LIMIT, source: str = "discord") -> str:
    """A message without its chit-chat: the substantive sentences, else the whole message."""
    found = sentences(text, source)
    kept = [strip_filler(s) or s for s in found if not is_chatter(s)]
    return truncate(" ".join(kept or found) or " ".join(text.split()), limit)
