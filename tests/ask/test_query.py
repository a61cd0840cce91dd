"""Questions are user input: parsing them is pure and must never produce raw FTS5 syntax."""

from __future__ import annotations

import re

import pytest

from bot.ask.query import (
    MAX_QUESTION_CHARS,
    BadQuestion,
    Day,
    every_token,
    fts_tokens,
    parse_question,
    quote,
)

HOSTILE = [
    'why "did the gate',
    'NEAR(loss spike, 3) and "',
    "loss* OR restart*",
    "-restart -crash gate",
    "gate AND NOT (decay OR lr)",
    "title:crash body:oom",
    "{title body}: nvlink ^fault",
    "ab + cd ((( )))",
    "'; DROP TABLE events; --",
    'x"y NEAR/2 "z',
    'col:"unterminated',
    "\u0000null\u202ebidi\u200bzero-width restart",
]


@pytest.mark.parametrize("question", HOSTILE)
def test_hostile_questions_become_quoted_terms_only(question: str) -> None:
    query = parse_question(question)
    for term in query.terms:
        expression = term.expression
        # every quoted string is one token (the index has no positions: a phrase would fail);
        # outside quotes only OR, AND and parentheses remain
        for quoted in re.findall(r'"((?:[^"]|"")*)"', expression):
            assert fts_tokens(quoted) == [quoted], expression
        outside = re.sub(r'"(?:[^"]|"")*"', "", expression)
        assert set(outside.replace("OR", "").replace("AND", "")) <= set("() "), expression
        for spelling in term.spellings:
            assert '"' not in spelling and "\x00" not in spelling


def test_operators_are_not_obeyed() -> None:
    query = parse_question("gate NOT decay")
    assert [t.text for t in query.terms if not t.pair] == ["gate", "decay"]
    assert parse_question("NEAR restart").terms[0].expression == '"near"'


@pytest.mark.parametrize(
    "question", ["", "   ", "?!?", "*** --- ((( )))", 'AND OR NOT ""', "why did we do it?"]
)
def test_nothing_to_search_is_a_bad_question(question: str) -> None:
    with pytest.raises(BadQuestion):
        parse_question(question)


def test_too_long_is_a_bad_question() -> None:
    parse_question("loss " * (MAX_QUESTION_CHARS // 5))
    with pytest.raises(BadQuestion, match="2,000"):
        parse_question("x" * (MAX_QUESTION_CHARS + 1))


def test_exact_tokens_keep_their_shape() -> None:
    query = parse_question("Did hero-12d8b6f0 crash in #8818 at step 54,000?")
    spellings = {t.text: t.spellings for t in query.terms}
    assert spellings["hero-12d8b6f0"] == ("hero-12d8b6f0",)
    assert set(spellings["8818"]) == {"8818", "8,818"}
    assert set(spellings["54,000"]) == {"54,000", "54000"}
    assert query.refs == ("#8818",)


def test_numbers_find_each_other() -> None:
    plain = parse_question("step 54000").terms[1]
    short = parse_question("step 54k").terms[1]
    assert {"54000", "54,000"} <= set(plain.spellings)
    assert {"54k", "54000", "54,000"} == set(short.spellings)


def test_adjacent_words_also_make_a_phrase() -> None:
    query = parse_question("why did we lower the gate weight decay?")
    assert [t.text for t in query.terms if t.pair] == ["gate weight", "weight decay"]
    assert query.normalised == "lower gate weight decay"
    assert parse_question("LOWER the gate weight decay!").key == query.key


def test_named_days_and_refs() -> None:
    query = parse_question("Why were steps slower on the night of Sep 9?")
    assert query.days == (Day(9, 9, None),)
    assert "sep 9" in [t.text for t in query.terms]
    assert "9" not in [t.text for t in query.terms]
    assert parse_question("what restarted on 2026-09-16").days == (Day(16, 9, 2026),)
    assert parse_question("what caused the restart on the 16th?").days == (Day(16),)
    assert parse_question("what does northwind/llm-train#233 fix").refs == ("#233",)
    assert parse_question("news in #hero-run and issue 12").refs == ("#hero-run", "#12")


def test_quote_doubles_quotes() -> None:
    assert quote('a"b') == '"a""b"'


def test_compounds_ask_for_every_token() -> None:
    assert every_token("hero-12d8b6f0") == '("hero" AND "12d8b6f0")'
    assert every_token("54,000") == '("54" AND "000")'
    assert every_token("naïve") == '"naïve"'
    # letters Unicode 3.2 did not have split a term rather than risk a phrase; none left: no match
    assert every_token("\u07ca\u07cb-\u07cc") == '""'
    term = parse_question("what is hero-12d8b6f0").terms[0]
    assert term.spellings == ("hero-12d8b6f0",) and term.expression == '("hero" AND "12d8b6f0")'
