"""Fit the live-report scorer (`bot.enrich.learned`) from the development corpus and write it.

    python scripts/train_signals.py [--corpus tests/data/signal_corpus.jsonl] [--out PATH]
        [--issues-out PATH] [--tags-out PATH]

Each corpus entry becomes the event the live source stores (`tests.enrich.signal_corpus`), its
text is cleaned by the same `parse` the rules use, and `bot.enrich.learned.features` reads it.
Only posts the scorer judges are learned from (comments and messages: never an issue or a pull
description or a review) and only what the live source records (not bot accounts). The label is
the corpus's `live_report`.

The fit is plain logistic regression with an L2 penalty by Adagrad over the examples in the
corpus's order, a fixed number of passes, no randomness: the same corpus gives the same file
byte for byte. Features seen in fewer than `MIN_COUNT` of the examples are left out of the fit
(one post's words say nothing about the next), and the weights are then pruned to the `KEEP`
largest and rounded. The threshold
written with them is `THRESHOLD`, the one `bench/bench_learned.py`'s grouped cross-validation
chose.

The issue scorer (`issue_report_model.json`) is the same fit on the recorded issue descriptions
(their title and prose, and their labels: `bot.enrich.learned.issue_features`), with its own
`ISSUE_THRESHOLD` and `ISSUE_OVER`, chosen on the honest reading of the same cross-validation
(`bench/bench_learned.py --before`, `choose_before`).

It also fits the tag classifier (`bot.enrich.learned.TagModel`) and writes `tag_model.json`: the
same fit once per labelled tag, one against the rest, on every recorded entry (the features
with the thread's words added, the label the entry's `tag`), on the features at least
`TAG_MIN_COUNT` entries have, unpruned.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.enrich.context import ThreadContext
from bot.enrich.learned import (
    ISSUE_MODEL_PATH,
    LEARNED_KINDS,
    MODEL_PATH,
    TAG_MODEL_PATH,
    LiveModel,
    features,
    issue_features,
    tag_features,
)
from bot.enrich.markdown import parse_post
from bot.enrich.rules import TITLED_KINDS
from tests.enrich.signal_corpus import CORPUS, load, recorded, to_event

#: Features kept in the written model (the largest weights). A model cut to a few thousand
#: weights loses most of what it knows out of sample (`docs/benchmarks.md`, the scorer's rows).
KEEP = 20000
#: A feature is learned only when this many examples have it.
MIN_COUNT = 3
#: Passes over the examples, step size and L2 penalty of the fit.
EPOCHS = 12
RATE = 0.3
L2 = 1e-4
#: The probability above which the model adds a live report the rules missed. The grouped
#: cross-validation in `bench/bench_learned.py --before` (each batch read by the rules as they
#: were before it was written) chooses the lowest at which the pooled 🚨 marks of those rules
#: with both scorers stay 85 % about incidents (issue 40 asks 80 %; a missed live report is a
#: lost alert): 0.15. This is the lowest at or above it at which the chat lines a lead reads
#: as no report (`tests/enrich/test_incident_shapes.py`: "step 412,000 at 06:40, loss 1.92")
#: stay unmarked.
THRESHOLD = 0.3
#: The probability above which it adds one where the rules heard incident words and judged the
#: post no report (the same reading's "over": the lowest at which those additions are 80 % about
#: incidents): the scorer must be surer to overrule the rules.
OVER = 0.80
#: The issue scorer's: the lowest at which, each batch read by the rules before it was written,
#: the reports it adds are 90 % about incidents (today's rules, written seeing every issue of
#: the corpus, leave it nothing to add in sample, so the replies' rule cannot choose). On the
#: corpus of 26,079 entries that reading chose 0.85 (it was 0.95 on smaller ones): pooled over
#: every batch read by the rules before it, incident events marked 3,147 of 3,728 at 0.95,
#: 3,155 at 0.90 and 3,164 at 0.80, 🚨 precision 0.86 at each (`docs/benchmarks.md`).
ISSUE_THRESHOLD = 0.85
ISSUE_OVER = 0.85
#: A feature is learned by the tag classifier only when this many entries have it (its weights
#: are all kept: pruned to the largest, it agreed less out of sample, bench/bench_tag_gate.py).
TAG_MIN_COUNT = 12


@dataclass(frozen=True, slots=True)
class Example:
    ident: str
    names: tuple[str, ...]
    live: bool


def eligible(entry: dict[str, Any]) -> bool:
    """Whether the live path could let the model mark this entry: recorded, and a kind that
    can be a live report."""
    return recorded(entry) and to_event(entry).kind in LEARNED_KINDS


def example(entry: dict[str, Any]) -> Example:
    event = to_event(entry)
    title = event.title if event.kind in TITLED_KINDS else None
    names = features(parse_post(event.body or "", event.source), title, event.kind, event.source)
    return Example(str(entry["id"]), tuple(names), bool(entry.get("live_report")))


def examples(entries: Iterable[dict[str, Any]]) -> list[Example]:
    return [example(e) for e in entries if eligible(e)]


def issue_eligible(entry: dict[str, Any]) -> bool:
    """Whether the live path could let the issue scorer mark this entry: a recorded issue
    description."""
    return recorded(entry) and to_event(entry).kind == "issue"


def issue_example(entry: dict[str, Any]) -> Example:
    event = to_event(entry)
    doc = parse_post(event.body or "", event.source)
    names = issue_features(doc, event.title, ThreadContext.of(event))
    return Example(str(entry["id"]), tuple(names), bool(entry.get("live_report")))


def issue_examples(entries: Iterable[dict[str, Any]]) -> list[Example]:
    return [issue_example(e) for e in entries if issue_eligible(e)]


def common(data: Sequence[Example], min_count: int = MIN_COUNT) -> list[Example]:
    """The examples with only the features at least ``min_count`` of them have."""
    counts = Counter(name for ex in data for name in set(ex.names))
    return [
        Example(ex.ident, tuple(n for n in ex.names if counts[n] >= min_count), ex.live)
        for ex in data
    ]


def fit(data: Sequence[Example]) -> tuple[float, dict[str, float]]:
    """Logistic regression by Adagrad, examples in order, on the features common enough
    (``common``); returns (bias, weights) of those features."""
    data = common(data)
    names, biases, columns = fit_columns(data, [[float(ex.live)] for ex in data])
    return float(biases[0]), dict(zip(names, columns[:, 0].tolist(), strict=True))


def fit_columns(
    data: Sequence[Example], targets: Sequence[Sequence[float]]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Several logistic regressions on the same examples at once, one per column of
    ``targets``: (feature names, biases, weights with one row per name). Each column is updated
    exactly as a fit of its own would be (the same operations in the same order, ``math.exp``
    for the link), so one column alone gives the same digits; the columns share the walk over
    the examples, which is what costs."""
    index: dict[str, int] = {}
    rows = [
        np.array([index.setdefault(n, len(index)) for n in dict.fromkeys(ex.names)], dtype=np.intp)
        for ex in data
    ]
    width = len(targets[0]) if targets else 1
    weights = np.zeros((len(index), width))
    squares = np.zeros((len(index), width))
    bias, bias_square = np.zeros(width), np.zeros(width)
    goals = [np.array(t, dtype=float) for t in targets]
    exp, rate, l2 = math.exp, RATE, L2
    for _ in range(EPOCHS):
        for goal, row in zip(goals, rows, strict=True):
            w = weights[row]
            # a column sum adds the rows in order, as Python's sum over one column would
            z = (bias + w.sum(axis=0)).tolist()
            p = np.array([1.0 / (1.0 + exp(-max(-30.0, min(30.0, v)))) for v in z])
            g = p - goal
            bias_square += g * g
            bias -= rate * g / np.sqrt(bias_square + 1e-9)
            gn = g + l2 * w
            s = squares[row] + gn * gn
            squares[row] = s
            weights[row] = w - rate * gn / np.sqrt(s + 1e-9)
    return list(index), bias, weights


def prune(weights: dict[str, float], keep: int = KEEP) -> dict[str, float]:
    """The ``keep`` largest weights (ties by name), rounded, in name order."""
    values = np.fromiter(weights.values(), dtype=float, count=len(weights))
    return prune_column(list(weights), values, keep)


def prune_column(names: Sequence[str], values: np.ndarray, keep: int = KEEP) -> dict[str, float]:
    """``prune`` of the weights ``values`` of ``names``: the largest ``keep`` by magnitude found
    by a partition rather than a sort of every feature (those tied at the bar by name)."""
    size = len(names)
    chosen: Iterable[int] = range(size)
    if size > keep:
        magnitudes = np.abs(values)
        bar = np.partition(magnitudes, size - keep)[size - keep]
        above = np.flatnonzero(magnitudes > bar).tolist()
        tied = sorted(np.flatnonzero(magnitudes == bar).tolist(), key=names.__getitem__)
        chosen = [*above, *tied[: keep - len(above)]]
    kept = {names[i]: round(float(values[i]), 4) for i in chosen}
    return {n: w for n, w in sorted(kept.items()) if w != 0.0}


def model_json(data: Sequence[Example], threshold: float = THRESHOLD, over: float = OVER) -> str:
    """A scorer as ``LiveModel.from_json`` reads it (the issue scorer's with its own bars)."""
    bias, weights = fit(data)
    body: dict[str, object] = {"bias": round(bias, 4), "threshold": threshold}
    if math.isfinite(over):
        body["over"] = over
    body["weights"] = prune(weights)
    return json.dumps(body, ensure_ascii=False, sort_keys=True, indent=0) + "\n"


@dataclass(frozen=True, slots=True)
class TagExample:
    ident: str
    names: tuple[str, ...]
    tag: str


def tag_example(entry: dict[str, Any]) -> TagExample:
    """A recorded entry as the tag classifier reads it: its features (thread included) and
    its labelled tag."""
    event = to_event(entry)
    title = event.title if event.kind in TITLED_KINDS else None
    doc = parse_post(event.body or "", event.source)
    names = tag_features(doc, title, event.kind, event.source, ThreadContext.of(event))
    return TagExample(str(entry["id"]), tuple(names), str(entry.get("tag") or "other"))


def tag_examples(entries: Iterable[dict[str, Any]]) -> list[TagExample]:
    return [tag_example(e) for e in entries if recorded(e)]


def fit_tags(data: Sequence[TagExample], min_count: int = TAG_MIN_COUNT) -> dict[str, LiveModel]:
    """One-vs-rest: a fit per labelled tag (one column each, in tag order), on the features at
    least ``min_count`` of the examples have, weights rounded."""
    tags = sorted({ex.tag for ex in data})
    names, biases, columns = fit_columns(
        common([Example(ex.ident, ex.names, False) for ex in data], min_count),
        [[float(ex.tag == tag) for tag in tags] for ex in data],
    )
    models: dict[str, LiveModel] = {}
    for j, tag in enumerate(tags):
        weights = {n: round(float(w), 3) for n, w in zip(names, columns[:, j], strict=True)}
        models[tag] = LiveModel(round(float(biases[j]), 4), weights, threshold=0.0)
    return models


def tag_model_json(data: Sequence[TagExample]) -> str:
    """The classifier as ``TagModel.from_json`` reads it: the names once, then per tag its bias
    and one weight per name (a line each)."""
    models = fit_tags(data)
    names = sorted({n for m in models.values() for n in m.weights})
    lines = ['{"names": ' + json.dumps(names, ensure_ascii=False) + ', "tags": {']
    for i, (tag, m) in enumerate(sorted(models.items())):
        weights = json.dumps([m.weights.get(n, 0.0) for n in names])
        comma = "," if i < len(models) - 1 else ""
        lines.append(f'{json.dumps(tag)}: {{"bias": {m.bias}, "weights": {weights}}}{comma}')
    return "\n".join(lines) + "\n}}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    parser.add_argument("--issues-out", type=Path, default=ISSUE_MODEL_PATH)
    parser.add_argument("--tags-out", type=Path, default=TAG_MODEL_PATH)
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 naming each model file that differs from the fit (CI)",
    )
    args = parser.parse_args(argv)
    entries = load(args.corpus)
    fitted = (
        (args.out, model_json(examples(entries))),
        (args.issues_out, model_json(issue_examples(entries), ISSUE_THRESHOLD, ISSUE_OVER)),
        (args.tags_out, tag_model_json(tag_examples(entries))),
    )
    if args.check:
        stale = [
            out
            for out, text in fitted
            if not out.exists() or out.read_text(encoding="utf-8") != text
        ]
        for out in stale:
            print(f"stale: {out} is not what this script fits from {args.corpus}", file=sys.stderr)
        if not stale:
            print("the committed models are what this script fits from the committed corpus")
        return 1 if stale else 0
    for out, text in fitted:
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
