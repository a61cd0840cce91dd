"""The learned live-report scorer (issue 40): its committed file, how it joins the rules, and
the cross-validation bench that chose its threshold."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from bench import bench_learned
from bot.enrich.context import ThreadContext
from bot.enrich.incidents import figures_unchanged
from bot.enrich.learned import (
    ISSUE_MODEL_PATH,
    MODEL_PATH,
    LiveModel,
    features,
    issue_features,
    load_issue_model,
    load_model,
)
from bot.enrich.markdown import parse
from bot.enrich.rules import enrich_text
from scripts import train_signals
from tests.enrich.signal_corpus import load

#: A scorer that would add a report wherever it is allowed to.
ALWAYS = LiveModel(bias=0.0, weights={}, threshold=-1.0)
#: One that would also overrule the rules wherever they heard incident words and judged none.
OVERRULES = LiveModel(bias=0.0, weights={}, threshold=-1.0, over=-1.0)
#: A scorer that never would.
NEVER = LiveModel(bias=0.0, weights={}, threshold=2.0)
#: Prose without a word the rules judge incidents by: only a scorer can call it a report.
UNHEARD = "rank 12 keeps printing the same barrier line and nothing else moves on the board"


def test_the_committed_model_loads_and_scores() -> None:
    model = load_model()
    assert 0.0 < model.threshold < 1.0
    assert 1000 <= len(model.weights) <= train_signals.KEEP
    names = features(parse("the job died at step 41,200, rank 3 gone"), None, "message", "discord")
    assert "step 0" in names and "kind:message" in names  # numbers read by their shape
    assert any(name in model.weights for name in names)
    p = load_model().probability(features(parse(UNHEARD), None, "message", "discord"))
    assert 0.0 < p < 1.0
    assert p == model.probability(features(parse(UNHEARD), None, "message", "discord"))


def test_a_model_file_without_weights_is_refused() -> None:
    with pytest.raises(ValueError, match="weights"):
        LiveModel.from_json('{"bias": 0.1, "threshold": 0.5}')


def test_the_refit_check_passes_on_a_fresh_fit_and_names_a_stale_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The committed models are refit from the committed corpus and compared in CI
    (`.ci/run`: `scripts/train_signals.py --check`, a minute of CPU the suite leaves out); the
    check itself is tested here on a slice."""
    corpus = tmp_path / "slice.jsonl"
    corpus.write_text("".join(json.dumps(e) + "\n" for e in load()[:400]), encoding="utf-8")
    paths = [tmp_path / "live.json", tmp_path / "issues.json", tmp_path / "tags.json"]
    files = ["--out", str(paths[0]), "--issues-out", str(paths[1]), "--tags-out", str(paths[2])]
    assert train_signals.main(["--corpus", str(corpus), *files]) == 0
    assert train_signals.main(["--corpus", str(corpus), *files, "--check"]) == 0
    assert "are what this script fits" in capsys.readouterr().out
    paths[2].write_text(paths[2].read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert train_signals.main(["--corpus", str(corpus), *files, "--check"]) == 1
    err = capsys.readouterr().err
    assert f"stale: {paths[2]}" in err and str(paths[0]) not in err
    assert MODEL_PATH.exists() and ISSUE_MODEL_PATH.exists()  # the committed ones, untouched


def _issue(title: str, body: str, learned: LiveModel | bool, labels: tuple[str, ...] = ()) -> Any:
    context = ThreadContext(title=title, labels=labels, kind="issue")
    return enrich_text(
        title=title, body=body, kind="issue", source="github", context=context, learned=learned
    )


#: An issue opened to report a fault, in words the rules do not judge incidents by.
UNHEARD_ISSUE = (
    "Grad norm panel looks odd since the relaunch",
    "Since Tuesday's relaunch the grad norm panel shows a sawtooth every 500 steps that wasn't "
    "there before. Loss looks normal so far. Is this expected?",
)


def test_an_issue_description_is_scored_by_the_issue_scorer() -> None:
    title, body = UNHEARD_ISSUE
    assert not _issue(title, body, False).live_report  # the rules alone miss it
    e = _issue(title, body, ALWAYS)
    assert e.live_report and e.incident and e.tag == "incident"
    assert not _issue(title, body, NEVER).live_report
    assert not _issue("", body, ALWAYS).live_report  # it learned descriptions with their titles
    # the committed issue scorer reads it as the report it is, and a plan as none
    assert _issue(title, body, True).live_report
    plan = "The next eval sweep will pull step_220000 on Monday; owners please confirm tasks."
    assert not _issue("Eval sweep at 220k", plan, True).live_report


def test_the_issue_scorer_reads_the_labels_and_never_a_proposal() -> None:
    doc = parse(UNHEARD_ISSUE[1])
    context = ThreadContext(title=UNHEARD_ISSUE[0], labels=("monitor: alert",), kind="issue")
    names = issue_features(doc, UNHEARD_ISSUE[0], context)
    assert {"label:monitor", "label:alert", "kind:issue"} <= set(names)
    model = load_issue_model()
    assert 0.5 < model.threshold < 1.0 and model.over >= model.threshold
    assert model.probability(names) != model.probability(issue_features(doc, None, context))
    # an issue asking for a change says what to do, whatever a scorer would say
    ask = "Proposal: pin the eval harness to the trainer's tokenizer revision"
    assert not _issue(ask, UNHEARD_ISSUE[1], OVERRULES).live_report


def _enrich(body: str, kind: str, learned: LiveModel | bool, title: str | None = None) -> Any:
    source = "discord" if kind == "message" else "github"
    return enrich_text(title=title, body=body, kind=kind, source=source, learned=learned)


@pytest.mark.parametrize("kind", ["pull", "review"])
def test_a_model_never_marks_a_pull_description_or_a_review(kind: str) -> None:
    assert _enrich(UNHEARD, "comment", ALWAYS).live_report  # it would, on a comment
    e = _enrich(UNHEARD, kind, ALWAYS, title="Barrier logging" if kind == "pull" else None)
    assert not e.live_report and not e.incident and e.tag != "incident"


def test_a_model_added_report_is_marked_with_the_kind_the_rules_name_or_outage() -> None:
    assert not _enrich(UNHEARD, "message", False).live_report
    e = _enrich(UNHEARD, "message", ALWAYS)
    assert e.live_report and e.incident and e.tag == "incident"
    assert e.incident_kind == "outage" and e.severity is not None
    logged = UNHEARD + "\n\n```\n[rank12] CUDA out of memory. Tried to allocate 2.00 GiB\n```"
    assert _enrich(logged, "message", ALWAYS).incident_kind == "oom"


@pytest.mark.parametrize(
    "text",
    [
        "hero is down for the scheduled maintenance",  # the rules heard "down" and judged it
        "is loss stuck?",
        "proposal: a sidecar that kills the job when rank 0 prints the same line twice",
        "training again from 44,000 after the switch swap",
    ],
)
def test_where_the_rules_heard_or_ruled_out_their_judgement_stands(text: str) -> None:
    assert not _enrich(text, "message", ALWAYS).live_report


def test_a_surer_scorer_may_overrule_words_the_rules_heard_but_never_a_veto() -> None:
    heard = "hero is down for the scheduled maintenance"
    assert not _enrich(heard, "message", ALWAYS).live_report
    assert _enrich(heard, "message", OVERRULES).live_report
    for vetoed in (
        "proposal: a sidecar that kills the job when rank 0 prints the same line twice",
        "Resumed from 44,000 after the switch swap, all good",
    ):
        assert not _enrich(vetoed, "message", OVERRULES).live_report, vetoed


def test_a_model_file_says_its_over_threshold_or_never_overrules() -> None:
    plain = LiveModel.from_json('{"bias": 0.1, "threshold": 0.5, "weights": {"a": 1.0}}')
    assert plain.over == float("inf")
    sure = LiveModel.from_json('{"bias": 0.1, "threshold": 0.5, "over": 0.8, "weights": {}}')
    assert sure.over == 0.8


def test_the_combination_never_removes_a_rules_mark() -> None:
    """Every 🚨 and live report the rules give on the corpus (as the live path reads it) stays,
    with its kind, whatever the scorer says."""
    checked = 0
    for entry in load()[::20]:  # every twentieth entry: hundreds of marks, a twentieth of the time
        rules = bench_learned.verdict(entry, False)
        if not rules.marked:
            continue
        checked += 1
        for learned in (True, NEVER, ALWAYS, OVERRULES):
            v = bench_learned.verdict(entry, learned)
            assert v.marked and v.incident >= rules.incident, entry["id"]
            if rules.incident:
                assert v.kind == rules.kind, entry["id"]
    assert checked > 250  # 324 when written


def test_the_cross_validation_bench_runs_on_a_slice(tmp_path: Path) -> None:
    # four groups, a few entries each: one fit per group left out, not one per group of 120
    groups = {"hero+northwind", "basalt", "hawk", "quarry-point/kiln"}
    corpus = tmp_path / "slice.jsonl"
    corpus.write_text(
        "".join(json.dumps(e) + "\n" for e in load() if bench_learned.group_of(e) in groups),
        encoding="utf-8",
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert bench_learned.main(["--corpus", str(corpus), "--limit", "2"]) == 0
    text = out.getvalue()
    rows = {line.split()[0] for line in text.splitlines() if line[:1].isalpha()}
    assert {"hero+northwind", "basalt", "hawk", "pooled"} <= rows
    assert "threshold" in text and "µs per event" in text


def test_the_scorer_never_reads_a_rule_as_a_report() -> None:
    # a post that is only conditions says what happens then: the scorer may not add it, however
    # sure it is (here: the committed scorer, and one that adds wherever it may)
    always = LiveModel(bias=30.0, weights={}, threshold=0.0, over=0.0)
    for text in ("if the job is wedged we requeue it", "When a node dies, the job restarts."):
        for learned in (True, always):
            e = enrich_text(
                title=None, body=text, kind="message", source="discord", learned=learned
            )
            assert not e.live_report, text
    said = "when I looked at 09:00 the job was wedged. requeued it."
    assert enrich_text(
        title=None, body=said, kind="message", source="discord", learned=always
    ).live_report


@pytest.mark.parametrize(
    ("text", "unchanged"),
    [
        ("MFU since the relaunch is 41.2%, was 41.3 before", True),
        ("loss is 2.05 after the restart, it was 2.04 before", True),
        ("step time +4% since 09:30", True),
        ("MFU since the relaunch is 31.2%, was 41.3 before", False),
        ("loss is 2.45 after the restart, it was 2.04 before", False),
        ("step time +14% since the swap", False),
        # one comparison that moved is enough to tell
        ("loss 1.944 → 1.940, step time 12.1 s → 15.0 s", False),
        ("no figures compared at all", False),
    ],
)
def test_figures_that_hardly_moved_are_told_apart(text: str, unchanged: bool) -> None:
    assert figures_unchanged(text) is unchanged


@pytest.mark.parametrize(
    ("text", "judged"),
    [
        # figures that hardly moved say nothing changed: a reading of words may not say more
        ("MFU since the relaunch is 41.2%, was 41.3 before, keep an eye on it", False),
        ("loss is 2.05 after the restart, it was 2.04 before, keep an eye on it", False),
        ("step time +4% since 09:30 on the main job, keep an eye on it", False),
        # figures that moved, which the rules do not read, are the scorer's to weigh
        ("step time +14% on the main job since the swap, keep an eye on it", True),
        # too few words for a reading of words
        ("loss stuck?", False),
        ("uh 📉📉", False),
    ],
)
def test_the_scorer_leaves_unmoved_figures_and_tiny_posts_to_the_rules(
    text: str, judged: bool
) -> None:
    assert _enrich(text, "message", OVERRULES).live_report is judged


def test_words_of_other_scripts_are_read_as_pairs_of_letters() -> None:
    names = features(parse("체크포인트 저장 실패 at 168k"), None, "message", "discord")
    assert {"체크", "포인", "저장", "실패", "at", "0k"} <= set(names)
    assert "node 0" in features(parse("node 17 又挂了"), None, "message", "discord")
    assert "又挂" in features(parse("node 17 又挂了"), None, "message", "discord")
