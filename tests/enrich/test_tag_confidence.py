"""Issue 40, confidence not coverage: a tag is shown only when its evidence is strong and broad.
Each case names the mechanism it exercises (`bot.enrich.tags`): breadth of evidence, the short
post with one strong word, the no-topic and fault rivals, a thread labelled as an experiment, and
a comparison that needs more than one word of its own. Corpus cases go through the live path
(`rules_enrichment` on the event the source would store), sentences through `enrich_text`."""

from __future__ import annotations

from typing import Any

import pytest

from bot.enrich.markdown import parse
from bot.enrich.rules import enrich_event, enrich_text
from bot.enrich.tags import Evidence, body_evidence, confident_tag
from tests.enrich.signal_corpus import enrich, load, to_event


@pytest.fixture(scope="module")
def corpus() -> dict[str, dict[str, Any]]:
    return {entry["id"]: entry for entry in load()}


def chat_tag(text: str, *, tag_model: bool = True) -> str:
    return enrich_text(
        title=None, body=text, kind="message", source="discord", tag_model=tag_model
    ).tag


def rules_tag(entry: dict[str, Any]) -> str:
    """The rules' tag of a corpus entry, the tag classifier left out."""
    return enrich_event(to_event(entry), tag_model=False).tag


def test_one_weak_word_said_again_and_again_is_no_topic() -> None:
    # "host" three times is a word's other sense, not three pieces of evidence about infra
    text = "Who will host Friday's demo? The host picks the order, and last time the host ran over."
    assert chat_tag(text) == "other"


def test_breadth_is_distinct_terms_or_one_strong_term() -> None:
    weak = Evidence()
    for _ in range(3):
        weak.add("infra", 2.0, "host", strong=False)
    assert weak.scores["infra"] == 6.0 and not weak.broad("infra")
    assert confident_tag(weak) == "other"
    broad = Evidence()
    broad.add("infra", 3.0, "host", strong=False)
    broad.add("infra", 3.0, "memory", strong=False)
    assert confident_tag(broad) == "infra"
    strong = Evidence()
    strong.add("evals", 4.5, "mmlu", strong=True)
    assert confident_tag(strong) == "evals"


@pytest.mark.parametrize(
    ("entry_id", "tag"),
    [
        ("c690", "checkpointing"),  # "are we keeping the 20k ckpt or can it go?"
        ("c743", "data"),  # "why the tokenizer adds two BOS tokens in the chat template?"
        ("c736", "evals"),  # "MT-Bench at dpo step 1000: 7.62, up from 7.31 after sft"
        ("c548", "infra"),  # "the slurm partition for gneiss moves to the new racks next week"
    ],
)
def test_a_chat_line_naming_one_topic_strongly_is_tagged(
    corpus: dict[str, dict[str, Any]], entry_id: str, tag: str
) -> None:
    assert enrich(corpus[entry_id]).tag == tag == corpus[entry_id]["tag"]


@pytest.mark.parametrize(
    "entry_id",
    [
        "c733",  # "dpo started from the e1 ckpt, beta 0.2, lr 5e-7": two topics
        "c770",  # "warmup restart worked, no more fp8 nans since 34k": a rival in few words
    ],
)
def test_a_chat_line_with_a_rival_topic_gets_no_tag_from_the_rules(
    corpus: dict[str, dict[str, Any]], entry_id: str
) -> None:
    # the tag classifier may still show its own top topic where it is sure (tests/enrich/
    # test_tag_gate.py); the rules do not guess between rivals
    assert rules_tag(corpus[entry_id]) == "other"


@pytest.mark.parametrize(
    "text",
    [
        "my jupyter notebook on the login node keeps losing its GPU, no idea why",
        "slurm killed my interactive job again, the 4h limit is brutal",
        "Lunch on Thursday with the infra and cluster folks, 12:30 at the usual place.",
    ],
)
def test_side_workloads_and_logistics_get_no_tag_from_the_rules(text: str) -> None:
    assert chat_tag(text, tag_model=False) == "other"


def test_an_incident_aftermath_the_detector_missed_is_not_tagged_infra(
    corpus: dict[str, dict[str, Any]],
) -> None:
    entry = corpus["c555"]  # "its IB HCA reports errors. excluded + requeued from 44,000"
    assert entry["tag"] == "incident"
    assert enrich(entry).tag in ("incident", "other")
    assert (
        chat_tag(
            "the node is excluded and the job requeued from 44,000 after its HCA reported errors"
        )
        == "other"
    )


@pytest.mark.parametrize(
    "entry_id",
    [
        "c671",  # the description: "z-loss 0 / 1e-4 / 1e-3, everything else as in …"
        "c673",  # "Nice. 1e-4 it is for the 9B stage 2.": the thread's label carries it
    ],
)
def test_a_thread_labelled_experiment_is_a_comparison(
    corpus: dict[str, dict[str, Any]], entry_id: str
) -> None:
    assert corpus[entry_id]["thread_labels"] == ["experiment"]
    assert enrich(corpus[entry_id]).tag == "ablation" == corpus[entry_id]["tag"]


def test_arms_written_in_scientific_notation_are_a_comparison() -> None:
    evidence = body_evidence(parse("z-loss 0 / 1e-4 / 1e-3, everything else as before"))
    assert "ablation" in evidence.strong


@pytest.mark.parametrize(
    "text",
    [
        "100k evals are in #1523, the margin over the ladder grew to 0.011",  # issue 40's demo
        "HumanEval+ at 35k: 48.8 (30k: 46.1). MBPP+ 57.0 (55.2). The margin over the 7B ladder "
        "projection grew to 1.9 points.",
    ],
)
def test_an_eval_measured_against_a_ladder_is_no_ablation(text: str) -> None:
    assert chat_tag(text) != "ablation"


def test_a_run_described_by_its_size_and_hosts_is_not_an_infra_thread(
    corpus: dict[str, dict[str, Any]],
) -> None:
    # "Journal for slate-20b: 20B dense, 2T tokens, FSDP + TP on 64 nodes of H200 …": the
    # model's size says spec as loudly as the hosts say infra, so no doubtful infra tag
    entry = corpus["c498"]
    assert entry["tag"] == "spec"
    assert enrich(entry).tag in ("spec", "other")
    evidence = body_evidence(parse("Small run: 1.4B params on the campus machines."))
    assert "spec" in evidence.strong


def test_clusters_of_sequences_are_not_a_compute_cluster(
    corpus: dict[str, dict[str, Any]],
) -> None:
    entry = corpus["c797"]  # "deduplicated the test clusters against train at 50% identity"
    assert enrich(entry).tag == "data" == entry["tag"]
