"""What the timeline shows without a model key (issue 40), on the development corpus and on the
held-back ones, side by side.

    python bench/bench_nokey.py [--details]

Both corpora go through the live path's deterministic enrichment
(`bot.process.pipeline.rules_enrichment`, as `bench/bench_signal.py` does). Printed per corpus, for
the entries the timeline shows: of the tags shown, the share agreeing with the human labels; the
share of entries with a tag at all (the rest show none); the 🚨 mark's precision (marked entries
that are about an incident) and recall (over entries about an incident, and over incident events,
the live reports); and the share of summaries a lead would not keep (a heading, a description's bare
title, a table row, a bare link, a cut phrase or empty). Issue 40's targets are printed next to
them.

The held-back corpora (`tests/data/heldout_corpus.jsonl`, `heldout2_corpus.jsonl` … up to
`heldout23_corpus.jsonl`) were written and labelled before the rules ran on them and are never
tuned on: their figures are the honest ones. The second was committed on its own after the rule
changes it measures and before they ran on it; the third before the rules were generalised; the
fourth (another project) was written, labelled and committed on its own before the rules ran on
it; the fifth (three projects) after the last change it measures, and read once; the sixth to
the eighteenth (two or three projects each) blind while the rules they measure were changed,
and read once at the end.
`--details` lists the held-back misses only to report them, not to tune against.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.enrich.signal_corpus import (
    CORPUS,
    HELDOUT,
    HELDOUT2,
    HELDOUT3,
    HELDOUT4,
    HELDOUT5,
    HELDOUT6,
    HELDOUT7,
    HELDOUT8,
    HELDOUT9,
    HELDOUT10,
    HELDOUT11,
    HELDOUT12,
    HELDOUT13,
    HELDOUT14,
    HELDOUT15,
    HELDOUT16,
    HELDOUT17,
    HELDOUT18,
    HELDOUT19,
    HELDOUT20,
    HELDOUT21,
    HELDOUT22,
    HELDOUT23,
    Scores,
    in_threads,
    load,
    rules_method,
    score,
)

TARGETS = (
    ("shown tags agreeing", "shown_agreement", 0.80, ">="),
    ("entries with a tag", "coverage", 0.50, ">="),
    ("🚨 on incident entries", "mark_precision", 0.80, ">="),
    ("incident entries 🚨", "mark_recall", None, ""),
    ("incident events 🚨", "live_mark_recall", 1.00, ">="),
    ("summaries a lead drops", "summary_problem_rate", 0.05, "<="),
)


def figures(s: Scores) -> dict[str, str]:
    counts = {
        "shown_agreement": f"{s.shown_right}/{s.tags_shown}",
        "coverage": f"{s.tags_shown}/{s.entries_shown}",
        "mark_precision": f"{s.marked_right}/{s.marked}",
        "mark_recall": f"{s.about_marked}/{s.about}",
        "live_mark_recall": f"{s.live_marked}/{s.live}",
        "summary_problem_rate": f"{len(s.bad_summaries)}/{s.entries_shown}",
    }
    return {key: f"{getattr(s, key):.3f} ({counts[key]})" for _, key, _, _ in TARGETS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--details", action="store_true", help="list what went wrong")
    args = parser.parse_args(argv)
    corpora = {
        "development": CORPUS,
        "held-back": HELDOUT,
        "held-back 2": HELDOUT2,
        "held-back 3": HELDOUT3,
        "held-back 4": HELDOUT4,
        "held-back 5": HELDOUT5,
        "held-back 6": HELDOUT6,
        "held-back 7": HELDOUT7,
        "held-back 8": HELDOUT8,
        "held-back 9": HELDOUT9,
        "held-back 10": HELDOUT10,
        "held-back 11": HELDOUT11,
        "held-back 12": HELDOUT12,
        "held-back 13": HELDOUT13,
        "held-back 14": HELDOUT14,
        "held-back 15": HELDOUT15,
        "held-back 16": HELDOUT16,
        "held-back 17": HELDOUT17,
        "held-back 18": HELDOUT18,
        "held-back 19": HELDOUT19,
        "held-back 20": HELDOUT20,
        "held-back 21": HELDOUT21,
        "held-back 22": HELDOUT22,
        "held-back 23": HELDOUT23,
    }
    scores = {}
    for name, path in corpora.items():
        entries = load(path)
        scores[name] = score(entries, in_threads(entries, rules_method))
        print(f"{name}: {len(entries)} entries from {path.relative_to(Path.cwd())}")
    print()
    print(f"{'':<24} " + " ".join(f"{name:>20}" for name in corpora) + "   target")
    shown = {name: figures(s) for name, s in scores.items()}
    for label, key, target, op in TARGETS:
        goal = f"{op} {target:.2f}" if target is not None else ""
        row = " ".join(f"{shown[name][key]:>20}" for name in corpora)
        print(f"{label:<24} {row}   {goal}")
    if args.details:
        for name, s in scores.items():
            print(f"\n{name}: wrong tags (label → shown)")
            for line in s.wrong_tags:
                if not line.endswith("→ other"):
                    print("  " + line)
            print(f"{name}: bad summaries")
            for line in s.bad_summaries:
                print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
