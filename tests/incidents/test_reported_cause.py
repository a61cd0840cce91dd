"""The cause is the sentence that reports it, through the real store, rules
and engine: a chat burst in the watched channel while the run crashes (greetings, lunch, "+1",
then the report) gives an incident that starts at the crash and quotes the reporter's message,
linked to it, with its author; the conversation event is never the report."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.enrich.reports import fault_excerpt, is_substantive
from bot.store import Store
from tests.incidents.scenario import Scenario


async def test_a_chat_burst_reports_the_cause_in_the_reporters_words(
    store: Store, now: datetime
) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(60)
    await sc.report("Morning all!", source="discord", author="alice")
    await sc.tick()
    await sc.report("nice 🎉 the loss looks great", source="discord", author="carol")
    sc.training = sc.beating = False
    await sc.tick()
    await sc.set_state("crashed")
    crashed_at = sc.now
    await sc.tick()
    await sc.report("anyone grabbing lunch?", source="discord", author="dave")
    await sc.report("+1", source="discord", author="alice")
    await sc.tick()
    report = await sc.report(
        "Hmm. node lost, ECC errors on host 12. Anyone else seeing this?",
        source="discord",
        author="bob",
    )
    await sc.run_for(30)  # the burst settles and is enriched as one conversation

    [incident] = await store.incidents.find("hero")
    cause = incident.details.reported_cause
    assert cause is not None
    assert cause.text == "node lost, ECC errors on host 12."
    assert (cause.author, cause.url, cause.event_id) == ("bob", report.url, report.id)
    assert cause.at == report.at
    assert incident.started_at == crashed_at  # the crash, not the greeting before it
    conversation = await store.events.get_by_external("hero", "discord", "conv:1")
    assert conversation is not None and conversation.enriched_by is not None
    assert conversation.at < crashed_at
    assert conversation.id not in await store.incidents.linked_ids(incident.id or 0)


async def test_a_person_who_saw_it_first_starts_the_incident(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(60)
    await sc.report("Morning all!", source="discord", author="alice")
    await sc.tick()
    sc.training = False
    report = await sc.report(
        "Hero is hung: node r12n4 lost, NCCL timeouts on every rank.", source="discord"
    )
    await sc.run_for(10)
    [incident] = await store.incidents.find("hero")
    assert incident.started_at == report.at  # the report, never the conversation's greeting
    assert incident.details.reported_cause is not None
    assert incident.details.reported_cause.text.startswith("Hero is hung: node r12n4 lost")
    assert incident.started_at - timedelta(minutes=1) >= now


def test_fault_sentences_leave_the_chat_out() -> None:
    said = "Morning all! Hero is down: node r12n4 lost, double-bit ECC on GPU 3. Requeueing it."
    assert (
        fault_excerpt(said)
        == "Hero is down: node r12n4 lost, double-bit ECC on GPU 3. Requeueing it."
    )
    assert fault_excerpt("node lost, ECC errors on host 12. anyone for lunch?") == (
        "node lost, ECC errors on host 12."
    )
    assert fault_excerpt("Morning all!") is None
    for chat in ("Morning all!", "nice 🎉", "anyone grabbing lunch?", "+1", "thanks!"):
        assert not is_substantive(chat), chat
    for said in ("drained host 12 and requeued", "lr is 3e-4 now", "node lost on host 12"):
        assert is_substantive(said), said


def test_a_discord_quote_is_one_line_and_the_reply_under_it_is_read() -> None:
    # Discord: "> " quotes its own line, so the reply under it is the message's own words; on
    # GitHub (CommonMark) the unmarked line after a quote belongs to the quote.
    said = "> did the 41k save finish?\nno, save failed: disk full on /scratch"
    assert fault_excerpt(said) == "no, save failed: disk full on /scratch"
    assert fault_excerpt(said, source="github") is None
    assert is_substantive("> lunch?\nnode 7 is down")
    assert not is_substantive("> lunch?\nnode 7 is down", source="github")
    assert fault_excerpt(">>> did it finish?\nsave failed: disk full") is None
