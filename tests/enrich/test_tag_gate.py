"""The tag classifier as a gate on the rules' tags (issue 40): its committed file, what the gate
may and may not do on the live path, and the cross-validation bench that chose it."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import pytest

from bench import bench_tag_gate
from bench.bench_learned import group_of
from bot.enrich.context import ThreadContext
from bot.enrich.learned import (
    ADD_FLOOR,
    LiveModel,
    TagModel,
    gate,
    load_tag_model,
    tag_features,
)
from bot.enrich.markdown import parse
from bot.enrich.rules import enrich_text
from bot.models import TAGS
from tests.enrich.signal_corpus import load

INFRA = "The cluster scheduler drained two racks for the firmware maintenance on the TPU pool."
INCIDENT = "Training crashed at step 41,200: NCCL timeout on rank 3, the job is down."


def sure_of(tag: str, *others: str) -> TagModel:
    """A classifier sure of ``tag`` and giving every one of ``others`` next to nothing."""
    models = {tag: LiveModel(bias=6.0, weights={}, threshold=0.0)}
    models.update({t: LiveModel(bias=-6.0, weights={}, threshold=0.0) for t in others})
    return TagModel.of(models)


def tag(text: str, model: TagModel | bool) -> str:
    return enrich_text(title=None, body=text, kind="message", source="discord", tag_model=model).tag


def test_the_committed_tag_model_loads_and_ranks_every_tag() -> None:
    model = load_tag_model()
    assert set(model.tags) == set(TAGS)
    names = tag_features(
        parse("MMLU 5-shot went from 61.2 to 63.0"),
        None,
        "comment",
        "github",
        ThreadContext(title="[evals] 100k evals", labels=("evals",)),
    )
    assert "thread:evals" in names and "kind:comment" in names
    ranking = model.ranking(names)
    assert [p for _, p in ranking] == sorted((p for _, p in ranking), reverse=True)
    assert all(0.0 < p < 1.0 for _, p in ranking)
    assert ranking[0][0] == "evals"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"tags": {}}', "tags"),
        ('{"tags": {"evals": {"bias": 0.1, "weights": [1.0]}}}', "names"),
        ('{"names": ["a", "b"], "tags": {"evals": {"bias": 0.1, "weights": [1.0]}}}', "weight"),
    ],
)
def test_a_tag_model_file_of_the_wrong_shape_is_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        TagModel.from_json(text)


def test_a_tag_model_file_reads_one_weight_per_name_per_tag() -> None:
    text = (
        '{"names": ["loss", "mmlu"], "tags": {"evals": {"bias": -1.0, "weights": [0.0, 3.0]},'
        ' "training-dynamics": {"bias": -1.0, "weights": [3.0, 0.0]}}}'
    )
    model = TagModel.from_json(text)
    assert [t for t, _ in model.ranking(["mmlu", "unseen"])] == ["evals", "training-dynamics"]
    assert [t for t, _ in model.ranking(["loss"])] == ["training-dynamics", "evals"]
    assert dict(model.ranking([]))["evals"] == pytest.approx(1 / (1 + math.e))


def test_the_gate_keeps_the_rules_tag_only_where_the_classifier_ranks_it_first() -> None:
    assert tag(INFRA, False) == "infra"  # the rules alone
    assert tag(INFRA, sure_of("infra", "evals")) == "infra"
    assert tag(INFRA, sure_of("evals", "infra")) == "other"
    # unsure of everything, the tie goes by name: infra is not first, so no tag
    unsure = TagModel.of({t: LiveModel(bias=-6.0, weights={}, threshold=0.0) for t in TAGS})
    assert tag(INFRA, unsure) == "other"
    assert gate("infra", [("infra", 0.31), ("evals", 0.30)]) == "infra"
    assert gate("infra", [("evals", 0.31), ("infra", 0.30)]) == "other"
    assert gate("infra", [("evals", 0.31), ("infra", 0.30)], top=2) == "infra"
    assert gate("infra", []) == "other"


NOTES = "Notes from today's sync are in the doc, three decisions listed."


@pytest.mark.parametrize("top", ["evals", "infra", "ablation"])
def test_the_gate_adds_only_the_classifiers_top_topic_and_only_when_sure(top: str) -> None:
    assert tag(NOTES, False) == "other"
    assert tag(NOTES, sure_of(top, "other")) == top
    assert gate("other", [(top, ADD_FLOOR), ("other", 0.1)]) == top
    assert gate("other", [(top, ADD_FLOOR - 0.01), ("other", 0.1)]) == "other"
    assert gate("other", [("other", 0.95), (top, 0.9)]) == "other"  # no topic is the top
    for chat in ("thanks, sounds good 👍", "lol nice"):  # chit-chat is given no topic
        assert tag(chat, sure_of(top, "other")) == "other"


def test_the_gate_never_adds_incident() -> None:
    assert gate("other", [("incident", 0.999), ("evals", 0.95)]) == "other"
    assert tag(NOTES, sure_of("incident", "other")) == "other"


@pytest.mark.parametrize("top", ["other", "evals"])
def test_the_gate_never_touches_the_incident_tag(top: str) -> None:
    assert tag(INCIDENT, False) == "incident"
    assert tag(INCIDENT, sure_of(top, "incident")) == "incident"
    assert gate("incident", [(top, 0.999), ("incident", 0.0)]) == "incident"


def test_the_bench_runs_on_a_tiny_slice(tmp_path: Path) -> None:
    # four groups, a few entries each: one fit per group left out, not one per group of 56
    groups = {"hero+northwind", "basalt", "hawk", "quarry-point/kiln"}
    corpus = tmp_path / "slice.jsonl"
    corpus.write_text(
        "".join(json.dumps(e) + "\n" for e in load() if group_of(e) in groups), encoding="utf-8"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert bench_tag_gate.main(["--corpus", str(corpus), "--limit", "6"]) == 0
    text = out.getvalue()
    assert "rules alone" in text and "committed" in text
    assert "µs per event" in text
