"""The deterministic enrichment path on realistic GitHub comments and Discord chatter."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.enrich.context import ThreadContext
from bot.enrich.markdown import clean_text, parse, parse_post, strip_mentions
from bot.enrich.rules import Enrichment, enrich_text
from bot.enrich.summary import compose_summary
from bot.enrich.tags import PRIORITY, SCORED_TAGS
from bot.models import TAGS

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def summarize(body: str, title: str | None = None, limit: int = 200) -> str:
    """The one-line summary the rules compose for markdown `body` (and a title)."""
    return compose_summary(parse(body), title, limit)


def detect_incident(
    text: str, title: str | None = None, context: ThreadContext | None = None
) -> tuple[bool, str | None, str | None]:
    """`(live report, severity, kind)` the rules read in markdown `text` (and an issue title):
    the rules alone, without the issue scorer (`tests/enrich/test_learned.py`)."""
    e = enrich_text(
        title=title, body=text, kind="issue", source="github", context=context, learned=False
    )
    return e.live_report, e.severity, e.incident_kind


def classify_tag(text: str, title: str | None = None) -> str:
    return enrich_text(title=title, body=text, kind="issue", source="github", learned=False).tag


def is_newsworthy(body: str, kind: str = "message") -> bool:
    return enrich_text(title=None, body=body, kind=kind, source="discord").newsworthy


def assert_one_line(summary: str, limit: int = 200) -> None:
    assert summary
    assert len(summary) <= limit
    assert "\n" not in summary
    assert "  " not in summary


# ---------------------------------------------------------------------------------- summaries


def test_summary_of_incident_report_skips_template_greeting_and_markup() -> None:
    summary = summarize(fixture("gh_node_loss_report.md"))
    assert summary == (
        "The hero run lost node s55sxs64 after step 50,195 when its InfiniBand port kept "
        "flapping, and the job went down at 23:39 UTC."
    )


def test_summary_of_a_description_says_what_it_proposes_not_its_title() -> None:
    summary = summarize(fixture("gh_pr_template.md"), title="[WIP] Pin a permanent checkpoint")
    assert summary.startswith("This pins one extra permanent checkpoint at step 55,000")
    assert "Pin a permanent checkpoint" not in summary
    assert_one_line(summary)


def test_a_description_that_only_introduces_follows_its_title() -> None:
    body = "Results for the intermediate checkpoints:\n\n| ckpt | MMLU |\n|---|---|\n| 20k | 61 |"
    summary = summarize(body, title="[evals] Checkpoint evals: 20k / 40k")
    # and ends as a sentence: the table it introduced is not on the line
    assert (
        summary == "[evals] Checkpoint evals: 20k / 40k — Results for the intermediate checkpoints."
    )


def test_a_description_of_headings_only_is_summarised_by_its_title() -> None:
    body = "## Finding and recommendation\n\n| rung | loss |\n|---|---|\n| d768 | 2.61 |"
    assert summarize(body, title="Gate decay ablation") == "Gate decay ablation"


def test_summary_is_capped_at_a_clause_or_word_with_ellipsis() -> None:
    body = "The restore " + "kept re-reading the same shard from the regional bucket " * 10
    summary = summarize(body)
    assert len(summary) <= 200
    assert summary.endswith("…")
    assert summary[:-1] == summary[:-1].rstrip()
    assert body.startswith(summary[:-1])  # cut on a word boundary, nothing invented
    assert len(summarize(body, limit=60)) <= 60


def test_a_long_sentence_ends_at_a_clause_never_mid_phrase() -> None:
    body = (
        "We keep losing a day whenever a node dies because the launcher insists on exactly 128 "
        "nodes, and this change lets it start with fewer by recomputing the gradient accumulation "
        "steps while introducing temporary slack in the global batch until the spare arrives."
    )
    summary = summarize(body)
    assert summary == (
        "We keep losing a day whenever a node dies because the launcher insists on exactly 128 "
        "nodes, and this change lets it start with fewer by recomputing the gradient accumulation "
        "steps."
    )


def test_a_label_over_a_table_introduces_the_prose_after_it() -> None:
    body = (
        "Three-week check-in\n\n| | |\n|---|---|\n| step | ~112,970 of 953,674 |\n\n"
        "Throughput has been flat at ~15 s/step since the fork."
    )
    assert summarize(body) == (
        "Three-week check-in — Throughput has been flat at ~15 s/step since the fork."
    )


def test_summary_prefers_a_sentence_boundary_and_adds_short_followers() -> None:
    body = "Restarted. Resumed from step 54,000 after 47 min on a fresh slice. Loss is on trend."
    assert summarize(body) == "Restarted. Resumed from step 54,000 after 47 min on a fresh slice."
    # abbreviations and decimals do not end a sentence
    body = "Loss fell e.g. from 2.41 to 2.38 once the warmup ended at step 2,000. Nothing else."
    assert (
        summarize(body) == "Loss fell e.g. from 2.41 to 2.38 once the warmup ended at step 2,000."
    )


def test_summary_skips_fillers_and_prefers_tldr() -> None:
    assert summarize("Thanks for the fix!\n\nThe run resumed cleanly from step 54,000.") == (
        "The run resumed cleanly from step 54,000."
    )
    assert summarize("Hi all, update: the hero run passed 2.5T tokens overnight.") == (
        "The hero run passed 2.5T tokens overnight."
    )
    body = (
        "Long story below.\n\nWe looked at a lot of things.\n\n**TL;DR:** gate decay helps a bit."
    )
    assert summarize(body) == "Gate decay helps a bit."


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("## Description\n\nSwitch the allocator to **jemalloc** on all hosts.", "Switch the"),
        ("Set `weight_decay` to *0.02* for the __router__.", "Set weight_decay to 0.02 for the"),
        ("> did it crash?\n> really?\n\nNo, it was preempted and resumed.", "No, it was"),
        ("```\nTraceback (most recent call last):\n```\n\nThe trace is from rank 3.", "The trace"),
        ("    indented = code()\n\nIndented code is dropped too.", "Indented code"),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n\nTable rows are dropped.", "Table rows"),
        ("<!-- template -->\n<details>\n<summary>logs</summary>\nnoise\n</details>\nKept.", "Kept"),
        (
            "![plot](https://img.example.com/a.png)\n\nSee the [W&B report](https://wandb.ai/x).",
            "See",
        ),
        ("- [x] Drained the bad host and filed a ticket.", "Drained the bad host"),
        ("Fixes #8854\n\nCo-authored-by: A <a@example.com>\n\nPins a checkpoint.", "Pins a"),
    ],
)
def test_summary_strips_each_markdown_construct(body: str, expected: str) -> None:
    summary = summarize(body)
    assert summary.startswith(expected)
    for token in ("**", "`", "> ", "|", "<", "](", "http", "[x]", "#", "__"):
        assert token not in summary


def test_links_keep_their_text_and_bare_urls_vanish() -> None:
    text = clean_text(
        "Numbers in the [ladder report](https://wandb.ai/m/r) and https://example.com/x.png."
    )
    assert text == "Numbers in the ladder report and."
    assert "gs://" not in clean_text("Checkpoint at gs://marin-us/ckpt/step-54000 is fine.")


def test_clean_text_keeps_blocks_on_separate_lines() -> None:
    text = clean_text(fixture("gh_ablation.md"))
    lines = text.split("\n")
    assert lines[0] == "Results"
    assert lines[1].startswith("Weight-decay ablation on the d1024 rung")
    assert "weight_decay" not in text  # the YAML inside <details> is gone
    assert "2.4127" not in text  # so is the table


def test_a_post_that_is_only_code_is_summarised_by_its_telling_line() -> None:
    trace = (
        '```\nTraceback (most recent call last):\n  File "train.py", line 412, in <module>\n'
        "RuntimeError: NCCL communicator was aborted on rank 212\n```"
    )
    assert summarize(trace) == "RuntimeError: NCCL communicator was aborted on rank 212"
    assert summarize("```yaml\noptimizer:\n  lr: 3e-4\n```") == "optimizer:"
    e = enrich_text(title=None, body=trace, kind="comment", source="github")
    assert e.newsworthy and not e.incident  # shown; a pasted log alone is no live report


NOTICE = (
    "Posting the regional computing centre's maintenance notice here at Prof. Okonkwo's request."
)


@pytest.mark.parametrize(
    ("title", "body", "summary"),
    [
        # a lead that introduces a log ends as the sentence it is
        (
            None,
            "Nan-guard stopped the run at 113,846. Not a slow drift, two steps then inf:\n\n"
            "```\nstep 113845 loss 2.113\nstep 113846 loss inf\n```",
            "Nan-guard stopped the run at 113,846. Not a slow drift, two steps then inf.",
        ),
        # after its title, as a description's introducing lead is
        (
            "Restore from 468000 fails: loader state missing",
            "Planned requeue at 07:00. The restore fails on every rank:\n\n"
            "```\nKeyError: 'loader_state'\n```",
            "Restore from 468000 fails: loader state missing — Planned requeue at 07:00. "
            "The restore fails on every rank.",
        ),
        # after a long title, a short whole first sentence rather than a longer lead cut
        (
            "Captions in cc-ocr-mix shifted by one sample (shards 2200–2310)",
            "Not an outage, a data-quality thing. While spot-checking cc-ocr-mix for the TextVQA "
            "work I found captions that describe the next image in the shard:\n\n| a |\n|--|",
            "Captions in cc-ocr-mix shifted by one sample (shards 2200–2310) — Not an outage, a "
            "data-quality thing.",
        ),
        # "at Prof. Okonkwo's request" is one sentence
        (
            None,
            NOTICE + " Tarn is down Sat.",
            NOTICE,
        ),
    ],
)
def test_a_lead_that_introduces_what_follows_ends_as_a_sentence(
    title: str | None, body: str, summary: str
) -> None:
    assert summarize(body, title) == summary


def test_summary_never_empty() -> None:
    assert summarize("") == "(no text)"
    assert summarize("```\n{}\n```") == "(no text)"
    assert summarize("", title="Hero run tracking") == "Hero run tracking"
    assert summarize("<!-- nothing -->", title=None, limit=3) == "(n…"


# ----------------------------------------------------------------------------------- mentions


def test_strip_mentions_neutralises_every_ping_form() -> None:
    text = strip_mentions("@everyone @here <@123> <@!456> <@&789> ping")
    assert "@everyone" not in text and "@here" not in text
    assert "<@" not in text
    assert text.endswith("ping")
    assert strip_mentions(text) == text  # idempotent


def test_summaries_carry_no_pings() -> None:
    summary = summarize("@everyone <@&42> the hero run is hung at step 48,112 <@1234>")
    assert summary == "The hero run is hung at step 48,112"
    assert "@everyone" not in summarize("Heads-up: @everyone the restore is slow.")


# ---------------------------------------------------------------------------------- incidents


@pytest.mark.parametrize(
    ("text", "kind", "severity"),
    [
        (
            "Node s55sxs64 lost connectivity and the job stopped at step 50,195.",
            "node-loss",
            "critical",
        ),
        ("The job was preempted at 03:12 UTC and has not come back.", "preemption", "critical"),
        ("Xid 79 on host a3-12: the GPU fell off the bus.", "hardware", "critical"),
        (
            "Uncorrectable ECC errors on two H100s in rack 7 took the job down.",
            "hardware",
            "critical",
        ),
        ("Host OOM-killed by the container runtime at step 51,200.", "oom", "critical"),
        ("The hero run crashed with SIGSEGV inside the XLA runtime.", "crash", "critical"),
        ("Training is hung at step 48,112 after an NCCL timeout on rank 17.", "hang", "warning"),
        ("Restore stalled at 12% for over an hour.", "restore-failed", "critical"),
        (
            "Could not load checkpoint step-54000: shard 17 is missing.",
            "restore-failed",
            "critical",
        ),
        (
            "Checkpoint save failed at step 54,000; training continues.",
            "checkpoint-failed",
            "warning",
        ),
        ("The job died: No space left on device on the scratch volume.", "storage", "critical"),
        ("GCS is unavailable in us-central2, so every host is blocked.", "storage", "critical"),
    ],
)
def test_each_incident_kind(text: str, kind: str, severity: str) -> None:
    assert detect_incident(text) == (True, severity, kind)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # how people shorten a hardware report in chat: a host name and its end, ECC "on" a GPU
        ("r12n4 died (ECC on GPU3)", "node-loss"),
        ("r12n4 is dead, ECC on GPU 3", "hardware"),
        ("gpu-node-17 went down mid-step, requeueing", "node-loss"),
        ("the run is down again - GPU 3 on r12n4 threw ECC, swapping the node", "hardware"),
    ],
)
def test_chat_shorthand_reports(text: str, kind: str) -> None:
    assert detect_incident(text) == (True, "critical", kind)


@pytest.mark.parametrize(
    "text",
    [
        "llama3 is dead simple to fine-tune on our cluster.",
        "The new nodes have ECC enabled by default.",
        "no ECC errors since the swap",
    ],
)
def test_chat_shorthand_lookalikes_are_not_reports(text: str) -> None:
    assert detect_incident(text)[0] is False


def test_recovered_and_single_task_incidents_are_warnings() -> None:
    report = fixture("gh_node_loss_report.md")  # IB port flap → node lost → Iris restarted the job
    assert detect_incident(report) == (True, "warning", "network")
    degraded = "Throughput dropped 30% after the restart; one host has a degraded NVLink."
    assert detect_incident(degraded) == (True, "warning", "hardware")
    hang = "The run has been hung for three hours and the job is down: no steps logged."
    assert detect_incident(hang)[1] == "critical"


@pytest.mark.parametrize(
    "text",
    [
        "No OOMs since we moved to the new host memory config.",
        "We lowered the batch size to avoid OOM at 262k context.",
        "It would hang if the coordinator restarted first.",
        "Fixed the hang in the data loader by bumping the prefetch queue.",
        "If the node is lost we lose about 40 minutes of progress.",
        "Did the job crash overnight?",
        "The attention gate is stuck closed in layer 0 for nearly every token.",
        "Loss stalled around 2.31 for 2k steps, then kept falling.",
        "Plenty of low-hanging fruit in the warmup schedule.",
        "CI crashes on macOS with a segfault in the tokenizer tests.",
        "I'm stuck on how to read this gate norm plot.",
        "The new watchdog should catch hangs within five minutes.",
        "Let's add OOM headroom checks to the launcher.",
        # the run is not affected, and the post says so
        "The eval job OOMs on the v5p-64 slice; training itself is fine.",
        "Old pool preempted by the provider on schedule, as expected. Nothing to do.",
    ],
)
def test_negations_hypotheticals_and_topics_are_not_incidents(text: str) -> None:
    assert detect_incident(text) == (False, None, None)


def test_memory_tuning_discussion_with_old_oom_log_is_not_an_incident() -> None:
    body = fixture("gh_memory_tuning.md")
    assert detect_incident(body) == (False, None, None)
    rules = enrich_text(title=None, body=body, kind="issue", source="github", tag_model=False)
    assert rules.tag == "infra"
    assert classify_tag(body) in ("infra", "other")  # the tag check only ever takes a tag away


def test_quoted_crash_in_a_reply_does_not_count() -> None:
    assert detect_incident(fixture("gh_quoted_reply.md")) == (False, None, None)


def test_a_discord_quote_is_its_own_line_and_a_github_quote_runs_on() -> None:
    """Discord's "> " quotes one line (">>> " the rest); GitHub's takes lazy lines with it."""
    reply = "> LRs swept for both arms\nbest vs best at 5 LRs each? then 1.36x is real at 3B"
    said = enrich_text(title=None, body=reply, kind="message", source="discord")
    assert said.newsworthy and said.summary.startswith("Best vs best at 5 LRs each?")
    assert parse_post(reply, "github").prose == ""  # CommonMark: one quoted paragraph
    assert parse_post(">>> all\nof\n\nthis", "discord").prose == ""
    assert parse_post("> a\n> b\nmine\n\nmine too", "discord").prose == "mine\nmine too"


def test_pull_requests_and_reviews_are_never_incidents() -> None:
    fix = {
        "title": "Fix OOM in loader",
        "body": "The loader crashed with an OOM when shards were large.",
        "kind": "pull",
        "source": "github",
    }
    pr = enrich_text(**fix)
    assert (pr.incident, pr.severity, pr.incident_kind) == (False, None, None)
    assert pr.tag != "incident"
    assert enrich_text(**fix, tag_model=False).tag == "infra"  # the rules' own choice
    issue = enrich_text(
        title="Hero run crashed at step 50,195", body="", kind="issue", source="github"
    )
    assert (issue.incident, issue.severity, issue.incident_kind) == (True, "critical", "crash")


def test_only_issue_titles_count_for_comments() -> None:
    comment = enrich_text(
        title="Hero run crashed at step 50,195",
        body="The loss curve after the restart is right on the ladder forecast.",
        kind="comment",
        source="github",
    )
    assert not comment.incident
    assert comment.summary.startswith("The loss curve")


def test_incident_wins_the_tag() -> None:
    assert classify_tag("Checkpoint save failed: quota exceeded on the bucket.") == "incident"
    assert classify_tag("Checkpoint saves now take 40 s instead of 90 s.") == "checkpointing"


# --------------------------------------------------------------------------------------- tags


@pytest.mark.parametrize(
    ("text", "title", "tag"),
    [
        (fixture("gh_ablation.md"), None, "ablation"),
        (
            "Lowering the learning rate warmup and the weight decay on the router.",
            None,
            "optimizer",
        ),
        (
            "Grad norm spikes every few thousand steps; the router logits grow too.",
            None,
            "training-dynamics",
        ),
        ("Paloma bits per byte and MMLU on the step-48k checkpoint.", "Evals at 48k", "evals"),
        ("New data mix: upsample code, dedup the forum shards, same tokenizer.", None, "data"),
        ("Pins one extra permanent checkpoint at step 55,000.", "Keep ckpt 55k", "checkpointing"),
        ("Extending the context length to 262k with RoPE scaling.", None, "long-context"),
        ("MFU dropped to 38% after the scheduler moved us to a new cluster.", None, "infra"),
        ("Architecture: 48 layers, 535B total parameters, 23B active.", "Model spec", "spec"),
        ("Sounds reasonable to me.", None, "other"),
    ],
)
def test_each_tag(text: str, title: str | None, tag: str) -> None:
    rules = enrich_text(title=title, body=text, kind="issue", source="github", tag_model=False)
    assert rules.tag == tag
    assert classify_tag(text, title) in (tag, "other")  # the tag check only takes a tag away


def test_tag_words_need_word_boundaries() -> None:
    # "europe" holds "rope", "evaluate" is no eval tag word, "specially" no spec
    assert classify_tag("Moved the team offsite to Europe, specially planned.") == "other"


def test_title_outweighs_body_mentions() -> None:
    body = "Router logits and the gate norm look fine; this only adds a checkpoint."
    rules = enrich_text(title=None, body=body, kind="issue", source="github", tag_model=False)
    assert rules.tag == "training-dynamics"
    assert classify_tag(body) in ("training-dynamics", "other")  # the check only takes away
    # the title's topic beats the body's passing mentions: no longer training-dynamics, and
    # checkpointing once the body does not argue for another topic as much
    assert classify_tag(body, title="Save a permanent checkpoint at 55k") != "training-dynamics"
    quieter = "Router logits look fine; this PR only pins a checkpoint."
    title = "Save a permanent checkpoint at 55k"
    chosen = enrich_text(title=title, body=quieter, kind="issue", source="github", tag_model=False)
    assert chosen.tag == "checkpointing"  # the rules' choice; the learned check only takes away
    assert classify_tag(quieter, title=title) in ("checkpointing", "other")


def test_tag_tables_cover_the_shared_tag_list() -> None:
    assert set(PRIORITY) == SCORED_TAGS
    assert SCORED_TAGS | {"incident", "other"} == set(TAGS)


# -------------------------------------------------------------------------------- newsworthy


@pytest.mark.parametrize(
    "body", ["lol", "nice", "👍", "thanks!", "+1", "ok", "LGTM", "Thanks @dlwh!", ":tada:", "haha"]
)
def test_chitchat_is_not_newsworthy(body: str) -> None:
    e = enrich_text(title=None, body=body, kind="message", source="discord")
    assert e.newsworthy is False
    assert e.summary  # still has a summary for the archive


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("ok restarted from 54k", "message"),
        ("Loss is back on the forecast.", "message"),
        ("```\nstep 54000 loss 2.31\n```", "comment"),
        ("", "issue"),
        ("lgtm", "pull"),
    ],
)
def test_substance_is_newsworthy(body: str, kind: str) -> None:
    assert enrich_text(title="t", body=body, kind=kind, source="github").newsworthy is True


# ------------------------------------------------------------------------------- enrich_text


def test_enrich_text_on_a_full_incident_report() -> None:
    e = enrich_text(
        title="Hero run: lost a node at step 50,195",
        body=fixture("gh_node_loss_report.md"),
        kind="issue",
        source="github",
    )
    assert isinstance(e, Enrichment)
    assert (e.tag, e.incident, e.severity, e.incident_kind) == (
        "incident",
        True,
        "warning",
        "network",
    )
    assert e.summary.startswith("The hero run lost node s55sxs64 after step 50,195")
    assert_one_line(e.summary)
    assert e.newsworthy


def test_enrich_text_on_a_wandb_state_change() -> None:
    e = enrich_text(title=None, body="Run moved to state crashed.", kind="state", source="wandb")
    assert (e.incident, e.severity, e.incident_kind, e.tag) == (
        True,
        "critical",
        "crash",
        "incident",
    )


def test_enrich_text_is_deterministic() -> None:
    body = fixture("gh_memory_tuning.md")
    first = enrich_text(title="Host memory", body=body, kind="issue", source="github")
    assert all(
        enrich_text(title="Host memory", body=body, kind="issue", source="github") == first
        for _ in range(3)
    )


def test_summary_is_always_valid_for_every_fixture() -> None:
    for path in sorted(FIXTURES.glob("*.md")):
        for kind in ("issue", "comment", "pull"):
            e = enrich_text(title=path.stem, body=path.read_text(), kind=kind, source="github")
            assert_one_line(e.summary)
            assert e.tag in TAGS
            assert e.severity in (None, "warning", "critical")
            assert (e.severity is None) == (not e.live_report) == (e.incident_kind is None)
            assert e.incident or not e.live_report  # a live report is about its incident


# --------------------------------------------------------------------------- hostile inputs


@pytest.mark.parametrize(
    "body",
    [
        "`" * 100_000,
        "*" * 100_000,
        "_a " * 70_000,
        "**a _b *c " * 20_000,
        "[" * 100_000 + "](" * 50_000,
        "<details" * 25_000,
        "<!--" * 50_000,
        "a\n" * 100_000,
        "a. " * 70_000,
        "http://" * 30_000,
        "crash hang oom stuck lost node no " * 6_000,
    ],
    ids=lambda b: repr(b[:12]),
)
def test_hostile_inputs_complete_with_valid_output(body: str) -> None:
    e = enrich_text(title=body[:500], body=body, kind="issue", source="github")
    assert_one_line(e.summary)
    assert e.tag in TAGS
    assert len(clean_text(body)) <= len(body)


def test_a_200kb_realistic_paste_still_summarises_its_first_sentence() -> None:
    log = "\n".join(f"2026-09-01T23:{i % 60:02d}:00Z INFO step {i} loss 2.31" for i in range(6000))
    body = "The restore from step 54,000 is slow again.\n\n```\n" + log + "\n```\n"
    assert len(body) > 200_000
    assert summarize(body) == "The restore from step 54,000 is slow again."
    assert is_newsworthy(body)


def test_checkpoint_save_failure_with_a_destination_in_between() -> None:
    flagged = detect_incident(
        "Checkpoint save to gs://lab-us-central2/hero failed with 503 Service Unavailable."
    )
    assert flagged[0] and flagged[2] == "checkpoint-failed"
    hypothetical = detect_incident("If the checkpoint save to GCS failed we would lose a day.")
    assert not hypothetical[0]


def test_an_incident_from_last_week_is_history_not_news() -> None:
    assert not detect_incident("Here's the trace from last week's crash for reference.")[0]
    assert not detect_incident("Yesterday's OOM was the loader cache.")[0]
    assert detect_incident("Last night the run crashed twice.")[0]


# ------------------------------------------------------- how runs are reported in practice (#40)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # what a stopped run does not do
        ("no heartbeat from the trainer since 3am", "hang"),
        ("the job hasn't logged a step in 30 min. anyone on it?", "hang"),
        ("step counter hasn't moved since 84,310", "hang"),
        ("throughput dropped to zero on the dashboard", "hang"),
        ("GPUs have been idle on all nodes for 40 minutes", "hang"),
        ("ranks 96-103 timing out in NCCL, looks like one node", "hang"),
        ("the trainer is wedged at 103,900", "hang"),
        # what a dying process prints, and how chat says it died
        ("loss is nan again", "crash"),
        ("getting CUDA error: an illegal memory access was encountered on rank 88", "crash"),
        ("rank 212 reports an NCCL error and the other ranks wait in allreduce", "network"),
        ("training stopped at step 102,340, no idea why yet", "crash"),
        ("job exited at 02:03, nothing in stderr", "crash"),
        ("slurm killed the job, says DUE TO TIME LIMIT", "crash"),
        ("the trainer pod keeps restarting, 6 restarts in 20 min", "crash"),
        ("rank 7 got SIGKILL and took everyone with it", "crash"),
        ("the launcher keeps OOMing on the head node", "oom"),
        ("hero's dead again, slurm says NODE_FAIL on r29n3", "node-loss"),
        ("it's down, kernel panic on r31n1", "node-loss"),
        ("we lost the allocation, the provider took r30-r33 back", "node-loss"),
        ("two slices went into a bad state and the job is waiting on them", "node-loss"),
        ("checkpoints stopped appearing in the bucket after 104,000", "checkpoint-failed"),
        ("The job is in COMPLETING and won't release the nodes. Hero is not training.", "outage"),
    ],
)
def test_how_chat_says_the_run_stopped(text: str, kind: str) -> None:
    live, _, found = detect_incident(text)
    assert (live, found) == (True, kind)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("is it hung? step hasn't moved since 84,310", "hang"),
        ("is it hung?", "hang"),
        ("anyone else seeing the run stalled?", "hang"),
        ("is hero down or is it just my wandb?", "outage"),
        ("did the job just die?", "crash"),
    ],
)
def test_a_short_question_about_the_run_now_reports_it(text: str, kind: str) -> None:
    live, _, found = detect_incident(text)
    assert (live, found) == (True, kind)


@pytest.mark.parametrize(
    "text",
    [
        "Did the job crash overnight?",  # the past, asked
        "did we ever figure out why the 41k hang happened?",
        "is the eval job stuck or just slow? it's been on hellaswag for an hour",
        "is it down to the tokenizer?",
        "are we stuck with bf16 for stage 2?",
        "is loss stuck?",
        "is wandb down?",
        "would it hang if rank 0 dies first?",
    ],
)
def test_questions_about_other_things_report_nothing(text: str) -> None:
    assert detect_incident(text)[0] is False


@pytest.mark.parametrize(
    "text",
    [
        "crash course on the new eval harness tomorrow 10am, bring questions",
        "killed it in the benchmark 🎉 90k is +1.8 on MMLU",
        "that's dead code since the refactor",
        "the run stopped being interesting after 20k",
        "the process exited because I pressed ctrl-c",
        "training stopped at 110,000 as planned, that's the end of stage 2",
        "job exited cleanly at the end of the schedule, final checkpoint is 110,000",
        "GPUs are idle for 10 s per step during checkpointing",
        "no logs in the bucket yet, the export hasn't started",
        "the model is not training well on code",
        "MFU at 0.41 after the change",
        "This PR fixes the NCCL error on H200 nodes.",
        "One config crashed at startup with a cuBLAS error, fixed by #1009.",
        "the 90k eval crashed in the HumanEval sandbox again, rerunning",
    ],
)
def test_lookalikes_of_a_stopped_run_are_not_reports(text: str) -> None:
    assert detect_incident(text)[0] is False


def test_an_agents_status_field_reports_and_a_dependency_does_not() -> None:
    post = "🤖 **Automated run check**\n\n**Status:** stalled\n**Step:** 90,114\n\nNo action yet."
    assert detect_incident(post) == (True, "warning", "hang")
    heading = "## Status: 🔴 blocked\n\n- **Run:** `h8b-s2`\n- **Step:** 84,310"
    assert detect_incident(heading)[0] is True
    waiting = "🤖 **Eval harness**: Status: blocked on #1002, the 90k evals run after it merges."
    assert detect_incident(waiting)[0] is False
    healthy = "🤖 Hourly check, **Status: healthy** ✅\n\n- no NCCL warnings, no Xid, no ECC"
    assert detect_incident(healthy)[0] is False


def test_a_post_asking_for_a_human_is_read_with_its_log() -> None:
    log = (
        "```\n[E1012 21:58:41] ProcessGroupNCCL.cpp:1553 Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=912345, OpType=ALLREDUCE) ran for 600021 milliseconds\n```"
    )
    asking = f"🤖 Run check 22:00 UTC: needs attention. The last lines from rank 0:\n\n{log}"
    assert detect_incident(asking) == (True, "warning", "hang")
    # the same excerpt, quoted for the record once the run is healthy, reports nothing
    record = f"🤖 Run check 23:00 UTC: healthy. For the record, the error was:\n\n{log}"
    assert detect_incident(record)[0] is False
    # a message that is only a pasted error is a report
    pasted = "```\nRuntimeError: CUDA error: uncorrectable ECC error encountered\n```"
    assert detect_incident(pasted)[0] is True


@pytest.mark.parametrize(
    ("title", "body"),
    [
        (
            "Long-context eval OOMs on prompts over 64k",
            "The long-context eval of the 90k checkpoint runs out of memory on one H100.",
        ),
        (
            "Benchmark: step time with FP8 matmuls",
            "FP8 is 22% faster on 8 nodes. One config crashed at startup with a cuBLASLt error.",
        ),
        (
            "Proposal: drain a node automatically after two Xid 79s in a day",
            "We have swapped four nodes for Xid 79 this month, each by hand.",
        ),
    ],
)
def test_eval_benchmark_and_proposal_threads_are_not_the_run(title: str, body: str) -> None:
    e = enrich_text(
        title=title, body=body, kind="issue", source="github", context=ThreadContext(title=title)
    )
    assert (e.live_report, e.incident) == (False, False)


def test_a_fix_pr_and_a_question_about_one_incident_are_about_it() -> None:
    pr = enrich_text(
        title="Skip the batch and reload on a NaN loss",
        body="Fixes #996.\n\n## Summary\n\nAfter the NaN at 97,302 we lost six hours.",
        kind="pull",
        source="github",
    )
    assert (pr.incident, pr.live_report, pr.tag) == (True, False, "incident")
    asked = enrich_text(
        title=None,
        body="did we ever figure out why the 41k hang happened?",
        kind="message",
        source="discord",
    )
    assert (asked.incident, asked.live_report, asked.tag) == (True, False, "incident")


def test_the_same_failure_on_another_attempt_goes_on_in_its_thread() -> None:
    title = "Training hangs after step 95k, all ranks idle in all_gather"
    context = ThreadContext(title=title, kind="issue")
    same = enrich_text(
        title=None,
        body="Same on the third attempt, at 95,611. Draining r44n7 now.",
        kind="comment",
        source="github",
        context=context,
    )
    assert (same.live_report, same.incident_kind) == (True, "hang")


@pytest.mark.parametrize(
    ("text", "live"),
    [
        # a caveat after an all-clear reports what is not fine
        (
            "upload of 25,000 died: No space left on device. training itself is fine, but 25k "
            "isn't in the bucket",
            True,
        ),
        ("the eval job died on node 12; training itself is fine", False),
        ("eval sweep crashed, training is fine, but I will rerun it tonight", False),
        # a guard's own words
        ("🤖 ❌ auto-halt · main-r09 · 04:30 UTC. Non-finite loss at step 289,514.", True),
        ("gannet-mt-v1 auto-halted after 3 non-finite steps", True),
        ("Guard stopped the job before the optimizer step.", True),
        ("we should add an auto-halt guard to the trainer", False),
        ("auto-halt on non-finite loss is tested in CI now", False),
    ],
)
def test_caveats_and_guards_are_read_as_reports(text: str, live: bool) -> None:
    e = enrich_text(title=None, body=text, kind="message", source="discord", learned=False)
    assert e.live_report is live


def test_a_post_that_is_only_a_table_is_said_by_its_columns() -> None:
    table = "| phase | tokens | steps |\n|---|---|---|\n| decay | 0.9T | 53,600 |"
    e = enrich_text(title=None, body=table, kind="comment", source="github")
    assert e.summary == "A table of phase, tokens, steps" and e.newsworthy
