"""How the write-up's checks judge realistic model answers: the write-up corpus
(`tests/data/writeup_corpus/`) through the checks the bot applies to a model write-up.

    python bench/bench_writeup.py [--details]

The outage of `tests.llm.writeup_corpus` (a node lost, reported in chat by bob, drained and
requeued by dave, the job back from a checkpoint in a new W&B run) is driven through the real
store, rules and incident engine in a fresh SQLite file; its write-up request is rendered by the
bot's own code (`bot.llm.writeup.writeup_request`) and every hand-written answer is graded by
`bot.llm.grounded.grade`. Two sets:

- development (`dev.jsonl`), which the tests use and the fact wording was tuned on;
- held back (`heldback.jsonl`), written and committed before the checks ever ran on it, never
  tuned on.

Wrong answers are labelled by kind: **borrowed** (a figure, time, step or person that is in the
request but belongs to another fact: a downtime taken from the recompute fact, the requeue
credited to the reporter), **invented** (a cause, person, host or figure nowhere in it) and
**uncited** (a claim without its citation). Printed per set: correct answers refused, wrong
answers accepted (per kind).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.store import Database, Store
from tests.llm.writeup_corpus import DEV, HELDBACK, load, outage_request, problems


def report(name: str, graded: list[tuple[dict[str, Any], list[str]]], details: bool) -> None:
    correct = [(a, p) for a, p in graded if a["error"] is None]
    wrong = [(a, p) for a, p in graded if a["error"] is not None]
    refused = [a for a, p in correct if p]
    accepted = [a for a, p in wrong if not p]
    kinds = Counter(a["error"] for a, _ in wrong)
    missed = Counter(a["error"] for a in accepted)
    print(f"{name}: {len(graded)} answers")
    print(f"  correct refused  {len(refused)}/{len(correct)}")
    print(f"  wrong accepted   {len(accepted)}/{len(wrong)}")
    for kind in sorted(kinds):
        print(f"    {kind:<9} accepted {missed[kind]}/{kinds[kind]}")
    for a in [*refused, *accepted]:
        print(f"  ! {a['id']} ({a['error'] or 'correct'}) judged wrong")
    if details:
        for a, p in graded:
            verdict = "refused" if p else "accepted"
            print(f"  {a['id']:<9} {a['error'] or 'correct':<9} {verdict}")
            for problem in p:
                print(f"      {problem[:160]}")


async def main(details: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database.open(Path(tmp) / "bench.db") as db:
            _, rendered = await outage_request(Store(db))
    for name, path in (("development", DEV), ("held back", HELDBACK)):
        answers = load(path)
        report(name, [(a, problems(rendered, a)) for a in answers], details)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--details", action="store_true", help="every answer and its problems")
    asyncio.run(main(parser.parse_args().details))
