"""The narrative's facts are chosen by what matters, on a real store filled the way the GitHub
source writes it: an open pull request whose comments cut a proposed value from 0.05 to 0.02,
an older issue many people argue in, a newer quiet one, and a busy channel of newer chat. The
threads under discussion, their state, who drives them and what changed reach the model's
request within the same budget, and the no-key narrative tells them in whole sentences with
the last restart's cause in the reporter's words."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bot.llm.grounded import render_prompt
from bot.models import RESTORE, Event, Incident, IncidentDetails, ReportedCause, Restart
from bot.narrative.discussions import find_change, select_discussions
from bot.narrative.facts import (
    NARRATIVE_HIGHLIGHT_CHARS,
    NARRATIVE_HIGHLIGHTS,
    select_narrative_highlights,
)
from bot.narrative.format import whole_sentences
from bot.services.narrative import build_narrative_facts, current_narrative
from bot.services.status import build_status
from bot.sources.github_threads import comment_event, issue_event, thread_context
from bot.store import Store
from tests.services.test_plain_status import add_events
from tests.services.test_status import NOW, seed

REPO = "marin-community/marin"
API = f"https://github.com/{REPO}"
CUT = (
    "Lowered the proposed weight decay from 0.05 to 0.02 after the checkpoint test showed how "
    "much the model leans on the attention gate. The pull request now anneals 0.02 linearly "
    "to zero across the run, and we can raise it later if the norm keeps growing."
)
CAUSE = (
    "An InfiniBand port fault on host s55sxs64 made the node's link flap, and the training job "
    "lost it after step 50195. Iris restarted the job from the last checkpoint."
)
CAUSE_URL = f"{API}/issues/8506#issuecomment-990001"


def iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def thread(number: int, title: str, author: str, hours: float, *, pull: bool) -> dict[str, Any]:
    at = NOW - timedelta(hours=hours)
    item: dict[str, Any] = {
        "number": number,
        "title": title,
        "user": {"login": author},
        "state": "open",
        "created_at": iso(at),
        "updated_at": iso(NOW - timedelta(hours=1)),
        "html_url": f"{API}/{'pull' if pull else 'issues'}/{number}",
        "body": f"{title}. Details in the description.",
        "labels": [{"name": "hero-run"}],
        "author_association": "MEMBER",
    }
    if pull:
        item["pull_request"] = {"url": f"{API}/pulls/{number}", "merged_at": None}
    return item


class Threads:
    """GitHub threads as the source turns its JSON into events, with the summaries and tags
    enrichment gives them."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.items: dict[int, dict[str, Any]] = {}
        self.ids = 990_100

    def open(self, item: dict[str, Any], summary: str, tag: str) -> None:
        self.items[item["number"]] = item
        event = issue_event("hero", REPO, item)
        event.summary, event.tag = summary, tag
        self.events.append(event)

    def comment(self, number: int, author: str, hours: float, body: str, summary: str) -> Event:
        self.ids += 1
        item = self.items[number]
        at = iso(NOW - timedelta(hours=hours))
        comment = {
            "id": self.ids,
            "user": {"login": author},
            "created_at": at,
            "updated_at": at,
            "html_url": f"{item['html_url']}#issuecomment-{self.ids}",
            "body": body,
            "author_association": "MEMBER",
        }
        event = comment_event("hero", REPO, number, comment, "open", thread_context(item))
        event.summary, event.tag = summary, "optimizer"
        self.events.append(event)
        return event


def chat(n: int, author: str, hours: float, summary: str, body: str = "") -> Event:
    return Event(
        "hero",
        "discord",
        f"msg:{n}",
        "message",
        NOW - timedelta(hours=hours),
        author=author,
        ref="#hero-run-2026",
        url=f"https://discord.com/channels/1/2/{n}",
        body=body or summary,
        thread="discord:2",
        summary=summary,
        tag="training-dynamics",
    )


def the_moment() -> tuple[list[Event], Event]:
    """The reference page's moment: #8818 (opened days ago, argued in by several people),
    #8833 (open proposal, value cut overnight, then a newer comment), #8860 (newer, quiet),
    and a channel busier than the highlight budget."""
    t = Threads()
    t.open(
        thread(
            8818,
            "Attention gate weight norm grows far past the scaling ladder",
            "ClassicLarry",
            hours=140,
            pull=False,
        ),
        "The attention gate's weight norm has grown far beyond the ladder, in the first layers.",
        "training-dynamics",
    )
    for hours, who, said in [
        (60, "ClassicLarry", "Layer-skip ablation: dropping any ten layers multiplies the loss."),
        (44, "percyliang", "A statistic that does not hold across scales deserves its own study."),
        (40, "ClassicLarry", "Only 546 of 128,256 tokens open any first-layer gate head."),
        (30, "dlwh", "Asks whether the router norm follows the same path as the gate."),
        (26, "ClassicLarry", "The router norm grows the same way; light decay on both looks safe."),
        (20, "percyliang", "Asks how early the gate growth was detectable on the ladder runs."),
    ]:
        t.comment(8818, who, hours, said, said)
    t.open(
        thread(
            8833,
            "Weight decay on the attention gate and router by default",
            "ClassicLarry",
            hours=30,
            pull=True,
        ),
        "Turns on weight decay for the attention gate and MoE router in the hero recipe.",
        "optimizer",
    )
    t.comment(
        8833,
        "Kaiyue-Wen",
        22,
        "Could this weaken how well the ladder predicts the final loss?",
        "Asks whether the decay weakens how well the scaling ladder predicts the final loss.",
    )
    cut = t.comment(
        8833,
        "ClassicLarry",
        5.55,
        CUT,
        "Lowers the proposed weight decay from 0.05 to 0.02 after the checkpoint test showed "
        "how much the model depends on the attention gate.",
    )
    t.comment(
        8833,
        "ClassicLarry",
        2,
        "Rebased on main, CI is green.",
        "Rebased the weight decay pull request on main; its checks pass.",
    )
    t.open(
        thread(8860, "Add Paloma subsets to the eval dashboard", "helw150", hours=1.5, pull=False),
        "New issue asks for the Paloma subsets on the eval dashboard.",
        "evals",
    )
    talk = [
        chat(
            100 + i,
            "Larry",
            4.5 - i * 0.2,
            f"Gate note {i}: the early layers still learn; "
            f"each of the 48 head gates is aligned against the embeddings in layer {i}.",
        )
        for i in range(18)
    ]
    talk.append(
        chat(
            200,
            "Kaiyue-Wen",
            3,
            "Asks what the decay in #8833 costs in predictability.",
            "what does #8833 cost us in predictability?",
        )
    )
    return [*t.events, *talk], cut


async def the_store(store: Store) -> Event:
    await seed(store)
    events, cut = the_moment()
    await add_events(store, events)
    return cut


async def test_the_facts_carry_the_discussions_and_what_changed(store: Store) -> None:
    cut = await the_store(store)
    facts = await build_narrative_facts(store, "hero", NOW)
    refs = [d.ref for d in facts.discussions]
    assert refs[:2] == ["#8818", "#8833"], refs  # argued in most, however old
    assert "#8860" not in refs[:2]  # newer but quiet
    gate, decay = facts.discussions[0], facts.discussions[1]
    assert gate.driver == "ClassicLarry" and set(gate.people) >= {"percyliang", "dlwh"}
    assert gate.kind == "issue" and gate.open and not gate.proposal
    assert decay.proposal and decay.driver == "ClassicLarry"
    assert "Kaiyue-Wen" in decay.people  # on GitHub and naming #8833 in chat
    assert decay.change is not None
    assert (decay.change.before, decay.change.after) == ("0.05", "0.02")
    assert decay.change.author == "ClassicLarry" and decay.change.url == cut.url
    # what changed and the thread's latest reach the model, within the same budget
    summaries = [h.summary for h in facts.highlights]
    assert cut.summary in summaries
    assert "Rebased the weight decay pull request on main; its checks pass." in summaries
    assert len(facts.highlights) <= NARRATIVE_HIGHLIGHTS
    assert sum(len(s) for s in summaries) <= NARRATIVE_HIGHLIGHT_CHARS
    assert [t.ref for t in facts.open_threads][:2] == ["#8818", "#8833"]
    prompt = render_prompt("narrative", facts, max_words=250, card=True).user
    assert "from 0.05 to 0.02" in prompt and "ClassicLarry" in prompt
    # the open proposal's own fact says who drives it and where the value stands, so a model
    # can cite one source for "ClassicLarry's proposal cut it from 0.05 to 0.02"
    [decay_fact] = [line for line in prompt.splitlines() if 'kind="pull" ref="#8833"' in line]
    assert 'driven_by="ClassicLarry"' in decay_fact and "Kaiyue-Wen" in decay_fact
    assert 'changed="0.05 to 0.02 (' in decay_fact and "by ClassicLarry)" in decay_fact


async def test_recency_alone_left_the_change_out(store: Store) -> None:
    """The same store through the old choice (the last day by weight, newest first): the
    overnight cut is crowded out by newer chat. This is what the discussions fix."""
    cut = await the_store(store)
    recent = await store.events.timeline("hero", since=NOW - timedelta(days=7), limit=600)
    old = select_narrative_highlights(recent, NOW, {"#8818", "#8833", "#8860"})
    assert cut.summary not in [h.summary for h in old]


async def test_no_key_narrative_tells_the_restart_cause_and_the_proposal(store: Store) -> None:
    await the_store(store)
    stopped = NOW - timedelta(hours=16, minutes=21)
    resumed = stopped + timedelta(minutes=47)
    restart = Restart(
        resumed,
        RESTORE,
        "e/p/hero-1",
        from_step=4_690,
        to_step=4_580,
        stopped_at=stopped,
        resumed_at=resumed,
    )
    await add_events(
        store,
        [
            Event(
                "hero",
                "wandb",
                "restart:1",
                "restart",
                resumed,
                ref="hero-1",
                title="W&B run hero-1 resumed from step 4,580",
                extra=restart.to_json(),
            )
        ],
    )
    reported = ReportedCause(CAUSE, "loom-oa-dev", "GitHub #8506", stopped, url=CAUSE_URL)
    await store.incidents.save(
        Incident(
            "hero",
            "wandb-state",
            "crash",
            "W&B run hero-1 crashed at step 4,690",
            "resolved",
            stopped,
            resolved_at=resumed,
            details=IncidentDetails(
                reported_cause=reported, fired=True, acted_checked_until=resumed
            ),
        )
    )
    text = (await current_narrative(store, await build_status(store, "hero", NOW))).text
    story, talk, *rest = text.split("\n\n")
    assert story.startswith("Training is running normally in W&B run hero-1. It last restarted")
    assert "on Sep 1 at 4:26 p.m. EDT, after 47 min down." in story
    assert f"loom-oa-dev reported: {CAUSE[:-1]} ({CAUSE_URL})." in story  # their words, linked
    assert "It came back on its own" in story
    assert talk.startswith("Under discussion: #8818 (Attention gate weight norm grows")
    assert "#8833 (Weight decay on the attention gate and router by default) is an open " in talk
    assert "driven by ClassicLarry with Kaiyue-Wen" in talk
    assert "Lowers the proposed weight decay from 0.05 to 0.02" in talk
    assert "…" not in story + talk  # whole sentences only
    assert all(s.endswith(".") for s in (story, talk))
    assert len([s for s in talk.split(". ") if s]) >= 4  # several sentences, not a line
    still_open = rest[0]
    assert still_open.startswith("Still open:\n• #8818"), text
    assert (
        "• #8833 Weight decay on the attention gate and router by default (a proposal driven "
        "by ClassicLarry)" in still_open
    ), text


def test_a_changed_value_is_found_in_its_words() -> None:
    assert find_change("We cut it from 0.05 down to 0.02 overnight.") == (
        "0.05",
        "0.02",
        "We cut it from 0.05 down to 0.02 overnight.",
    )
    assert find_change("Warmup 2000 → 4000 steps. Nothing else.")[:2] == ("2000", "4000")  # type: ignore[index]
    assert find_change("Decay is now 0.02 (was 0.05).")[:2] == ("0.02", "0.05")[::-1]  # type: ignore[index]
    assert find_change("From step 50,195 it resumed.") is None  # no value changed "to"
    table = "| loss | from 2.176 to 2.108 |\n|---|---|\nThe margin grew from 0.007 to 0.011."
    assert find_change(table) == ("0.007", "0.011", "The margin grew from 0.007 to 0.011.")
    assert find_change("Went from 3 to 3.") is None


def test_an_older_thread_argued_in_beats_a_newer_quiet_one() -> None:
    events, _ = the_moment()
    found = select_discussions(events, NOW)
    assert [d.ref for d in found][:2] == ["#8818", "#8833"]
    quiet = next(d for d in found if d.ref == "#8860")
    assert quiet.posts == 1 and quiet.score < found[1].score
    # without its description read, a thread is known from what its comments recorded
    decay = found[1]
    assert decay.kind == "pull" and decay.title.startswith("Weight decay on the attention gate")


def test_one_person_on_github_and_in_chat_is_counted_once() -> None:
    events, _ = the_moment()
    said = chat(300, "Larry", 1, "Larry says #8833 is ready for review.", "#8833 ready for review")
    [decay] = [d for d in select_discussions([*events, said], NOW) if d.ref == "#8833"]
    assert "Larry" not in decay.people and decay.people[0] == "ClassicLarry"
    assert decay.latest_by == "ClassicLarry" and decay.latest == said.summary


def test_a_merged_proposal_is_no_longer_open() -> None:
    events, _ = the_moment()
    merged = Event(
        "hero", "github", "state:8833:merged:x", "state", NOW - timedelta(minutes=30),
        author="dlwh", ref="#8833", state="merged", title="merged #8833",
        thread=f"github:{REPO}#8833",
    )  # fmt: skip
    [decay] = [d for d in select_discussions([*events, merged], NOW) if d.ref == "#8833"]
    assert decay.state == "merged" and not decay.proposal and not decay.open
    assert "dlwh" in decay.people


def test_whole_sentences_never_cut_mid_line() -> None:
    text = "First sentence is short. The second one is much longer than the room left for it."
    assert whole_sentences(text, 40) == "First sentence is short."
    long = "One long clause about the gate, then another about the router, and a third one"
    assert whole_sentences(long, 50) == "One long clause about the gate…"


def test_many_long_discussions_fit_in_whole_sentences(now: datetime) -> None:
    """Three discussions with long posts after a long story: the narrative stays within its
    limit, keeps "Still open", and every sentence it tells is whole."""
    from bot.narrative.discussions import Change, Discussion
    from bot.narrative.facts import NarrativeFacts, OpenThread
    from bot.narrative.templates import NARRATIVE_MAX_CHARS, template_narrative

    long = "The gate norm keeps growing in every early layer, and the router follows it. " * 4
    talk = [
        Discussion(
            ref=f"#{n}", title=f"Thread {n} about the attention gate and the router norms " * 2,
            kind="pull", state="open", url=f"https://github.com/o/r/pull/{n}",
            opened_by="ClassicLarry", opened_at=now, driver="ClassicLarry",
            people=("ClassicLarry", "percyliang", "Kaiyue-Wen", "dlwh"), posts=9, last_at=now,
            latest=long, latest_by="percyliang", latest_url=f"https://x/{n}",
            change=Change("0.05", "0.02", "Cut it from 0.05 to 0.02. " + long, "ClassicLarry", now),
        )
        for n in (8818, 8833, 8854)
    ]  # fmt: skip
    facts = NarrativeFacts(
        run_slug="hero", run_name="Hero", now=now, state="running", step=10,
        discussions=talk,
        open_threads=[OpenThread(d.title, "github", d.ref, d.url, d.opened_by) for d in talk],
    )  # fmt: skip
    text = template_narrative(facts)
    assert len(text) <= NARRATIVE_MAX_CHARS
    assert "Under discussion: #8818" in text and "Still open:\n• #8818" in text
    talk_paragraph = text.split("\n\n")[1]
    assert talk_paragraph.endswith(".") and "…" not in talk_paragraph.replace("…)", ")")
