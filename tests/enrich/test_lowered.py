"""Patterns read on lowercased text (`bot.enrich.lowered`) find what they found with case
folding, and a pattern whose words tell cases apart is never given a twin."""

from __future__ import annotations

import re

import pytest

from bot.enrich import incidents
from bot.enrich.lowered import Words, aligned, lowered, must_lower


@pytest.mark.parametrize(
    ("pattern", "twin"),
    [
        (r"\bnode\s+\S+\s+(?:died|is\s+down)\b", True),  # escapes name no capital
        (r"(?P<metric>mfu|tok/s)\s+\d+", True),  # nor does a group's name
        (r"[A-Za-z]+-\d+\s+unresponsive", True),  # a class of both cases reads the same
        (r"[A-Z]{2,}\s+down", False),  # capitals only: lowered text has none
        (r"Xid\s+79", False),  # a capital word
        (r"(?-i:FAILED)|crashed", False),  # a part that tells cases apart
    ],
)
def test_a_twin_only_for_a_pattern_written_in_lower_case(pattern: str, twin: bool) -> None:
    assert (lowered(re.compile(pattern, re.IGNORECASE)) is not None) is twin


def test_a_pattern_with_capitals_is_refused_at_import() -> None:
    with pytest.raises(ValueError, match="capitals"):
        must_lower(re.compile(r"Xid\s+79", re.IGNORECASE))


TEXTS = (
    "Main DIED at 11:02 on R12N4, the Eval job is fine",
    "tok/s 1.9M → 0.95M since 12:40, MFU 31 %",
    "İstanbul node İ-3 is down",  # lowering "İ" adds a character: read as it is
    "nothing here at all",
)


@pytest.mark.parametrize("text", TEXTS)
def test_words_find_count_and_place_what_the_pattern_does(text: str) -> None:
    for pattern in (incidents._NOT_THE_RUN, incidents._FROM_TO, incidents.ALL_FINE):
        words = Words(pattern)
        assert words.found(text) is (pattern.search(text) is not None)
        assert words.count(text) == len(pattern.findall(text))
        spans = [m.span() for m in pattern.finditer(text)]
        assert [m.span() for m in words.finditer(text)] == spans
        assert [m.span() for m in words.finditer(text, text.lower())] == spans


def test_lowering_that_moves_characters_is_not_aligned() -> None:
    assert aligned("Main DIED", "main died")
    assert not aligned("İ-3", "İ-3".lower())


@pytest.mark.parametrize("text", TEXTS)
def test_the_signals_twins_match_the_same_spans(text: str) -> None:
    low = text.lower()
    for pattern, twin in map(incidents.compiled, range(len(incidents.SIGNALS))):
        if twin is None or not aligned(text, low):
            continue
        assert [m.span() for m in twin.finditer(low)] == [m.span() for m in pattern.finditer(text)]
