"""The deterministic enrichment on the development corpus must not regress: the timeline's
figures meet issue 40's targets (of the tags shown, at least 80 % agree with the labels, with a
tag on at least half the entries; at least 80 % of 🚨 marks on entries about an incident, every
incident event marked; at most 5 % of summaries a heading, a bare title, a cut phrase or empty),
live-report recall and precision stay above the floors reached, nothing substantive is erased,
no spam is shown, and the rules stay well ahead of a keyword matcher. `bench/bench_signal.py`
prints the same figures with the confusion matrix and every miss; `bench/bench_nokey.py` prints
them for the held-back corpus too (never tested here: it is not tuned on)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.enrich.signal_corpus import (
    Scores,
    baseline_method,
    in_threads,
    load,
    rules_method,
    score,
)

# Issue 40's targets for what the timeline shows without a model key.
SHOWN_TAG_TARGET = 0.80  # of the tags shown, agreeing with the labels
COVERAGE_TARGET = 0.50  # of the entries shown, with a tag
MARK_PRECISION_TARGET = 0.80  # of the 🚨 marks, on entries about an incident
SUMMARY_PROBLEMS_MAX = 0.05  # summaries a heading, a bare title, a cut phrase or empty
# Reached on the development corpus (21,279 entries) when these floors were set, less about two
# entries' worth of margin. They are in-sample: the rules were written seeing the corpus and the
# scorer is fitted on it. The honest figures are the held-back corpora's (bench/bench_nokey.py)
# and each batch's first reading (tests/data/README.md, docs/benchmarks.md).
SHOWN_TAG_FLOOR = 0.97  # reached 0.973 (the tag classifier fitted on the corpus)
MARK_PRECISION_FLOOR = 0.93  # reached 0.933 (marks on incident entries)
RECALL_FLOOR = 0.945  # reached 0.950 (live reports flagged)
PRECISION_FLOOR = 0.685  # reached 0.690 (live reports flagged)
KIND_FLOOR = 0.645  # of the incidents found, the share whose kind matches the label (0.653)
#: Incident events of the development corpus the rules and the scorers leave unmarked (89 of
#: 3,814), by shape:
#: - a fault inside an agent's digest, daily or status block (c2232, c4073, c4853, c5132,
#:   c10155, c15644, c19183, c21063, c21810, c23630);
#: - a bot's health check the rules alone do not read as a report, so the GitHub source leaves
#:   it out with every other bot comment (c5211, c5276);
#: - issues titled by a symptom neither the rules nor the issue scorer read: a checkpoint
#:   missing or empty (c2713, c8517), a restore test's missing state (c17626), a loss under
#:   its forecast (c15671), an agent's SEV3 loss jump (c23287);
#: - a fault told after another topic: in an eval or ablation report, a review, a pull or notes
#:   (c4194, c4663, c5124, c8899, c18486, c18771, c18811, c19074, c19203, c19488, c19550,
#:   c21076, c23192), and fix pulls whose "What broke" names no hour (c19528, c19552, c19590);
#: - a level that moved, told in numbers or a table without a worry word (c15267, c17098,
#:   c17526, c18851, c19280, c19687, c19825, c21342, c22866);
#: - questions and outsiders' sightings (c14178, c14716, c17845, c18748, c19158), "the thing
#:   at 03:00" (c18227);
#: - a warning-level alert answered by a fix, not called real (c23410);
#: - an RL or post-training stage's faults in its own words (c19451, c21649), a warmup ten
#:   times too short (c10974), a requeue told as over (c18518);
#: - the round of c23920-c24399: a budget overrun told in a spec (c8780), an eval box's full
#:   disk asked "same thing??" (c23960), "lol. 56." of 64 GPUs (c24008), "is wandb broken or
#:   is kestrel down?" (c24197), an eval report at chance (c24313);
#: - posts of fewer than four words, which the scorer leaves to the rules: "uh 📉📉" (c2881),
#:   "loss 🚀 again" (c4535), "wtf is 0417" (c18423), "155k ckpt?" (c18508).
KNOWN_UNMARKED = frozenset(
    {
        *("c2881", "c4535", "c18423", "c18508", "c8780", "c23960", "c24008"),
        *("c24197", "c24313", "c2232", "c4073", "c5132", "c4853", "c10155"),
        *("c2713", "c8517", "c8899", "c4194", "c4663", "c5124"),
        *("c5211", "c5276", "c10974", "c14178"),
        *("c14716", "c15267", "c15644", "c15671", "c17626", "c17845"),
        *("c17098", "c17526"),
        *("c18851", "c18518", "c18227"),
        *("c18486", "c18771", "c18811", "c19183", "c19074", "c19203", "c19280"),
        *("c19158", "c19451", "c19488", "c19550", "c19528", "c19552", "c19590"),
        *("c19687", "c19825", "c21063", "c21076", "c21342", "c21649"),
        *("c21810", "c22866", "c23192", "c23287", "c23410", "c23630"),
        "c18748",
        # the round of c24400-c25119, read blind: what the refit scorers still miss
        *("c24565", "c24583", "c24680", "c24726", "c25068", "c25070", "c25078"),
        *("c25088", "c25089"),
        # the round of c25120-c25599, read blind: what the refit scorers still miss (an agent's
        # status whose table shows the fault under "Anomalies: none", and "not the drill 😬")
        *("c25195", "c25320"),
        # the round of c25840-c26559: an agent's "Assessment: run healthy" over 0 tok/s
        "c25899",
        # a loss table in a run log, which the replies' scorer added below the "over" the honest
        # reading of this round chose (0.75)
        "c24418",
        # the round of c26560-c27279, read blind: an agent's daily burying a replayed shard
        # (c26590), a monitor's loss against its EMA with "anyone around?" (c26617); and one
        # the scorers refit on the grown corpus no longer add: a loss jump after a planned
        # restart an agent calls expected (c25563)
        *("c25563", "c26590", "c26617"),
        # the round of c27280-c27999, read blind: a resume that restored the wrong step told in
        # a replica's loss and a log (c27651), an orchestrator's restart line (c27689), an
        # agent's daily (c27703), an eval bot's regression table over a broken checkpoint
        # (c27830)
        *("c27651", "c27689", "c27703", "c27830"),
        # the round of c28000-c28719, read blind: a drop rate that rose at a requeue, told in
        # numbers and asked as a question (c28061); old checkpoints missing, found by an eval
        # job's NoSuchKey (c28696)
        *("c28061", "c28696"),
        # one the scorers refit on the corpus of c28960-c29439 no longer add: a reply below
        # the replies' "over" (c13754)
        "c13754",
        # the round of c29440-c30159, read blind: an anomaly bot's issue whose only sign is a
        # z-score against its baseline, which its false alarms share (c29703), a W&B bot's
        # "running at step N" repeated hours later (c29013)
        *("c29013", "c29703"),
        # the round of c30160-c30879, read blind: a throughput drop told in Spanish at the end
        # of a reply in a pull request's thread, where the scorers do not read (c30229)
        "c30229",
        # the round of c30880-c31599, read blind: a link's bandwidth fallen, told after
        # "Unrelated" at the end of a reply on a pull request (c31582)
        "c31582",
    }
)


@pytest.fixture(scope="module")
def entries() -> list[dict[str, Any]]:
    return load()


@pytest.fixture(scope="module")
def rules(entries: list[dict[str, Any]]) -> Scores:
    return score(entries, in_threads(entries, rules_method))


def test_the_corpus_is_big_enough_to_mean_something(entries: list[dict[str, Any]]) -> None:
    assert len(entries) >= 240
    assert sum(bool(e["incident"]) for e in entries) >= 30


def test_shown_tags_agree_and_cover_half_the_timeline(rules: Scores) -> None:
    assert rules.shown_agreement >= SHOWN_TAG_TARGET, rules.wrong_tags
    assert rules.coverage >= COVERAGE_TARGET
    assert rules.shown_agreement >= SHOWN_TAG_FLOOR, rules.wrong_tags


def test_the_incident_mark_is_sure_and_on_every_incident_event(rules: Scores) -> None:
    assert rules.mark_precision >= MARK_PRECISION_TARGET
    assert rules.mark_precision >= MARK_PRECISION_FLOOR
    missed = set(rules.unmarked_live)
    assert missed <= KNOWN_UNMARKED, sorted(missed - KNOWN_UNMARKED)
    # and the list holds no report the rules now mark: it stays the truth about what they miss
    assert missed >= KNOWN_UNMARKED, sorted(KNOWN_UNMARKED - missed)


def test_summaries_are_ones_a_lead_would_keep(rules: Scores) -> None:
    assert rules.summary_problem_rate <= SUMMARY_PROBLEMS_MAX, rules.bad_summaries


def test_incident_recall_and_precision(rules: Scores) -> None:
    assert rules.recall >= RECALL_FLOOR, f"missed: {rules.misses}"
    assert rules.precision >= PRECISION_FLOOR, f"false alarms: {rules.false_alarms}"
    assert rules.kinds_right >= KIND_FLOOR * rules.found


def test_nothing_substantive_is_erased_and_no_spam_is_shown(rules: Scores) -> None:
    assert rules.erased == []
    assert rules.spam_shown == 0


def test_the_rules_beat_a_keyword_matcher(entries: list[dict[str, Any]], rules: Scores) -> None:
    baseline = score(entries, baseline_method)
    assert rules.agreement >= baseline.agreement + 0.25
    assert rules.precision > baseline.precision
