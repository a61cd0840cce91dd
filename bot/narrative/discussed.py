"""What people are discussing and what is still open, in whole sentences from the facts alone:
the no-key narrative's second and third paragraphs (`bot.narrative.templates`). Every number is
the code's (counts, dates, the changed value as the post wrote it); every sentence is whole."""

from __future__ import annotations

from bot.narrative.discussions import DISCUSSION_WINDOW, Discussion
from bot.narrative.facts import NarrativeFacts, OpenThread
from bot.narrative.format import fmt_day, sentence, whole_sentences
from bot.narrative.words import count_words, names_list

TOLD = 3  # discussions the narrative tells
SAID_CHARS = 230  # what a post said, in whole sentences, at most
OTHERS = 3  # people named besides the one who drives it
TITLE_CHARS = 90
OPEN_ITEMS = 3


def _kind(d: Discussion) -> str:
    noun = {"pull": "pull request", "issue": "issue"}.get(d.kind or "", "thread")
    if d.proposal:
        return "an open proposal (pull request)"
    if d.state in ("open", "closed", "merged"):
        return f"{'an' if d.state == 'open' else 'a'} {d.state} {noun}"
    return f"a{'n' if noun[0] in 'aeiou' else ''} {noun}"


def told(facts: NarrativeFacts) -> list[Discussion]:
    """The discussions worth a sentence: more than one post in the window."""
    return [d for d in facts.discussions if d.posts > 1][:TOLD]


def _about(d: Discussion) -> str:
    title = whole_sentences(d.title, TITLE_CHARS).rstrip(".")
    return f"{d.ref} ({title})" if title and title != d.ref else d.ref


def discussion_sentences(d: Discussion, tz: str) -> list[str]:
    """ "#8833 (Weight decay …) is an open proposal (pull request), driven by ClassicLarry with
    Kaiyue-Wen: six posts from three people in the last three days. Latest change, Sep 2, by
    ClassicLarry: Lowers the proposed weight decay from 0.05 to 0.02. …" """
    head = f"{_about(d)} is {_kind(d)}"
    if d.driver:
        head += f", driven by {d.driver}"
        others = [p for p in d.people if p != d.driver][:OTHERS]
        if others:
            head += f" with {names_list(others)}"
    days = round(DISCUSSION_WINDOW.total_seconds() / 86400)
    head += (
        f": {count_words(d.posts, 'post')} from {count_words(len(d.people), 'person', 'people')}"
        f" in the last {count_words(days, 'day')}."
    )
    out = [head]
    change = d.change
    if change is not None:
        who = f", by {change.author}" if change.author else ""
        said = sentence(whole_sentences(change.said, SAID_CHARS))
        out.append(f"Latest change ({fmt_day(change.at, tz)}{who}): {said}")
    if d.latest and (change is None or d.latest_url != change.url or change.said not in d.latest):
        who = f" from {d.latest_by}" if d.latest_by else ""
        out.append(f"Latest{who}: {sentence(whole_sentences(d.latest, SAID_CHARS))}")
    return out


def discussion_paragraph(facts: NarrativeFacts, room: int) -> str | None:
    """What is being discussed and by whom, most discussed first, in at most `room`
    characters: whole discussions while they fit (a discussion that does not fit is told by
    its first sentence alone, or not at all), never a cut sentence."""
    lead = "Under discussion: "
    text = ""
    for d in told(facts):
        sentences = discussion_sentences(d, facts.timezone)
        for take in (sentences, sentences[:1]):
            longer = f"{text} {' '.join(take)}" if text else " ".join(take)
            if len(lead) + len(longer) <= room:
                text = longer
                break
    return lead + text if text else None


def _open_line(thread: OpenThread, by_ref: dict[str, Discussion]) -> str:
    d = by_ref.get(thread.ref or "")
    title = whole_sentences(thread.title, TITLE_CHARS).rstrip(".")
    if not thread.ref:
        text = title
    else:  # a thread without a title of its own shows its reference once, never "#9 #9"
        text = thread.ref if title in ("", thread.ref) else f"{thread.ref} {title}"
    if d is not None and d.proposal and d.driver:
        text += f" (a proposal driven by {d.driver})"
    elif d is not None and d.driver:
        text += f" (driven by {d.driver})"
    elif thread.author:
        text += f" (opened by {thread.author})"
    return "• " + text


def open_lines(facts: NarrativeFacts, limit: int = OPEN_ITEMS) -> list[str]:
    """What is still open, the threads under discussion first, each with who drives it."""
    by_ref = {d.ref: d for d in facts.discussions}
    return [_open_line(t, by_ref) for t in facts.open_threads[:limit]]
