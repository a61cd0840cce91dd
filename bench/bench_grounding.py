"""How the LLM checks judge realistic answers: the regression corpus (`tests/data/llm_corpus/`)
through the real checks.

    python bench/bench_grounding.py [--details]

The Kestrel scenario is stored in a fresh SQLite file and the bot's own code sends its requests
to the local fake Anthropic server (`tests.llm.llm_corpus.capture`): one enrichment batch, the
narrative, the digest and three `/ask` questions. Every hand-written answer goes through the
check the bot applies to that kind of answer. Two sets:

- development (`answers.jsonl`: enrichment and `/ask`; `cited.jsonl`: cited narratives and
  digests), which the checks were tuned on;
- held back (`cited_heldback.jsonl`, then `cited_heldback_2.jsonl`): each written and committed
  before the checks ever ran on it, measured, and only then looked at. The checks changed after
  each first look, so only a set's first run is an unbiased figure (the commits that added the
  changes quote them); what this prints for them now is after;
- `cited_heldback_3.jsonl`, written after the last change to the checks and never tuned on:
  the unbiased figures.

Wrong answers are of two kinds: **invented** (a value, link, person or claim that is nowhere in
the request) and **borrowed** (one that is in the request but belongs to another fact: a swapped
number, another fact's step or host, the wrong person, a rounded figure the card already shows).
Printed per set: false rejection (correct answers refused; the goal is at most 3 %), false
acceptance per kind (wrong answers accepted; the goal is at most 1 in 30), then per variant; and
the tag, incident and live-report scores of the corpus' enrichment answers and of the no-key
rules on the same events.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.enrich.rules import enrich_event
from bot.store import Database, Store
from tests.fakes.anthropic import FakeAnthropic
from tests.llm.llm_corpus import (
    HELDBACK,
    HELDBACK_FIRST,
    HELDBACK_SECOND,
    Scenario,
    capture,
    development_set,
    error_kind,
    grade,
    load_answers,
)


def flag_scores(pairs: list[tuple[bool, bool]]) -> str:
    """precision and recall of (predicted, labelled) pairs."""
    tp = sum(p and y for p, y in pairs)
    predicted = sum(p for p, _ in pairs)
    labelled = sum(y for _, y in pairs)
    precision = tp / predicted if predicted else 1.0
    recall = tp / labelled if labelled else 1.0
    return f"precision {precision:.2f} ({tp}/{predicted}), recall {recall:.2f} ({tp}/{labelled})"


def enrichment_scores(name: str, verdicts: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    tags = sum(v["tag"] == y["tag"] for v, y in verdicts)
    print(f"{name:<8} tags {tags / len(verdicts):.2f} ({tags}/{len(verdicts)})")
    print(f"{'':<8} incident {flag_scores([(v['incident'], y['incident']) for v, y in verdicts])}")
    print(
        f"{'':<8} live report "
        f"{flag_scores([(v['live_report'], y['live_report']) for v, y in verdicts])}"
    )


def report(name: str, results: list[tuple[dict[str, Any], list[str]]], details: bool) -> None:
    correct = [(a, p) for a, p in results if error_kind(a) is None]
    refused = [(a, p) for a, p in correct if p]
    share = len(refused) / len(correct) if correct else 0.0
    print(f"{name}: {len(results)} answers")
    print(f"  false rejection: {len(refused)}/{len(correct)} correct answers refused ({share:.1%})")
    for kind in ("invented", "borrowed"):
        wrong = [(a, p) for a, p in results if error_kind(a) == kind]
        taken = [a for a, p in wrong if not p]
        rate = len(taken) / len(wrong) if wrong else 0.0
        print(f"  false acceptance, {kind}: {len(taken)}/{len(wrong)} accepted ({rate:.1%})")
    by_variant: dict[str, list[list[str]]] = defaultdict(list)
    for answer, problems in results:
        if error_kind(answer) is not None:
            by_variant[answer["variant"]].append(problems)
    for variant, found in sorted(by_variant.items()):
        print(f"    {variant:<20} {sum(not p for p in found)}/{len(found)} accepted")
    if details:
        for answer, problems in refused:
            print(f"  REFUSED {answer['id']}: {problems}")
        for answer, problems in results:
            if error_kind(answer) is not None and not problems:
                print(f"  ACCEPTED {answer['id']} ({answer['variant']}): {answer.get('text', '')}")


async def run(details: bool) -> int:
    development = development_set()
    first = load_answers(HELDBACK_FIRST)
    second = load_answers(HELDBACK_SECOND)
    held_back = load_answers(HELDBACK)
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "corpus.db") as db, FakeAnthropic() as fake:
            scenario: Scenario = await capture(Store(db), fake)
            dev = [(answer, grade(scenario, answer)) for answer in development]
            seen = [(answer, grade(scenario, answer)) for answer in first]
            seen2 = [(answer, grade(scenario, answer)) for answer in second]
            held = [(answer, grade(scenario, answer)) for answer in held_back]
    kinds = Counter(r.kind for r in scenario.requests)
    print(
        f"requests: {len(scenario.requests)} "
        f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})"
    )
    report("development set (tuned on)", dev, details)
    report("held-back set 1 (looked at after its first run)", seen, details)
    report("held-back set 2 (looked at after its first run)", seen2, details)
    report("held-back set 3 (never tuned on)", held, details)
    correct = [a for a in development if error_kind(a) is None]
    per_kind = Counter(a["kind"] for a in correct)
    print("correct answers by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(per_kind.items())))

    labelled = [a for a in development if a["kind"] == "enrich" and "labels" in a]
    by_external = {e.external_id: e for e in scenario.events}
    model = [(a["item"], a["labels"]) for a in labelled]
    rules = []
    for answer in labelled:
        e = enrich_event(by_external[answer["event"]])
        rules.append(
            ({"tag": e.tag, "incident": e.incident, "live_report": e.live_report}, answer["labels"])
        )
    print(f"enrichment against the labels ({len(labelled)} events):")
    enrichment_scores("answers", model)
    enrichment_scores("rules", rules)
    if details:
        for (v, y), answer in zip(rules, labelled, strict=True):
            if v != y:
                print(f"RULES {answer['event']}: {v} (label {y})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--details", action="store_true", help="list every miss")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.details))


if __name__ == "__main__":
    sys.exit(main())
