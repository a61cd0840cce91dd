"""The narrative's request carries the right facts: highlights of the last day first,
older ones only from threads still open, capped in size; the current W&B run; the last restart's
cause, what a person reported and its downtime. The digest is cached like the narrative: the
same facts, the same answer, no new request."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from bot.llm.digest import write_digest
from bot.llm.grounded import render_facts
from bot.models import Event
from bot.narrative.facts import (
    NARRATIVE_HIGHLIGHT_CHARS,
    select_narrative_highlights,
)
from tests.fakes.anthropic import text
from tests.llm.facts_fixture import digest_facts, narrative_facts


def event(n: int, at: datetime, ref: str, tag: str = "optimizer", summary: str = "") -> Event:
    return Event(
        run_slug="hero",
        source="github",
        external_id=f"comment:{n}",
        kind="comment",
        at=at,
        author="ines",
        ref=ref,
        url=f"https://github.com/acme/llm/issues/{ref[1:]}#issuecomment-{n}",
        body="text",
        summary=summary or f"Summary {n} of a change to the learning rate warmup.",
        tag=tag,
        newsworthy=True,
    )


def test_highlights_are_the_last_day_first_and_older_only_when_still_open(now: datetime) -> None:
    events = [
        event(1, now - timedelta(hours=2), "#10", "other"),
        event(2, now - timedelta(hours=20), "#11", "incident"),
        event(3, now - timedelta(days=40), "#12", "incident"),  # old, thread closed
        event(4, now - timedelta(days=30), "#13", "spec"),  # old, thread still open
        event(5, now - timedelta(days=31), "#13", "spec"),  # older in the same open thread
    ]
    chosen = select_narrative_highlights(events, now, open_refs={"#13"})
    assert [h.ref for h in chosen] == ["#10", "#11", "#13"]
    assert chosen[-1].at == events[3].at  # the latest of the open thread only


def test_highlights_are_capped_in_size(now: datetime) -> None:
    long = "A long summary of a discussion about the learning rate schedule. " * 5
    events = [event(n, now - timedelta(minutes=n), "#10", summary=long[:300]) for n in range(1, 60)]
    chosen = select_narrative_highlights(events, now, open_refs=set(), limit=50)
    assert sum(len(h.summary) for h in chosen) <= NARRATIVE_HIGHLIGHT_CHARS
    assert 0 < len(chosen) < 50
    assert chosen[0].at == events[0].at  # the newest kept


def test_the_request_names_the_current_wandb_run_and_why_the_last_restart_happened(
    now: datetime,
) -> None:
    facts = narrative_facts(now)
    facts.wandb_run = "hero-12d8b6f0-dee637"
    assert facts.restart_incident is not None
    facts.restart_incident = replace(
        facts.restart_incident,
        reported_cause="r12n4 lost its InfiniBand link, job down",
        reported_by="amara",
    )
    rendered = render_facts(facts)
    assert "current W&B run: hero-12d8b6f0-dee637" in rendered
    assert "down for 47 min" in rendered
    assert "cause: " in rendered and "InfiniBand port flapping" in rendered
    assert 'source="report" author="amara"' in rendered and "r12n4 lost" in rendered
    assert "every time here is in America/New_York" in rendered


DIGEST = (
    "Hero 70B had a steady day [2]. It restarted once after an InfiniBand fault and was back "
    "within 47 minutes [13][14]; Larry's #8833 proposes light weight decay on the attention gate "
    "[19]. Still open: #8818, the attention gate norm [21]."
)
DIGEST_LINKED = (
    r"Hero 70B had a steady day [\[1\]](https://wandb.ai/acme/hero/reports/1). It restarted "
    "once after an InfiniBand fault and was back within 47 minutes "
    r"[\[1\]](https://wandb.ai/acme/hero/reports/1); Larry's #8833 proposes light weight decay "
    r"on the attention gate [\[2\]](https://github.com/acme/llm/pull/8833). Still open: #8818, "
    r"the attention gate norm [\[3\]](https://github.com/acme/llm/issues/8818)."
)


async def test_the_digest_is_cached_like_the_narrative(fake, make_llm, store, run, now):
    fake.push(text(DIGEST))
    llm = make_llm()
    first = await write_digest(store, llm, digest_facts(now), now)
    assert not first.fallback and first.content == DIGEST_LINKED
    # a minute later, the same facts: the same answer and no new request
    again = await write_digest(store, llm, digest_facts(now), now + timedelta(minutes=1))
    assert again.content == DIGEST_LINKED and again.id == first.id
    assert len(fake.message_requests) == 1
    # a new event in the window is a new digest
    changed = digest_facts(now)
    changed.events_in_window += 1
    fake.push(text(DIGEST))
    await write_digest(store, llm, changed, now)
    assert len(fake.message_requests) == 2
