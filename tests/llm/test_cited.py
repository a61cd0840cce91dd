"""Cited prose: each sentence is checked against the sources it cites, and its citations become
links (or vanish where no link can be shown)."""

from __future__ import annotations

import pytest

from bot.llm.cited import (
    CitedRequest,
    Source,
    check_sentences,
    drop_citations,
    link_citations,
    sentences,
)
from bot.llm.grounding import FactIndex, check
from bot.llm.people import check_people, given
from bot.llm.safety import fence
from bot.render.page import rich_text
from bot.render.terminal import plain

ISSUE = "https://github.com/acme/llm/issues/8818"
PULL = "https://github.com/acme/llm/pull/8854"


def _source(n: int, text: str, author: str, ref: str, url: str | None = None) -> Source:
    return Source(n, fence(text, source="github", author=author, ref=ref, url=url), url)


SOURCES = {
    1: Source(1, "state: running"),
    2: Source(2, "last restart: resumed from step 50,195 (had reached step 50,400), down 47 min"),
    3: _source(
        3,
        "Pins a permanent checkpoint at step 60,000, just past where the gate decay switches on.",
        "ClassicLarry",
        "#8854",
        PULL,
    ),
    4: _source(
        4,
        "A fork of the run keeps its own checkpoint at step 55,000 on host dh1-r137.",
        "percyliang",
        "#8818",
        ISSUE,
    ),
    5: _source(
        5,
        "Evals of the 48k checkpoint: MMLU 58.3, up from 56.9 at 40k. Upload took fifteen minutes "
        "to gs://hero_ckpt_v2.",
        "Kaiyue-Wen",
        "#8818",
        ISSUE,
    ),
    6: _source(6, "Gate scale measured at 12.2 on layer one.", "ClassicLarry", "#8818", ISSUE),
    7: _source(7, "Lowers the proposed decay from 0.05 to 0.02.", "ClassicLarry", "#8833", PULL),
}
REQUEST = CitedRequest(
    sources=SOURCES,
    always="Hero 535B hero",
    known=("ClassicLarry", "percyliang", "Kaiyue-Wen", "helw150"),
)


def problems(text: str) -> list[str]:
    return check_sentences(text, REQUEST)


@pytest.mark.parametrize(
    "text",
    [
        "ClassicLarry's #8854 pins a permanent checkpoint at step 60,000 [3].",
        "Training is running [1]. Still open:",
        "MMLU reached 58.3 at the 48k checkpoint, up from 56.9 at 40k [5].",
        "The upload took 15 minutes, to gs://hero_ckpt_v2 [5].",  # a number word as digits
        "Kaiyue Wen measured the evals of the 48k checkpoint [5].",  # display name for a login
        "The gate scale is about 12 on layer one [6].",  # a measurement rounded
        "It came back after 47 minutes, down from step 50,400 to 50,195 [2].",
        "The checkpoint sits just past where the gate decay switches on [3]. The fork's own is "
        "at step 55,000 on dh1-r137 [4].",
        "Problems found in the fork led percyliang to keep its own checkpoint [4].",
    ],
)
def test_a_sentence_that_says_only_what_it_cites_passes(text: str) -> None:
    assert problems(text) == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # a number borrowed from another fact: in the request, not in what the sentence cites
        ("ClassicLarry pins a permanent checkpoint at step 55,000 [3].", "55,000"),
        # another fact's host
        ("The permanent checkpoint of #8854 lives on host dh1-r137 [3].", "dh1-r137"),
        # two values of one fact swapped
        ("MMLU reached 56.9 at the 48k checkpoint, up from 58.3 at 40k [5].", "is not what"),
        # a claim with no number that the source does not make
        ("The bucket ran out of quota during the upload [5].", "says more than"),
        # the wrong person, with a verb the people check has no family for
        ("percyliang calls the permanent checkpoint at step 60,000 healthy [3].", "percyliang"),
        # a claim without any source
        ("The team moved the run to a new cluster.", "without citing"),
        # a model name its source never writes
        ("Mistral Large finished the evals of the 48k checkpoint [5].", "Mistral"),
        # a citation that is not a source
        ("Training is running [19].", "not a source"),
        # an ordered pair turned round
        ("ClassicLarry changed the proposed decay from 0.02 to 0.05 [7].", "0.02 … 0.05"),
    ],
)
def test_a_sentence_that_says_more_than_it_cites_is_refused(text: str, why: str) -> None:
    found = problems(text)
    assert found and any(why in p for p in found), found


def test_the_same_number_cited_from_its_own_fact_passes() -> None:
    """The borrowed step of the test above is fine where its fact is cited."""
    assert problems("The fork keeps its own checkpoint at step 55,000 [4].") == []


def test_sentences_keep_their_trailing_citations_and_abbreviations() -> None:
    text = "It hung at 9:12 p.m. PDT on Oct 13. [2] Then it resumed [1].\n\nStill open: #8818 [4]"
    assert sentences(text) == [
        "It hung at 9:12 p.m. PDT on Oct 13. [2]",
        "Then it resumed [1].",
        "Still open: #8818 [4]",
    ]


def test_citations_become_links_renumbered_and_vanish_without_a_link() -> None:
    text = "Training is running [1]. The fork keeps step 55,000 [4][3]. The pin is #8854 [3]."
    linked = link_citations(text, SOURCES)
    assert linked == (
        "Training is running. The fork keeps step 55,000 "
        f"[\\[1\\]]({ISSUE})[\\[2\\]]({PULL}). The pin is #8854 [\\[2\\]]({PULL})."
    )
    # the page shows them as links, the terminal drops them cleanly
    html = rich_text(linked)
    assert f'<a href="{ISSUE}">[1]</a>' in html and f'<a href="{PULL}">[2]</a>' in html
    assert plain(linked) == "Training is running. The fork keeps step 55,000. The pin is #8854."
    assert drop_citations(linked) == plain(linked)
    assert drop_citations(text) == plain(linked)


def test_grounding_reads_the_rewordings_a_careful_reader_allows() -> None:
    facts = FactIndex.build(
        "waited 15 min; the gate scale is 12.2; W&B run marin_moe/hero_run_3 and "
        "hero_12d8b6f0-dee637; it took fifteen minutes"
    )
    for ok in (
        "waited fifteen minutes",
        "it took 15 minutes",
        "about 12",
        "hero_run_3",
        "hero_12d8b6f0",
        "hero-run-3",  # "_" and "-" alike
    ):
        assert check(ok, facts).ok, ok
    for wrong in ("waited sixteen minutes", "exactly 13", "hero_run_4", "exactly 14 of them"):
        assert not check(wrong, facts).ok, wrong


def test_common_words_before_a_verb_are_not_people() -> None:
    facts = given([fence("Relaunched from step 61,000.", source="github", author="mei-lin")])
    for text in (
        "Problems found during the hang were fixed.",
        "The earlier runs showed the same curve.",
        "The variant cut the loss.",
        "Mei Lin relaunched from step 61,000.",  # her display name
    ):
        assert check_people(text, facts) == [], text
    for text in ("dave drained the host.", "Then Dave drained the host.", "@bob restarted it."):
        assert check_people(text, facts), text


def test_a_person_may_be_named_by_another_of_their_names() -> None:
    facts = given(
        [
            fence("Argues the statistic deserves its own study.", source="discord", author="Percy"),
            fence("Lowers the decay to 0.02.", source="github", author="ClassicLarry", ref="#8833"),
            fence("Asks what decay costs.", source="discord", author="Percy Liang"),
        ],
        ["percyliang", "Percy Liang", "ClassicLarry", "Larry", "Kaiyue-Wen"],
    )
    for text in (
        "percyliang asked what the decay costs.",  # the login of a display name
        "Larry lowered the decay to 0.02.",  # the Discord name of ClassicLarry
    ):
        assert check_people(text, facts) == [], text
    for text in (
        "Larry asked what the decay costs.",  # ClassicLarry did not ask it
        "Kaiyue-Wen lowered the decay to 0.02.",  # not in these facts at all
    ):
        assert check_people(text, facts), text


def test_a_reply_over_its_word_budget_is_ended_at_a_whole_sentence() -> None:
    """Issue 37: model text over its limit is never published as is, nor cut mid-sentence."""
    from bot.llm.grounded import within_words

    text = (
        "Training resumed at 7:39 p.m. EDT after a node lost its link [1]. The team cut the "
        "weight decay from 0.05 to 0.02 [2]. Evals are next [3]."
    )
    assert within_words(text, 40) == text
    assert within_words(text, 23) == (
        "Training resumed at 7:39 p.m. EDT after a node lost its link [1]. The team cut the "
        "weight decay from 0.05 to 0.02 [2]."
    )
    assert within_words(text, 5).endswith("lost its link [1].")  # the first sentence stays
