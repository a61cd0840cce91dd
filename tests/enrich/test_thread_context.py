"""Thread-aware tags, live incident reports told apart from talk about incidents, and strangers'
advertising kept out: each judged on events as the sources record them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.enrich.context import ThreadContext, split_prefix
from bot.enrich.rules import enrich_event, enrich_text
from bot.models import Event
from bot.sources.github_threads import comment_event, issue_event, thread_context

AT = "2026-09-01T09:00:00Z"


def thread(title: str, labels: tuple[str, ...] = (), *, pull: bool = False) -> dict[str, object]:
    item: dict[str, object] = {
        "number": 12,
        "title": title,
        "labels": [{"name": label} for label in labels],
        "user": {"login": "alice"},
        "body": "",
        "created_at": AT,
        "updated_at": AT,
        "state": "open",
        "author_association": "MEMBER",
    }
    if pull:
        item["pull_request"] = {"merged_at": None}
    return item


def comment(
    item: dict[str, object], body: str, association: str = "MEMBER", user: str = "bob"
) -> Event:
    raw = {
        "id": 99,
        "body": body,
        "user": {"login": user},
        "created_at": AT,
        "updated_at": AT,
        "author_association": association,
    }
    return comment_event("hero", "lab/model", 12, raw, "open", thread_context(item))


def description(title: str, body: str, labels: tuple[str, ...] = (), pull: bool = False) -> Event:
    return issue_event("hero", "lab/model", dict(thread(title, labels, pull=pull), body=body))


@pytest.mark.parametrize(
    ("title", "prefix", "rest"),
    [
        ("[infra] Bump jax to 0.4.35", "infra", "Bump jax to 0.4.35"),
        ("[grug][levanter] Faster loader", "grug levanter", "Faster loader"),
        ("[WIP] [ablation] gate decay", "ablation", "gate decay"),
        ("small-scale ablation: z-loss at 150M", "small-scale ablation", "z-loss at 150M"),
        ("Hero run tracking", "", "Hero run tracking"),
        ("", "", ""),
    ],
)
def test_split_prefix(title: str, prefix: str, rest: str) -> None:
    assert split_prefix(title) == (prefix, rest)


def test_the_source_records_the_thread_on_each_comment() -> None:
    item = thread("[ablation] Gate decay at 1B", ("experiment",), pull=True)
    event = comment(item, "Rerun finished.", association="CONTRIBUTOR")
    assert event.extra == {
        "thread_title": "[ablation] Gate decay at 1B",
        "thread_prefix": "ablation",
        "thread_labels": ["experiment"],
        "thread_kind": "pull",
        "author_association": "CONTRIBUTOR",
    }
    context = ThreadContext.of(event)
    assert (context.prefix, context.labels, context.kind, context.trusted) == (
        "ablation",
        ("experiment",),
        "pull",
        True,
    )


def test_a_discord_thread_name_is_context() -> None:
    context = ThreadContext.of_channel("#ablations › lr sweep at 1B")
    assert (context.prefix, context.title, context.kind) == (
        "ablations",
        "lr sweep at 1B",
        "channel",
    )


# ------------------------------------------------------------------------------------- tags


def test_a_comment_takes_its_threads_topic() -> None:
    item = thread("small-scale ablation: gate decay vs none")
    event = comment(item, "Rerun with seed 2 finished, same ordering as before.")
    assert enrich_event(event).tag == "ablation"


def test_a_strong_signal_of_its_own_overrides_the_thread() -> None:
    item = thread("[infra] Move the hero run to the new cluster")
    event = comment(
        item,
        "Separately: the grad norm spikes at every warmup boundary and the loss spikes follow, "
        "with the logits of the first layers saturating.",
    )
    rules = enrich_event(event, tag_model=False)
    assert rules.tag == "training-dynamics"
    assert enrich_event(event).tag in ("training-dynamics", "other")  # the check only takes away


def test_labels_say_what_a_thread_is_about() -> None:
    item = thread("Follow-up on the numbers", ("evals",))
    assert enrich_event(comment(item, "Updated the table with the 48k row.")).tag == "evals"


def test_a_description_is_read_title_first() -> None:
    event = description(
        "Add the 150M-3B scaling ladder",
        "Adds the ladder configs, one per rung, sharing the main run recipe.",
    )
    assert enrich_event(event).tag == "ablation"


# -------------------------------------------------------------------------------- incidents


def test_a_person_reporting_an_outage_is_an_incident() -> None:
    item = thread("Hero run tracking", ("hero-run",))
    event = comment(
        item, "Hero is down: node r12n4 lost, double-bit ECC on GPU 3. Requeueing onto a spare."
    )
    e = enrich_event(event)
    assert (e.incident, e.tag) == (True, "incident")
    assert e.incident_kind in ("hardware", "node-loss")


def test_talk_near_incidents_about_none_of_them_gets_no_mark() -> None:
    incident = thread("[incident] Hero job pending: reservation expired overnight", ("incident",))
    proposal = comment(incident, "Let's put reservation end dates into the run dashboard.")
    assert not enrich_event(proposal).incident  # a general proposal, even in the thread
    log = thread("[hero-run] Run log, weeks 6-7", ("hero-run",))
    weekly = comment(
        log,
        "Weekly summary: steps 63,000 to 78,900, three interruptions (stuck kernel, host OOM "
        "in the eval hook, Xid 79), total downtime 2 h 41 min. Loss is on the fitted curve.",
    )
    assert not enrich_event(weekly).incident  # faults named in passing in a routine update
    template = description(
        "Add an incident report template",
        "Adds a template so reports look alike: what is down, last good step, the post-mortem.",
        pull=True,
    )
    assert not enrich_event(template).incident
    change = thread("Lower the NCCL collective timeout to 10 min", pull=True)
    review = comment(change, "Approve: the worst save barrier last month was 4m10s.")
    assert not enrich_event(review).incident  # a pull's title names a change, not an outage
    # …while the incident's own follow-ups keep their mark
    assert enrich_event(comment(incident, "Requeued on the new reservation.")).incident


def test_a_crash_in_an_ablation_thread_is_a_result_not_an_outage() -> None:
    item = thread("small-scale ablation: z-loss at 150M")
    e = enrich_event(comment(item, "The 150M run crashed with an OOM at step 3k; rerunning."))
    assert not e.incident
    assert e.tag in ("ablation", "other")  # a result of the ablation, or no tag: never infra


@pytest.mark.parametrize(
    "body",
    [
        "Here's the trace from last week's crash for reference.",
        "The run crashed two weeks ago when the bucket filled; we added an alert since.",
        "Post-mortem: the NCCL hang on Sep 3 came from a flaky IB port on r7n2.",
        "We should add a watchdog so hangs are caught within five minutes.",
    ],
)
def test_history_proposals_and_postmortems_are_not_incidents(body: str) -> None:
    item = thread("Hero run tracking", ("hero-run",))
    e = enrich_event(comment(item, body))
    assert not e.live_report  # never an alert
    # a post-mortem of one incident is about it (the tag); a proposal or a trace is not
    assert e.incident == body.startswith("Post-mortem")


def test_a_postmortem_thread_is_not_a_live_report() -> None:
    item = thread("Post-mortem: the September 3 outage")
    e = enrich_event(comment(item, "The job crashed at 03:12 when node r7n2 lost its IB link."))
    assert not e.live_report
    assert e.incident and e.tag == "incident"  # about that outage


def test_a_fix_is_not_an_incident() -> None:
    event = description(
        "Upgrade cuBLAS to fix GEMM scheduling corruption",
        "The corrupted GEMM schedule produced NaNs after the restart.",
        pull=True,
    )
    assert not enrich_event(event).incident


# ------------------------------------------------------------------------------------- spam


def test_a_strangers_advertisement_is_kept_out() -> None:
    item = thread("Hero run tracking")
    spam = comment(
        item,
        "Check out our GPU cloud! Rent H100s at $1.99/h, 50% off this week: https://example.com",
        association="NONE",
        user="gpu-deals",
    )
    e = enrich_event(spam)
    assert not e.newsworthy and not e.incident


def test_a_stranger_with_a_real_report_and_a_member_are_kept() -> None:
    item = thread("Hero run tracking")
    report = comment(item, "Your loader crashes on empty shards in v0.3.", association="NONE")
    assert enrich_event(report).newsworthy
    member = comment(item, "Check out our new eval dashboard, 50% faster: https://x.io", "MEMBER")
    assert enrich_event(member).newsworthy


def test_without_an_association_only_blatant_advertising_is_filtered() -> None:
    def shown(body: str) -> bool:
        return enrich_text(title=None, body=body, kind="message", source="discord").newsworthy

    assert shown("Check out our new eval dashboard, sign up link in the pinned post")
    assert not shown("FREE MINT: first 500 wallets get an NFT, connect wallet at the link in bio")


def test_events_without_context_still_enrich() -> None:
    event = Event(
        run_slug="hero",
        source="github",
        external_id="comment:1",
        kind="comment",
        at=datetime(2026, 9, 1, tzinfo=UTC),
        body="The job was preempted at 03:12 UTC and has not come back.",
    )
    e = enrich_event(event)
    assert e.incident and e.incident_kind == "preemption"


def test_the_llm_sees_the_same_thread_context() -> None:
    from bot.llm.enrich import render_event

    item = thread("small-scale ablation: z-loss at 150M", ("ablation",))
    event = comment(item, "The 150M run crashed with an OOM at step 3k.", association="NONE")
    rendered = render_event(1, event)
    assert 'thread="small-scale ablation: z-loss at 150M"' in rendered
    assert 'labels="ablation"' in rendered
    assert 'association="NONE"' in rendered
    assert "crashed with an OOM" in rendered


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (
            "🤖 Hero run update (step 61,200): the job hung at 14:02 UTC in an all-gather on rank "
            "212; the NCCL watchdog killed it after 10 min. I've cordoned r14n8 and relaunched "
            "from the 61,000 checkpoint; will confirm once steps resume.",
            "hang",
        ),
        ("🤖 Resume attempt at 58k was OOM-killed on 6 hosts. Retrying with streaming.", "oom"),
        ("The v5p-512 slice lost two hosts; the job is restarting on a new slice.", "node-loss"),
        ("TPU preempted again, waiting for capacity.", "preemption"),
        ("Link flaps on the IB fabric again, step time up 40%.", "network"),
        ("Checkpoint save at step 64,000 failed: 403 from the bucket.", "checkpoint-failed"),
    ],
)
def test_a_big_runs_thread_labelled_experiment_still_reports_incidents(
    body: str, kind: str
) -> None:
    # "experiment" alone is how many teams label the big run's own tracking issue
    item = thread("[grug] 32B hero run tracking", ("experiment",))
    e = enrich_event(comment(item, body))
    assert (e.incident, e.incident_kind) == (True, kind)


@pytest.mark.parametrize(
    "body",
    [
        "🤖 Run is healthy: step 70,100, loss 1.91, MFU 41%. No interruptions since yesterday.",
        "Fixed by #1234, the hang came from the data loader deadlock.",
        "🤖 Back up from 15,000 on r11n2; r12n4 is drained and tagged for an RMA.",
        "The eval job crashed but that's just evals, training is fine.",
    ],
)
def test_status_fixes_and_recoveries_in_the_runs_thread_are_not_incidents(body: str) -> None:
    item = thread("[grug] 32B hero run tracking", ("experiment",))
    e = enrich_event(comment(item, body))
    assert not e.live_report
    assert e.incident == body.startswith("Fixed by")  # the fix of a named hang is about it


@pytest.mark.parametrize(
    "body",
    [
        "🤖 The run is hung: step 11,842 logged at 02:31 UTC and no step since.",
        "The job crashed at step 80,100. Loss was tracking the forecast as expected before that.",
        "Resumed from 48k at 03:10, then it crashed again at 03:40 and is down now.",
    ],
)
def test_words_of_recovery_or_calm_elsewhere_do_not_hide_a_live_report(body: str) -> None:
    item = thread("Hero run tracking", ("hero-run",))
    assert enrich_event(comment(item, body)).incident
