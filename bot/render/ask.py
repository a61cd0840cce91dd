"""An answer from /ask as a card (Discord) or plain text (terminal). Citations become linked
`[n]` references with author, date and reference; untrusted text (summaries, names, the model's
prose) is shown inert, so it can neither format nor forge a link."""

from __future__ import annotations

import re

from bot.ask.service import Answer, Citation
from bot.core.limits import DESCRIPTION_LIMIT, FIELD_VALUE_LIMIT, TITLE_LIMIT
from bot.narrative.words import credit
from bot.render.cards import (
    Card,
    CardField,
    TimeFormatter,
    clip,
    inert,
)

_MARKER = re.compile(r"\[(\d+)\]")
SUMMARY_CHARS = 120
MAX_SOURCE_FIELDS = 4


def cite(citation: Citation) -> str:
    """`[1]` linked to the event when it has a URL."""
    label = f"\\[{citation.n}\\]"
    url = citation.event.url
    return f"[{label}]({url})" if url else label


def source_line(citation: Citation, fmt: TimeFormatter, *, summary_chars: int) -> str:
    e = citation.event
    parts = [f"**{inert(credit(e.author, e.source))}**", fmt(e.at, "datetime")]
    if e.ref:
        parts.append(inert(e.ref))
    summary = inert(clip(citation.summary, summary_chars))
    return f"{cite(citation)} " + " · ".join(parts) + f" — {summary}"


def linked(text: str, citations: list[Citation]) -> str:
    """The model's text, inert, with each `[n]` turned into its citation's link."""
    by_n = {c.n: c for c in citations}
    out: list[str] = []
    last = 0
    for match in _MARKER.finditer(text):
        out.append(inert(text[last : match.start()]))
        citation = by_n.get(int(match.group(1)))
        out.append(cite(citation) if citation else "")
        last = match.end()
    out.append(inert(text[last:]))
    return "".join(out)


def answer_card(
    answer: Answer, fmt: TimeFormatter, *, run_name: str | None = None, writing: bool = False
) -> Card:
    """`writing`: a written answer is on its way and will replace these matches."""
    title = clip(f"Q: {answer.question}", TITLE_LIMIT)
    footer = f"{run_name or answer.run} · "
    if answer.by == "llm":
        footer += f"answered by the LLM from {len(answer.citations)} cited event(s)"
    elif writing:
        footer += "best matches so far; writing an answer from them…"
    else:
        footer += "best matches in the stored history (no LLM answer)"
    if answer.by == "search" or not answer.citations:
        if not answer.citations:
            return Card(title=title, description=inert(answer.answer), footer=footer)
        lines = [source_line(c, fmt, summary_chars=200) for c in answer.citations]
        return Card(title=title, description=_fit_lines(lines, DESCRIPTION_LIMIT), footer=footer)
    card = Card(
        title=title,
        description=clip(linked(answer.answer, answer.citations), DESCRIPTION_LIMIT),
        footer=footer,
    )
    lines = [source_line(c, fmt, summary_chars=SUMMARY_CHARS) for c in answer.citations]
    chunk: list[str] = []
    for line in lines:
        line = clip(line, FIELD_VALUE_LIMIT)
        if chunk and len("\n".join([*chunk, line])) > FIELD_VALUE_LIMIT:
            card.fields.append(
                CardField("Sources" if not card.fields else "\u200b", "\n".join(chunk))
            )
            chunk = []
        chunk.append(line)
    if chunk and len(card.fields) < MAX_SOURCE_FIELDS:
        card.fields.append(CardField("Sources" if not card.fields else "\u200b", "\n".join(chunk)))
    return card


def _fit_lines(lines: list[str], limit: int) -> str:
    """Whole lines only: a cut line could leave half a link."""
    out: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) + 1 > limit:
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def answer_text(answer: Answer, fmt: TimeFormatter) -> str:
    """For the terminal: the answer, then each citation with its date, author, ref and URL."""
    lines = [f"Q: {answer.question}", ""]
    if answer.by == "llm" or not answer.citations:
        lines += [answer.answer, ""]
    if answer.citations:
        lines.append("Sources:" if answer.by == "llm" else "Closest matches:")
        for c in answer.citations:
            e = c.event
            head = " · ".join(x for x in (fmt(e.at, "datetime"), e.author, e.ref, e.source) if x)
            lines.append(f"[{c.n}] {head}")
            lines.append(f"    {c.summary}")
            if e.url:
                lines.append(f"    {e.url}")
        lines.append("")
    by = "the LLM" if answer.by == "llm" else "search (no LLM answer)"
    lines.append(f"answered by {by}")
    return "\n".join(lines)


__all__ = ["answer_card", "answer_text", "cite", "linked", "source_line"]
