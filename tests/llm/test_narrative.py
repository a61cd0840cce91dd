"""Narrative and digest: grounded output stored, invented numbers rejected, fallbacks."""

from __future__ import annotations

from datetime import timedelta

from bot.llm.digest import write_digest
from bot.llm.grounded import render_facts
from bot.llm.narrative import write_narrative
from bot.llm.prompts import load_prompt, short_hash
from bot.narrative.facts import Highlight, IncidentFact
from bot.narrative.templates import template_digest, template_narrative
from bot.services.narrative import next_refresh_at, refresh_if_due
from tests.fakes.anthropic import error, text
from tests.llm.facts_fixture import digest_facts, narrative_facts

GOOD = (
    "Hero 70B is training normally [2]. It restarted eighteen hours ago after an InfiniBand fault "
    "(the fast network between GPU hosts) and resumed from a checkpoint after 47 minutes down [9]. "
    "Larry's #8833 would add light weight decay to the attention gate [14]; #8818 is still open "
    "[16]. See https://github.com/acme/llm/issues/8818 [16]."
)
# as stored and shown: each citation a link to its source, numbered by source page; a computed
# fact (the state, the restart) links to the run's W&B report
GOOD_LINKED = (
    "Hero 70B is training normally [\\[1\\]](https://wandb.ai/acme/hero/reports/1). It "
    "restarted eighteen hours ago after an InfiniBand fault (the fast network between GPU "
    "hosts) and resumed from a checkpoint after 47 minutes down "
    "[\\[1\\]](https://wandb.ai/acme/hero/reports/1). Larry's #8833 would add light weight "
    "decay to the attention gate [\\[2\\]](https://github.com/acme/llm/pull/8833); #8818 is "
    "still open [\\[3\\]](https://github.com/acme/llm/issues/8818). See "
    "https://github.com/acme/llm/issues/8818 [\\[3\\]](https://github.com/acme/llm/issues/8818)."
)
# Grounded, but restating what the status card's fields already show next to the narrative.
RESTATES = (
    "Hero 70B is training normally at step 54,000 with 2.46T tokens seen; it resumed from step "
    "50,195 after an InfiniBand fault [2][4][5][9]. #8818 is still open [16]."
)
INVENTED = (
    "Hero 70B is at step 61,000 and 73% done; it restarted 3 times. See https://evil.example/x."
)


async def test_grounded_narrative_is_stored_with_prompt_and_cost(fake, make_llm, store, run, now):
    fake.push(text(GOOD))
    facts = narrative_facts(now)
    output = await write_narrative(store, make_llm(), facts, now)
    assert not output.fallback and output.content == GOOD_LINKED
    assert output.prompt_name == "narrative"
    system, prompt = load_prompt("system"), load_prompt("narrative")
    assert output.prompt_hash == short_hash(system.text, prompt.text)
    assert output.model == "claude-sonnet-4-6"
    assert output.input_tokens > 0 and output.output_tokens > 0 and output.cost_usd > 0
    latest = await store.llm.latest("hero", "narrative")
    assert latest is not None and latest.id == output.id and latest.created_at == now
    [request] = fake.message_requests
    assert "54,000" in request.user_text and "<untrusted_data" in request.user_text
    # raw bodies never go in: only the summaries
    assert "attention gate, lowered to 0.02" in request.user_text


async def test_invented_number_is_retried_once_then_template(fake, make_llm, store, run, now):
    fake.push(text(INVENTED), text(INVENTED))
    facts = narrative_facts(now)
    output = await write_narrative(store, make_llm(), facts, now)
    assert output.fallback and output.model == "template"
    assert output.content == template_narrative(facts)
    assert len(fake.message_requests) == 2
    retry = fake.message_requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert "61,000" in retry[2]["content"] and "evil.example" in retry[2]["content"]
    spend = await store.llm.spend(now - timedelta(days=1))
    assert spend["narrative.rejected"]["calls"] == 2  # paid for, and shown in usage
    assert "narrative" not in spend  # the template costs nothing


async def test_retry_that_fixes_the_numbers_is_accepted(fake, make_llm, store, run, now):
    fake.push(text(INVENTED), text(GOOD))
    output = await write_narrative(store, make_llm(), narrative_facts(now), now)
    assert not output.fallback and output.content == GOOD_LINKED


async def test_outage_gives_template_and_no_exception(fake, make_llm, store, run, now):
    fake.handler = lambda request: error(529, "overloaded")
    output = await write_narrative(store, make_llm(max_retries=1), narrative_facts(now), now)
    assert output.fallback and output.content == template_narrative(narrative_facts(now))
    assert len(fake.message_requests) == 2


async def test_no_llm_at_all_gives_template(store, run, now):
    output = await write_narrative(store, None, narrative_facts(now), now)
    assert output.fallback and output.content.startswith("Training is running normally.")


async def test_output_mentions_and_foreign_links_are_stripped(fake, make_llm, store, run, now):
    hostile = GOOD + " @everyone <@42> [click](https://github.com/acme/llm/issues/8818)"
    fake.push(text(hostile))
    output = await write_narrative(store, make_llm(), narrative_facts(now), now)
    assert "@everyone" not in output.content and "<@42>" not in output.content


def test_template_narrative_explains_and_names(now):
    text_ = template_narrative(narrative_facts(now))
    assert "Cause of the last restart: InfiniBand port flapping on host node-17." in text_
    assert "#8818" in text_ and "Larry (#8833)" in text_
    # the status card's fields carry the numbers; the narrative does not restate them
    assert "54,000" not in text_ and "100,000" not in text_


async def test_refresh_only_when_due_and_something_changed(fake, make_llm, store, run, now):
    # the new highlight comes first among the recent activity: the facts after it renumber
    after = GOOD.replace("[16]", "[17]").replace("[14]", "[15]")
    fake.handler = lambda request: text(after if "A new evaluation" in request.user_text else GOOD)
    facts = narrative_facts(now)
    calls = 0

    async def builder(store_, slug, at):
        nonlocal calls
        calls += 1
        facts.now = at
        return facts

    llm = make_llm()

    async def write(facts_, at):
        return await write_narrative(store, llm, facts_, at)

    first = await refresh_if_due(store, write, "hero", now, facts=builder)
    assert first is not None
    assert next_refresh_at(first) == now + timedelta(minutes=30)
    # too soon: nothing is built or written
    assert (
        await refresh_if_due(store, write, "hero", now + timedelta(minutes=10), facts=builder)
        is None
    )
    assert calls == 1
    # due, but nothing new happened
    later = now + timedelta(minutes=40)
    assert await refresh_if_due(store, write, "hero", later, facts=builder) is None
    # something new: a highlight arrives
    facts.highlights.insert(
        0,
        facts.highlights[0].__class__(
            at=later,
            summary="A new evaluation landed.",
            source="discord",
            author="Ana",
            tag="evals",
        ),
    )
    assert await refresh_if_due(store, write, "hero", later, facts=builder) is not None
    assert len(fake.message_requests) == 2


async def test_digest_is_grounded_and_stored(fake, make_llm, store, run, now):
    facts = digest_facts(now)
    assert "steps trained in the window: 3,000" in render_facts(facts)
    fake.push(
        text("Hero 70B trained 3,000 steps in the last 24 hours [9][10]. Still open: #8818 [21].")
    )
    output = await write_digest(store, make_llm(), facts, now)
    assert not output.fallback and output.task == "digest"
    assert "24 hours" in fake.message_requests[0].user_text


async def test_quiet_digest_makes_no_call(fake, make_llm, store, run, now):
    facts = digest_facts(now)
    facts.events_in_window = 0
    facts.restarts_in_window = []
    facts.incidents = []
    facts.step_at_start = facts.step
    output = await write_digest(store, make_llm(), facts, now)
    assert output.fallback and "nothing happened" in output.content
    assert fake.requests == []


def test_template_digest_has_headline_and_open_items(now):
    body = template_digest(digest_facts(now))
    assert body.startswith("Hero 70B is running at step 54,000 of 100,000 (54.0%)")
    assert "3,000 steps further than 24 hours ago" in body
    assert "Still open: #8818" in body


def test_the_digest_says_the_crash_its_cause_and_the_restart_once(now):
    facts = digest_facts(now)
    assert facts.restarts_in_window  # the restart paragraph tells it
    crash = now - timedelta(hours=3)
    facts.incidents = [
        IncidentFact(
            title="W&B run hero-a crashed at step 62,016",
            status="resolved",
            started_at=crash,
            resolved_at=crash + timedelta(minutes=20),
            kind="crash",
            reported_cause="node lost, ECC errors on host 12",
            reported_by="carol",
        )
    ]
    at = crash + timedelta(minutes=1)
    facts.highlights = [
        Highlight(at, "W&B state hero-a crashed", "wandb", incident=True, kind="state"),
        Highlight(at, "Node lost, ECC errors on host 12.", "discord", "carol", incident=True),
        Highlight(at, "I drained host 12 and requeued", "discord", "dave", kind="message"),
        Highlight(at, "W&B restart hero-b running", "wandb", kind="restart"),
    ]
    body = template_digest(facts).lower()
    assert body.count("crashed") == 1, body
    assert body.count("ecc errors on host 12") == 1, body
    assert body.count("restart") == 1, body  # "training restarted …"
    assert "drained host 12 and requeued" in body  # what the paragraphs above do not say


def test_a_run_younger_than_the_window_says_since_launch(now):
    facts = digest_facts(now)
    facts.launched_at = now - timedelta(hours=2)  # launched inside the 24 hours
    body = template_digest(facts)
    assert "3,000 steps since launch" in body and "hours ago" not in body, body


async def test_a_narrative_restating_the_card_fields_is_retried(fake, make_llm, store, run, now):
    fake.push(text(RESTATES), text(GOOD))
    output = await write_narrative(store, make_llm(), narrative_facts(now), now)
    assert not output.fallback and output.content == GOOD_LINKED
    retry = fake.message_requests[1].user_text
    for label in ("current step", "tokens trained", "step training resumed from"):
        assert f"restates the {label}, which the status card already shows" in retry


async def test_a_narrative_that_keeps_restating_the_fields_gives_the_template(
    fake, make_llm, store, run, now
):
    fake.push(text(RESTATES), text(RESTATES))
    facts = narrative_facts(now)
    output = await write_narrative(store, make_llm(), facts, now)
    assert output.fallback and output.content == template_narrative(facts)


async def test_the_digest_has_no_fields_so_it_may_say_the_numbers(fake, make_llm, store, run, now):
    # the digest numbers its facts as the narrative does, with the window's facts among them
    restates = RESTATES.replace("[9]", "[14]").replace("[16]", "[21]")
    fake.push(text(restates))
    output = await write_digest(store, make_llm(), digest_facts(now), now)
    assert not output.fallback
    assert output.content == restates.replace(
        "[2][4][5][14]", "[\\[1\\]](https://wandb.ai/acme/hero/reports/1)"
    ).replace("[21]", "[\\[2\\]](https://github.com/acme/llm/issues/8818)")
