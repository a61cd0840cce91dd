"""Grounding as models write: compound tokens, units and their conversions, times as
instants, links whole; steps, counts and ids exact; percents, months and dates protected."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.llm.grounded import render_highlights
from bot.llm.grounding import FactIndex, check
from bot.narrative.facts import Highlight

FACTS = """\
run: Marin 535B-A23B MoE; ladder rungs d512-d2048
time now: Sep 2, 2026, 9:00 a.m. EDT
progress: step 55,000 of 390,251 (14.1% done)
last restart: Sep 1, 2026, 7:39 p.m. EDT, resumed from step 55,000 (had reached step 55,500),
down for 4h34m
launched: Aug 20, 2026
projected end: mid-April 2027 (as precise as the pace allows)
late restart: Sep 1, 2026, 10:30 p.m. EDT
sequence length 65,536; checkpoint size 4,995 GiB; 512 GPUs; 3 restarts; loss 2.314
"""


@pytest.fixture(scope="module")
def index() -> FactIndex:
    return FactIndex.build(FACTS)


@pytest.mark.parametrize(
    "text",
    [
        # compound tokens
        "It is a 535B model with 23B active parameters.",
        "The A23B experts route per token.",
        "The d512 rung finished first.",
        "The d2048 rung is the largest, after d512-d2048 started.",
        # durations in any spelling
        "It was down for 4 h 34 min.",
        "It was down for about 4.5 hours.",
        "It was down for roughly 274 minutes.",
        "It was down 4 hours 34 minutes, about 5 hours.",
        # unit conversions within rounding
        "Sequences are 64K tokens long.",
        "A checkpoint is about 5 TiB.",
        "A checkpoint is roughly 5.4 TB.",
        "A checkpoint is about 4,995 GiB.",
        # times as instants, in any zone, or as given
        "It restarted at 7:39 p.m. EDT.",
        "It restarted at 23:39 UTC.",
        "It restarted at 7:39 p.m.",
        "It restarted on Sep 1, 2026, 11:39 p.m. UTC.",
        "The later one was on Sep 2, 2026 at 02:30 UTC.",
        "The later one was at 10:30 p.m. EDT on Sep 1.",
        # steps exactly, in any notation
        "It resumed from step 55,000, having reached 55,500.",
        "It resumed from 55k.",
        "The run is at step 55,000 of 390,251.",
        # measurements may be rounded
        "It is about 14% done; the loss is near 2.3.",
        "It should end in mid-April 2027.",
        "It should end in April.",
        "It launched in August, on Aug 20.",
        "Three restarts so far; 3 in total, on 512 GPUs.",
    ],
)
def test_correct_rewordings_are_accepted(index: FactIndex, text: str) -> None:
    report = check(text, index)
    assert report.ok, report.problems


@pytest.mark.parametrize(
    "text, bad",
    [
        ("It restarted from step 56,000.", "56,000"),  # 55,500 is a fact; the step was 55,000
        ("It resumed from 56k.", "56k"),
        ("It restarted from step 55,400.", "55,400"),
        ("It is at step 55k of about 390,000.", "390,000"),  # a total of steps: exact
        ("It is 20% done.", "20%"),  # the 20th of August backs no percent
        ("It is 16% done.", "16%"),
        ("It should end in late April.", "late April"),
        ("It should end in May 2027.", "May 2027"),
        ("It restarted on Sep 3.", "Sep 3"),
        ("It restarted at 00:39 UTC.", "00:39 UTC"),
        ("It restarted at 8:39 p.m. EDT.", "8:39 p.m. EDT"),
        ("It restarted on Sep 1, 2026, 10:39 p.m. UTC.", "Sep 1, 2026"),
        ("It runs on about 500 GPUs.", "500"),  # a count is never rounded
        ("It has had 7 restarts.", "7"),
        ("It was down for 6 hours.", "6 hours"),
        ("A checkpoint is about 6 TiB.", "6 TiB"),
        ("Sequences are 32K tokens long.", "32K"),
        ("It has 24B active parameters.", "24B"),
        ("The d4096 rung is next.", "d4096"),
    ],
)
def test_wrong_numbers_are_refused(index: FactIndex, text: str, bad: str) -> None:
    report = check(text, index)
    assert not report.ok
    assert any(bad.lower() in problem.lower() for problem in report.problems), report.problems


def test_a_rounded_step_is_told_why() -> None:
    report = check("It resumed from step 55k.", FactIndex.build("resumed from step 55,321"))
    assert any("never rounded" in problem for problem in report.problems), report.problems


LONG_URL = (
    "https://github.com/acme-lab/hero/issues/8506#issuecomment-3141592653"
    "?utm_source=notifications&email_token=ABCDEF1234567890"
)


def test_links_are_allowed_whole_and_never_cut() -> None:
    now = datetime(2026, 9, 2, 12, tzinfo=UTC)
    highlight = Highlight(
        at=now - timedelta(hours=1),
        summary="Reports the root cause of the node loss.",
        source="github",
        author="ops",
        ref="#8506",
        url=LONG_URL,
        tag="incident",
    )
    rendered = render_highlights([highlight], "UTC")
    assert LONG_URL in rendered  # the model sees the whole link
    index = FactIndex.build(rendered)
    assert check(f"The cause is in {LONG_URL}.", index).ok
    cut = check(f"The cause is in {LONG_URL[:80]}.", index)
    assert not cut.ok and "not in the facts" in cut.problems[0]


def test_a_link_the_facts_show_cut_backs_nothing() -> None:
    index = FactIndex.build("a summary that ends in https://github.com/acme-lab/hero/iss…")
    assert not check("See https://github.com/acme-lab/hero/iss…", index).ok
