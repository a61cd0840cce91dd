"""A member whose display name is a masked link (`[Official status](https://evil.example/status)`)
must not get a live link into anything the bot posts: incident titles and alerts, thread updates,
the digest, `/status`'s open incidents and narrative, `/incidents`, `/timeline`, `/ask`. Only the
sources' own URLs stay links."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from bot.core.mentions import body, inert, plain, unlinked
from bot.llm.grounded import render_prompt
from bot.llm.safety import sanitize_output
from bot.models import Event, Incident, IncidentDetails, IncidentSignal, ReportedCause
from bot.narrative.entries import TimelineEntry
from bot.narrative.facts import DigestFacts, Highlight, IncidentFact, NarrativeFacts
from bot.narrative.templates import template_digest, template_narrative
from bot.posts import incidents as messages
from bot.render.cards import Card, digest_card, entry_line

EVIL = "[Official status](https://evil.example/status)"
TRUSTED = "https://github.com/lab/model/issues/8818"
NOW = datetime(2026, 9, 2, 12, tzinfo=UTC)
# A masked link is `[label](url)` whose `[` and `](` are not escaped; an autolink is `<url>`.
_LIVE_MASKED = re.compile(r"(?<!\\)\[[^\]\n]*(?<!\\)\]\(\s*<?(https?://[^\s)>]+)")
_LIVE_AUTOLINK = re.compile(r"(?<!\\)<(https?://[^\s>]+)>")


def live_links(text: str) -> set[str]:
    return {m.group(1) for m in _LIVE_MASKED.finditer(text)} | {
        m.group(1) for m in _LIVE_AUTOLINK.finditer(text)
    }


def texts(card: Card) -> list[str]:
    return [card.title, card.description, card.footer or ""] + [
        part for f in card.fields for part in (f.name, f.value)
    ]


def assert_no_forged_link(*parts: str) -> None:
    for text in parts:
        assert not any("evil.example" in url for url in live_links(text)), text
        assert "\u200b" not in text and "\u202e" not in text


def test_the_checker_sees_a_forged_link() -> None:
    assert live_links(f"by {EVIL}") == {"https://evil.example/status"}
    assert live_links("see <https://evil.example/x>") == {"https://evil.example/x"}
    assert live_links(inert(EVIL)) == live_links(unlinked(EVIL)) == live_links(body(EVIL)) == set()


def test_sanitisers_neutralise_headings_quotes_and_invisible_characters() -> None:
    hostile = "# Big\n-# small\n> quoted\n>>> all\nok\u200b\u202e @everyone <@1>"
    clean = body(hostile)
    assert [line[:2] for line in clean.splitlines()[:4]] == ["\\#", "\\-", "\\>", "\\>"]
    assert "\u200b" not in clean and "\u202e" not in clean
    assert "@everyone" not in clean and "<@1>" not in clean
    assert plain("a\nb\u200bc") == "a bc"
    kept = body(f"[#8818]({TRUSTED}) and {EVIL}", [TRUSTED])
    assert live_links(kept) == {TRUSTED}


def incident() -> Incident:
    title = f"Problem reported in Discord #hero-run by {EVIL}"  # as detect_reports builds it
    return Incident(
        run_slug="hero",
        fingerprint="report:problem:discord:1",
        kind="problem",
        title=title,
        status="firing",
        started_at=NOW - timedelta(hours=1),
        cause=f"{EVIL} says: <https://evil.example/x>\n# loss is NaN",
        acked_by=EVIL,
        acked_at=NOW,
        details=IncidentDetails(
            signals=[IncidentSignal(at=NOW, source="discord", text=EVIL, url=None, event_id=1)]
        ),
        id=7,
    )


def test_alerts_threads_and_incident_listing() -> None:
    item = incident()
    head = messages.head_card(item, "Hero 70B", {"GitHub #8818": TRUSTED})
    assert TRUSTED in live_links("\n".join(texts(head)))  # the source's own link stays
    assert_no_forged_link(*texts(head))
    assert_no_forged_link(
        messages.alert_content(item, "Hero 70B"),
        messages.thread_name(item),
        messages.reminder_content(item, NOW),
        messages.member_update(item.title, NOW),
    )
    update = Event(
        run_slug="hero", source="discord", external_id="msg:1", kind="message", at=NOW,
        author=EVIL, ref="#hero-run", url="https://discord.com/channels/1/2/3",
        body=f"look at {EVIL}",
    )  # fmt: skip
    assert_no_forged_link(messages.event_update(update))
    item.status, item.resolved_at, item.resolution = "resolved", NOW, f"fixed by {EVIL}"
    item.details.reported_cause = ReportedCause(
        f"node lost, see {EVIL}",
        EVIL,
        "Discord #hero-run",
        NOW,
        "https://discord.com/channels/1/2/3",
    )
    assert_no_forged_link(*texts(messages.head_card(item, "Hero 70B", {})))
    assert_no_forged_link(messages.resolved_content(item, "Hero 70B"))
    assert_no_forged_link(messages.closing_line(item), messages.alert_content(item, "Hero 70B"))
    assert_no_forged_link(messages.cause_update(item.details.reported_cause))
    view: Any = SimpleNamespace(
        incident=item, open=False, started_at=item.started_at, ended_at=NOW, cause=item.cause,
        resolution=item.resolution, silenced=False, links=[("GitHub #8818", TRUSTED)],
    )  # fmt: skip
    listing = messages.listing_card([view], "Hero 70B", open_only=False, now=NOW)
    assert_no_forged_link(*texts(listing))


def test_timeline_line() -> None:
    entry = TimelineEntry(
        NOW, EVIL, "discord", "#hero-run", "https://discord.com/channels/1/2/3", None,
        f"summary with {EVIL}", "other", False, "message",
    )  # fmt: skip
    assert_no_forged_link(entry_line(entry))


def facts(cls: Any = NarrativeFacts, **extra: Any) -> Any:
    return cls(
        run_slug="hero",
        run_name="Hero 70B",
        now=NOW,
        incidents=[IncidentFact(f"Problem reported by {EVIL}", "firing", NOW)],
        highlights=[
            Highlight(NOW, f"asked {EVIL}", "discord", author=f"{EVIL} and ada", url=TRUSTED)
        ],
        **extra,
    )


def test_digest_from_the_template_and_from_an_llm() -> None:
    digest = facts(DigestFacts, window_start=NOW - timedelta(days=1), window_end=NOW)
    digest.text = template_digest(digest)
    assert_no_forged_link(*texts(digest_card(digest, lambda at, style: at.isoformat())))
    # the writer may not link a URL that only came inside a name
    rendered = render_prompt("digest", digest, max_words=200, window="24 hours")
    assert "https://evil.example/status" not in rendered.index.urls
    llm = f"Busy day: [Official status](https://evil.example/status) and [#8818]({TRUSTED})."
    digest.text = sanitize_output(llm, allowed_urls=rendered.index.urls, limit=4000)
    card = digest_card(digest, lambda at, style: at.isoformat())
    assert_no_forged_link(*texts(card))
    assert TRUSTED in live_links(card.description)


def test_narrative_template_and_status_open_incidents() -> None:
    from bot.render.cards import status_card
    from bot.services.narrative import Narrative
    from tests.render.test_render import fmt, report

    text = body(template_narrative(facts()))  # what services.narrative serves without an LLM
    assert_no_forged_link(text)
    rendered = render_prompt("narrative", facts(), max_words=120)
    assert "https://evil.example/status" not in rendered.index.urls
    card = status_card(
        report(open_incidents=[incident()]), Narrative(text=text, at=NOW, by="template"), fmt
    )
    assert any("Official status" in part for part in texts(card))
    assert_no_forged_link(*texts(card))
