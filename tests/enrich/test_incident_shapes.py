"""Issue 40, the incident half: live reports recognised by their shape, not their phrase, and
look-alikes ruled out by theirs. Each case is a development-corpus entry from the batches
written before the rules ran on them (c800–c929), judged through the live path's enrichment,
and names the structure it exercises; a few sentences go through `enrich_text` directly."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bot.enrich.context import ThreadContext
from bot.enrich.incident_posts import (
    agent_flags_fault,
    announces_planned_work,
    buried_report,
    dismisses,
    names_a_change,
    reports_scores,
    reviews_a_period,
    settled,
    speaks_of_the_main_run,
)
from bot.enrich.incidents import fault_kind, state_held
from bot.enrich.rules import enrich_text
from tests.enrich.signal_corpus import enrich, load


@pytest.fixture(scope="module")
def corpus() -> dict[str, dict[str, Any]]:
    return {entry["id"]: entry for entry in load()}


@pytest.mark.parametrize(
    ("entry_id", "kind"),
    [
        ("c805", "node-loss"),  # "(NODE_FAIL)" stamped on a host: a state, not an aside
        ("c807", "hang"),  # what a run no longer does, for a while: "isn't logging anything since"
        ("c808", "crash"),  # the same failure over and over, after a "restarted" lead
        ("c813", "storage"),  # a mount named by its path is full
        ("c815", "crash"),  # a pasted launcher log with four words: judged as machine text
        ("c826", "checkpoint-failed"),  # a part of the run erring: its kind from the part named
        ("c829", "storage"),  # the same shape, another part: "the input pipeline is throwing"
        ("c843", "hang"),  # an agent's field and its note: "Step: 74,880 (unchanged since …)"
        ("c857", "hang"),  # a bare name and its state: "wisp is wedged"
        ("c859", "hardware"),  # a headline without a verb: "…, job down"
        ("c861", "hang"),  # a phase never left: "never finished writing", "sitting in the save"
        ("c872", "network"),  # RCCL read as NCCL, a network partition
        ("c896", "hang"),  # "has not advanced in 35 minutes"
        ("c899", "hang"),  # "45 minutes without a checkpoint or a step"
        ("c907", "checkpoint-failed"),  # an operation failing now: "writes … time out since"
        ("c927", "crash"),  # a failure told after a recovery: "Resumed …; by 199,040 … nan"
        ("c930", "outage"),  # the run, a state and now: "now it's flat out dead"
        ("c932", "hang"),  # "the job is in CG state forever"
        ("c935", "outage"),  # a run that cannot restart
        ("c937", "checkpoint-failed"),  # "checkpoint 36000 is 0 bytes on lustre"
        ("c939", "hang"),  # a doubt about now: "is the job supposed to be sitting at step …?"
        ("c940", "storage"),  # a part timing out: "the dataloaders are timing out"
        ("c963", "preemption"),  # capacity taken back: "Azure took back 8 of our spot H200s"
        ("c964", "checkpoint-failed"),  # a state held: "nothing saved since 410k"
        ("c965", "outage"),  # a rate "normally" higher: "180 tok/s/gpu, normally 2.4k"
        ("c966", "outage"),  # a state held, buried in a digest: "paused … since 03:12"
        ("c967", "node-loss"),  # a machine's name before its state: "node aks-h200-0017 NotReady"
        ("c969", "hang"),  # "it's been sitting on the same step for 40 minutes"
        ("c975", "hang"),  # "bison's been quiet in wandb for about an hour"
        ("c995", "crash"),  # the alarm asked as who did it: "ok who killed the job?"
        ("c996", "hang"),  # a step read again and again: "step 500,120 → 500,120 → 500,120"
    ],
)
def test_live_reports_are_marked_by_their_shape(
    corpus: dict[str, dict[str, Any]], entry_id: str, kind: str
) -> None:
    entry = corpus[entry_id]
    assert entry["live_report"]  # the label this case rests on
    e = enrich(entry)
    assert (e.live_report, e.incident, e.tag, e.incident_kind) == (True, True, "incident", kind)


@pytest.mark.parametrize(
    "entry_id",
    [
        "c816",  # the dashboard is down: a tool, not the run
        "c819",  # a question about an old outage, asked in passing
        "c820",  # someone's interactive node OOM-killed
        "c844",  # an issue titled with a change to make; "when the run hangs" is a habit
        "c847",  # a month's review by its title and its tally
        "c889",  # a job with another purpose: "the tokenizer job OOMed"
        "c890",  # a tally of failures by kind: "4 halts, 2 preemptions"
        "c892",  # a post that opens with a proposal
        "c914",  # CI's own outage: "jenkins is down again"
        "c915",  # "the PR is stuck in review": a bare subject that is not the run
        "c929",  # "Retrospective: June"
        "c947",  # "the wiki is down": a tool, not the run
        "c949",  # a smoke run hanging at init
        "c955",  # "remember when marten was down for 2 days in May": history
        "c980",  # "the grad norm looks stuck around 0.3": a metric with its article, a question
        "c987",  # "GitHub is down so the PR will have to wait"
        "c997",  # a planned pause
        "c999",  # why an old run died, asked in passing
    ],
)
def test_lookalikes_get_no_mark(corpus: dict[str, dict[str, Any]], entry_id: str) -> None:
    entry = corpus[entry_id]
    assert not entry["incident"]
    e = enrich(entry)
    assert (e.live_report, e.incident) == (False, False)


def test_a_fault_takes_its_kind_from_the_part_it_names() -> None:
    assert fault_kind("checkpoint save at 42k is getting 429s from GCS") == "checkpoint-failed"
    assert fault_kind("gcsfuse on half the hosts is throwing IO errors") == "storage"
    assert fault_kind("the rendezvous keeps returning errors") == "network"
    assert fault_kind("the trainer is throwing exceptions") == "crash"
    # a restart dates the fault and names no part: running, but wrong
    since = enrich_text(
        title=None, body="something is off since the 600 restart", kind="message", source="discord"
    )
    assert (since.live_report, since.incident_kind) == (True, "outage")


def test_a_fault_counts_only_after_a_part_of_the_run() -> None:
    said = enrich_text(
        title=None,
        body="the input pipeline is throwing IO errors",
        kind="message",
        source="discord",
    )
    assert (said.live_report, said.incident_kind) == (True, "storage")
    other = enrich_text(
        title=None,
        body="the download script is getting 429s, I'll throttle it",
        kind="message",
        source="discord",
    )
    assert other.live_report is False


def test_a_habit_after_when_is_no_report_but_a_past_when_clause_is() -> None:
    habit = "When the run hangs in a collective we lose hours before anyone notices."
    assert (
        enrich_text(title=None, body=habit, kind="message", source="discord").live_report is False
    )
    told = "The job went down at 23:39 when its InfiniBand port kept flapping."
    e = enrich_text(title=None, body=told, kind="message", source="discord")
    assert (e.live_report, e.incident_kind) == (True, "network")


def test_a_recovery_then_a_failure_is_not_settled() -> None:
    assert settled("Back up from 15,000 on r11n2. Lost about 25 min of compute.")
    assert not settled("Resumed at 13:00 from 199,000; by 199,040 the loss is nan on every host.")


def test_a_period_is_reviewed_by_name_or_by_tally() -> None:
    assert reviews_a_period("", "October reliability review")
    assert reviews_a_period("", "Retrospective: June")
    assert reviews_a_period("Q3: 4 halts, 2 preemptions, goodput 91%.")
    assert not reviews_a_period("Post-mortem of the 41k hang: the cause was a soft lockup.")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("heron has been quiet for about an hour", "hang"),
        ("the job is idle since 03:10, nobody touched it", "hang"),
        ("plover dead again", "outage"),
        ("ranks are all nan since 88,410", "crash"),
        ("the GPUs are idle for 10 s per step during checkpointing", None),
        ("the wiki has been down for an hour", None),
        ("the grad norm has been flat for 5k steps", None),
        ("if heron is idle for an hour we page on-call", None),
    ],
)
def test_a_state_held_for_a_while_by_the_run(text: str, kind: str | None) -> None:
    assert state_held(text) == kind


@pytest.mark.parametrize(
    ("text", "live"),
    [
        ("hero paused for the driver upgrade, back at 14:00", False),
        ("hero is down for the scheduled maintenance", False),
        ("hero is down since the driver upgrade at 09:00", True),
        ("the hosts were reclaimed for a maintenance we were not told about", True),
    ],
)
def test_a_stop_for_work_on_the_cluster_is_planned_unless_nobody_knew(
    text: str, live: bool
) -> None:
    assert enrich_text(title=None, body=text, kind="message", source="discord").live_report is live


def test_a_fault_told_with_its_recovery_is_about_the_incident_but_raises_no_alert() -> None:
    told = (
        "eval cadence 5k → 2.5k from here. also slice 2 went away at 119.3k around 03:10, "
        "back at 04:05, resumed from 119k. ~300 steps redone."
    )
    e = enrich_text(title=None, body=told, kind="comment", source="github")
    assert (e.incident, e.live_report, e.tag) == (True, False, "incident")
    # the run log's note that opens with the run back up stays the log's
    log = "Back up from 15,000 on r11n2. Lost about 25 min of compute. r12n4 is drained."
    assert enrich_text(title=None, body=log, kind="comment", source="github").incident is False


@pytest.mark.parametrize(
    ("title", "body"),
    [
        (
            "[hero] eval loss jumped 0.3 at the last checkpoint",
            "Held-out eval loss at 179k is 2.13, at 178k it was 1.83. Train loss is normal.",
        ),
        (
            "Training loss diverging after restart",
            "Since this morning's relaunch at 625k the loss is going the wrong way.",
        ),
    ],
)
def test_a_loss_gone_wrong_titled_on_an_issue_is_a_report(title: str, body: str) -> None:
    assert enrich_text(title=title, body=body, kind="issue", source="github").live_report


@pytest.mark.parametrize(
    ("text", "live", "about"),
    [
        ("upgrade finished 05:20 but ibis won't schedule, all 512 workers Pending", True, True),
        ("the job can't start since the driver push", True, True),
        # told with its recovery: about the incident, no alert
        ("fyi job got evicted again around 14:20, it's back in the queue", False, True),
        ("the notebook won't start, anyone know the token?", False, False),
        ("this won't start until monday", False, False),
    ],
)
def test_a_run_that_cannot_start_and_an_eviction_told_over(
    text: str, live: bool, about: bool
) -> None:
    e = enrich_text(title=None, body=text, kind="message", source="discord")
    assert (e.live_report, e.incident) == (live, about)


@pytest.mark.parametrize(
    ("title", "body", "about"),
    [
        (
            "Fail fast on a stuck collective: distributed timeout 1440 -> 30 min",
            "## Summary\nThe job hung in a gradient all-reduce from 23:40 to 08:30 last night "
            "and nothing noticed. This sets the timeout to 30 min.",
            True,
        ),
        (
            "ckpt: write COMMIT only after every shard upload has completed",
            "## Summary\nOn Jan 28 slice 0 was preempted seconds after the marker was written; "
            "the restore then failed on a missing shard.\n\n## Test plan\n- [x] unit test",
            True,
        ),
        (
            "watchdog: page on a stalled step",
            "## Summary\nA job every 2 min reads the newest step and pages.\n\n## Rules\n- no "
            "step for 20 min → page\n\n## Test plan\n- [x] replayed the Jan 7 hang: it pages",
            False,  # a general change; its test plan replays old incidents
        ),
        (
            "Restart faster when a node dies",
            "## Summary\nRestarts take 40 min when a node fails; this caches the compile.",
            False,  # failures in general, no day: no one incident's fix
        ),
    ],
)
def test_a_fix_that_opens_with_its_dated_failure_is_the_incidents(
    title: str, body: str, about: bool
) -> None:
    e = enrich_text(title=title, body=body, kind="pull", source="github")
    assert (e.incident, e.live_report) == (about, False)


def test_a_weekly_digest_recaps_its_week() -> None:
    digest = (
        "🤖 **Weekly notes — Aug 27 → Sep 2** (drafted by the notes agent)\n\n### Main run\n"
        "- preempted Wed 12:09, back at 21:10 from 104k\n- loss 1.98 → 1.95"
    )
    e = enrich_text(title=None, body=digest, kind="comment", source="github")
    assert not e.live_report and not e.incident


@pytest.mark.parametrize(
    ("text", "about"),
    [
        ("running again from 93,500. ~3h gone. added the maint calendar to the checklist", True),
        ("swapped the node, relaunched from 52,000, tok/s normal. lost ~1h40", True),
        ("planned restart for the jax bump at 10:20 utc today, ~20 min down", False),
        ("what was the outage in august about? the one where we lost 2 days", False),
        ("budget after this week: ~1.2 days lost to the shard; stage 3 moves to May 6", False),
    ],
)
def test_a_recovery_note_that_counts_its_downtime(text: str, about: bool) -> None:
    e = enrich_text(title=None, body=text, kind="message", source="discord")
    assert (e.incident, e.live_report) == (about, False)


def test_a_months_retrospective_and_what_would_happen_are_not_incidents() -> None:
    title = "July retrospective: interruptions and goodput"
    retro = enrich_text(
        title=title,
        body="July 1–31: goodput 89.6%. Jul 2 node PSU fault 0.7 h; Jul 6 all-to-all hang 3.9 h.",
        kind="issue",
        source="github",
        context=ThreadContext(title=title, kind="issue"),  # as the GitHub source records it
    )
    assert not retro.incident
    would = "64k needs ring attention over 4 chips or we OOM; I haven't tested that path"
    assert not enrich_text(title=None, body=would, kind="comment", source="github").incident


#: Chat lines, each read as a lead would: a live report or not.
CHAT_LINES: list[tuple[str, bool]] = [
    # a headline with no time; a question answered at once
    ("down again", True),  # the state alone, as chat says it
    ("still dead", True),
    ("run's not moving", True),  # the run and its state, a headline with no time
    ("the job is wedged", True),
    ("the run went sideways at 51k, everything is nan", True),
    ("steps got 2x slower since the switch reboot", True),
    ("down to 2 hours left on the decay", False),
    ("run's moving along nicely, 140k", False),
    ("if the job is wedged we requeue it", False),
    ("steps got 2x slower at 64k context, as expected", False),
    ("is the run down? nope, just the dashboard lagging", False),  # answered at once
    ("is the run down? the dashboard is empty since 09:00", True),
    # worse by more than a day's noise, in the present or at a time today
    ("MFU 39 → 31 since ~06:00, stage 5 is taking 1.4x the others", True),
    ("Since ~04:00 step time is 9.6 s instead of 7.3 s. No errors, no restarts.", True),
    ("step time doubled at 02:14: 7.9 s → 16.1 s, all ranks, all stages", True),
    ("tok/s went to 0 at 11:02 and the job is PD now", True),
    ("did someone stop hero? all 3 slices say SUSPENDED in the console", True),
    ("MFU 38 → 36 since the restart", False),
    ("step time 7.3 → 8.0 s since 04:00", False),
    ("tok/s down 8% since last night, I assume that's the 8k switch", False),
    ("throughput went to 0 during the planned maintenance, as expected", False),
    ("did someone stop by the office today?", False),
    # a hedge is not a hypothetical: the writer doubts, and still says what they see
    ("I think the decay job may have stalled: the last log line is from 06:14", True),
    ("is it normal for the loss panel to just say NaN for the last few points?", True),
    ("Is an 'Xid 48' on bry-gpu-088 something to worry about?", True),
    ("Not urgent, but the next job in the chain is in PD with `AssocGrpGRESMinutes`", True),
    ("the restart from 195,380 is refusing to load", True),
    ("the tokens/s panel has been sagging since about 2am. 211k down to 140k-ish", True),
    ("(On another topic: sacct says our job was PREEMPTED at 10:05. Is there a reason?)", True),
    ("the job may hang if the bucket is slow", False),
    ("is it normal for the eval job to OOM on 32k prompts?", False),
    ("we relaunched (after the second NVLink fault) and it's fine", False),
    ("it's pending with reason Priority, just waiting its turn", False),
    # a loss that moved and stayed, and one part setting everyone's pace
    ("loss went 1.768 → 2.11 at 357,8xx and it's 2.09 four hundred steps later", True),
    ("held-out code loss +0.14 since the Apr 6 restart, web and math flat", True),
    ("MFU 11% on slice 3 only, everyone waits on s3 at the cross-slice all-reduce", True),
    ("all other stages waiting on stage 5 in the pipeline bubble", True),
    ("loss spike 1.77 → 2.3 at 51k, recovered by 51.2k", False),
    ("loss went up 0.02 since the mix change, expected", False),
    ("eval loss is up 0.01 since yesterday", False),
    ("loss jumped to 2.4 in the ablation arm 3, killing it", False),
    ("loss went from 2.1 to 2.4 during warmup, normal", False),
    ("everyone waits on the eval results before deciding", False),
    # slang, a quiet chart, and their look-alikes
    ("yarrow said no 💀 loss=nan at 83,212, auto-halt fired.", True),
    ("rip run 💀 https://grafana.example/d/run?viewPanel=4", True),
    ("the main run's W&B stopped updating around 12:40, last point is step 84,318", True),
    ("The tokens/sec panel went from ~345k to ~170k at 06:00 and has stayed there", True),
    ("rip my sweep, wrong lr", False),
    ("new tracking issue is #2210, #2117 is read-only now", False),
    ("belebele at 60k: sw and yo both went down ~3 pts vs 50k", False),
    ("14:02 felix pressed the button: sandbox-h100-03 powered off via the API", False),
    # a pause asked about
    ("is the main run paused on purpose? the sweep hasn't seen a checkpoint since", True),
    ("is the run paused?", True),
    ("is the eval paused?", False),
    # a page for the run is a report; a warning, a test or another service's is not
    ("[TRIGGERED] #4821 hero: heartbeat stale > 15m severity: P1 · service: train", True),
    ("[TRIGGERED] #4940 bucket at 100% of quota severity: P2 · service: storage", True),
    ("🔥 **[FIRING:1] GPUTempHigh** (severity=warning) node: gpu-a-29, 86C > 85C", False),
    ("[TRIGGERED] #4830 TEST hero: escalation policy test — please acknowledge", False),
    ("[TRIGGERED] #4852 node eval-05 NotReady > 10m severity: P3 · service: eval-pool", False),
    # the run held up, or gone wrong since it came back; not a spec, a dev VM or a month
    ("save at 232k still writing after 40 min, training is blocked because it's sync", True),
    ("tgs drop 690 → 410 since 8:40, we change nothing. anyone?", True),
    ("stage 3 spec is frozen in #372 btw, stage 2 now runs to 7.0T", False),
    ("my v4-8 dev VM got preempted mid-debug again", False),
    # the newest sign of life is old; a page's bold headline; an agent saying no job impact
    ("The run's last checkpoint is from 14 hours ago although the job shows as running", True),
    ("the last logged step is 212,340 at 01:29 UTC and nothing since", True),
    ("🔴 **TRIGGERED** · node-not-ready · P2 host gpu-r12-n07 NotReady for 5m", True),
    ("the last checkpoint was from 2 hours ago when we stopped it for the config change", False),
    ("infra-watch · ⚠️ node gf-d009 unreachable (ping, BMC) · job impact: none", False),
    ("what caused the February restart loop your blog post mentions?", False),
    # a bridged message read by its speaker's words; a page's own brackets are no bridge
    ("**[#train-ops] Gabe H.:** is shrike down? wandb last step 18:02 and it's 19:30", True),
    ("↳ replying to Gabe H. (#train-ops) Tomasz W.: yep, hung. dcn all-reduce stuck", True),
    ("[#train-ops] Gabe H.: is the eval paused?", False),
    ("[TRIGGERED] #4957 hero: job restarted 3 times in 20m (restore failed) severity: P1", True),
    # a straggler setting the pace; an eval's crash, a benchmark's plateau, a spike come back
    ("straggler: b-0566 at 1.9× the others since ~07:30, throttling", True),
    ("straggler at 1.1x the others, within noise", False),
    ("gsm8k eval on 260k OOM'd on the v5p-64, rerunning at bs 8", False),
    ("hellaswag flat for 3 evals now, mmlu still climbing", False),
    ("saw the loss spike at 421,7xx (1.829 → 1.97), back down in ~300 steps", False),
    # a guard that halted the run; everyone waiting on a few; a rate below what it was
    ("Dear all, the NaN guard halted curlew at step 499,310 at 03:47", True),
    ("gyrfalcon's been at the same step since 02:40, W&B flat, job still RUNNING", True),
    ("no new steps after 41,000 and the job says RUNNING", True),
    ("the eval has been at the same step since yesterday", False),
    # a watcher's line about side runs named as such
    ("**[abl-mix-v3]** `running \u2192 crashed` \u00b7 step 2,314 \u00b7 exit 1", False),
    ("run fulmar-7b-lc-probe crashed at step 515,000 after 0h 09m \u00b7 exit 1", False),
    # zero throughput, a keeps-dying resume, a host that took the job down, a guard's halt
    ("anyone else seeing 0 tok/s", True),
    ("anyone grabbing lunch?", False),  # the scorer leans on "anyone …?"; nothing of a run
    ("who is around this weekend?", False),
    ("resume keeps dying, checksum mismatch on 373k shard 0412", True),
    ("s2-w17 just took the job down: HBM uncorrectable ECC error on chip 3", True),
    ("**CRIT** wren-400b · halted by nan-guard at 294,377 · last good ckpt 294,000", True),
    ("why is mfu 31% lol, was 38 this morning", True),
    ("grafana's dead for me", False),
    ("mix-v4 is built, manifest frozen at mix-v4@e1c07d", False),
    ("harmless. lldpd re-announces on the RoCE ports every few minutes", False),
    ("rocprofv3 --hip-trace segfaults on 2 nodes at step 3", False),
    # round three: a restart failing at load, a save that just failed, a slowdown told with
    # "about", a question about a pasted log; a settled spec, a game day, an ablation's arm
    ("Restart after last night's image bump fails at load, same shard every time", True),
    ("Unrelated to the proposal itself, but urgent: the step_260000 save just failed", True),
    ("the step time seems to have gone from about 18 seconds to about 29 since Thursday", True),
    ("Updated and frozen. The decay is linear 3e-4 → 3e-5 from 400,000", False),
    ("The frozen table is in #153", False),
    ("the job is frozen since 02:10, no log lines", True),
    ("[GAME DAY — EXERCISE] SEV2 declared — staging lost rack r22 (simulated)", False),
    ("The 35% arm fell over with an OOM this morning", False),
    ("INC-2437 is another team's feature store. sw480 is unaffected; no action for us.", False),
    ("People keep referring to the Dec 27 preemption — what happened there?", False),
    (
        "is the hero writing checkpoints? newest thing in ckpt/ is step_150500 and W&B says 154.3k",
        True,
    ),
    ("the newest directory is step_232000, and the log says the run is at 234,6xx", True),
    ("the newest checkpoint is step_40000 and the run is at 40,1xx, all good", False),
    # round four: side runs named as such, a warning in parentheses, pods the cluster takes
    ("🔔 Run godwit-abl-e64-k4-s1 has crashed · state: crashed · last step 1,840", False),
    ("🔔 Run godwit-240b-staging has crashed · runtime 0h 03m · last step 0", False),
    ("**[FIRING:1] NodeExporterDown** (warning) node: h100-a-003 not scraped for 5m", False),
    ("the 3B proxy's loss went NaN at 41k, rolling it back to 40k", False),
    ("rung 5 OOMed at its first eval, fixing the micro-batch", False),
    ("cpt-32k is stuck at 2,140, all ranks waiting in the CP ring. not main. looking", False),
    ("heads up, the wandb-relay sidecar on rj-a-0-0 is in CrashLoopBackOff", False),
    ("ignore the alerts from gke-knot-test tonight, that's me", False),
    ("rj-d pods all Terminating, jobset restarting", True),
    ("after the rj-d preemption every worker dies at restore, jobset looping", True),
    ("two restarts in an hour, pods Evicted", True),
    ("knot-300b not readmitted after the restart", True),
    ("training is still going but i think we haven't saved since 258k", True),
    ("every rank waiting on the 32 nodes behind leaf switch L3-07", True),
    ("kiln is at 2.1M tok/s since ~13:40 (was 3.0M), step time 8.0s", True),
    ("we are at 2.9M tok/s since the restart (was 3.0M)", False),
    # a reply that dismisses what was reported; "not us:" is a diagnosis, not a dismissal
    ("false alarm, the exporter restarted and reported 0 GPUs for one scrape", False),
    ("not kiln: arm 4 seed 0 of the top-k ablation OOMed", False),
    ("Thank you, Oskar. It is paused on purpose: the centre's maintenance", False),
    # round five: a past fault dated by numbers
    ("we found the 07-01 hang after 50 min because someone happened to look", False),
    # round six: chat as typed (a phone's apostrophe, none at all, "??" as an alarm, millions)
    ("we’re down. main-r3 got requeued after a node fail", True),
    ("we're down to 3 spares, ordering more", False),
    ("it's stuck at 52k?? w&b hasnt moved in 25 min", True),
    ("tok/s halved?? 1.9M → 0.95M since like 12:40", True),
    ("tok/s went 1.93M → 410k around 14:30.", True),
    ("is tok/s halved? no, it's the same since 10:00", False),
    ("tok/s down ~30% since 01:00, no alert", True),
    ("that's a turnstone node, and the run's step time just doubled", True),
    ("restore loop, it's on attempt 4", True),
    ("nope. restart after the maintenance dies at load", True),
    ("something's up with the saves. 220,000 took 19 minutes", True),
    ("wait. rank 1862 stopped heartbeating", True),
    ("hmm. loader workers on pn-0012 keep respawning", True),
    ("qsn-0408 and qsn-0409 both down, same chassis. requeue is waiting on nodes", True),
    ("Big bird is not in squeue anymore and nothing requeued her", True),
    ("step 240,240 → 244,700 (+4,460)", False),
    (
        "the GPQA job failed, vllm died with CUDA out of memory. it's the eval node, not the run",
        False,
    ),
    ("the 1e-2 arm crashed with an NCCL timeout. nothing to do with the main run", False),
    # pages as the paging services and Grafana word them
    (
        "🚨 **[PagerDuty] TRIGGERED** #Q7W2K `RuffStepStalled` (ruff-main) step unchanged for 15m",
        True,
    ),
    ("**[PagerDuty] TRIGGERED** #S1H7P `RuffStepStalled` (ruff-ablations) urgency: low", False),
    ("📟 **[Opsgenie] P2** `RuffCkptSaveFailed` · mirror to s3 failed after 3 retries", True),
    ("📟 **[Opsgenie] P3** `RuffEvalJobFailed` · exit 137 (OOMKilled) on hm-e012", False),
    ('[Alerting] KZ node down\nup{instance="kz-b-041:9100"} = 0', True),
    ('[Alerting] KZ node exporter down\nup{instance="kz-a-012:9100"} = 0', False),
    ("[OK] KZ step time p95 high\nstep_time_p95 = 28.9s", False),
    # an RL run's code sandbox is the run's own; a sandbox kept for trials, an eval's, is not
    ("the sandbox pool is down since 03:10, every code reward is 0", True),
    ("se cayó mi job del sandbox, exit code 137", False),
    ("the HumanEval+ job for 60k died with exit 137 on the eval pool", False),
    # round seven: the tersest chat, an RL run's fleet, a report inside a run update
    ("nccl to on r7", True),
    ("ecc on n0331", True),
    ("s3 mirror QuotaExceeded", True),
    ("tok/s halved", True),
    ("tok/s halved after the fix? no", False),
    ("scaup just got kicked off?? squeue shows it PD (Priority) since 19:31", True),
    ("we kicked off the run at 10:00, first loss 11.2", False),
    ("and at 02:14 it exited: No space left on device", True),
    ("Run update 12:00. Something's off since ~11:00: step time 114 s instead of 80 s", True),
    ("rollout fleet looks wedged. 0 completions/min since 02:14", True),
    ("Side note: the sibling run scaup-70b crashed twice overnight, its owner is on it", False),
    # round eight: a share of itself, written empty, a save that will not end, "we're stopped"
    ("tok/s is at ~30% since 13:00 and `ls` on the data dir takes 40 s", True),
    ("MFU is at 40% since the restart, same as before", False),
    ("throughput is 10% lower on the new slice, it's just the topology", False),
    ("waypoint 432000 has three 0-byte shards, yet _COMPLETE exists", True),
    ("lc32k has been in the save at 993,000 for 45 min (normally 3)", True),
    ("notice said back at 20:00, leg 52 is still pending. we're stopped", True),
    ("we're stopped at 20:00 for the maintenance, as announced", False),
    # round nine: a pager's bare priority, the run torn down, a hedged ask before a log
    ("\U0001f534 [P1] pochard-s1 halted by nan_guard at step 578,441 (loss=nan)", True),
    ("s3 aborted at 661,2xx, whole job torn down by megascale", True),
    ("This took main down. It merged with the 02:00 restart", True),
    ("loon-main not coming back after the 02:10 scale-up", True),
    ("the loss is not coming back down after the spike yet, give it an hour", False),
    ("I might be misreading it but DCGM shows volatile DBE = 1 on bw-019 gpu5 since 10:02", True),
    ("step time 61s since ~11:00 IST (was 45). thermal?", True),
    ("The first job of the 16k tail died on its first step", True),
    ("throughput down to 27k tok/s since ~08:30 with no errors", True),
    (
        "not sure who to ask, sorry \u2014 dmesg on bw-088 has this:\n```\nNVRM: Xid "
        "(PCI:0000:9b:00): 79, pid=441872, GPU has fallen off the bus.\n```",
        True,
    ),
    # round ten: symptoms told as numbers, questions that presume the fault, a store refusing
    ("weight sync p50 went from 3m10s to 35s after the fix", False),
    ("weight sync p50 3m10s since 09:00, was 35s", True),
    ("wsync takes ~8 min per update instead of ~45 s", True),
    ("loader wait went from 30 ms to 25 ms after the prefetch fix", False),
    ("data wait 41% of step (was 3%)", True),
    ("all-to-all takes 4.1 s per step instead of 2.0 s since the switch update", True),
    ("is the run supposed to still be at 88k? the panel said 88,1xx at lunch too", True),
    ("is the eval supposed to still be at 88k?", False),
    ("does anyone know why the job has been PENDING for 2 hours?", True),
    ("does anyone know why we switched to 4k warmup?", False),
    ("is NCCL supposed to print `NET/IB : Got completion with error 12` every few seconds?", True),
    ("step 412,000 since 06:40", True),
    ("step 412,000 at 06:40, loss 1.92", False),
    ("last ckpt is 11h old, saves every 2h", True),
    ("last ckpt is 2h old, on schedule", False),
    ("ckpt bucket 403 on every put since 04:00", True),
    ("grad norm 35 and climbing, 51,2xx", True),
    ("grad norm 0.35, flat", False),
    ("throughput panel flat at ~2.9M since lunch, it was 4.4M this morning", True),
    ("throughput at ~4.4M since lunch, it was 4.3M this morning", False),
    ("kn-017 gpu5 dbe 2 (0 at 06:00)", True),
    ("nvidia-smi -q on kn-203: HW Thermal Slowdown: Active", True),
    ("mlx5_3 on t-04 bouncing between Active and Down every few minutes", True),
    ("main thread waits in the loader for minutes every ~40 steps, GPUs at 0% meanwhile", True),
    ("run's moving along nicely, 212k", False),
    ("loss went from 2.3 to 2.5 during the ramp, normal", False),
    # a resume from an older step, the scheduler's own limit, a run named by its id
    ("after the requeue it's continuing from 118,000 rather than 120,000", True),
    ("resumed from 120,050 instead of 120,000 thanks to the emergency save", False),
    ("step counter went backwards after the 03:10 resume, loss curve overlaps itself", True),
    ("we went back in time to 2019 for the reading group", False),
    ("why is main PENDING? reason says QOSGrpGRES", True),
    ("main-r4 died 03:12, rank 211, NCCL watchdog", True),
    ("my-notebook-2 died 03:12, restarting the kernel", False),
    # round eleven: an emoji and a part, the cloud taking the machines, saves that fail
    ("🔥 main", True),
    ("🚑 ckpt", True),
    ("🐌 allreduce", True),
    ("☠️ n112 again", True),
    ("🔥🔥 mmlu 74.9", False),
    ("🔥 lunch", False),
    ("☠️ arm C", False),
    ("cp2 ☠️ oom (expected)", False),
    ("all 48 VMs are STOPPED, the console says the billing account has been suspended", True),
    ("All 16 p5 instances went to `shutting-down` at 10:58, mid-save", True),
    ("billing account has been suspended? no, that was the sandbox project", False),
    ("32k saves failing since 21:24: ExpiredToken on every PutObject", True),
    ("Saves of steps 2,850, 3,000 and 3,150 all failed; training continues", True),
    ("grad norm is roughly doubling every 150 steps since the LR change", True),
    ("β2 stays 0.95. nothing else changes until the decay", False),
    ("are we keeping the 210k ckpt or can it go?", False),
    ("should we restart main? it has been stuck at 41k for an hour", True),
    ("rook got requeued after the maintenance but can't come back: QUOTA_EXCEEDED", True),
    ("spot pool B just got reclaimed, 40 of 80 rollout replicas gone at 13:02", True),
    ("save 65,400 still uploading at 02:35: 1,214 of 1,280 shards done, the rest not moving", True),
    # round twelve: the room, the eval team's view, a standup's labels, kubectl's words
    ("PDU B3 tripped in row 7, r7n17–r7n24 are dark", True),
    ("🚨 LEAK DETECT — CDU-3 zone 2, isolation valves closed at 16:21", True),
    ("the PDU swap on row 3 is planned for Friday, tour at 10:00", False),
    ("step_0291250 is at chance on everything, greedy decode is `the the the`", True),
    (
        "we got step_0352250 twice and no 352500. is the run restarting from 352,000 in a loop?",
        True,
    ),
    ("this is not a bad save, the run diverged after the decay started", True),
    ("Their run diverged and had to be rolled back by 60B tokens, says the paper", False),
    ("Done\nβ2 proxy sweep finished\nDoing\nwrite-up\nStuck\n—", False),
    ("Stuck: arm `zl-1e-3` NaN'd at 3.2k steps; it's the stress arm", False),
    ("my jupyter pod in `notebooks` keeps getting OOMKilled on the shard index", False),
    ("eval-v48-209k-longctx is in CrashLoopBackOff in the `eval` namespace", False),
    ("worker pod evicted, run restarting: low on ephemeral-storage", True),
    ("launch-c died at step 500, right at the first eval hook", True),
    ("grad norm went 0.9 → 14 → 31 between step 180 and 240", True),
    ("s3 403 on save?? ExpiredToken, 484k uncommitted", True),
    ("rewards are exactly 0.000 for the last 3 steps, math and code both", True),
    # round thirteen: hedged reports, a reply that carries the fault, RL, the data path
    ("sorry if this is old news, but the trainer may have stopped? nothing since 04:10", True),
    ("might be nothing, but the run seems to have restarted from 88k instead of 91k", True),
    ("might be nothing, but the eval dashboard is grey for me", False),
    ("probably me, but it's been 2.031 on the nose for the last hour", True),
    ("trainer log stopped at 03:12, no traceback", True),
    ("the last step in W&B is from 02:17 and the job shows PD (Resources)", True),
    ("main restarted about a dozen times since 03:00, dies right after the restore", True),
    ("we restarted it twice this week for the config change, as planned", False),
    ("3 restarts since 09:41, no steps in between", True),
    ("slurm killed 771204 at step 90,112 when g-0311 and g-0312 went NOT_RESPONDING", True),
    ("g-0311 is in DRAIN for the BIOS update, back tomorrow", False),
    ("resume after the node swap has been in loader init for 25 min, 0 steps", True),
    ("reward/mean is exactly 0.000 since iter 412, is the RM server ok?", True),
    ("the weight sync to the rollout fleet is stuck at 40/64 replicas since 05:38", True),
    ("sweep paused: main NaN'd at 61,200 and the guard halted it at 06:42", True),
    ("sweep paused: arm b3 NaN'd at 6,200, rerunning it with a lower LR", False),
    ("the reservation shows as 'suspended' this morning, does that stop the run?", True),
    ("the newest checkpoint I can see is step_628000, and main is at about 643,300", True),
    ("the 32k stage launched at 10:05 and seems to have died on its first step", True),
    # outsiders, late finds, sparse titles, pasted dashboards
    ("the loss line just stops at step 506,290 and there's a red triangle", True),
    ("the wandb chart for main stops at 09:12 today", True),
    ("wandb is fine for my runs. has main actually been stuck since 09:12?", True),
    ("the 'tokens trained' number on the wiki hasn't moved since Saturday evening", True),
    ("the latest pointer says step 637000 but fetching it gives NoSuchKey for half of it", True),
    ("the PDU feeding row D in Hall 2 tripped at 03:12, machines in row D rebooted", True),
    ("this week's mirror folder was created on schedule, but every file in it is 0 bytes", True),
    ("s3 mirror has been failing since midnight, last mirrored save is 500k", True),
    ("the flaky test has been failing since Tuesday, quarantined it", False),
    ("data_wait 38 % and climbing since the cache change", True),
    ("data_wait 3 % since the cache change, nice", False),
    ("lr 0.0 since the 08:37 restart??", True),
    ("tok/s 835k → 455k. reads from lustre are taking 2–9 s", True),
    ("tok/s 455k → 835k. the cache fix worked", False),
    ("for my onboarding exercise: the step line just stops at 506,290 since 07:00", True),
    ("game day exercise: the step line just stops at 506,290, as scripted", False),
    ("🔴 DCGM · n06 GPU 5 · job 8931008 exited 11:24 · step 396,8xx", True),
    ("training not running from 10:20 KST after the requeue", True),
    ("training not running from 10:20 to 12:00 tomorrow, the planned drain", False),
    # round fourteen: SEV talk, second-language English, watchers' structured lines, notebooks
    ("uploads to coldbox have been 403ing since 00:00, saves to weka look ok", True),
    ("checkpoint of this night is not there, latest still point to 346000", True),
    ("folder step_348000 has only 37 of 320 files", True),
    ("the loss makes a jump to 4.2 at step 397,310 and then is NaN", True),
    ("the nan-guard stop the job by itself at 397,314", True),
    ("run=tt-280 state=PENDING step=504420 tok_s=0.00M nodes=0/768 ok=false", True),
    ("run=tt-280 state=RUNNING step=504512 tok_s=1.21M nodes=768/768 ok=true", False),
    ('{"run": "tt-280", "event": "restore", "status": "ERROR", "missing_shards": [3071]}', True),
    ('{"sweep": "decay-len", "arm": "d15", "status": "DONE", "final_loss": 2.42}', False),
    ("tickbird has said step=473604 in its last 3 posts", True),
    ("run: tt-280\nstate: HALTED\nstep: 459,871\nloss: nan", True),
    ("run: tt-280\nstate: RUNNING\nstep: 459,990\nok: true", False),
    ("no heartbeat from the dunlin job since 02:41, can't ssh to the login nodes", True),
    ("main is PENDING since 05:00: (ReqNodeNotAvail, Reserved for maintenance)", True),
    ("main is paused since 05:00 for the driver upgrade, back at 09:00", False),
    (
        "kn-r02-n13\n```\n[Wed Feb  8 06:48:31 2045] Out of memory: Killed process 221871 "
        "(python)\n```\nrank 1642 gone, job down 06:49",
        True,
    ),
    (
        "DCGM alert:\n```\n[FIRING] GXDoubleBitECC gx-n033 gpu5 DBE_VOL_TOTAL=1\n```\n"
        "the run's still stepping, draining n033 at the next save",
        True,
    ),
    ("🤖 watch daily\n- ✅ saves ok\n- ⚠️ 2 nodes lost 02:10, requeued on 62 nodes", True),
    ("🤖 watch daily\n- ✅ saves ok\n- ⚠️ 2 nodes drained for the planned firmware update", False),
    # round fifteen: metric summaries, a run log's many hands, a skeleton crew
    ("step 421.9k · loss 2.282 · gn 0.20 · tok/s 0.31M · mfu 11%", True),
    ("step 422.3k · loss 2.281 · gn 0.20 · tok/s 1.21M · mfu 41% — all nominal", False),
    ("step 491.3k · loss 2.236 · tok/s 0 · mfu 0%", True),
    ("tok/s 0 from 05:41 to 08:09, the Lustre window", False),
    ("⚠️ step rate 0 for 15 min\nlast step 88,412 at 02:58Z. job still RUNNING", True),
    ("step rate 0 for 15 min on my ablation, killed it, my bad", False),
    ("my vit job OOM'd on the a100 partition lol", False),
    ("my lora job died at exactly 24:00:00 elapsed. TIMEOUT", False),
    ("my 1B replication keeps getting preempted every 2h", False),
    ("kite job died again at 51k, NCCL timeout on gpu-r2-07", True),
    ("dcgm: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL=2 on nj-r17-n05 gpu3, pulling it at next save", True),
    ("step time 9.6 s since this morning vs 7.1 s last week", True),
    ("It stopped at 258,9xx and squeue shows (Resources) with a reservation", True),
    ("⏸️ main stopped at 498k (clean) for the driver window", False),
    ("is the loss plot frozen for anyone else? last point is 03:52, step 462,310", True),
    ("sorry, I think I broke it: my config push restarted the job and it's 40% slower", True),
    ("r31-n07 and r31-n08 gone from the job, 2 of 96 nodes", True),
    ("❌ 250k save: 3 of 768 shards written, the writer reports SlowDown", True),
    # round sixteen: runbook words, a newcomer's question, a slow divergence, the eval watcher
    ("on-call step 2: heartbeat stale 30 min on main, last step 91,204 at 03:10, paging", True),
    ("alert rule: heartbeat stale > 20 min pages the primary", False),
    ("the heartbeat panel says last beat 55 min ago, is that expected?", True),
    ("last beat 2 min ago, all fine", False),
    ("W&B stopped at 04:12 and the trainer log ends there too", True),
    ("nothing plotted after ~01:40 on the main loss chart, am I reading it wrong?", True),
    ("the checkpoint watcher has got nothing since the 310k save at 06:15", True),
    ("why is main doing 0 tok/s for 20 min?? the job says RUNNING", True),
    ("if we ever see 0 tok/s for ten minutes the watchdog should page", False),
    ("we're diverging: loss 1.92 → 2.40 in 300 steps and the guard is silent", True),
    ("if we're diverging after the switch, rewind to 120k", False),
    ("loss is 2.4 and not coming down since the resume", True),
    ("all 96 nodes went to DRAIN at 02:00 (reservation over), job killed mid-step", True),
    ("NOT A DRILL: r4-n12 Xid 79 at 10:02, the job is dead", True),
    ("drill at 14:00: pretend r4-n12 Xid 79 and the job is dead. who pages?", False),
    ("the what-if from three weeks ago just happened: the 88k save failed, bucket full", True),
    ("the 88k save failed three weeks ago, bucket full; the runbook covers it now", False),
    ("samples/s went from 400 to 130 in ten minutes, the decode workers are dying", True),
    ("the run has been stopped since 00:00 UTC and nobody knows why", True),
    ("the run has been stopped since 08:00 for the planned driver upgrade", False),
    ("tok/s has been drifting down since tuesday, now 20% under the median", True),
    ("W&B step time says 31s since about 14:00, it was 17s all week", True),
    ('the grad norm panel shows NaN at 296,518 and the run state went to "halted"', True),
    ('the ablation\'s run state went to "halted" as planned, arm B is done', False),
    # agents talking, a cluster in burn-in, the export pipeline, bot commands
    ("is it just me or has the step counter been stuck on 20,447 since 03:40?", True),
    ("uploader has been failing since 01:30, nothing from 64,500 made it to the bucket", True),
    ("❌ save 90k failed on all ranks at upload, last good checkpoint 89k", True),
    ("newest checkpoint dir is step_262000, nothing since, ~30h", True),
    ("/runstate → FAILED (NCCL watchdog timeout, rank 944) · since 22:14. on it", True),
    ("!status on the sweep → FAILED (arm 3), as expected", False),
    ("whole rack 5 gone, we only have 8 spares", True),
    ("after the 07:50 restart the job won't come back: restore of 223,000 fails every time", True),
    ("rank 311 is 2.3× the median step time for the last 40 steps", True),
    ("if rank 311 is 2× the median again we drain it", False),
    ("🔴 main-r3: job restarted · exit 137 on w-03 · last step 137,912", True),
    ("knot-300b is Failed, out of restarts", True),
    ("throughput is about a third what it was at noon, and has been since 14:10", True),
    ("tokens/s for the whole job is 3,310, down from ~3,940, since roughly 11:30", True),
    ("restart after the node swap is failing: FileNotFoundError on step_536000 at load", True),
    ("the last logged step on W&B is 548,120 at 04:31 and it's 10:10", True),
    # and in a bilingual team's Spanish
    ("el run se cayó otra vez a las 04:10, ya lo estoy mirando", True),
    ("desde las 03:10 no avanza el step, se quedó en 88,412", True),
    ("perdimos 4 nodos del rack R2 y el job murió con ellos", True),
    ("el save del 95,000 falló y el último bueno es el 94,000", True),
    ("ojo: loss en NaN desde el step 64,210", True),
    ("el loader se está muriendo, workers con Killed en zr-gpu-061", True),
    ("si el run se cae el finde, ¿quién está de guardia?", False),
    ("el run se cayó hace dos semanas por la PDU, ya está documentado", False),
    ("¿se cayó el run? a mí W&B no me carga", False),
    # round seventeen: slow faults told with a worry, "main", a host that stopped answering
    ("MFU 43.1 % (was 44.8 before). is anyone else on heron seeing slower jobs?", True),
    ("MFU 43.1 % (was 44.8 before), within noise after the driver bump", False),
    ("is it just me or is step time creeping up every day since the 8k switch?", True),
    ("rank 611 slow again. hrn-0077 gpu3, 4.6 s steps since 06:20", True),
    ("main died at 11:02, host-side oom on hrn-0089", True),
    ("main exited cleanly at the end of the decay", False),
    ("Ticket NG-451877: hx-r11-03 unresponsive, BMC reports CPU IERR. Power cycling.", True),
    ("throughput_low: `perf/tokens_per_sec` = 1.31M < 1.5M for 15 min (step 445,902)", True),
    ("relaunched for mix v3.2 + micro_bs 2 (#1450) and rank 0 OOMs on step 1", True),
    ("relaunched for mix v3.2 from 208k and it's stepping fine", False),
    ("thanks all for July. first quiet 24h since the start of the month 🎉", False),
    ("something's off with lustre metadata: `ls` takes 38 s, the 1.96M save is at 11 min", True),
    ("something is off with the eval numbers, mmlu 12 points down", False),
    ("are saves getting slower each time or am I imagining it? 6m10s, 9m40s, 14m05s", True),
    ("are saves getting slower now that they carry the optimizer state?", False),
    ("storage array HB-STOR-2 is running in degraded mode until the board arrives", True),
    ("if the array goes into degraded mode we lose half the bandwidth", False),
    # round eighteen: crashes in general, a clean exit, an alert in words, a save by its dir
    ("Restarts, including after crashes, use resume='must' on its run id", False),
    ("fork on every crash and we are back to a chart nobody can read", False),
    ("W&B shows the run as finished because it exited 0, ignore that", False),
    ("perf/tokens_per_s = 0.97M, below 1.10M for 10 minutes (step 309,166)", True),
    ("❌ save step_348000 FAILED verification: 1533/1536 shards present after COMMIT", True),
    ("is it just me or is main slower since ~14:00? W&B step time 34 s → 47 s", True),
    ("🛑 nanguard stopped rt-70b-h1 at step 222,455 (06:41 UTC)", True),
    ("18 of the 212 array tasks for the tok-v3 code slice died with the Slurm OOM kill", False),
    ("the CoT job for 240000 died with a CUDA OOM at load. the hero run is not involved", False),
    # round nineteen: a run that came back wrong from its own restart
    ("⚠️ something is off with the data since at least the Mar 20 restart. code share 17.9%", True),
    ("something is off since the 600 restart. ratio mean is 1.7, should be ~1.0", True),
    # hedged and asking for a look: a report (the learned scorer reads it, as the corpus's labels
    # read such posts)
    ("I think something is off with the data since the restart, can someone look", True),
    ("if something is off since the restart, ping the on-call", False),
    ("loss is 6.9 after the relaunch at 14:00 😬 it was 2.21 before. did anything change?", True),
    ("loss is 2.05 after the restart, it was 2.04 before", False),
    # a slow fault dated to a time of day, or its cause asked in a word
    ("throughput has been bad since last night though, 24.8 s/step vs 21.1. any idea?", True),
    ("step time creeping 49 → 56 s since ~09:00, all-reduce bound in the profile. network?", True),
    ("Is pip slower to you? step time 3.1 s since this morning vs 2.6 s last week.", True),
    ("step time 10.5 s since 09:00 vs 10.2 s yesterday", False),
    ("since the 32k switch, 24.8 s/step vs 21.1 as planned", False),
    ("arm A 3.1 s/step vs 2.4 for arm B", False),
    # an on-call's shorthand, a guess at what just happened, the fabric's retry errors
    ("hb stale", True),
    ("wandb last point 03:12", True),
    ("tok/s flat since 02:10", True),
    ("tok/s flat since 02:10 is expected, the evals are paused", False),
    ("did the staging dir just fill up? rank 0 log shows ENOSPC on the save", True),
    ("if the disk fills up we lose the save", False),
    ("did you just push to main?", False),
    ("seeing ibv_poll_cq: RETRY_EXC_ERR lines from est-r03-n07 every minute since ~08:30", True),
    # a saved checkpoint found broken by what reads it
    ("Export of step_248000 fails: shard __17_0.distcp is short", True),
    ("ckpt-verify failed on gx70-s1 step_171000: shard checksum mismatch", True),
    ("[ckpt-verify] step_0117500 incomplete: 61/64 shards, no COMMIT", True),
    ("the export of step_248000 will fail if the shard is short", False),
    ("evals for step 412000 failed on MMLU", False),
    ("uh. MFU since the 04:38 relaunch is 38.2%, was 41.3 before.", True),
    ("MFU since the relaunch is 41.2%, was 41.3 before", False),
    ("step time +18% since 09:30. one hot node dragging 2,304 ranks", True),
    ("step time +4% since 09:30", False),
    ("step time +18% in the 32k stage, as expected", False),
    ("step 473.2k · loss 2.245 · tok/s 0.6M · mfu 20% — loader wait 48% of step time", True),
    ("data wait 3% of step time, fine", False),
    ("if data wait goes over 20% of step time we should add workers", False),
    # a scheduler's alert pasted as it came, and a word of its own
    ("```\n[slurm-alert] JOB 4471203 (rt-70b-h1) state=NODE_FAIL node=fw-a01-09\n```\non it", True),
    ("```\n[slurm-alert] JOB 4471203 (rt-70b-h1) state=COMPLETED exit=0:0\n```\nnice", False),
    # an alert of low severity named for a failure or a full store pages; others do not
    ("[FIRING:1] ScratchVolumeAlmostFull (mount=/scratch/grebe severity=warning) used 97.2%", True),
    ("[FIRING:1] GrebeCheckpointUploadFailed (step=305000 severity=warning) after 5 retries", True),
    ("🔥 **[FIRING:1] EvalPoolJobFailed** (severity=warning) pool=eval-b exit_code=1", False),
    ("[FIRING:1] GPUTempHigh (severity=warning) on r12n4", False),
    # the main run after a colon, and the consequence its fault has for someone else's work
    ("fyi unrelated to the proxy: main is crawling since 13:40 so the eval baseline is late", True),
    ("my dedup job is crawling, and the bucket is slow", False),
    # planned work announced ahead, and what it warns may happen
    (
        "heads up: planned maintenance on spine switches sp-2 and sp-3 thu 02:00–03:30 UTC. we "
        "expect no impact but there may be a few link flaps",
        False,
    ),
    # a status bot's line at its own severity, and a cloud monitor's alarm
    ("🔴 **CRIT** `kite-main` heartbeat missing for 12m · step 88,410 · paging on-call", True),
    ("⚠️ **WARN** `kite-main` tokens/s = 0.61M (baseline 1.02M) for 15m · step 90,112", True),
    ("⚠️ **WARN** `kite-eval-fleet` queue depth 41 (threshold 30) for 10m", False),
    (
        "**ALARM** `kite-train-healthy-hosts` entered ALARM at 2051-09-02T04:10:00Z · current 60",
        True,
    ),
    ("WARNING: don't merge #512 before the 14:00 save lands", False),
    ("CRITICAL: please review #530 before the 17:00 freeze", False),
    # a rank named and lost; nodes a cloud shut down
    ("03:17 rank 1022 gone, and 1016-1023 with it. whole host", True),
    ("rank 7 dropped from the log panel after the refactor, cosmetic", False),
    ("why are 64 of our nodes terminating?? nobody touched the nodegroup", True),
    # a save that blew its timeout
    ("checkpoint save for step 91,000 exceeded save_timeout (1200s), job exited 87", True),
    # back on the wrong settings, or reading old data, since a restart
    ("heads up: since the 04:10 relaunch main is training on the wrong tokenizer, tok-v1", True),
    ("main resumed with a stale config after the requeue, lr schedule is the old one", True),
    ("the loader has been re-reading shards 0-900 since the resume, ~1.1B tokens seen twice", True),
    ("we should make sure a resume never ends up re-reading shards", False),
    ("if a failover happens mid-decay it could read the wrong mix", False),
    ("loss after resume 2.04 → 2.31 and not coming down", True),
    ("loss after resume 2.04 → 2.06 then back down in 40 steps", False),
    # side work, said so
    ("the dedup side job OOMed on a 3GB file, rerunning with a cap", False),
    ("🔴 job 77120 `kite-needle64k` → FAILED rc=137 on kt-a03", False),
    ("ruler 32k bench on the spares died with a NCCL timeout, my hostfile", False),
    # asked for a runbook or a checklist: a case to write down, not the run now
    ("writing the on-call runbook: does the trainer crash when the bucket times out?", False),
    ("newbie question: what happens when a node dies mid-save?", False),
    # a benchmark's score held flat is no hang
    ("code evals still climbing since v3, mbpp flat-ish at 300→310", False),
    # a greeting and an ellipsis before the report; a count of minutes after "in"
    ("morning… the job is not running. 991203 shows TIMEOUT and squeue has nothing", True),
    ("looking. no step logged in 45 min, rank 0 last printed 77,310", True),
    ("the run is currently not training, the chain has no next job queued", True),
    # an alert passed on, or pasted back with "again"
    ("kite-watch sent me this, can someone look\n```\n🔴 kite-main step stalled 31m\n```", True),
    ("again.\n```\nncclSystemError: unhandled system error, NET/IB status=12 on kt-a09\n```", True),
    (
        "❌ CI failed on 9ab31c0\n```\nFAILED tests/test_nccl.py::test_timeout - TimeoutError\n```",
        False,
    ),
    # since a restart the run is not where it was
    ("looks like a fresh warmup after the 02:00 restart? lr went to ~0 and is ramping", True),
    ("loss after the resume is too good, 1.80 → 1.71 in 1k steps, val flat", True),
    ("rank 0 stuck in the barrier since 03:10, the others wait on it", True),
    ("the loss went back up to 11.2?? step counter says 900. did someone restart it", True),
    ("uh is loss supposed to be ~2.4 after the restart? it was 2.1 before", True),
    ("the run is training without the code split right now, it's been 0 since step 9000", True),
    ("we relaunched the yarn probe with CP 4 from scratch, nothing worth keeping", False),
    ("someone asked why the r1 run was restarted from scratch back in july", False),
    # what a run's machinery shows
    ("ls /lustre/kite/ckpt hangs on the login node since 09:10, anyone else?", True),
    ("it's been in compile for 50 min, with the cache this takes 5", True),
    ("correctable ECC counts climbing on kt-a07 gpu 3, 2,100 now", True),
    ("All partitions remain unavailable while the firmware rollback runs.", True),
    ("🔴 [slurm-watch] job 55120 (kite-main) FAILED exit=1 after 2:10:00", True),
    ("rewards coming back null for ~30% of groups since step 400", True),
    ("~3% packet loss between zones b and c since 10:20", True),
    ("spot pool: 0 preemptions so far this week", False),
    ("books 30%, arxiv full text 20%, code 25% for the long-doc mix", False),
    ("HumanEval margin is +0.2, trending down slowly, worth watching", False),
    ("Slurm won't start a job that overlaps the reservation, so we save before 07:00", False),
    # side work named as such
    ("gm. 12T tokens 🎉 past where the 30B ladder run stopped", False),
    ("OOM on the 128k ruler suite, my batch was too big", False),
    ("my 350M run for the class project OOMs on one GPU?? how does main fit", False),
    ("tokenize-web job has been stuck at 90% for 3h, killing it", False),
    # the round of c21760-c22479: what a provider, a profiler and a host say
    ("DCGM on gpu-q2-17 GPU 5 shows a rising correctable ECC rate since 04:00", True),
    ("214 is gone — GPU 1 doesn't come back after a reboot, lspci doesn't see it", True),
    ("IB on rack r09 is flapping since 15:10, allreduce p99 doubled", True),
    ("step time is up ~22% since around 11:00, one rail looks bad", True),
    ("restart onto the new build is failing: resume from 88000 dies in the loader", True),
    ("512 → 496 nodes at 09:12, so it's sitting paused at 41,220 until HPC answers", True),
    ("⚠️ checkpoint slow · kite-main · save took 28m40s (p50 over last 20: 5m10s)", True),
    # a monitor's line for one step against its median
    ("step 233,412 took 58.3s (p50 15.4s). run continuing.", True),
    ("step 233,412 took 15.9s (p50 15.4s).", False),
    (
        "⚠️ Heads-up: a power fault in hall C, rows 3–4 (pod P6). Some tenants lost nodes. "
        "Pod P2 is on separate PDUs and is not affected.",
        False,
    ),
    (
        "fyi muon-350m died on an NCCL timeout on the abl pool, main run obviously not affected",
        False,
    ),
    ("at my last job a rolling spine upgrade gave us two NCCL timeouts in one night", False),
    ("my home NAS just mailed me: array degraded, 1 disk failed. thought it was ours 😅", False),
    ("for the on-call runbook I'm writing: Xid 79 vs 48, what do we do for each?", False),
    ("16k dev run OOM at the first bwd on 2 dev nodes, forgot ring attention", False),
    ("is HF down? the model page gives me a 500", False),
    # the round of c22480-c23199: bridges, a store's own words, an alert confirmed
    ("[Datadog] Triggered: kite.train.step_rate < 0.05 steps/s for 10m (env:prod)", True),
    ("[PagerDuty] #812 triggered: kite-gpu-041 unreachable (high urgency)", True),
    ("[PagerDuty] #813 triggered: ckpt upload lag > 30m (low urgency)", False),
    ("[Datadog] Triggered: kite.node.gpu_temp > 87°C on kite-gpu-12 (gpu:3)", False),
    ("^ real. job died at 41,200, NCCL errors on every rank talking to 088", True),
    ("^ again, a different node this time (r03-n11)", True),
    (
        "from kt-a09 dmesg:\n```\nLustreError: 11-0: scr-OST0007: ost_write failed: rc = -107\n```",
        True,
    ),
    (
        "**INCIDENT** /lustre/scr degraded: OST index 7 is unavailable after a controller failure",
        True,
    ),
    ("my boss is asking: the line stopped moving ~30 min ago?? is training broken", True),
    ("¿está corriendo? no hay ningún paso nuevo desde las 14:30, sigue en 87,500", True),
    ("de novo parado? o gráfico parou em 118,100 faz uma hora", True),
    # and what is not the run's now
    ("**SCHEDULED — Filesystem migration FN-2053-011, wave 2** starts Monday 06:00", False),
    ("run stopped for the FN-2053-011 window, manual save verified, see you at 14:00", False),
    ("demo is monday. my nightmare: training crashes in the middle of it 😅", False),
    ("80k:\n```\nMMLU        62.4   63.1\nGSM8K       51.0   52.2\n```", False),
    ("loss spike, back to 1.93 by 77,890, grad clip held. not a fault.", False),
    ("one of my probe jobs OOMed at 640k with cp=8, forgot activation checkpointing", False),
    ("trying a tiny replica on my 2x3090 and it OOMs at seq 2048", False),
    # numbers a monitor compares with its own baseline
    ("⚠️ grebe throughput — 41.2 s/step (1h median), baseline 18.5 s/step", True),
    ("⚠️ grebe throughput — 19.0 s/step (1h median), baseline 18.5 s/step", False),
    ("step time p50 (1h): 29.4s vs 22.4s (24h p50), +31%", True),
    ("step time p50 (1h): 22.9s vs 22.4s (24h p50), +2%", False),
    ("MFU 32%?? it was 38 before the bump", True),
    # a fault measured and smaller: a fix's result
    ("async ckpt on staging: stall 95 s → 11 s, upload finishes in ~4 min", False),
    ("loader stall 11 s → 95 s since 09:00, data wait climbing", True),
    # a product's incident, a teaching cluster's, someone's own finetune
    ("declaring inc-13: teal-chat API 5xx at 8% since 09:02, all regions. IC: @callum", False),
    ("declaring inc-16: streaming stalls for EU users, ~12% of sessions hang since 07:50", False),
    ("PSA: the teaching cluster is completely down, a storage controller died", False),
]


@pytest.mark.parametrize(("text", "live"), CHAT_LINES)
def test_chat_lines_are_read_as_a_lead_would(text: str, live: bool) -> None:
    assert enrich_text(title=None, body=text, kind="message", source="discord").live_report is live


def test_a_template_and_a_weekly_run_summary_report_nothing() -> None:
    title = "Template: incident note for the on-call channel"
    body = "Paste when you ack:\n\nwhat: step rate 0 / NCCL timeout / save failed\nsince: <UTC>"
    context = ThreadContext(title=title, kind="issue")
    assert not enrich_text(
        title=title, body=body, kind="issue", source="github", context=context
    ).incident
    weekly = "🤖 **Weekly run summary, Jan 4 – Jan 11**\n\n### Events\n- Jan 6: host OOM, requeued"
    assert not enrich_text(title=None, body=weekly, kind="comment", source="github").live_report
    dated = "week 09-22 → 09-28\n- 318k → 350k\n- incidents: loader oom 09-26, fixed"
    assert not enrich_text(title=None, body=dated, kind="comment", source="github").live_report


@pytest.mark.parametrize(
    ("title", "body", "live"),
    [
        (
            "evals can't load step 412000: safetensors incomplete metadata on shard 37/64",
            "The 412k eval job fails on load, twice, same shard. 410k loads fine.",
            True,
        ),
        (
            "[evals] no checkpoint since step_0271750, watcher idle for 6h",
            "The eval watcher has not seen a new save since 02:41. It is now 09:00.",
            True,
        ),
        ("Eval job for ckpt 500,000 failed: OOM in the long-document suite", "OOM at 32k.", False),
        (
            "Post-mortem: truncated shard in step_470000",
            "What happened and what we changed.",
            False,
        ),
        ("Question: what happened in the March checkpoint corruption?", "Before my time.", False),
    ],
)
def test_an_issue_titled_by_a_broken_save_of_the_run_is_a_report_wherever_found(
    title: str, body: str, live: bool
) -> None:
    """An eval or a restore test that finds the run's save broken reports the run's fault; an
    evaluator's own failure, or a review of an old one, does not."""
    context = ThreadContext(title=title, kind="issue")
    issue = enrich_text(title=title, body=body, kind="issue", source="github", context=context)
    assert issue.live_report is live


@pytest.mark.parametrize(
    ("title", "body", "live"),
    [
        ("[Datadog] Monitor triggered: trainer step rate = 0", "Value: 0.0 steps/s", True),
        ("[Datadog] Monitor triggered: step rate = 0 (staging)", "Scope: cluster:staging", False),
        ("CI: test_packer is flaky", "test_packer failed on main and passed on retry.", False),
        ("Hang in unit test test_dataloader", "it hangs until the 6h timeout, a deadlock", False),
        # an alert rule named as a test pages nobody
        ("[FIRING:1] RedwingWatchdogTestPage (severity=page)", "weekly test, please ack", False),
        ("[FIRING:1] RedwingStepStalled (severity=page)", "no step for 20 min", True),
    ],
)
def test_a_monitors_issue_and_a_flaky_tests(title: str, body: str, live: bool) -> None:
    issue = enrich_text(title=title, body=body, kind="issue", source="github")
    assert issue.live_report is live


@pytest.mark.parametrize(
    ("text", "dismissal"),
    [
        ("Not an incident: the planned decay-start stop (#696).", True),
        ("Warning only. 81 °C is inside spec.", True),
        ("Please never apologise for asking. This time the run is fine: W&B is delayed.", True),
        ("not us: QR history has all three reclaimed at 07:11", False),
        ("Not expected: the per-node timers show every rank waiting", False),
        ("not sure: the loss went up after the restart", False),
        ("Thank you, Lukas, it is not planned. sacct shows the job was preempted", False),
        ("the run is fine now, resumed from 41,000", False),
        # a triage's one word
        ("noise, closing. 61,947 is the shard boundary again", True),
        ("flake, the exporter restarted", True),
        ("staging. xid 13 is my kernel reading out of bounds, ignore", True),
        ("noise in the loss is higher since the restart", False),
        ("staging the new config on the spares now", False),
        ("real - slice drained", False),
    ],
)
def test_a_reply_that_dismisses_what_was_reported(text: str, dismissal: bool) -> None:
    assert dismisses(text) is dismissal


def test_a_settled_spec_is_no_frozen_run() -> None:
    spec = "Spec v3 (frozen): decay from step 1,000,000"
    assert not enrich_text(
        title=spec, body="Changes need a new issue.", kind="issue", source="github"
    ).incident
    test = "INC-TEST-3 · Test incident (kiln-storage alert route)"
    assert not enrich_text(
        title=test, body="Severity: None (test)", kind="issue", source="github"
    ).incident


@pytest.mark.parametrize(
    ("title", "kind", "body", "about"),
    [
        # a change whose description tells the failure it reverts or fixes, since when
        ("Revert #831", "pull", "Revert #831: the main run OOMs since it landed.", True),
        ("hotfix(ckpt): longer GCS write deadline", "pull",
         "## Summary\nSaves on the main run have been failing since 03:10.", True),
        ("ckpt: bigger write buffer", "pull", "Saves could fail if GCS is slow.", False),
        # a hotfix opened while the run waits for it: the failure at an hour of today
        ("hotfix: exclude rkh-n0288", "pull", "## What broke\nmain crashed at 02:14: ECC", True),
        ("hotfix: restore of 88k", "pull", "main is down. The relaunch can't restore 88k.", True),
        ("cron: prune at 03:00", "pull", "Saves fail when the prune runs at 03:00.", False),
        ("retro: merlin-70b stage 1, June–July", "issue", "by cause: hardware 5, network 2", False),
    ],
)  # fmt: skip
def test_a_change_that_tells_its_failure_and_a_periods_retro(
    title: str, kind: str, body: str, about: bool
) -> None:
    e = enrich_text(title=title, body=body, kind=kind, source="github")
    assert e.incident is about and not e.live_report


def test_a_change_that_broke_the_run_is_the_runs_whatever_its_thread() -> None:
    context = ThreadContext(title="evals: MMLU-Pro in the in-loop eval set", kind="pull")
    said = "since this landed the train loop hangs at the in-loop eval, no steps since 06:00"
    e = enrich_text(title=None, body=said, kind="comment", source="github", context=context)
    assert e.live_report
    plain = "the eval harness hangs on mmlu_pro shard 3, no results since 06:00"
    assert not enrich_text(
        title=None, body=plain, kind="comment", source="github", context=context
    ).live_report


def test_an_agents_alert_and_a_pasted_log_asked_about_are_read_through_the_log() -> None:
    alert = (
        "🤖 plover-data · alert\n```json\n"
        '{"event": "loader_workers_oom_killed", "hosts": 9, "since": "07:48Z"}\n```\n'
        "confidence: 0.9\nrecommended action: check shuffle buffer size in the v9 loader"
    )
    assert enrich_text(title=None, body=alert, kind="message", source="discord").live_report
    calm = alert.replace("· alert", "· daily: the nightly shuffle finished on all 9 hosts")
    calm = calm.replace("check shuffle buffer size in the v9 loader", "none")
    calm = calm.replace("loader_workers_oom_killed", "shuffle_done")
    assert not enrich_text(title=None, body=calm, kind="message", source="discord").live_report
    asked = (
        "The last two save attempts in the rank-0 log say:\n```\nWARNING save_checkpoint: "
        "step 233000: OSError: [Errno 122] Disk quota exceeded\n```\n"
        "Is this something I should worry about?"
    )
    assert enrich_text(title=None, body=asked, kind="message", source="discord").live_report


def test_a_side_channel_post_about_the_main_run_is_the_runs() -> None:
    ladder = ThreadContext(title="ladder", kind="channel")
    main = "heads up: main's 847,500 save just failed with Disk quota exceeded on /weka"
    rung = "heads up: rung 5's save just failed with Disk quota exceeded on /weka"
    assert enrich_text(
        title=None, body=main, kind="message", source="discord", context=ladder
    ).live_report
    assert not enrich_text(
        title=None, body=rung, kind="message", source="discord", context=ladder
    ).live_report


def test_a_watchdog_that_cites_the_failure_that_moved_it_is_no_fix() -> None:
    body = "## Summary\nOn 14 Sep the main run sat hung for 48 minutes before a person noticed."
    title = "watchdog: page when the main run's step stops advancing"
    assert not enrich_text(title=title, body=body, kind="pull", source="github").incident
    fix = enrich_text(title="ckpt: retry stuck saves", body=body, kind="pull", source="github")
    assert fix.incident


def test_an_ablation_named_by_its_short_name_is_side_work() -> None:
    context = ThreadContext(title="abl-b oom", kind="issue")
    issue = enrich_text(
        title="abl-b oom", body="arm 3 died", kind="issue", source="github", context=context
    )
    assert (issue.live_report, issue.incident) == (False, False)


def test_a_status_post_that_checks_every_line_off_reports_nothing() -> None:
    daily = (
        "🤖 **lapwing daily**\n\n### Progress\n- step 240,240 → 244,700 (+4,460)\n"
        "- tok/s 1.95M, MFU 25.0%\n\n### Health\n- ✅ no restart since 07-16 (#161)\n"
        "- ✅ ckpt 241000 … 244000 saved\n- ✅ grad norm 0.22–0.25"
    )
    assert not enrich_text(title=None, body=daily, kind="comment", source="github").live_report
    flagged = daily.replace("✅ grad norm", "⚠️ job requeued at 03:12 after NODE_FAIL, grad norm")
    assert enrich_text(title=None, body=flagged, kind="comment", source="github").live_report
    quiet = (
        "\U0001f916 **grebe-watch daily**\n\n### Progress\n- step 41,870 \u2192 42,910\n- MFU 38.1%"
    )
    assert not enrich_text(title=None, body=quiet, kind="comment", source="github").live_report


def test_an_agents_flagged_line_is_the_faults_first_word_even_told_with_its_recovery() -> None:
    head = "\U0001f916 **knot-watch daily**\n\n### Health\n- \u2705 checkpoints committed\n"
    told = head + (
        "- \u26a0\ufe0f jobset restarted once at 03:12: pod rj-c-0-17 exited 1, node shows "
        "TPUHBMUncorrectable=True; rj-c was recreated and resumed from 237000."
    )
    assert enrich_text(title=None, body=told, kind="comment", source="github").live_report
    handled = head + "- \u26a0\ufe0f 07-08 preempted 41 min by the QOS change (fixed, #425)"
    assert agent_flags_fault(told) is not None and agent_flags_fault(handled) is None


def test_a_log_after_words_that_say_the_run_is_dead_tells_the_fault() -> None:
    log = "```\nNVRM: Xid (PCI:0009:01:00): 79, pid=221873, GPU has fallen off the bus.\n```\n"
    text = log + "that's from tn1187, leg 42 is dead. my shepherd night so I'm on it"
    live = enrich_text(title=None, body=text, kind="message", source="discord")
    assert (live.live_report, live.incident_kind) == (True, "hardware")


def test_the_scorer_leaves_a_pull_requests_thread_to_the_rules() -> None:
    answer = (
        'Mostly bookkeeping. A new run id keeps "which config produced which point" unambiguous '
        "for\neveryone reading the W&B project later, and it lets us restart from the exact "
        "checkpoint the\nevals use instead of whatever step we happen to stop at."
    )
    pull = ThreadContext(title="aurora: no weight decay on router + norms", kind="pull")
    comment = enrich_text(title=None, body=answer, kind="comment", source="github", context=pull)
    assert not comment.live_report
    broke = "Since this merged the loss is NaN on every rank, the run is down since 04:10"
    assert enrich_text(
        title=None, body=broke, kind="comment", source="github", context=pull
    ).live_report


def test_a_report_set_apart_inside_a_review_or_an_experiment_is_live() -> None:
    review = (
        "## Weekly review, week 3\n\nReward up 0.04, KL inside its band.\n\n"
        "| | start | end |\n|---|---|---|\n| reward | 0.51 | 0.55 |\n\n"
        "### Decisions\n\n- keep the KL coefficient at 0.002\n\n"
        "### Something that is happening now\n\n"
        "The trainer has been stuck in the weight broadcast since 06:40 UTC, three hours now; "
        "nothing after the sync/started event."
    )
    context = ThreadContext(title="Stage 2: run log", kind="issue")
    told = enrich_text(title=None, body=review, kind="comment", source="github", context=context)
    assert told.live_report and told.incident_kind == "hang"
    quiet = review.split("### Something")[0]
    assert not enrich_text(
        title=None, body=quiet, kind="comment", source="github", context=context
    ).incident
    # a past stop listed in the same review is history, set apart or not
    past = quiet + "### Separately\n\nThe 14 Sep preemption cost 3 h; fixed by #447."
    assert not enrich_text(
        title=None, body=past, kind="comment", source="github", context=context
    ).live_report
    experiment = ThreadContext(title="Ablation: KL coefficient sweep", kind="issue")
    results = (
        "## Results at 600 iterations\n\nβ = 0 collapses, as expected; 0.002 stays the best.\n\n"
        "Unrelated, but it touches the main run\n\n"
        "While collecting these I noticed the main run's rollout fleet is one node short: r-17 "
        "dropped out at 12:48 UTC today and Slurm has it DOWN."
    )
    assert enrich_text(
        title=None, body=results, kind="comment", source="github", context=experiment
    ).live_report
    arm = results.split("Unrelated")[0] + "Unrelated: arm 3 crashed again, I'll rerun it."
    assert not enrich_text(
        title=None, body=arm, kind="comment", source="github", context=experiment
    ).live_report


def test_a_code_review_that_sets_a_live_fault_apart_reports_it() -> None:
    pull = ThreadContext(title="proposal: step-progress watchdog", kind="pull")
    review = (
        "Approving, the design is fine. But FYI, and a perfect example: the main run has been "
        "down since 06:20, the coordinator pod is in CrashLoopBackOff."
    )
    told = enrich_text(title=None, body=review, kind="review", source="github", context=pull)
    assert told.live_report
    plain = "Approving, the design is fine. Two nits inline about the page's wording."
    assert not enrich_text(
        title=None, body=plain, kind="review", source="github", context=pull
    ).incident
    # set apart even as the review's opening; the review's own words about the fault are not
    postmortem = ThreadContext(title="postmortems: PM-212 NCCL timeouts", kind="pull")
    for body, live in (
        ("Not part of the review, but you'll enjoy this: main just went down at 10:23.", True),
        ("Timeline reads well. Xid 79 at 10:21 led to the NCCL timeout at 10:23.", False),
    ):
        said = enrich_text(
            title=None, body=body, kind="review", source="github", context=postmortem
        )
        assert said.live_report is live
    # a note that opens with "fyi" is about its own subject: an ablation arm, here
    arm = ThreadContext(title="Ablation: warmup length", kind="issue")
    note = "fyi the 8k-warmup arm died overnight with CUDA OOM. main run not affected."
    assert not enrich_text(
        title=None, body=note, kind="comment", source="github", context=arm
    ).live_report


def test_an_agents_status_table_flags_a_fault_in_one_row() -> None:
    table = (
        "🤖 **watch · daily**\n\n### Health\n| check | status | detail |\n|---|---|---|\n"
        "| nodes | ✅ | 320/320 |\n"
        "| DCGM | {mark} | n09 GPU 2: 1 uncorrectable ECC error at 21:14 |\n"
    )
    flagged = enrich_text(title=None, body=table.format(mark="❌"), kind="comment", source="github")
    assert flagged.live_report and flagged.incident_kind == "hardware"
    fine = enrich_text(title=None, body=table.format(mark="✅"), kind="comment", source="github")
    assert not fine.live_report


def test_a_notebook_in_an_experiments_thread_that_says_main_is_down_is_the_runs() -> None:
    context = ThreadContext(title="Lab notebook (ablations, optimizers)", kind="issue")
    told = "2045-07-17. Notes.\n\nMain is in a restart loop since 05:50: every requeue dies."
    fine = "2045-07-18. Notes.\n\nMain is fine. Arm 3 is in a restart loop since 05:50."
    assert speaks_of_the_main_run(told, context)
    assert not speaks_of_the_main_run(fine, context)
    assert not speaks_of_the_main_run("the main branch is in a restart loop", context)


def test_a_standup_that_names_a_dry_run_among_its_tasks_is_no_exercise() -> None:
    standup = (
        "**Yesterday**\n- HF export dry-run on 320k started\n\n**Today**\n- retention PR\n\n"
        "**Blockers**\n- the 326k save at 02:14 failed: Disk quota exceeded on /lustre"
    )
    context = ThreadContext(title="Shelduck-140B stage 2: tracking + daily standups", kind="issue")
    told = enrich_text(title=None, body=standup, kind="comment", source="github", context=context)
    assert told.live_report
    drill = "[DRY-RUN] node loss on r7, the alert should page on-call"
    assert not enrich_text(
        title=None, body=drill, kind="comment", source="github", context=context
    ).live_report


def test_a_spot_launchers_routine_move_is_no_incident() -> None:
    routine = "⛴️ preempted in us-east · recovering in eu-west · resumed at 182,000 after 9 min"
    told = enrich_text(title=None, body=routine, kind="message", source="discord")
    assert not told.incident and not told.live_report
    hours = "preempted at 03:09, nobody resumed anything. resumed from 236,900 at 08:51. 5h39m down"
    assert enrich_text(title=None, body=hours, kind="message", source="discord").incident


@pytest.mark.parametrize(
    ("title", "change"),
    [
        ("Proposal: auto-drain nodes on Xid 48/63/79/94 from the slurm healthcheck", True),
        ("Async checkpoint: overlap the D2H copy with the next step's forward", True),
        ("fix: loader crash on empty shard", False),
        ("main: restore fails on step_52000", False),
        ("Hero run: node failures", False),
        ("Adam eps 1e-8 → 1e-6 for phase 2?", True),  # a setting moved for what comes next
        ("tok/s 1.9M → 1.2M since 14:10", False),  # a level that moved: a symptom
    ],
)
def test_an_issue_titled_by_the_change_it_asks_for(title: str, change: bool) -> None:
    assert names_a_change(title) is change


def test_planned_work_announced_ahead_is_not_planned_work_gone_wrong() -> None:
    assert announces_planned_work("heads up: planned maintenance on spine sp-2 thu 02:00 UTC")
    assert announces_planned_work("Scheduled downtime for the Lustre upgrade on Monday 09:00")
    assert not announces_planned_work("planned maintenance went wrong: r12 never came back")
    assert not announces_planned_work("main is down since the planned maintenance on r12")
    assert not announces_planned_work("planned maintenance on r12 is done but 3 nodes are gone")
    # dated by its day or its hours, and not about an incident either
    dated = (
        "heads up: planned provider maintenance Sat 04-26 02:00–04:00 UTC on all blocks. we'll "
        "save at the nearest 500, stop the run and resume after. no incident will be declared"
    )
    assert announces_planned_work(dated)
    assert not enrich_text(title=None, body=dated, kind="message", source="discord").incident


@pytest.mark.parametrize(
    "text",
    [
        "planned maintenance went wrong: r12 never came back and main is down",
        "the planned maintenance overran and the job never restarted, main down since 06:00",
        "planned maintenance on r12 is done but 3 nodes did not come back, main is stuck at 41,200",
    ],
)
def test_planned_work_that_broke_the_run_is_a_live_report(text: str) -> None:
    assert enrich_text(title=None, body=text, kind="message", source="discord").live_report
    assert not enrich_text(
        title=None,
        body="planned maintenance on r12 went as planned, main resumed from 41,000",
        kind="message",
        source="discord",
    ).incident


def test_a_reply_or_a_pull_that_says_it_is_about_no_incident_is_not() -> None:
    incident_thread = ThreadContext(title="Incident: main down after the 03:00 save", kind="issue")
    for text in (
        "That's not this PR — ci-runner-3 has timed out on the fp8 tests all week.",
        "not about the outage but: do we keep the 80k checkpoint after the decay?",
    ):
        assert dismisses(text)
        assert not enrich_text(
            title=None, body=text, kind="comment", source="github", context=incident_thread
        ).incident
    pull = "Routine firmware bump, not tied to an incident.\n\n## Why\nThe vendor supports it."
    assert not enrich_text(
        title="NIC firmware 28.41", body=pull, kind="pull", source="github"
    ).incident


def test_a_roll_up_of_a_stages_incidents_is_a_review_of_a_period() -> None:
    title = "Stage 2 interruptions retro: 09-01 → 10-02"
    context = ThreadContext(title, "stage 2 interruptions retro", ("retro",), "issue")
    rows = "\n\n| date | what | down |\n|---|---|---|\n| 09-04 | leaf flaps, NCCL timeout | 40m |"
    for text in (
        "A look back over the last month of stage 2. Post-mortems are linked; this is the roll-up.",
        "Stage 2 lost time, all incidents together:",
    ):
        assert reviews_a_period(text)
        text += rows
        issue = enrich_text(title=title, body=text, kind="issue", source="github", context=context)
        assert not issue.incident
    # the post-mortem of one incident, named so in its title, stays about that incident
    one = "Post-mortem: the 03:10 save timeout"
    context = ThreadContext(title=one, kind="issue", labels=("retro",))
    body = "Timeline, impact and root cause of the save that timed out at 03:10."
    assert enrich_text(
        title=one, body=body, kind="issue", source="github", context=context
    ).incident


def test_an_agents_flagged_heading_is_read_with_its_paragraph() -> None:
    daily = (
        "🤖 **Daily status — Sep 3**\n\n### Progress\n- Steps 90,000 → 90,600\n\n"
        "### ⚠️ Data order after the restart\nThe loader has been re-reading the start of the "
        "mix since the 02:10 restart, about 300 steps so far.\n\n### Next steps\n- flag to leads"
    )
    assert enrich_text(
        title=None, body=daily, kind="comment", source="github", learned=False
    ).live_report
    quiet = daily.replace("has been re-reading the start of the mix", "resumed at the right cursor")
    assert not enrich_text(title=None, body=quiet, kind="comment", source="github").live_report


def test_an_agents_table_row_flags_its_fault_whichever_cell_holds_the_mark() -> None:
    table = (
        "🤖 run-watch · ckpt (posting as Ana)\n\n| | | |\n|---|---|---|\n"
        "| save step 64000 | failed after 3 retries | {mark} |\n"
        "| step time p50 (last 2h) | 48.1 s (7-day median 36.0 s, +34%) | {mark} |\n"
    )
    flagged = enrich_text(
        title=None, body=table.format(mark="❌"), kind="message", source="discord"
    )
    assert flagged.live_report
    fine = enrich_text(title=None, body=table.format(mark="✅"), kind="message", source="discord")
    assert not fine.live_report


PAGE = "**[FIRING:1] NodeDown** (severity: critical)\n**Labels:** alertname=NodeDown, cluster={}, instance=gpu-r2-n4:9100\n**Summary:** node_exporter unreachable for 5m"  # noqa: E501
CI_THREAD = ThreadContext(title="CI: test_moe_dispatch times out on the CPU runner", kind="issue")
DEADLOCK = "gloo deadlocks in all_to_all_single when one rank gets 0 rows; marking it gpu-only"


@pytest.mark.parametrize(
    ("title", "body", "kind", "context", "about"),
    [
        # a page labelled with another cluster is that cluster's; the run's own pages
        (None, PAGE.format("eval"), "message", ThreadContext(), False),
        (None, PAGE.format("dev"), "message", ThreadContext(), False),
        (None, PAGE.format("prod"), "message", ThreadContext(), True),
        # an issue asking for an alert tells what may happen
        (
            "wandb alert if step doesn't move in 10 min",
            "a hang should ping us, not sit for 30 min until the nccl watchdog",
            "issue",
            ThreadContext(),
            False,
        ),
        # a reply in a thread about a test explains the test's failure
        (None, DEADLOCK, "comment", CI_THREAD, False),
        (None, DEADLOCK, "comment", ThreadContext(title="Run log: stage 2", kind="issue"), True),
        # a report of the run, a side job owned as one, a machine of the kitchen
        (None, "the run died at ~20k, NCCL timeout on r12", "message", None, True),
        (
            "sft-03: OOM on 8 nodes at seq 8192",
            "sft-03 OOMs on the first step: CUDA out of memory. This is the SFT side job, not r7.",
            "issue",
            ThreadContext(),
            False,
        ),
        (None, "SEV1: espresso machine on 4 is down. IC: me", "message", None, False),
    ],
)
def test_another_clusters_page_a_plan_a_test_or_a_time_gone_by_are_no_incident(
    title: str | None, body: str, kind: str, context: ThreadContext | None, about: bool
) -> None:
    source = "discord" if kind == "message" else "github"
    if context is None:
        context = ThreadContext(title="train", prefix="train", kind="channel")
    if kind in ("issue", "comment"):
        context = replace(context, title=context.title or title or "", kind="issue")
    judged = enrich_text(title=title, body=body, kind=kind, source=source, context=context)
    assert judged.incident is about, judged


@pytest.mark.parametrize(
    "entry_id",
    [
        "c25475",  # "runbook: what to do when the run dies", its steps naming every fault
        "c25366",  # why a 7b run died "last spring"
        "c25440",  # "wandb alert if step doesn't move in 10 min"
        "c25248",  # "[FIRING:1] NodeDown (severity: critical)" on cluster=eval
        "c25536",  # "This is the SFT side job, not r7."
    ],
)
def test_the_fifteenth_rounds_lookalikes_are_no_incident(
    corpus: dict[str, dict[str, Any]], entry_id: str
) -> None:
    entry = corpus[entry_id]
    assert not entry["incident"]
    assert not enrich(entry).incident


AGENT_STATUS = (
    "🤖 **Run status — 09:00 UTC** _(run agent, posting on @lead's account)_\n\n"
    "### Anomalies\n"
    "- ⚠️ L30/E23 is taking 39.6% of layer-30 tokens (ideal 3.1%), still rising.\n"
    "- Global loss roughly flat (+0.001) so far; aux loss 2× baseline.\n"
    "- Not pausing on my own — {}\n"
)


AGENT_ALERT = (
    "🤖 **run-watch alert — loss spike not recovering** (run-watch agent)\n\n"
    "| step | loss | grad norm |\n|---|---|---|\n| 140,400 | 1.722 | 1.9 |\n"
    "| 140,652 | 4.87 | 61.3 |\n\nThe job is still training. {}\n"
)
AGENT_DAILY = (
    "🤖 grebe-agent daily — 2057-08-11\n\n**Progress:** step 134,750, MFU 42%.\n"
    "**Anomaly:** {}.\n**Flagging for a human:** I'm not confident what it is.\n"
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # a machine by its zero-padded or dashed name, and its end
        ("yes — b042 died mid-save. BMC shows a PSU fault. on it", "node-loss"),
        ("gpu-r2-n4 died an hour ago, job is requeuing", "node-loss"),
        ("v3 died on arrival, nobody liked it", None),  # a model, not a machine
        # a filesystem remounted read-only, however it is said
        ("the FS was remounted read-only at 19:52, the centre is on it", "storage"),
        ("das FS wurde daraufhin read-only remounted. Die sind dran", "storage"),
        ("EXT4-fs error (device md0): remounting filesystem read-only", "storage"),
        # an agent that flags a fault told in numbers and hands it to a person
        (AGENT_STATUS.format("needs a human decision."), "outage"),
        (AGENT_STATUS.format("will keep watching."), None),
        # an agent's alert, or an anomaly it names, handed to a person
        (AGENT_ALERT.format("Paging @treuel."), "outage"),
        (AGENT_ALERT.format("Will post again at 141k."), None),
        (AGENT_DAILY.format("tokens_counted per step dropped 0.28% after the restart"), "outage"),
        (AGENT_DAILY.format("none"), None),
    ],
)
def test_a_machine_by_its_name_a_read_only_remount_and_an_agent_asking_a_human(
    text: str, kind: str | None
) -> None:
    judged = enrich_text(title=None, body=text, kind="comment", source="github")
    assert judged.live_report is (kind is not None), judged
    assert judged.incident_kind == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # a centre's notice of a filesystem gone, its path between
        ("**[UNPLANNED] GPFS /gpfs/work unavailable on Sedge** since approx. 10:40 BST", "storage"),
        # a supervisor's log of a worker crash-looping, pasted with one word
        (
            "uh\n```\ndecode-worker[17] exited (1), restart 31\n"
            "decode-worker[44] exited (1), restart 29\n```",
            "crash",
        ),
        # a clean exit, an export on a workstation, an offline batch
        ("manual ckpt written + manifest verified. job exited 0 at 05:19. see you at 18:30", None),
        ("my HF export failed at 61%, `OSError: [Errno 28] No space left` on my workstation", None),
        ("recaption job got OOM-killed again on prep-a100-04 (offline batch). rerunning 017", None),
        # a month of a year gone by, and what happened asked about
        ("no, Feb '55 was different: the metadata servers ran out of memory during a scan", None),
        ("someone mentioned the night the learner hung for 5 hours, what happened exactly?", None),
    ],
)
def test_the_rules_alone_read_a_centres_notice_a_crash_loop_and_others_work(
    text: str, kind: str | None
) -> None:
    judged = enrich_text(title=None, body=text, kind="message", source="discord", learned=False)
    assert judged.live_report is (kind is not None), judged
    assert judged.incident is (kind is not None), judged  # not even about an incident
    assert judged.incident_kind == kind


@pytest.mark.parametrize(
    ("product", "run"),
    [
        (
            "declaring inc-13: teal-chat API 5xx at 8% since 09:02, all regions. IC: @callum",
            "declaring inc-13: main down since 09:02, NCCL timeout on r12. IC: @callum",
        ),
        (
            "inc-13 resolved 10:15. 73 min of elevated errors for chat API customers.",
            "inc-13 resolved 10:15. main was down 73 min after the NCCL timeout, resumed from 41k.",
        ),
        (
            "inc-16 update 1: LB health checks flapping. failed over EU traffic to eu-central",
            "inc-16 update 1: IB links flapping on r12. main restarted from 41,000 on the spares",
        ),
    ],
)
def test_a_products_incident_told_beside_the_run_is_not_about_the_runs(
    product: str, run: str
) -> None:
    told = enrich_text(title=None, body=product, kind="message", source="discord")
    assert not told.incident and told.tag != "incident"
    assert enrich_text(title=None, body=run, kind="message", source="discord").incident


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # said in Japanese, mixed into English
        ("止まってる？ step 94,213 から進んでないように見えます", "hang"),
        ("schistのjobがまた止まった", "hang"),
        ("run 落ちてません？ wandb で crashed になってます、106.6k", "crash"),
        ("ckpt保存失敗 at 88k, quota? lfs quota 見ます", "checkpoint-failed"),
        ("1.3B proxy の 32k context ablation、OOM で落ちました…", None),  # an ablation's
        ("loss が下がってるのを見ると落ち着く", None),  # "calms me down"
        # a page to a person
        ("⚠️ eu-west4 capacity unavailable for 3h00m · paging @infra-oncall", "outage"),
        ("the gap in the charts is on purpose, please don't page @oncall for it", None),
        # a part of the run slowing since a time
        ("checkpoint saves have been getting slower since ~06:00: 48 s, 3m10s, 6m40s", "outage"),
        ("saves got faster since the 06:00 restart", None),
    ],
)
def test_japanese_words_a_page_and_a_part_getting_slower(text: str, kind: str | None) -> None:
    judged = enrich_text(title=None, body=text, kind="message", source="discord")
    assert judged.live_report is (kind is not None), judged
    if kind is not None:
        assert judged.incident_kind == kind


@pytest.mark.parametrize(
    "text",
    [
        "spot reclaim: 4 nodes in us-west2, job rescheduled, resumed at 58,600 after 7m",
        "us-east5: 64 nodes terminated (host maintenance, scheduled), sync continues on two",
    ],
)
def test_an_orchestrators_routine_reclaim_or_scheduled_maintenance_is_no_incident(
    text: str,
) -> None:
    judged = enrich_text(title=None, body=text, kind="message", source="discord")
    assert not judged.incident and not judged.live_report
    # a reclaim the run did not come back from is one
    gone = "spot reclaim: 12 nodes in eu-west4, job waiting for capacity"
    assert enrich_text(title=None, body=gone, kind="message", source="discord").live_report


def test_a_missing_checkpoint_found_by_an_eval_is_the_runs() -> None:
    context = ThreadContext(
        title="[eval] 300k: skipped, checkpoint step_300000 missing", labels=("eval",), kind="issue"
    )
    body = "**Status:** skipped\n**Reason:** `.metadata` not present after 36 polls"
    judged = enrich_text(
        title=context.title, body=body, kind="issue", source="github", context=context
    )
    assert judged.live_report and judged.incident_kind == "checkpoint-failed"
    fine = ThreadContext(title="[eval] 300k: MMLU 63.0, GSM8K 51.2", labels=("eval",), kind="issue")
    table = "| task | 300k |\n|---|---|\n| MMLU | 63.0 |"
    assert not enrich_text(
        title=fine.title, body=table, kind="issue", source="github", context=fine
    ).live_report


WEEKLY = (
    "## Where we are\n- Step 44,200, 6,240 steps this week.\n\n## What happened\n"
    "- **Tuesday's hang** (#418): one rank stuck on a Lustre lock, ~3.5h lost. Closed.\n"
    "{}\n## Risks\n- Spare pool 10 nodes.\n"
)


def test_a_weekly_digest_recaps_its_week_and_reports_only_what_it_sets_apart() -> None:
    context = ThreadContext(title="Week 10: where kittiwake stands", kind="issue")
    recap = WEEKLY.format("")
    told = enrich_text(
        title=context.title, body=recap, kind="issue", source="github", context=context
    )
    assert not told.incident and not told.live_report
    now = WEEKLY.format(
        "\n## Right now\nCheckpoint saves have been getting slower since ~06:00. Tuomas is "
        "looking; no action needed from anyone else yet.\n"
    )
    assert enrich_text(
        title=context.title, body=now, kind="issue", source="github", context=context
    ).live_report


def test_a_design_doc_about_no_particular_breakage_is_about_no_incident() -> None:
    doc = (
        "Status: draft. This is about how the launcher and on-call should behave when something "
        "breaks, not about any particular breakage. Today an Xid 79 on one node becomes a page."
    )
    assert not enrich_text(title=None, body=doc, kind="comment", source="github").incident


HEALTH_CHECK = (
    "🤖 **watchbird** · hero health check · step 212,000\n"
    "_automated check, posted from @ana's account._\n\n**Status: {}**\n\n"
    "| metric | last 6h |\n|---|---|\n| tok/s | 1.41M |\n| stragglers | 0 / 512 |\n\n"
    "<sub>Legend: 🔴 straggler = rank slower than 1.2× the median · ⚠️ loss spike = a jump "
    "not recovered in 200 steps · ⏸ stalled = no new step for 20 min.</sub>\n"
)


@pytest.mark.parametrize(
    ("status", "live"),
    [
        # a legend says what the marks would mean: it flags nothing
        ("✅ all green", False),
        ("🟡 1 possible straggler", False),  # a maybe, not the agent's verdict
        ("⏸ stalled — planned maintenance", False),
        # the agent's own verdict in its status field, however the lines below tell it
        ("🔴 1 straggler", True),
        ("💾 disk — next save will not fit", True),
        ("⚠️ loss spike, not recovering", True),
    ],
)
def test_an_agents_status_field_is_its_verdict_and_a_legend_flags_nothing(
    status: str, live: bool
) -> None:
    text = HEALTH_CHECK.format(status)
    judged = enrich_text(title="[health] hero", body=text, kind="issue", source="github")
    assert judged.live_report is live, judged
    assert judged.incident is live


@pytest.mark.parametrize(
    "text",
    [
        "Saves at 90k and 91k: 256/256 shards, 33s / 36s stall.",
        "Async save is live since 88k; training stall per save is 12 s now.",
    ],
)
def test_a_saves_pause_measured_is_no_stall_of_the_run(text: str) -> None:
    judged = enrich_text(title=None, body=text, kind="message", source="discord", learned=False)
    assert not judged.live_report, judged
    # the word itself still reports: "stalled since 04:10"
    stalled = "training stalled since 04:10, no new step for 40 min"
    assert enrich_text(
        title=None, body=stalled, kind="message", source="discord", learned=False
    ).live_report


@pytest.mark.parametrize(
    ("title", "opening"),
    [
        ("Stage 1 retrospective: what kept breaking", "Seven faults, each with its own issue."),
        ("Retro: hero ops, Mar 3 – Apr 14", "What cost us time, in one table."),
        ("Where the time went", "Looking back over the last six weeks of the run."),
    ],
)
def test_a_retrospective_over_a_stretch_is_about_no_one_incident(title: str, opening: str) -> None:
    body = (
        f"{opening} The two NCCL hangs (#212, #230) cost the most: 9h between them, and the "
        "03-05 one was found in chat, not by the alert."
    )
    assert reviews_a_period(opening, title)
    context = ThreadContext(title=title, kind="issue")
    judged = enrich_text(title=title, body=body, kind="issue", source="github", context=context)
    assert not judged.incident, judged


def test_a_general_question_in_an_incidents_thread_is_not_that_incident() -> None:
    context = ThreadContext(title="r7n3: uncorrectable ECC, job died at 88,012", kind="issue")
    ask = "General question, not just about this one: should we save every 500 steps from now on?"
    assert not enrich_text(
        title=None, body=ask, kind="comment", source="github", context=context
    ).incident
    follow_up = "Drained r7n3 and restarted from 88,000; the job is stepping again."
    assert enrich_text(
        title=None, body=follow_up, kind="comment", source="github", context=context
    ).incident


@pytest.mark.parametrize(
    ("text", "live"),
    [
        # a pause measured in seconds while a save committed
        ("checkpoint 1,500 committed in the background, training paused 9 s, all shards OK", False),
        # a runbook's rules: what to do when it happens
        ("on-call cheat sheet: `job exited` / any Xid / NCCL timeout → page me", False),
        ("Proposal: post `run X: step stalled at N since HH:MM` when two polls agree.", False),
        # the same words as a report
        ("training paused 40 min ago and has not resumed, NCCL timeout on rank 12", True),
        ("step time crept up overnight, 56 s now. is anyone touching the fabric?", True),
    ],
)
def test_a_measured_pause_a_runbooks_rule_and_a_proposal_are_no_report(
    text: str, live: bool
) -> None:
    judged = enrich_text(title=None, body=text, kind="message", source="discord", learned=False)
    assert judged.live_report is live, judged


def test_an_agents_anomaly_naming_the_issue_of_a_config_is_handed_to_a_person() -> None:
    daily = (
        "🤖 Daily run log, day 4\n\n**Progress:** step 6,100 → 7,700\n\n"
        "**⚠️ Anomaly — please check:** `optim/lr` is 31% of the configured peak and still "
        "rising. The config in #21 has `warmup_steps: 20000`; the run card says 2,000.\n"
    )
    assert enrich_text(
        title=None, body=daily, kind="comment", source="github", learned=False
    ).live_report
    # a flag that points where it is handled is told elsewhere
    handled = daily.replace("The config in #21 has", "(#21) has")
    assert not enrich_text(
        title=None, body=handled, kind="comment", source="github", learned=False
    ).live_report


def test_a_metric_held_flat_is_no_run_held() -> None:
    for text in (
        "Network: per-leaf busbw flat since the optic swap on the 5th.",
        "LR: hold active, 1.7e-4 flat until 152,000.",
    ):
        assert not enrich_text(
            title=None, body=text, kind="message", source="discord", learned=False
        ).live_report


def test_a_pasted_df_of_a_full_mount_is_a_full_disk() -> None:
    full = (
        "꽉 찼어요\n```\n$ df -h /ckpt\nFilesystem  Size  Used Avail Use% Mounted on\n"
        "vast-ckpt  800T  800T     0 100% /ckpt\n```"
    )
    judged = enrich_text(title=None, body=full, kind="message", source="discord", learned=False)
    assert judged.live_report and judged.incident_kind == "storage", judged
    roomy = full.replace("800T     0 100%", "612T  188T  77%")
    assert not enrich_text(
        title=None, body=roomy, kind="message", source="discord", learned=False
    ).live_report


def _live(text: str, *, title: str | None = None, kind: str = "message") -> bool:
    source = "discord" if kind == "message" else "github"
    return enrich_text(title=title, body=text, kind=kind, source=source, learned=False).live_report


@pytest.mark.parametrize(
    ("text", "live"),
    [
        # an alert named by what is missing, then its line: the name is no denial
        ("🔴 **[dunlin-45b/main-r3] No heartbeat**\nNo metrics logged for 15 minutes.", True),
        ("No metrics logged for 15 minutes on main.", True),
        ("we have never had no metrics logged for 15 minutes on main", False),
        # a heartbeat missed, as a sync monitor says it
        ("⚠ site hlx missed outer heartbeat ×3 (outer 1,576), relays unreachable", True),
        ("a health check treats a missed heartbeat as a hang and restarts it", False),
    ],
)
def test_an_alert_named_by_what_is_missing(text: str, live: bool) -> None:
    assert _live(text) is live


@pytest.mark.parametrize(
    ("text", "live"),
    [
        ("hlx↔n3 is dropping packets, ~3% loss since around 06:10.", True),
        ("n3↔brd flapped twice, 02:14 and 02:16, ~40s each. retried once and went through", True),
        ("heads up: spine-3 in hall B is flapping, CRC errors on 6 uplinks since ~02:50.", True),
        ("the bandwidth test is planned for 02:00; if a link flaps we stop it", False),
        ("we should alert when a spine is flapping for more than a minute", False),
    ],
)
def test_a_link_dropping_packets_or_flapping(text: str, live: bool) -> None:
    assert _live(text) is live


def test_a_save_to_a_destination_that_failed() -> None:
    title = "outer ckpt 1,730: save to n3 replica + cold bucket failed (403)"
    assert _live("1,730 only exists on hlx and brd right now", title=title, kind="issue")
    fine = "outer ckpt 1,730: save to n3 replica + cold bucket verified"
    assert not _live("1,730 exists on all four targets", title=fine, kind="issue")


def test_a_rate_dropped_in_an_alerts_window_is_now() -> None:
    alert = "🔔 **[ouzel] `rollout/samples_per_sec` dropped 68% (15 min window)**\nValue: 41.2"
    assert _live(alert)
    # a rate named as a monitor names it, told without a window or a time: not dated to now
    assert not _live("in the ablation, samples_per_sec dropped 68% with the longer prompts")


@pytest.mark.parametrize(
    ("text", "live"),
    [
        ("aviso: el MDS0 de lustre está degradado desde ~01:20, latencias de 20–30 s", True),
        ('el job sigue en "building GPT dataset index" hace 50 min. no avanza nada.', True),
        (
            "¿alguien sabe por qué el job 4452210 aparece como PREEMPTED en sacct a las 02:13? "
            "no teníamos nada agendado",
            True,
        ),
        ("¿preempted? no, fue el sandbox de bio", False),
    ],
)
def test_spanish_reports_and_a_question_that_presumes_the_fault(text: str, live: bool) -> None:
    assert _live(text) is live


def test_a_tally_over_months_and_a_setting_changed_are_no_reports() -> None:
    assert not _live("a117 has died 3 times since november. it's a pet now")
    assert _live("a117 has died 3 times since 02:00, draining it")
    title = "Separate NCCL timeouts for learner collectives and the weight broadcast"
    assert not _live("Right now one timeout covers everything.", title=title, kind="issue")
    assert _live("seeing NCCL timeouts on rank 12 since 03:10, job is stuck")


def test_a_months_retro_by_its_name() -> None:
    assert reviews_a_period("Retro over all of May, not any single incident.")
    assert reviews_a_period("", "May retro: 5 interruptions, ~11h lost")
    assert not reviews_a_period("we may review the save path after this one")


@pytest.mark.parametrize(
    ("text", "live"),
    [
        ("bhai run gir gaya. gpu-a03-09 ping nahi ho raha, node mar gaya lagta hai", True),
        ("रन फिर से गिर गया 😩 slurm me DOWN dikha raha hai", True),
        ("gpu-b12-01 ping nahi ho raha since 02:10", True),
        # cricket, not the run: "RCB ka run rate gir gaya"
        ("RCB ka run rate gir gaya yaar, match dekh rahe ho?", False),
    ],
)
def test_hinglish_reports(text: str, live: bool) -> None:
    assert _live(text) is live


@pytest.mark.parametrize(
    ("text", "live"),
    [
        ("⚠️ **64/64 nodes unreachable** — instance state `shutting-down`", True),
        ("0/64 nodes unreachable, deep check green", False),
        ("throughput: 0 tok/s since 03:12 UTC; heartbeat 128/128 ranks", True),
        # the same field at zero while the writer's own work runs, the alert muted for it
        (
            "🔴 pipemon · egress\npipeline egress 0 tok/s for 10m\n_alerts muted until 12:00_",
            False,
        ),
        # the figures belong to the metric nearest them, here the step time
        (
            "pipemon\negress 402k tok/s · demand 1.04M tok/s\n"
            "step time 4.0s → 9.6s (last 50 steps)",
            True,
        ),
        ("all nodes sitting in neuronx-cc for the next hour is expected, planned recompile", False),
    ],
)
def test_a_monitors_fields_and_what_it_says_is_expected(text: str, live: bool) -> None:
    assert _live(text) is live


def test_an_eval_table_with_checkpoints_down_the_side() -> None:
    table = "ckpt  asr-read  MMLU  tts\n680k   5.7  45.0  8.4\n700k   5.6  45.2  8.3"
    assert reports_scores(table)
    assert not reports_scores("step   loss   gnorm\n680k   2.1  0.3\n700k   2.2  0.4")


def test_right_now_sets_apart_a_lead_in_not_the_status_quo() -> None:
    proposal = (
        "Not for this week. Right now the health agent only acts on uncorrected ECC events.\n"
        "Proposal: page on the corrected rate."
    )
    assert buried_report(proposal) is None
    review = "Approving, the design is fine.\nRight now: the main run has been down since 06:20"
    assert buried_report(review) is not None
