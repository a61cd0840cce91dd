"""An issue that asked about a symptom is marked once its thread tells the incident
(`bot.enrich.hindsight`, `bot.process.hindsight`), on a real store through the pipeline."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.enrich.hindsight import asks_about_now, names_a_day_gone, reported_in_hindsight
from bot.enrich.learned import LiveModel
from bot.models import Event, RunInfo
from bot.process.pipeline import enrich_pending
from bot.store import Store

THREAD = "github:acme/hero#41"
ASKED = (
    "Why is the loss panel flat since 01:30?",
    "I happened to look at W&B: the last logged step of the main run is 212,340 at 01:29 UTC "
    "and nothing since. Is that expected during the maintenance window?",
)
TOLD = (
    "Not expected: the 01:30 restart loaded the 211k checkpoint because the 212k save was "
    "incomplete after the Lustre hiccup. We lost about 1.3k steps; the job is running again."
)
PROPOSED = (
    "Proposal: page on-call when the run is down for more than 20 minutes",
    "We should page whoever is on call when the trainer heartbeat is older than 20 minutes. "
    "Today we only find out in the morning.",
)


def issue(at: datetime, title: str, body: str) -> Event:
    return Event(
        "hero", "github", "issue:41", "issue", at, author="lena", ref="#41", title=title,
        body=body, thread=THREAD,
    )  # fmt: skip


def comment(at: datetime, body: str = TOLD, ident: int = 9001) -> Event:
    return Event(
        "hero", "github", f"comment:{ident}", "comment", at, author="sam", ref="#41", body=body,
        thread=THREAD,
    )  # fmt: skip


async def stored_issue(store: Store) -> Event:
    event = await store.events.get_by_external("hero", "github", "issue:41")
    assert event is not None
    return event


@pytest.fixture
async def hero(store: Store) -> Store:
    await store.runs.upsert(RunInfo(slug="hero", name="Hero"))
    return store


async def test_the_question_is_marked_once_a_reply_tells_the_incident(
    hero: Store, now: datetime
) -> None:
    await hero.events.upsert_many([issue(now, *ASKED)])
    await enrich_pending(hero)
    before = await stored_issue(hero)
    assert not before.incident and before.tag != "incident"  # a question, by itself

    await hero.events.upsert_many([comment(now + timedelta(hours=3))])
    await enrich_pending(hero)
    after = await stored_issue(hero)
    assert after.incident and after.tag == "incident"
    assert not after.live_report and after.severity is None  # the timeline's mark, no alert
    assert after.summary == before.summary and after.enriched_by == "rules"


async def test_a_reply_stored_first_marks_the_issue_when_it_arrives(
    hero: Store, now: datetime
) -> None:
    await hero.events.upsert_many([comment(now + timedelta(hours=3))])
    await enrich_pending(hero)
    await hero.events.upsert_many([issue(now, *ASKED)])
    await enrich_pending(hero)
    assert (await stored_issue(hero)).incident


@pytest.mark.parametrize(
    ("opened", "later", "enriched_by"),
    [
        (ASKED, timedelta(hours=13), "rules"),  # told the next day: not that report
        (PROPOSED, timedelta(hours=1), "rules"),  # a proposal hosting an outage stays one
        (ASKED, timedelta(hours=3), "llm:enrich@1"),  # a model's reading is its own
    ],
)
async def test_what_stays_unmarked(
    hero: Store, now: datetime, opened: tuple[str, str], later: timedelta, enriched_by: str
) -> None:
    await hero.events.upsert_many([issue(now, *opened)])
    await enrich_pending(hero)
    first = await stored_issue(hero)
    if enriched_by != "rules":
        await hero.events.set_enrichment(
            first, summary="A question about the loss panel.", tag="evals", incident=False,
            severity=None, newsworthy=True, enriched_by=enriched_by,
        )  # fmt: skip
    await hero.events.upsert_many([comment(now + later)])
    await enrich_pending(hero)
    after = await stored_issue(hero)
    assert not after.incident and after.tag != "incident"
    told = await hero.events.get_by_external("hero", "github", "comment:9001")
    assert told is not None and told.incident  # the reply itself is about the incident


def test_only_an_issue_and_a_comment_of_its_thread_count(now: datetime) -> None:
    asked, told = issue(now, *ASKED), comment(now + timedelta(hours=2))
    assert reported_in_hindsight(asked, told)
    elsewhere = Event(
        "hero", "github", "comment:7", "comment", told.at, body=TOLD, thread="github:acme/hero#42"
    )
    pull = Event(
        "hero", "github", "issue:41", "pull", now, title=ASKED[0], body=ASKED[1], thread=THREAD
    )
    assert not reported_in_hindsight(asked, elsewhere)
    assert not reported_in_hindsight(pull, told)
    assert not reported_in_hindsight(asked, comment(now - timedelta(minutes=5)))


ALERT = (
    "[FIRING:1] KilnJobNotRunning kiln-310b (prod)",
    "**Status:** 🔥 Firing\n\nThe training job kiln-310b has not been running for 10 minutes.",
)


async def test_an_alert_its_reply_dismisses_loses_its_mark_not_its_alert(
    hero: Store, now: datetime
) -> None:
    await hero.events.upsert_many([issue(now, *ALERT)])
    await enrich_pending(hero)
    before = await stored_issue(hero)
    assert before.incident and before.live_report  # an alert, as far as anyone knows

    dismissal = "Not an incident: the planned decay-start stop (#696). Closing."
    await hero.events.upsert_many([comment(now + timedelta(minutes=20), dismissal)])
    await enrich_pending(hero)
    after = await stored_issue(hero)
    assert not after.incident and after.tag not in ("incident", None)
    assert after.live_report  # the alert it raised stands; only the timeline's mark changes


async def test_a_dismissal_beside_a_reply_about_the_incident_changes_nothing(
    hero: Store, now: datetime
) -> None:
    await hero.events.upsert_many([issue(now, *ALERT)])
    await enrich_pending(hero)
    replies = [
        comment(now + timedelta(minutes=10), "False alarm, the exporter restarted.", 1),
        comment(now + timedelta(minutes=40), TOLD, 2),
    ]
    await hero.events.upsert_many(replies)
    await enrich_pending(hero)
    assert (await stored_issue(hero)).incident


async def test_an_alert_dismissed_first_loses_its_mark_whatever_its_thread_says_after(
    hero: Store, now: datetime
) -> None:
    await hero.events.upsert_many([issue(now, *ALERT)])
    await enrich_pending(hero)
    in_thread = {"thread_title": ALERT[0], "thread_kind": "issue"}  # as the GitHub source records
    replies = [
        replace(c, extra=in_thread)
        for c in (
            comment(now + timedelta(minutes=10), "noise, closing. the exporter restarted", 1),
            # marked for its thread, not for words of its own about a failure
            comment(now + timedelta(minutes=40), "yep, a PR is coming on the watcher's side", 2),
        )
    ]
    await hero.events.upsert_many(replies)
    await enrich_pending(hero)
    after = await hero.events.get_by_external("hero", "github", "comment:2")
    assert after is not None and after.incident  # the thread's follow-up, as the rules read it
    assert not (await stored_issue(hero)).incident


@pytest.mark.parametrize(
    ("title", "asks"),
    [
        ("Should the run still be writing checkpoints? The newest one is step 300,000", True),
        ("Is the run paused for maintenance?", True),
        ("What happened in the December outage that cost three days?", False),
        ("what happened 06-21? was that an outage?", False),
        ("Question: the restart loop mentioned in your blog post two weeks ago?", False),
        ("Checkpoint retention for stage 2", False),
    ],
)
def test_a_question_about_the_run_now_hints_at_a_report(title: str, asks: bool) -> None:
    assert asks_about_now(title) is asks


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("There's a flat stretch in the loss plot on Sep 12 around step 245k", True),
        ("the loss curve has a gap around 1 Jan 03:00–05:00 UTC. Was that planned?", True),
        ("stuck since Sep 19 22:40, nothing logged", False),  # the evening before: now
        ("the run is stuck since 20 sept", False),
        ("no day named at all, just the step 245k", False),
    ],
)
def test_a_post_that_names_a_day_gone_by_asks_about_the_past(text: str, gone: bool) -> None:
    assert names_a_day_gone(text, datetime(2048, 9, 20, 9, 30, tzinfo=UTC)) is gone


def chat(i: int, at: datetime, text: str, author: str = "ana") -> Event:
    return Event(
        "hero", "discord", f"msg:{i}", "message", at, author=author, ref="#hero-run",
        url=f"https://discord.com/channels/1/2/{i}", body=text, thread="discord:2",
    )  # fmt: skip


NOTICED = (
    "hey, the tokens counter on the website is stuck at 1.94T since i woke up and the chart "
    "stops around 06:00. did something break?"
)
CONFIRMED = "yes: the trainer died at 05:58 with an NCCL timeout on r12, restarting from 81k now"


@pytest.fixture
def rules_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The learned scorer out of the way (it never adds a report, and hints nothing), so what
    is tested is the pass, not where a refit leaves the scorer on these sentences."""
    silent = LiveModel(bias=-30.0, weights={}, threshold=0.55, over=0.95)
    monkeypatch.setattr("bot.enrich.rules.load_model", lambda: silent)
    monkeypatch.setattr("bot.enrich.hindsight.load_model", lambda: silent)


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    ("first", "later", "marked"),
    [
        (NOTICED, timedelta(minutes=12), True),
        (NOTICED, timedelta(minutes=45), False),  # another conversation by then
        ("what was the flat stretch in the loss curve around 20 Feb?", timedelta(minutes=5), False),
        ("anyone grabbing lunch?", timedelta(minutes=2), False),  # nothing of a run in it
        # the run said to be well: no first word of what comes next
        (
            "i have the pager till 09:00, handoff says nothing pending, run at 208.6k",
            timedelta(minutes=9),
            False,
        ),
        ("main or px3? main looks fine from here", timedelta(minutes=3), False),
        # a warning relayed into the channel pages nobody: no first word of the crash after it
        (
            "**[FIRING:1] NodeGPUTemperatureHigh** (severity: warning)\n"
            "**Labels:** alertname=NodeGPUTemperatureHigh, cluster=prod, instance=gpu-r03-n05\n"
            "**Summary:** GPU temperature 87C > 87C",
            timedelta(minutes=5),
            False,
        ),
    ],
)
async def test_a_chat_message_is_the_first_word_of_the_incident_its_channel_tells(
    hero: Store, now: datetime, first: str, later: timedelta, marked: bool
) -> None:
    await hero.events.upsert_many([chat(1, now, first)])
    await enrich_pending(hero)
    before = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert before is not None and not before.incident and before.newsworthy
    await hero.events.upsert_many([chat(2, now + later, CONFIRMED, "bo")])
    await enrich_pending(hero)
    told = await hero.events.get_by_external("hero", "discord", "msg:2")
    assert told is not None and told.incident
    after = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert after is not None and after.incident is marked
    assert (after.tag == "incident") is marked and not after.live_report


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    ("later", "author", "marked"),
    [
        (timedelta(minutes=1), "ana", True),  # its writer's next bubble tells what
        (timedelta(minutes=1), "bo", False),  # someone else's report: not its words
        (timedelta(minutes=6), "ana", False),  # a bubble is sent within a minute or two
    ],
)
async def test_a_bare_alarm_is_the_first_word_of_its_writers_next_bubble(
    hero: Store, now: datetime, later: timedelta, author: str, marked: bool
) -> None:
    await hero.events.upsert_many([chat(1, now, "uh oh"), chat(2, now + later, CONFIRMED, author)])
    await enrich_pending(hero)
    told = await hero.events.get_by_external("hero", "discord", "msg:2")
    assert told is not None and told.incident
    alarm = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert alarm is not None and alarm.incident is marked and not alarm.live_report


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    ("first", "later", "shown"),
    [
        # told after a pause (within a burst the two are one conversation with its report)
        ("uhh https://grafana.lab.dev/d/hero/fleet?r=31", 12, "uhh — grafana.lab.dev/d/hero/fleet"),
        ("👀 https://wandb.ai/lab/hero/runs/main?p=1", 14, "👀 — wandb.ai/lab/hero/runs/main"),
        ("https://grafana.lab.dev/d/hero/fleet", 12, None),  # a bare link says nothing
        ("uhh https://grafana.lab.dev/d/hero/fleet", 45, None),  # another conversation by then
        ("lol https://www.youtube.com/watch?v=x", 12, None),  # no panel of the run
    ],
)
async def test_a_link_to_the_runs_panels_with_a_word_is_the_first_word_once_told(
    hero: Store, now: datetime, first: str, later: int, shown: str | None
) -> None:
    await hero.events.upsert_many([chat(1, now, first)])
    await enrich_pending(hero)
    before = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert before is not None and not before.incident and not before.newsworthy  # too short
    await hero.events.upsert_many([chat(2, now + timedelta(minutes=later), CONFIRMED, "bo")])
    await enrich_pending(hero)
    after = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert after is not None and after.incident is (shown is not None)
    if shown is not None:  # on the timeline now, with its words and the panel, never bare
        assert after.newsworthy and after.tag == "incident" and after.summary == shown
    else:
        assert not after.newsworthy


PAGE = (
    "🔥 **[FIRING:4] NodeDown** (severity=page)\n> nodes `hx-r03n01`…`hx-r03n04` unreachable for 3m"
)


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    ("reply", "later", "marked"),
    [
        ("ignore, that's the planned drain. job is on the spares and moving", 3, False),
        ("false alarm, the exporter restarted", 6, False),
        ("ignore, that's the planned drain", 40, True),  # too late to be its reply
        ("real, r03 lost power. restarting from 148k on the spares", 3, True),
    ],
)
async def test_a_chat_alert_its_next_message_dismisses_loses_its_mark_not_its_alert(
    hero: Store, now: datetime, reply: str, later: int, marked: bool
) -> None:
    await hero.events.upsert_many([chat(1, now, PAGE, "am-relay")])
    await enrich_pending(hero)
    before = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert before is not None and before.incident and before.live_report
    await hero.events.upsert_many([chat(2, now + timedelta(minutes=later), reply, "tavi")])
    await enrich_pending(hero)
    after = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert after is not None and after.incident is marked
    assert after.live_report  # the alert it raised stands; only the timeline's mark changes
    assert (after.tag == "incident") is marked


@pytest.mark.usefixtures("rules_alone")
async def test_a_dismissal_after_another_message_is_not_the_alerts_reply(
    hero: Store, now: datetime
) -> None:
    await hero.events.upsert_many(
        [
            chat(1, now, PAGE, "am-relay"),
            chat(2, now + timedelta(minutes=1), "looking", "tavi"),
            chat(3, now + timedelta(minutes=2), "false alarm, the exporter restarted", "bo"),
        ]
    )
    await enrich_pending(hero)
    alert = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert alert is not None and alert.incident


async def said_then_answered(store: Store, first: Event, then: Event) -> tuple[Event, Event, Event]:
    """`first` stored and enriched alone, then `then`: `first` as it was read before the
    answer, and both as the pass leaves them after it."""
    await store.events.upsert_many([first])
    await enrich_pending(store)
    before = await store.events.get_by_external("hero", "discord", first.external_id)
    await store.events.upsert_many([then])
    await enrich_pending(store)
    after = await store.events.get_by_external("hero", "discord", first.external_id)
    answer = await store.events.get_by_external("hero", "discord", then.external_id)
    assert before is not None and after is not None and answer is not None
    return before, after, answer


WARNING = (
    "🔥 **[FIRING:1] HeroStepTimeHigh** (severity=warning)\n"
    "> p50 step time 22.8s > 20s for 5m\n> job=hero-main"
)
REAL = (
    "real, and not the save pause this time: one straggler. hx-r05n08 gpu3 sits at 88°C and "
    "clocks down to 1.1 GHz, swapping it at the next save"
)


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    ("reply", "author", "later", "marked"),
    [
        (REAL, "tavi", 4, True),
        ("^ confirmed, tok/s is down a third on the main run", "tavi", 12, True),
        ("this one's real. draining r05n08", "bo", 20, True),
        (REAL, "tavi", 45, False),  # another conversation by then
        (REAL, "am-relay", 4, False),  # the relay's own next line answers nothing
        ("real quick question: who has the pager tonight?", "tavi", 4, False),
        ("real? looks like the save pause to me", "tavi", 4, False),
        ("not real, that's the 20k save pause", "tavi", 4, False),
    ],
)
async def test_a_warning_another_writer_calls_real_is_marked_with_its_answer(
    hero: Store, now: datetime, reply: str, author: str, later: int, marked: bool
) -> None:
    before, alert, answer = await said_then_answered(
        hero,
        chat(1, now, WARNING, "am-relay"),
        chat(2, now + timedelta(minutes=later), reply, author),
    )
    assert not before.incident and before.newsworthy  # a warning
    assert alert.incident is marked and (alert.tag == "incident") is marked
    assert not alert.live_report  # the timeline's mark, never an alert after the fact
    if marked:
        assert answer.incident and answer.tag == "incident"


@pytest.mark.usefixtures("rules_alone")
async def test_only_the_channels_next_message_answers_an_alert(hero: Store, now: datetime) -> None:
    await hero.events.upsert_many(
        [
            chat(1, now, WARNING, "am-relay"),
            chat(2, now + timedelta(minutes=3), "looking", "tavi"),
            chat(4, now + timedelta(minutes=5), REAL, "bo"),
        ]
    )
    await enrich_pending(hero)
    alert = await hero.events.get_by_external("hero", "discord", "msg:1")
    assert alert is not None and not alert.incident  # its answer was "looking", no verdict


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(("reply", "marked"), [(REAL, True), ("noise, that's the sweep", False)])
async def test_a_wandb_alert_another_writer_calls_real_is_marked(
    hero: Store, now: datetime, reply: str, marked: bool
) -> None:
    alert = "🔔 **W&B Alert · hero-main · train/loss > 1.95 for 200 steps**\ncurrent 1.987"
    before, after, _ = await said_then_answered(
        hero, chat(1, now, alert, "wandb-relay"), chat(2, now + timedelta(minutes=3), reply, "tavi")
    )
    assert not before.incident
    assert after.incident is marked


REPORT = "r12n4 died, NCCL timeout on every rank talking to it. job is down at 41,220"


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    ("later", "text", "marked"),
    [
        (10, "swapped r12n4 for a spare, it came up clean", True),  # names the machine
        (20, "on it, pulling the nccl logs", True),  # a responder's first words
        (25, "anyone grabbing lunch?", False),  # nothing of it
        (12, "false alarm on my side, that was the eval box", False),  # dismissed
        (90, "swapped r12n4 for a spare, it came up clean", False),  # after the hour
    ],
)
async def test_a_message_that_follows_up_a_live_report_is_about_its_incident(
    hero: Store, now: datetime, later: int, text: str, marked: bool
) -> None:
    report, _, after = await said_then_answered(
        hero, chat(1, now, REPORT, "ana"), chat(2, now + timedelta(minutes=later), text, "bo")
    )
    assert report.live_report and report.incident
    assert after.incident is marked
    assert (after.tag == "incident") is marked
    assert not after.live_report  # the timeline's mark, never an alert
