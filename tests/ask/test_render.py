"""The /ask card: linked citations, inert untrusted text, Discord's limits with many long
citations, and the terminal text."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from bot.ask.service import Answer, Citation
from bot.core.limits import DESCRIPTION_LIMIT, FIELD_VALUE_LIMIT, TOTAL_LIMIT
from bot.models import Event
from bot.outbox.payload import fit_card
from bot.render.ask import answer_card, answer_text
from bot.render.terminal import local_formatter

AT = datetime(2026, 9, 9, 2, 15, tzinfo=UTC)


def fmt(value: datetime, style: str) -> str:
    return f"<t:{int(value.timestamp())}:D>"


def citation(n: int, summary: str, url: str | None = "https://github.com/a/b/issues/1") -> Citation:
    event = Event(
        run_slug="hero",
        source="github",
        external_id=f"c{n}",
        kind="comment",
        at=AT,
        author="**mallory**](https://evil.example)",
        ref=f"#{n}",
        url=f"{url}#c{n}" if url else None,
        summary=summary,
    )
    return Citation(n, event)


def test_llm_answer_links_each_marker_and_lists_sources() -> None:
    answer = Answer(
        "why?", "hero", "Because of [1] and [2]; see [x](https://evil.example).", "llm",
        [citation(1, "First."), citation(2, "Second.", url=None)],
    )  # fmt: skip
    card = answer_card(answer, fmt, run_name="Hero")
    assert "[\\[1\\]](https://github.com/a/b/issues/1#c1)" in card.description
    assert "\\[2\\]" in card.description  # no URL: a plain label
    unescaped_link = re.compile(r"(?<!\\)\]\(https://evil")
    assert not unescaped_link.search(card.description)  # inert, not a link
    [sources] = card.fields
    assert sources.name == "Sources" and "<t:" in sources.value
    assert not unescaped_link.search(sources.value)  # the author cannot forge a link
    assert "answered by the LLM" in (card.footer or "")


def test_many_long_citations_stay_within_discord_limits() -> None:
    long = "word " * 400
    citations = [citation(n, long) for n in range(1, 21)]
    question = "q" * 1900
    for by, text in (("llm", " ".join(f"{long}[{n}]" for n in range(1, 21))), ("search", "x")):
        card = fit_card(answer_card(Answer(question, "hero", text, by, citations), fmt))  # type: ignore[arg-type]
        assert len(card.title) <= 256 and len(card.description) <= DESCRIPTION_LIMIT
        assert all(len(f.value) <= FIELD_VALUE_LIMIT for f in card.fields)
        assert card.size() <= TOTAL_LIMIT
        # a cut never leaves half a link behind
        assert card.description.count("](") == len(re.findall(r"\]\(https://", card.description))


def test_terminal_text_has_every_citation_with_its_url() -> None:
    answer = Answer("why?", "hero", "closest", "search", [citation(1, "First."), citation(2, "B")])
    out = answer_text(answer, local_formatter("UTC", AT))
    assert "Closest matches:" in out and "[2] Sep 9, 2026" in out
    assert out.count("https://github.com/a/b/issues/1#c") == 2


def test_sources_say_when_to_the_minute() -> None:
    """'When did the node go down?' needs a time, not a day: each source carries its local
    time and zone, in the terminal as on the card (issue 41), and so does what the model reads."""
    from bot.llm.ask import render_source

    answer = Answer("when?", "hero", "At 22:15 [1].", "llm", [citation(1, "Node lost.")])
    text = answer_text(answer, local_formatter("America/New_York", AT))
    assert "Sep 8, 2026 22:15 EDT" in text
    seen: list[str] = []

    def styles(value: datetime, style: str) -> str:
        seen.append(style)
        return "x"

    answer_card(answer, styles)  # type: ignore[arg-type]
    assert "date" not in seen and "datetime" in seen
    assert "10:15 p.m. EDT" in render_source(1, citation(1, "Node lost.").event, "America/New_York")
