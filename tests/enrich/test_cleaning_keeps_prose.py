"""Cleaning removes recognised boilerplate lines only: a paragraph of prose survives whatever
opens it and whatever surrounds it (the 🤖-opened agent updates that used to vanish included)."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.enrich.markdown import clean_text, parse
from bot.enrich.rules import enrich_text
from bot.enrich.summary import NO_TEXT

WORDS = re.findall(
    r"\S+",
    "the run rolled back to step after hang on rank node lost spare requeued we saw loss "
    "checkpoint restore failed again because storage bucket quota and then it resumed from "
    "gradient norm router gate learning rate sweep ablation baseline eval data mix shard "
    "tokenizer throughput dropped while nvlink errors appeared on host this morning slowly",
)

#: What opens a paragraph in real threads: agent markers, template and bot-looking openers,
#: emphasis, emoji, headings words, trailer-like words.
OPENERS = [
    "",
    "🤖 ",
    "🤖 Update: ",
    "🤖 **Agent update** — ",
    ":robot: ",
    ":warning: ",
    "⚠️ ",
    "**Update:** ",
    "Update: ",
    "Note: ",
    "TL;DR: ",
    "FYI ",
    "Co-Authored-By: ",
    "Signed-off-by: ",
    "Fixes #12 ",
    "Generated with Claude ",
    "This issue has been automatically ",
    "This PR was automatically ",
    "Preview deployment ",
    "Codecov Report ",
    "dependabot[bot] ",
    "Thank you for your contribution! ",
    "[09:14 UTC] ",
    "2026-09-01 09:14 ",
    "WARNING: ",
    "ERROR: ",
    "Pull request overview by ",
    "- [ ] I have ",
    "- [x] ",
    "1. ",
]

#: Boilerplate and markup around the paragraph, each its own block.
SURROUNDINGS = [
    "🤖 Generated with [Claude Code](https://claude.com/claude-code)",
    "Co-Authored-By: Claude <noreply@anthropic.com>",
    "Signed-off-by: Someone <someone@example.com>",
    "Fixes #8854",
    "## Description",
    "## Checklist\n\n- [ ] I have run the tests\n- [ ] I have updated the docs",
    "<!-- Please describe your change -->",
    '```\nTraceback (most recent call last):\n  File "x.py", line 1\n```',
    "> quoted earlier reply that is not this post",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "<details><summary>logs</summary>\n\nstep 1 loss 2.3\n\n</details>",
    "This issue is stale because it has been open 30 days with no activity.",
    "Thanks!",
]

# real sentences use many different words ("the the the …" is not prose)
prose = st.lists(st.sampled_from(WORDS), min_size=20, max_size=60).filter(
    lambda words: len(set(words)) >= 10
)


def _joined(text: str) -> str:
    return " ".join(text.split())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=prose,
    opener=st.sampled_from(OPENERS),
    before=st.lists(st.sampled_from(SURROUNDINGS), max_size=3),
    after=st.lists(st.sampled_from(SURROUNDINGS), max_size=3),
    wrap=st.integers(min_value=0, max_value=12),
)
def test_a_paragraph_of_prose_survives_cleaning(
    words: list[str], opener: str, before: list[str], after: list[str], wrap: int
) -> None:
    sentence = " ".join(words)
    paragraph = f"{opener}{sentence}."
    if wrap:  # hard-wrapped every `wrap` words, as people and agents both do
        tokens = paragraph.split(" ")
        paragraph = "\n".join(" ".join(tokens[i : i + wrap]) for i in range(0, len(tokens), wrap))
    body = "\n\n".join([*before, paragraph, *after])

    assert sentence in _joined(clean_text(body))
    # and the parsed document (what summaries, tags and incidents read) carries it too
    assert sentence in _joined(" ".join(b.text for b in parse(body).blocks))
    for kind in ("comment", "issue", "message"):
        e = enrich_text(title=None, body=body, kind=kind, source="github")
        assert e.summary != NO_TEXT
        assert e.newsworthy


def test_an_agent_update_opened_by_a_robot_keeps_its_text() -> None:
    body = (
        "🤖 Hero run update: rolled back to step 48,000 after NVLink errors on r12n4; the job is "
        "requeued on a spare node and will resume from the last permanent checkpoint.\n\n"
        "🤖 Generated with [Claude Code](https://claude.com/claude-code)\n\n"
        "Co-Authored-By: Claude <noreply@anthropic.com>"
    )
    text = clean_text(body)
    assert "rolled back to step 48,000 after NVLink errors" in text
    assert "Generated with" not in text
    assert "Co-Authored-By" not in text
    e = enrich_text(title=None, body=body, kind="comment", source="github")
    assert "rolled back to step 48,000" in e.summary
    assert not e.summary.startswith("🤖")


def test_a_short_agent_line_is_not_boilerplate() -> None:
    e = enrich_text(
        title=None,
        body="🤖 Rolled back to 48k: NVLink errors on r12n4.",
        kind="comment",
        source="github",
    )
    assert e.summary == "Rolled back to 48k: NVLink errors on r12n4."
    assert e.newsworthy


def test_template_boilerplate_goes_and_filled_sections_stay() -> None:
    body = (
        "## Description\n\nMoves the restore onto the regional bucket.\n\n"
        "## Testing\n\n## Checklist\n\n- [ ] I have run the tests\n- [x] I have updated the docs\n"
        "- [ ] rerun the 1B ablation after merge\n"
    )
    lines = clean_text(body).split("\n")
    assert lines == [
        "Description",
        "Moves the restore onto the regional bucket.",
        "Checklist",
        "rerun the 1B ablation after merge",
    ]


def test_a_bot_notice_goes_while_it_is_footer_sized() -> None:
    assert clean_text("This issue is stale because it has been open 30 days.") == ""
    assert clean_text("Preview deployment ready at the usual place.") == ""


def test_an_entry_with_nothing_to_say_is_not_shown() -> None:
    for body in ("", "<!-- template only -->", "## Description\n\n## Testing\n"):
        e = enrich_text(title=None, body=body, kind="comment", source="github")
        assert e.summary == NO_TEXT
        assert not e.newsworthy


def test_a_line_in_another_script_is_prose_not_a_pasted_log() -> None:
    for line in (
        "혹시 wandb 멈춘 거 저만 그런가요? 180.7k에서 40분째 안 움직여요",
        "两个pod都卡住了, 最后一个step是88,412, 日志停在02:58",
        "обучение остановилось на шаге 41 200, узел r7 не отвечает",
    ):
        doc = parse(line)
        assert doc.prose == line and not doc.logs, line
        assert enrich_text(title=None, body=line, kind="message", source="discord").summary
    soup = "0x7f3a:0x7f3b 12:01:02.331 [33/44] ░░░░░░░░ 0.0031 0.0029 → 0.0030"
    assert not parse(soup).prose  # symbol soup stays a log, whatever its script
