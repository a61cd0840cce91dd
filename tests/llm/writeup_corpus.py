"""The write-up corpus: an outage driven through the real store, rules and incident engine (a
node lost, reported in chat by one person, drained and requeued by another, the job back from
a checkpoint in a new W&B run), its write-up's request as the bot renders it, and hand-written
answers to that request, correct and wrong, graded by the checks the bot applies
(`bot.llm.grounded.grade` on `bot.llm.writeup.writeup_request`).

The answers are written the way a capable model answers that exact prompt, including the
mistakes models make on it: a figure cited from the wrong cost fact, the wrong person credited
with the requeue, a cause nobody stated, a sentence without its citation. Two sets:
`tests/data/writeup_corpus/dev.jsonl` (the tests use it; the checks may be tuned on it) and
`heldback.jsonl` (written before the checks ever ran on it; measured by
`bench/bench_writeup.py`, never tuned on).

The outage's figures differ from one another on purpose (26 min down, 14 min recomputing, 40 min
without progress), so a figure borrowed from the wrong fact is a wrong number, not a lucky one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.incidents.engine import IncidentEngine
from bot.incidents.writeup import Writeup, writeup_for
from bot.llm.grounded import Rendered, grade
from bot.llm.writeup import writeup_request
from bot.models import RunInfo
from bot.store import Store
from tests.incidents.scenario import RUN_B, Scenario

DATA = Path(__file__).resolve().parents[1] / "data" / "writeup_corpus"
DEV = DATA / "dev.jsonl"
HELDBACK = DATA / "heldback.jsonl"
NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)

REPORT = "node r7 lost its IB link, the job died with it"
ACTION = "I drained r7 and requeued the job from the last checkpoint"


async def outage(
    store: Store, now: datetime = NOW, *, engine: IncidentEngine | None = None
) -> tuple[Scenario, int]:
    """A crash at step 5,900 (minute 60), bob's report in chat, dave's drain and requeue, and
    a new W&B run from step 4,500 whose first row is at minute 86: 26 min down, 1,400 steps
    recomputed (14 min at 0.6 s a step, 1.4B tokens), 64 GPUs."""
    # 100 steps a minute, one row a minute, 1M tokens a step
    sc = Scenario(store, now, engine=engine)
    await sc.start()
    run = await store.runs.get("hero")
    assert run is not None
    await store.runs.upsert(RunInfo.from_config(run.config.model_copy(update={"gpus": 64})))
    await sc.run_for(60)
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(3)
    await sc.report(REPORT, source="discord", author="bob")
    await sc.run_for(8)
    await sc.report(ACTION, source="discord", author="dave")
    await sc.run_for(13)
    await sc.launch(RUN_B, 4_500)  # minute 84; its first row at minute 85
    await sc.run_for(10)
    [incident] = await store.incidents.find("hero")
    assert incident.status == "resolved" and incident.id is not None
    return sc, incident.id


async def outage_request(store: Store) -> tuple[Writeup, Rendered]:
    _, incident_id = await outage(store)
    writeup = await writeup_for(store, incident_id)
    return writeup, writeup_request(writeup, ("bob", "dave", "erin"))


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def problems(rendered: Rendered, answer: dict[str, Any]) -> list[str]:
    return grade(answer["text"], rendered).problems
