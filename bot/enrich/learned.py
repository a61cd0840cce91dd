"""Small learned second opinions beside the rules (issue 40): a live-report scorer and a tag
classifier that gates the rules' tag.

The rules (``bot.enrich.incidents``) read phrases and shapes; on text written in a voice they
have not seen they miss live reports. This is a logistic regression over the words of an
event's cleaned text (its own title and prose, as ``bot.enrich.markdown.parse`` leaves them:
no code fences, no quoted replies), their pairs, and a few facts about the post (its kind and
source, whether it pasted code or a log, how long it is). ``scripts/train_signals.py`` fits it
from the development corpus and writes ``live_report_model.json`` beside this module; it is
read once, on first use. An issue's description is scored by a second regression of its own
(``issue_report_model.json``): an issue opened to report a fault is a different shape from a
reply, and a reply's scorer reads proposals and plans as reports.

Scoring is a dictionary look-up per feature. Digits are reduced to their shape ("step 41,200"
gives ``step 0``; "gpu-a17" gives ``gpu-a0``), so a step or a host's index counts as a kind of
thing, not as itself.

The tag classifier (``TagModel``, ``tag_model.json``) is the same regression fitted once per
tag, one against the rest, on the same features with the thread's words added. It takes the
rules' tag away where it does not agree (``gate``), since two independent readings agreeing is
a confidence the rules alone do not have; it never gives a tag the rules did not. "incident"
is the incident detector's and is never gated.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bot.enrich.context import ThreadContext
from bot.enrich.markdown import Document

__all__ = [
    "ISSUE_MODEL_PATH",
    "LEARNED_KINDS",
    "MODEL_PATH",
    "TAG_MODEL_PATH",
    "LiveModel",
    "TagModel",
    "features",
    "gate",
    "issue_features",
    "load_issue_model",
    "load_model",
    "load_tag_model",
    "tag_features",
]

MODEL_PATH: Final = Path(__file__).with_name("live_report_model.json")
TAG_MODEL_PATH: Final = Path(__file__).with_name("tag_model.json")
ISSUE_MODEL_PATH: Final = Path(__file__).with_name("issue_report_model.json")
#: The tag gate (``gate``), chosen by the grouped cross-validation in ``bench/bench_tag_gate.py``
#: (the one under which the most left-out projects, each read by the rules as they were before
#: it was written, meet both of issue 40's targets): the rules' tag is shown only where the
#: classifier ranks it first of all (``TOP``): two readings agree. Where the rules show none, the
#: classifier's top topic is shown when it is at least ``ADD_FLOOR`` sure. ``GATE_FLOOR`` and
#: ``SURE`` are the bench's other gates' settings (a tag taken away below a probability, when
#: another is that sure), unused here.
TOP: Final = 1
ADD_FLOOR: Final = 0.8
GATE_FLOOR: Final = 0.0
SURE: Final = 0.0
#: Tags the gate never gives nor takes away: "incident" is the incident detector's, "other" is
#: no tag.
UNGATED: Final = frozenset({"incident", "other"})
#: The kinds of post the replies' scorer learns from and judges: replies that can be live
#: reports. Never a pull description or a review (they describe changes), nor an issue
#: description: an issue says what its thread is for (out of sample every issue this scorer
#: added was a proposal or a plan); the issue scorer (``load_issue_model``), fitted on issues
#: alone, reads those. Never a run's state, a fact.
LEARNED_KINDS: Final = frozenset({"comment", "message"})
#: At most this many words of a post are read (a live report says so near its top).
MAX_WORDS: Final = 400
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_'./-]*[a-z0-9]|[a-z0-9]|[?!]|(?P<other>[^\W\d_a-z]+)")
_DIGITS = re.compile(r"\d+")
_LENGTHS: Final = ((3, "len:tiny"), (12, "len:short"), (40, "len:mid"))


def _tokens(text: str) -> list[str]:
    """The words of ``text``: ASCII words and numbers (digits by their shape), and letters of
    other scripts as pairs of neighbouring letters ("체크포인트 저장 실패" or "又挂了": a script
    written without spaces has no words to split on, and a pair still names a word's part)."""
    found: list[str] = []
    for m in _TOKEN.finditer(text.lower()):
        run = m.group("other")
        if run is None:
            found.append(_DIGITS.sub("0", m.group()))
        else:
            found.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        if len(found) >= MAX_WORDS:
            break
    return found[:MAX_WORDS]


def features(doc: Document, title: str | None, kind: str, source: str) -> list[str]:
    """The sorted, distinct features of one event: words and word pairs of its title and
    prose (line by line: a pair never spans two blocks), then what kind of post it is."""
    found: set[str] = {f"kind:{kind}", f"source:{source}"}
    lines = [title] if title else []
    lines.extend(doc.prose.splitlines())
    count = 0
    for line in lines:
        tokens = _tokens(line)
        count += len(tokens)
        found.update(tokens)
        found.update(f"{a} {b}" for a, b in itertools.pairwise(tokens))
        if count >= MAX_WORDS:
            break
    if doc.had_code:
        found.add("has:code")
    if doc.logs or (doc.code and not doc.prose):
        found.add("has:log")
    found.add(next((name for limit, name in _LENGTHS if count <= limit), "len:long"))
    return sorted(found)


def _sigmoid(z: float) -> float:
    """A regression's probability from its sum, clamped so ``exp`` never overflows."""
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@dataclass(frozen=True, slots=True)
class LiveModel:
    """A fitted logistic regression: ``bias`` plus the weight of each present feature."""

    bias: float
    weights: dict[str, float]
    threshold: float  # the probability above which a post the rules missed counts as a report
    #: The same where the rules heard incident words in the post and judged it no report: the
    #: scorer must be surer to overrule them (never, by default).
    over: float = math.inf

    def probability(self, names: list[str]) -> float:
        return _sigmoid(self.bias + sum(map(self.weights.get, names, itertools.repeat(0.0))))

    @classmethod
    def from_json(cls, text: str) -> LiveModel:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: object) -> LiveModel:
        if not isinstance(data, dict) or not isinstance(data.get("weights"), dict):
            raise ValueError("a live-report model is an object with a 'weights' object")
        return cls(
            bias=float(data["bias"]),
            weights={str(k): float(v) for k, v in data["weights"].items()},
            threshold=float(data.get("threshold", 0.0)),
            over=float(data.get("over", math.inf)),
        )


@functools.cache
def load_model(path: Path = MODEL_PATH) -> LiveModel:
    """The committed model, read once."""
    return LiveModel.from_json(path.read_text(encoding="utf-8"))


def load_issue_model() -> LiveModel:
    """The committed scorer of issue descriptions, read once (``load_model`` of its file)."""
    return load_model(ISSUE_MODEL_PATH)


def issue_features(doc: Document, title: str | None, context: ThreadContext) -> list[str]:
    """``features`` of an issue's description and title, and its labels (``label:``): a
    monitor's issue is labelled as one."""
    found = set(features(doc, title, "issue", "github"))
    found.update(f"label:{t}" for label in context.labels for t in _tokens(label))
    return sorted(found)


def tag_features(
    doc: Document, title: str | None, kind: str, source: str, context: ThreadContext
) -> list[str]:
    """``features`` and the words of the thread around the post (its prefix, title and labels,
    marked ``thread:``), for the tag classifier."""
    found = set(features(doc, title, kind, source))
    found.update(f"thread:{t}" for t in _tokens(context.topic))
    return sorted(found)


@dataclass(frozen=True, slots=True)
class TagModel:
    """A one-vs-rest classifier over ``bot.models.TAGS``: one logistic regression per tag,
    held as one row of weights per feature (a column per tag)."""

    tags: tuple[str, ...]
    biases: tuple[float, ...]
    rows: dict[str, tuple[float, ...]]

    @classmethod
    def of(cls, models: dict[str, LiveModel]) -> TagModel:
        """The classifier of these per-tag regressions."""
        tags = tuple(sorted(models))
        names = sorted({name for m in models.values() for name in m.weights})
        rows = {n: tuple(models[t].weights.get(n, 0.0) for t in tags) for n in names}
        return cls(tags, tuple(models[t].bias for t in tags), rows)

    def ranking(self, names: list[str]) -> list[tuple[str, float]]:
        """Every tag with its probability, the most likely first (ties by name)."""
        found = [row for row in map(self.rows.get, names) if row is not None]
        sums = [math.fsum(column) for column in zip(*found, strict=True)] if found else None
        scored = [
            (tag, _sigmoid(bias + z))
            for tag, bias, z in zip(
                self.tags, self.biases, sums or [0.0] * len(self.tags), strict=True
            )
        ]
        return sorted(scored, key=lambda tp: (-tp[1], tp[0]))

    @classmethod
    def from_json(cls, text: str) -> TagModel:
        """The file ``scripts/train_signals.py`` writes: the feature names once, and per tag a
        bias and a weight for every name, in the names' order."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("tags"), dict) or not data["tags"]:
            raise ValueError("a tag model is an object with a non-empty 'tags' object")
        names = data.get("names")
        if not isinstance(names, list):
            raise ValueError("a tag model lists its feature 'names'")
        tags = tuple(sorted(data["tags"]))
        columns = [data["tags"][t].get("weights") for t in tags]
        if any(not isinstance(c, list) or len(c) != len(names) for c in columns):
            raise ValueError("a tag model gives every tag one weight per name in 'weights'")
        biases = tuple(float(data["tags"][t]["bias"]) for t in tags)
        rows = {str(n): tuple(map(float, ws)) for n, *ws in zip(names, *columns, strict=True)}
        return cls(tags, biases, rows)


def gate(
    tag: str,
    ranking: list[tuple[str, float]],
    floor: float = GATE_FLOOR,
    add: float = ADD_FLOOR,
    sure: float = SURE,
    top: int | None = TOP,
) -> str:
    """The tag shown when the rules chose ``tag`` and the classifier ranks the tags so.

    The rules' tag stands where the classifier ranks it among its ``top`` likeliest (any rank
    when None) and does not clearly disagree: it gives the tag at least ``floor``, or is not
    ``sure`` (that probability) of another. Where the rules chose none, the classifier's top
    topic is shown at ``add`` or more. "incident" stays as it is."""
    if tag == "incident":
        return tag
    best, p = ranking[0] if ranking else (tag, 0.0)
    if tag == "other":
        return best if best not in UNGATED and p >= add else tag
    if top is not None and tag not in [t for t, _ in ranking[:top]]:
        return "other"
    return tag if dict(ranking).get(tag, 0.0) >= floor or p < sure else "other"


@functools.cache
def load_tag_model(path: Path = TAG_MODEL_PATH) -> TagModel:
    """The committed tag classifier, read once."""
    return TagModel.from_json(path.read_text(encoding="utf-8"))
