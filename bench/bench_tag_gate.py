"""Grouped cross-validation of a learned tag classifier as a gate on the rules' tags (issue 40).

    python bench/bench_tag_gate.py [--corpus tests/data/signal_corpus.jsonl] [--limit N] [--before]

Idea under test: two independent methods agreeing is a confidence signal. A one-vs-rest
classifier (`scripts/train_signals.py`'s `fit_tags`, the live-report scorer's fit and features,
thread words added) is fitted leaving each fold of projects of the development corpus out in
turn (`bench_learned.GROUPS`, `bench_learned.folds`) and ranks the tags of the left-out groups'
entries. A gate keeps the rules' tag only where the classifier does not clearly disagree (or
ranks it first); it never touches "incident" (the incident detector's) and never shows a tag
where the rules show none, unless it is an "add" gate, which may add the classifier's top topic
where the rules show nothing and the classifier is that sure.

Printed, for the shown tags: agreement with the labels and coverage (the share of shown
entries with a tag), rules alone and gated, pooled:

* in sample: the current rules, written seeing every group (optimistic);
* `--before`: each batch read by the rules as they were before the batch was committed (from
  git, `bench_learned.run_before`), the honest reading; per group for the best gate.

Then the classifier's cost per event. `--limit` keeps the first N entries of each group.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_learned import GROUPS, corpus_args, folds, group_of, run_before, verdict
from bot.enrich.context import ThreadContext
from bot.enrich.learned import ADD_FLOOR, GATE_FLOOR, SURE, TOP, TagModel, gate, tag_features
from bot.enrich.markdown import parse_post
from bot.process.pipeline import from_facts
from scripts.train_signals import TITLED_KINDS, fit_tags, tag_examples
from tests.enrich.signal_corpus import recorded, to_event

Ranking = list[tuple[str, float]]
Gate = Callable[[str, Ranking], str]


def top_k(k: int, add: float = math.inf) -> Gate:
    """The rules' tag shown when among the classifier's ``k`` likeliest; adds like ``gate``."""
    return functools.partial(gate, floor=0.0, add=add, sure=0.0, top=k)


def floor(p: float, add: float = math.inf, sure: float = 0.0) -> Gate:
    """The rules' tag taken away below ``p`` (when another tag is ``sure``), at any rank."""
    return functools.partial(gate, floor=p, add=add, sure=sure, top=None)


GATES: dict[str, Gate] = {
    "committed": functools.partial(gate, floor=GATE_FLOOR, add=ADD_FLOOR, sure=SURE, top=TOP),
    "top-1": top_k(1),
    "top-2": top_k(2),
    "top-3": top_k(3),
    "p>=0.05": floor(0.05),
    "p>=0.10": floor(0.10),
    "p>=0.20": floor(0.20),
    "p>=0.30": floor(0.30),
    "top-1 +add 0.7": top_k(1, 0.7),
    "top-1 +add 0.8": top_k(1, 0.8),
    "top-1 +add 0.9": top_k(1, 0.9),
    "top-2 +add 0.7": top_k(2, 0.7),
    "top-2 +add 0.8": top_k(2, 0.8),
    "top-2 +add 0.9": top_k(2, 0.9),
    "top-3 +add 0.8": top_k(3, 0.8),
    "p>=0.10 +add 0.8": floor(0.10, 0.8),
    "p>=0.10 sure 0.3": floor(0.10, sure=0.3),
    "p>=0.10 sure 0.5": floor(0.10, sure=0.5),
    "p>=0.10 sure 0.3 +add 0.8": floor(0.10, 0.8, 0.3),
    "p>=0.10 sure 0.5 +add 0.8": floor(0.10, 0.8, 0.5),
    "p>=0.20 sure 0.5 +add 0.8": floor(0.20, 0.8, 0.5),
    "p>=0.30 +add 0.9": floor(0.30, 0.9),
    "p>=0.20 +add 0.9": floor(0.20, 0.9),
}
#: Issue 40's targets for a timeline: of the tags shown, this share agreeing with the labels,
#: on at least this share of the shown entries.
AGREEMENT_TARGET = 0.80
COVERAGE_TARGET = 0.50
#: Groups smaller than this (shown entries) are too small to judge a gate by.
MIN_GROUP = 30


def cross_validate(entries: Sequence[dict[str, Any]]) -> dict[str, Ranking]:
    """Entry id → the tag ranking of a classifier fitted without the entry's fold of groups
    (``bench_learned.folds``); none for
    an event code wrote from facts (a W&B state change: the live path never gates it)."""
    data = tag_examples(entries)
    factual = {str(e["id"]) for e in entries if recorded(e) and from_facts(to_event(e))}
    group = {str(e["id"]): group_of(e) for e in entries}
    out: dict[str, Ranking] = {}
    for fold in folds(entries):
        held = [ex for ex in data if group[ex.ident] in fold]
        model = TagModel.of(fit_tags([ex for ex in data if group[ex.ident] not in fold]))
        for ex in held:
            if ex.ident not in factual:
                out[ex.ident] = model.ranking(list(ex.names))
    return out


@dataclass(slots=True)
class Tally:
    shown: int = 0
    tagged: int = 0
    right: int = 0

    def add(self, tag: str, label: str) -> None:
        self.shown += 1
        self.tagged += tag != "other"
        self.right += tag != "other" and tag == label

    def __str__(self) -> str:
        agree = self.right / self.tagged if self.tagged else 1.0
        cover = self.tagged / self.shown if self.shown else 0.0
        return f"{agree:6.3f} {cover:6.3f} ({self.right:>3}/{self.tagged:<3}/{self.shown:<3})"


_OLD_TAGS = """
import json, sys
import bot.enrich.rules as rules
from tests.enrich.signal_corpus import rules_method

if hasattr(rules, "gate"):  # the rules alone: a tag check of the time is left out
    rules.gate = lambda tag, ranking, *args, **kwargs: tag

for line in sys.stdin:
    e = json.loads(line)
    v = rules_method(e)
    print(json.dumps([e["id"], v.tag, bool(getattr(v, "shown", True))]))
"""


def tally(
    entries: Sequence[dict[str, Any]],
    verdicts: dict[str, tuple[str, bool]],
    rankings: dict[str, Ranking],
    gate: Gate | None,
) -> dict[str, Tally]:
    """Per group and pooled: shown entries, shown tags and agreeing tags, gated or not."""
    table: dict[str, Tally] = {}
    for e in entries:
        ident = str(e["id"])
        if ident not in verdicts or not verdicts[ident][1]:
            continue
        tag = verdicts[ident][0]
        if gate is not None and ident in rankings:
            tag = gate(tag, rankings[ident])
        for key in (group_of(e), "pooled"):
            table.setdefault(key, Tally()).add(tag, str(e.get("tag") or "other"))
    table["pooled"] = table.pop("pooled", Tally())
    return table


def compare(
    title: str,
    entries: Sequence[dict[str, Any]],
    verdicts: dict[str, tuple[str, bool]],
    rankings: dict[str, Ranking],
) -> str:
    """Print the pooled figures of every gate; return the one ``choose`` picks."""
    print(f"\n{title}: pooled shown-tag agreement, coverage (right/tagged/shown), groups")
    print(f"meeting both targets ({AGREEMENT_TARGET}, {COVERAGE_TARGET})")
    for name, one in {"rules alone": None, **GATES}.items():
        table = tally(entries, verdicts, rankings, one)
        print(f"  {name:<26} {table['pooled']}  {passing(table)}")
    return choose(entries, verdicts, rankings)


def passing(table: dict[str, Tally]) -> int:
    """Groups (of ``MIN_GROUP`` shown entries or more) whose timeline meets both targets."""
    return sum(
        t.shown >= MIN_GROUP
        and t.right >= AGREEMENT_TARGET * t.tagged
        and t.tagged >= COVERAGE_TARGET * t.shown
        for group, t in table.items()
        if group != "pooled"
    )


def choose(
    entries: Sequence[dict[str, Any]],
    verdicts: dict[str, tuple[str, bool]],
    rankings: dict[str, Ranking],
) -> str:
    """The gate under which the most groups meet both of the issue's targets (each group is a
    timeline the check could be), ties by the right tags it shows, pooled (of gates equally
    safe, the one that tells the reader most). A gate that adds a tag where the rules gave none
    adds only the classifier's top topic, at its bar or surer."""
    best, best_key = "", (-1, -1)
    for name, one in GATES.items():
        table = tally(entries, verdicts, rankings, one)
        t = table["pooled"]
        key = (passing(table), t.right)
        if key > best_key:
            best, best_key = name, key
    return best


def nested(
    entries: Sequence[dict[str, Any]],
    verdicts: dict[str, tuple[str, bool]],
    rankings: dict[str, Ranking],
) -> None:
    """The choice of gate judged honestly too: each group gated by the gate ``choose`` picks
    on the other groups alone, pooled (rules alone beside it)."""
    alone, gated = Tally(), Tally()
    picks: list[str] = []
    for name, _, _ in GROUPS:
        held = [e for e in entries if group_of(e) == name and str(e["id"]) in verdicts]
        if not held:
            continue
        rest = [e for e in entries if group_of(e) != name]
        pick = choose(rest, verdicts, rankings)
        picks.append(pick or "none")
        chosen = GATES.get(pick)
        for t, g in ((alone, None), (gated, chosen)):
            one = tally(held, verdicts, rankings, g)["pooled"]
            t.shown, t.tagged, t.right = (
                t.shown + one.shown,
                t.tagged + one.tagged,
                t.right + one.right,
            )
    print(f"nested choice (each group by the gate chosen on the others): {sorted(set(picks))}")
    print(f"  {'rules alone':<16} {alone}\n  {'gated':<16} {gated}")


def per_group(
    entries: Sequence[dict[str, Any]],
    verdicts: dict[str, tuple[str, bool]],
    rankings: dict[str, Ranking],
    name: str,
) -> None:
    alone = tally(entries, verdicts, rankings, None)
    gated = tally(entries, verdicts, rankings, GATES[name])
    print(f"\nper group: rules alone vs gated by {name} (agreement, coverage)")
    for group, t in alone.items():
        print(f"  {group:<26} {t}   {gated[group]}")


def cost(entries: Sequence[dict[str, Any]], repeat: int = 3) -> None:
    """The classifier's cost per event: features and ranking (parse not counted)."""
    model = TagModel.of(fit_tags(tag_examples(entries)))
    events = [to_event(e) for e in entries if recorded(e)]
    prepared = [
        (parse_post(ev.body or "", ev.source), ev.title if ev.kind in TITLED_KINDS else None, ev)
        for ev in events
    ]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for doc, title, ev in prepared:
            names = tag_features(doc, title, ev.kind, ev.source, ThreadContext.of(ev))
            model.ranking(names)
        best = min(best, time.perf_counter() - start)
    size = len(model.rows) * len(model.tags)
    print(f"\nclassifier: {size} weights, {1e6 * best / len(events):.1f} µs per event")


def main(argv: list[str] | None = None) -> int:
    args, entries = corpus_args(__doc__, argv)
    rankings = cross_validate(entries)
    now = {}
    for e in entries:
        v = verdict(e, True, tag_model=False)  # the live path, the gate left out
        now[str(e["id"])] = (v.tag, v.shown)
    best = compare("in sample (current rules, optimistic)", entries, now, rankings)
    print(f"best gate in sample: {best or 'none'}")
    if args.before:
        old = {k: (str(v[0]), bool(v[1])) for k, v in run_before(entries, _OLD_TAGS).items()}
        best = compare("before each batch (honest)", entries, old, rankings)
        print(f"best gate before: {best or 'none'}")
        print(f"committed gate: top-{TOP} p>={GATE_FLOOR:.2f} sure {SURE} +add {ADD_FLOOR}")
        nested(entries, old, rankings)
        per_group(entries, old, rankings, "committed")
    cost(entries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
