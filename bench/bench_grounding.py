"""How the LLM checks judge realistic answers: the regression corpus (`tests/data/llm_corpus/`)
through the real checks.

    python bench/bench_grounding.py [--details]

The Kestrel scenario is stored in a fresh SQLite file and the bot's own code sends its requests
to the local fake Anthropic server (`tests.llm.llm_corpus.capture`): one enrichment batch, the
narrative, the digest and three `/ask` questions. Every hand-written answer in
`answers.jsonl` (correct ones, and wrong ones seeded with a number off, a step rounded to a
neighbour, an invented or truncated link, a wrong host or ref, a wrong person credited, or a
reply that ignores the task) goes
through the check the bot applies to that kind of answer. Printed:

- false rejection: correct answers refused (the goal is at most 3 %);
- false acceptance: seeded wrong answers accepted, per kind of error (the goal is 0 for numbers,
  steps, links, people and task-ignoring replies);
- tag agreement, incident and live-report precision and recall of the corpus' enrichment answers
  against the labels, and of the no-key rules on the same events.
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
from tests.llm.llm_corpus import Scenario, capture, grade, load_answers


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


async def run(details: bool) -> int:
    answers = load_answers()
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "corpus.db") as db, FakeAnthropic() as fake:
            scenario: Scenario = await capture(Store(db), fake)
            results = [(answer, grade(scenario, answer)) for answer in answers]
    kinds = Counter(r.kind for r in scenario.requests)
    print(
        f"corpus: {len(answers)} answers to {len(scenario.requests)} requests "
        f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})"
    )
    correct = [(a, p) for a, p in results if a["expect"] == "accept"]
    refused = [(a, p) for a, p in correct if p]
    print(
        f"false rejection: {len(refused)}/{len(correct)} correct answers refused "
        f"({len(refused) / len(correct):.1%})"
    )
    by_variant: dict[str, list[tuple[dict[str, Any], list[str]]]] = defaultdict(list)
    for answer, problems in results:
        if answer["expect"] != "accept":
            by_variant[answer["variant"]].append((answer, problems))
    wrong = [pair for pairs in by_variant.values() for pair in pairs if pair[0]["expect"] != "gap"]
    accepted = [a for a, p in wrong if not p]
    print(
        f"false acceptance: {len(accepted)}/{len(wrong)} seeded wrong answers accepted "
        f"({len(accepted) / len(wrong):.1%})"
    )
    for variant, pairs in sorted(by_variant.items()):
        taken = sum(not p for _, p in pairs)
        note = "  (known gap: not checked)" if pairs[0][0]["expect"] == "gap" else ""
        print(f"  {variant:<18} {taken}/{len(pairs)} accepted{note}")
    per_kind = Counter(a["kind"] for a, _ in correct)
    print("correct answers by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(per_kind.items())))

    labelled = [a for a in answers if a["kind"] == "enrich" and "labels" in a]
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
        for answer, problems in refused:
            print(f"REFUSED {answer['id']}: {problems}")
        for answer in accepted:
            print(f"ACCEPTED {answer['id']} ({answer['variant']}): {answer.get('text', '')[:100]}")
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
