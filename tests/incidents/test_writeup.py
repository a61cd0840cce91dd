"""The write-up an incident gets when it resolves, through the real store, rules and engine: a
lost node reported in chat, a requeue by a person, a resume from a checkpoint in a new W&B run.
Posted once in the incident's thread after the resolution, every number right, the reporter
quoted and linked, the person who acted named; edited (never posted again) when it changes, and
nothing re-posted by a new engine over the same store."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.incidents.engine import IncidentEngine
from bot.incidents.writeup import writeup_for
from bot.models import Event, OutboxItem, RunInfo
from bot.posts.incidents import IncidentPosts
from bot.posts.writeup import writeup_markdown
from bot.store import Store
from tests.incidents.scenario import RUN_B, Scenario, content


async def crash_and_requeue(
    store: Store, now: datetime, acted: str = "I drained r7 and requeued the job"
) -> tuple[Scenario, int]:
    sc = Scenario(store, now)  # 100 steps a minute, one row a minute, 1M tokens a step
    await sc.start()
    run = await store.runs.get("hero")
    assert run is not None
    await store.runs.upsert(RunInfo.from_config(run.config.model_copy(update={"gpus": 64})))
    await sc.run_for(60)  # the last step logged: 5,900, at minute 60
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    await sc.run_for(3)
    await sc.report("node r7 lost its IB link, job died", source="discord", author="bob")
    await sc.run_for(2)
    await sc.report(acted, source="discord", author="dave")
    await sc.run_for(2)
    await sc.launch(RUN_B, 5_000)  # minute 68; its first row (step 5,000) at minute 69
    await sc.run_for(10)
    [incident] = await store.incidents.find("hero")
    assert incident.status == "resolved" and incident.id is not None
    return sc, incident.id


def writeups(items: list[OutboxItem], incident_id: int) -> list[OutboxItem]:
    return [i for i in items if i.dedup_key == f"incident:{incident_id}:writeup"]


async def test_one_writeup_in_the_thread_with_every_number_right(
    store: Store, now: datetime
) -> None:
    sc, incident_id = await crash_and_requeue(store, now)
    items = await sc.outbox()
    [post] = writeups(items, incident_id)
    fired = next(i for i in items if i.kind == "alert")
    assert post.reply_to == fired.id  # in the incident's thread
    closing = next(i for i in items if i.dedup_key == f"incident:{incident_id}:resolved:thread")
    assert closing.id is not None and post.id is not None and post.id < closing.id  # then closed
    text = content(post)
    # down: last row (minute 60) → first row of the new run (minute 69)
    assert "9 min down (last step before the interruption → first step after)" in text
    # 5,900 reached, resumed from 5,000: 900 steps again, at 0.6 s and 1M tokens a step
    assert "900 steps (900M tokens) recomputed, 9 min at 0.6 s a step" in text
    # 64 GPUs × (9 min down + 9 min recomputing) = 19.2 GPU-hours
    assert "19 GPU-hours (64 GPUs × 18 min without new progress)" in text
    assert "from the checkpoint at step 5,000" in text
    assert "the last step before the interruption was 5,900" in text
    assert "bob wrote in [Discord \\#ops](https://discord.com/channels/1/2/1)" in text
    assert "node r7 lost its IB link" in text
    assert "dave," in text and "I drained r7 and requeued the job" in text
    assert "in [Discord \\#ops](https://discord.com/channels/1/2/2)" in text
    # a new process over the same store re-posts nothing
    sc.engine = IncidentEngine(IncidentPosts())
    await sc.run_for(5)
    after = await sc.outbox()
    assert len(writeups(after, incident_id)) == 1
    assert not [i for i in after if i.dedup_key.startswith(f"incident:{incident_id}:writeup:")]


async def test_a_changed_writeup_is_edited_never_posted_twice(store: Store, now: datetime) -> None:
    sc, incident_id = await crash_and_requeue(store, now)
    [post] = writeups(await sc.outbox(), incident_id)
    await sc.report(
        "The hero run crashed because node r7 lost its IB link; the cable is swapped.",
        author="erin",
        number=77,
    )
    await sc.run_for(2)
    items = await sc.outbox()
    assert len(writeups(items, incident_id)) == 1
    edits = [i for i in items if i.dedup_key.startswith(f"incident:{incident_id}:writeup:edit:")]
    assert len(edits) == 1 and edits[0].payload["edit_of"] == post.id
    assert "https://github.com/lab/hero/issues/77" in content(edits[0])


async def test_the_writeup_again_as_markdown(store: Store, now: datetime) -> None:
    _, incident_id = await crash_and_requeue(store, now)
    note = writeup_markdown(await writeup_for(store, incident_id))
    assert note.startswith(f"## Write-up: incident \\#{incident_id}")
    for heading in ("What happened", "Cause, as reported", "Who acted", "Cost", "Sources"):
        assert f"**{heading}.**" in note
    assert "900 steps (900M tokens) recomputed" in note


def issue(number: int, at: datetime, title: str) -> Event:
    return Event(
        run_slug="hero",
        source="github",
        external_id=f"issue:{number}",
        kind="issue",
        at=at,
        author="dave",
        ref=f"#{number}",
        url=f"https://github.com/lab/hero/issues/{number}",
        state="open",
        title=title,
        thread=f"github:lab/hero#{number}",
    )


async def test_follow_ups_are_the_issues_people_named_opened_after_it_began(
    store: Store, now: datetime
) -> None:
    acted = "I drained r7 and requeued the job; see #12, and #91 tracks the IB port"
    sc, incident_id = await crash_and_requeue(store, now, acted)
    older = issue(12, now - timedelta(days=3), "Ops log")  # where it was discussed
    await store.events.upsert_many([older, issue(91, sc.now, "r7 IB port flaps")])
    await sc.run_for(1)
    [post] = writeups(await sc.outbox(), incident_id)
    assert "Follow-ups.** None named." in content(post)
    [edit] = [
        i
        for i in await sc.outbox()
        if i.dedup_key.startswith(f"incident:{incident_id}:writeup:edit:")
    ]
    text = content(edit)
    assert "issue [\\#91](https://github.com/lab/hero/issues/91) “r7 IB port flaps” by dave" in text
    assert "issues/12)" not in text
