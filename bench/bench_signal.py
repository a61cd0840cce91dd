"""How right the deterministic enrichment is on the development corpus, next to a naive keyword
matcher measured in the same run.

    python bench/bench_signal.py [--corpus tests/data/signal_corpus.jsonl] [--details]

Each entry is turned into the event the live source would store (GitHub issue/PR JSON through
`issue_event`, comments and reviews through `comment_event`/`review_event` with the thread
context the source records, Discord messages with their channel as ref) and enriched by
`bot.process.pipeline.rules_enrichment`, the function the poll cycle calls. Printed: tag agreement,
incident recall and precision (and how often the kind is right), substantive posts erased
(summarised as nothing) or hidden as chit-chat ("lgtm"), spam kept out, and the tag confusion
matrix. `--details` lists every miss.

The baseline tags by the first tag whose keyword appears in the title or body and flags an
incident when any outage word appears: what "grep for crash" would do. That is the standard
first baseline of a text classifier (keyword rules over the same vocabulary the corpus uses),
written as a competent engineer would in an afternoon, not a weakened one; the LLM answers are
compared in `bench_grounding.py`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.enrich.signal_corpus import (
    CORPUS,
    Scores,
    baseline_method,
    confusion_table,
    in_threads,
    load,
    rules_method,
    score,
)


def report(name: str, s: Scores) -> str:
    return (
        f"{name:<10} tags {s.agreement:.3f} ({s.tags_right}/{s.total}, untagged read as other)  "
        f"tags shown {s.shown_agreement:.3f} ({s.shown_right}/{s.tags_shown}) "
        f"on {s.coverage:.3f} of entries  "
        f"incident recall {s.recall:.3f} ({s.found}/{s.incidents})  "
        f"precision {s.precision:.3f} ({s.found}/{s.flagged})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--details", action="store_true", help="list every miss")
    parser.add_argument("--repeat", type=int, default=3, help="timing repeats (median printed)")
    args = parser.parse_args(argv)
    if not args.corpus.exists():
        print(f"no corpus at {args.corpus}", file=sys.stderr)
        return 2
    entries = load(args.corpus)
    kinds = sorted({str(e.get("kind")) for e in entries})
    print(f"corpus: {len(entries)} entries ({', '.join(kinds)}) from {args.corpus}")

    timings = []
    rules = Scores()
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        rules = score(entries, in_threads(entries, rules_method))
        timings.append(time.perf_counter() - start)
    baseline = score(entries, baseline_method)

    print(report("rules", rules))
    print(report("baseline", baseline))
    print(f"incident kind right (of those found): rules {rules.kinds_right}/{rules.found}")
    print(
        f"substantive erased: rules {len(rules.erased)} of {rules.substantive}"
        f"{' (' + ', '.join(rules.erased) + ')' if rules.erased else ''}"
    )
    print(
        f"substantive hidden as chit-chat: {len(rules.hidden)}"
        f"{' (' + ', '.join(rules.hidden) + ')' if rules.hidden else ''}"
    )
    print(f"spam shown: rules {rules.spam_shown} of {rules.spam}")
    per_entry = statistics.median(timings) / max(1, len(entries)) * 1e3
    print(f"rules enrichment: {per_entry:.2f} ms per entry (median of {len(timings)})")
    print("\ntag confusion (rows: label, columns: rules)")
    print(confusion_table(rules))
    if args.details:
        print("\nmissed incidents:", ", ".join(rules.misses) or "none")
        print("false alarms:", ", ".join(rules.false_alarms) or "none")
        print("wrong tags:")
        for line in rules.wrong_tags:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
