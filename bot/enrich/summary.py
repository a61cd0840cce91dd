"""One-line summaries of cleaned text: sentences, fillers and chit-chat, the lead sentence, and
truncation at a sentence, clause or word boundary. Parsing lives in ``bot.enrich.markdown``; this
module only reads the blocks it produces."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Final

from bot.enrich.markdown import (
    HEADING,
    ITEM,
    PARA,
    Block,
    Document,
    clean_line,
    is_template_heading,
    strip_mentions,
    wordset,
)

NO_TEXT: Final = "(no text)"
ELLIPSIS: Final = "…"

# --------------------------------------------------------------------------------------------
# Sentences, fillers and chit-chat


_ABBREVIATIONS = wordset(
    "e.g i.e vs etc approx cf fig no nos mr mrs ms dr st al eq incl resp w.r.t a.k.a prof jr sr"
)
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)")
_WORD_BEFORE = re.compile(r"([\w.]+)[.!?]*[\"')\]]*$")


def iter_split(text: str) -> Iterator[str]:
    """Sentences of one cleaned block, lazily (abbreviation- and decimal-aware)."""
    start = 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        if m.group(0)[0] == ".":
            w = _WORD_BEFORE.search(text, max(start, m.start() - 12), m.start() + 1)
            if w and w.group(1).lower().rstrip(".") in _ABBREVIATIONS:
                continue
        sentence = text[start:end].strip()
        if sentence:
            yield sentence
        start = end
    rest = text[start:].strip()
    if rest:
        yield rest


_LEAD_FILLER = re.compile(
    r"""^(?:
        (?:@[\w.\-]+[\s,:]*)+                                       # leading pings
      | (?:hi|hey|hello|howdy|yo|greetings|good[ ](?:morning|afternoon|evening)|morning
          |hmm+|oh|ugh|uh[ -]?oh|welp|argh|ouch|oops
          |thanks|thank[ ]you|thx|ty|ok(?:ay)?|so|alright|update|quick[ ]update|small[ ]update
          |status[ ]update|update[ ]\d+|edit(?:ed)?|fyi|psa|note|nb|heads[ -]?up|tl;?[ ]?dr
          |summary|context|followup|follow-up|re|ping|bump)
        (?:[ ]+(?:all|everyone|folks|team|there|guys|y'all|again|@[\w.\-]+))*
        [ ]*[:,!.—–\-]+[ ]*
    )+""",
    re.VERBOSE | re.IGNORECASE,
)
_TLDR = re.compile(r"^(?:tl;?[ ]?dr|tldr|summary|in short)\b[\s:,—–\-]*", re.IGNORECASE)
_ACK_WORDS = wordset(
    """
    thanks thank you thx ty tysm tyvm cheers kudos lgtm sgtm ack acked same agreed agree done
    nice great cool awesome perfect amazing excellent neat sweet wow congrats congratulations gg
    ok okay k kk sure yes yeah yep yup ya nope lol lmao rofl xd omg heh hehe ha haha hahaha hmm
    good work job catch find call point idea stuff effort for the this that a lot so much very all
    everyone team folks guys again in advance sounds looks look to me will do on it makes sense
    fix help review reviewing merging merge merged approve approved ship let's lets go love it's
    its there hi hey hello morning evening cc ping bump see above below here noted got it +1 +100
    1 welcome np no problem interesting indeed true right exactly totally both
    """
)
_TOKEN = re.compile(r"[a-z0-9+']+")
_MENTION_WORD = re.compile(r"@[\w.\-\u200b]+")
_LAUGH = re.compile(r"(?:ha|he|ah)+h?|l+o+l+|h+m+|o+k+|no+ice|ye+s+|\\+1+")


def strip_filler(sentence: str) -> str:
    """A sentence without its leading greeting, ack or ping ("Morning all! …", "FYI: …")."""
    return _LEAD_FILLER.sub("", sentence).strip()


def words(text: str) -> list[str]:
    """Lower-case word tokens without mentions (``+1`` counts as a word)."""
    if "@" in text:
        text = _MENTION_WORD.sub(" ", text)
    return _TOKEN.findall(text.lower())


def is_chitchat(text: str) -> bool:
    """True for acks and banter: every word is an acknowledgement word ("thanks!", "lgtm",
    "nice work", "+1", "see above") or there are no words at all (emoji-only)."""
    if len(text) > 160:
        return False
    return all(w in _ACK_WORDS or _LAUGH.fullmatch(w) for w in words(text))


def _is_boilerplate_heading(text: str) -> bool:
    return is_template_heading(text)


def _is_filler(sentence: str) -> bool:
    if is_chitchat(sentence):
        return True
    # "Details below:", "Logs:", "Here's the trace:" — short lead-ins to dropped content
    return sentence.endswith(":") and len(sentence.split()) < 7


# --------------------------------------------------------------------------------------------
# Summaries

_CUT_STRIP = " ,;:—–-([{'\"/"


#: Where a long sentence may end early and still read whole: after a clause ("…, and", "; ",
#: " — "), never inside a phrase. The clause kept ends with a full stop.
_CLAUSE_END = re.compile(
    r"(?:[,;:](?!\d)|\s[—–-])\s|\s(?=(?:and|but|because|so|which|while|whereas|although"
    r"|though|after|since|before|until|so\s+that)\s)"
)
#: A cut keeps at least this share of the limit: shorter would drop the point of the sentence.
MIN_KEPT: Final = 0.35


def truncate(text: str, limit: int, *, short_sentence: bool = False) -> str:
    """Cap ``text`` at ``limit`` characters at a boundary a reader takes as an end: the last
    sentence end, else the last clause end (closed with a full stop), each keeping at least
    ``MIN_KEPT`` of the limit; then, with ``short_sentence``, a shorter first sentence; only
    when none exists, a word boundary and an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    head = text[: limit + 1]
    floor = int(limit * MIN_KEPT)
    best = -1
    for m in _SENTENCE_END.finditer(head):
        if m.end() <= limit:
            best = m.end()
    if best >= floor:
        return text[:best].rstrip()
    cut = text[: limit - 1]
    clauses = [m.start() for m in _CLAUSE_END.finditer(cut) if m.start() >= floor]
    if clauses:
        return cut[: clauses[-1]].rstrip(_CUT_STRIP + ".") + "."
    if short_sentence and best > 0:
        return text[:best].rstrip()
    space = cut.rfind(" ")
    if space >= (limit - 1) * 0.5:
        cut = cut[:space]
    cut = cut.rstrip(_CUT_STRIP) or cut
    return cut + ELLIPSIS


_TITLE_PREFIX = re.compile(
    r"^\s*(?:(?:\[(?:wip|draft|rfc|dnm|do not merge)\]|(?:wip|draft|dnm)\s*:)\s*)+", re.IGNORECASE
)


def clean_title(title: str | None) -> str:
    if not title:
        return ""
    return _TITLE_PREFIX.sub("", clean_line(title)).strip()


#: Sentences examined for a lead before giving up (bounds the cost of "a. a. a. …" walls).
MAX_LEAD_SENTENCES: Final = 40


def _lead_from(first: str, rest: Iterator[str], limit: int) -> str:
    """``first`` (fillers stripped), plus following sentences while the result is very short."""
    out = _LEAD_FILLER.sub("", first).strip()
    for nxt in islice(rest, 4):
        if len(out) >= 60 or len(out) + 1 + len(nxt) > limit:
            break
        out = f"{out} {nxt}"
    return out


def lead_sentence(doc: Document, limit: int = 200) -> str | None:
    """The first substantive sentence(s) of a document, uncapped; None when there is none.

    A TL;DR beats the first sentence; greetings, acks, pings and lead-ins ("Details below:")
    are skipped; a heading is used only when the post has no other text at all (``lead``
    says which)."""
    return lead(doc, limit)[0]


def lead(doc: Document, limit: int = 200) -> tuple[str | None, bool]:
    """``(lead_sentence, from_heading)``: whether the only text found was a heading."""
    tldr_next = False
    # A TL;DR line (or a paragraph under a TL;DR heading) beats the first sentence.
    for b in doc.blocks[:40]:
        if tldr_next and b.kind != HEADING:
            return _first_meaningful([b], limit) or None, False
        tldr_next = False
        if b.kind == HEADING:
            tldr_next = bool(_TLDR.match(b.text)) and not _TLDR.sub("", b.text).strip()
        elif b.kind in (PARA, ITEM):
            m = _TLDR.match(b.text)
            if m and b.text[m.end() :].strip() and b.text[: m.end()].rstrip()[-1:] in ":—–-":
                return _first_meaningful([Block(b.kind, b.text[m.end() :])], limit) or None, False
    prose = [b for b in doc.blocks if b.kind in (PARA, ITEM)]
    if prose and doc.had_code and _introduces(prose[0].text):
        # "Three-week check-in" or "Results at 100k:" over a table, then the prose: the label
        # names what the prose after the table says
        found = _first_meaningful(prose[1:], limit)
        if found:
            return f"{prose[0].text.strip().rstrip(':').rstrip()} — {found}", False
    found = _first_meaningful(prose, limit)
    if found:
        return found, False
    fallback = next(
        (_LEAD_FILLER.sub("", b.text).strip() or b.text for b in doc.blocks if b.kind != HEADING),
        None,
    )
    if fallback:
        return fallback, False
    heading = next(
        (b.text for b in doc.blocks if b.kind == HEADING and not _is_boilerplate_heading(b.text)),
        None,
    )
    return heading, heading is not None


#: A line that labels what follows rather than saying something: a few words, no number, no
#: sentence or clause punctuation ("Three-week check-in", "Eval results").
LABEL_WORDS: Final = 5
_NOT_LABEL = re.compile(r"[\d.!?:;,]")


def _introduces(text: str) -> bool:
    """A label ("Three-week check-in") or a line that introduces what follows ("…:")."""
    text = text.strip()
    if text.endswith(":") and not _SENTENCE_END.search(text):
        return True
    return len(text.split()) <= LABEL_WORDS and not _NOT_LABEL.search(text)


def _first_meaningful(blocks: Iterable[Block], limit: int) -> str:
    budget = MAX_LEAD_SENTENCES
    for b in blocks:
        sentences = iter_split(b.text)
        for s in sentences:
            stripped = _LEAD_FILLER.sub("", s).strip()
            if stripped and not _is_filler(stripped):
                return _lead_from(s, sentences, limit)
            budget -= 1
            if budget <= 0:
                return ""
    return ""


_A_LINK = re.compile(r"https?://[^\s<>)\]]+")


def link_line(said: str, body: str) -> str:
    """A post that is a link and a word or an emoji ("👀 <W&B panel>"), said by both: "👀 —
    wandb.ai/lab/run/main", never a bare link (the query left out). Empty without words or a
    link."""
    said = " ".join(said.split())
    link = next((m.group(0) for m in _A_LINK.finditer(body[:2000])), None)
    if not said or not link:
        return ""
    return f"{said} — {re.sub(r'^https?://', '', link.split('?')[0])}"


def _one_line(text: str) -> str:
    return " ".join(strip_mentions(text).split())


# emoji and bullets that open a post ("🤖 Rolled back …", "⚠️ Hero is down"), not words
_LEAD_SYMBOLS = re.compile(r"^[^\w\s\"'(\[#$@~<`*]+\s*")


#: A lead that says what a description proposes or reports by itself: a sentence of at least
#: this many words that does not end by introducing something else ("Results:").
STANDALONE_WORDS: Final = 6


def _standalone(text: str) -> bool:
    return len(text.split()) >= STANDALONE_WORDS and not text.rstrip().endswith(":")


def compose_summary(doc: Document, title: str | None, limit: int = 200) -> str:
    """One line of at most ``limit`` characters: the first substantive sentence of ``doc``.

    For an issue or pull description (``title`` given) a lead that stands alone is the summary
    (what it proposes or reports, not its title again); a short or introducing lead ("Results
    for the 20k checkpoint:") follows the title; with no text but headings, the title. A line
    that would end by introducing what it cannot show ("The job exited at 10:52:") ends as the
    sentence it is."""
    limit = max(1, limit)
    said = _compose(doc, title, limit)
    if said.endswith(":") and not said.endswith("::"):
        return said[:-1].rstrip() + "."
    if said:
        return said
    code = code_line(doc)  # a post that is only code: its line as it is ("optimizer:")
    return truncate(code, limit) if code else truncate(NO_TEXT, limit)


def _compose(doc: Document, title: str | None, limit: int) -> str:
    text, from_heading = lead(doc, limit)
    text = _LEAD_SYMBOLS.sub("", _one_line(text)) if text else ""
    if not text.startswith("|") and text.count(" | ") >= 2:
        text = text.replace(" | ", "; ")  # "step 81,200 | loss 1.98 | no restarts": fields
    if text[:1].islower() and not text[1:2].isupper():
        text = text[0].upper() + text[1:]  # "the run…" after a stripped "TL;DR:" or greeting
    t = _one_line(clean_title(title))
    if t and not text and not from_heading and (error := error_text(doc)):
        # a description that is only a pasted log: its title, and the log's error if it fits
        said = f"{t} — {error}"
        if len(said) <= limit and error.lower() not in t.lower():
            return said
    if t and (from_heading or not text):
        return truncate(t, limit)
    if t and text and not _standalone(text):
        if t.lower().rstrip(".") in text.lower():
            return truncate(text, limit)
        sep = " " if t[-1] in ".!?" else " — "
        if len(t) + len(sep) + len(text) <= limit:
            return f"{t}{sep}{text}"
        room = limit - len(t) - len(sep)
        if room >= 40:
            # after its title, a whole first sentence however short ("— Not an outage, a
            # data-quality thing.") reads better than a longer lead cut mid-phrase
            return f"{t}{sep}{truncate(text, room, short_sentence=True)}"
        return truncate(t, limit)
    return truncate(text, limit) if text else ""


# An error line of a pasted log or traceback: what a reader would look for first.
_ERROR_LINE = re.compile(
    r"(?:^|[\s\]:|])(?:[\w.]*(?:Error|Exception|Interrupt)\b|FATAL|ERROR|CRITICAL|Killed\b"
    r"|Segmentation fault|Out of memory|NCCL (?:WARN|error))"
)
# What starts the error in its line: "NCCL WARN NET/IB : … port error" after a host and pid.
_ERROR_START = re.compile(
    r"[\w.]*(?:Error|Exception)\b|FATAL|ERROR|CRITICAL|Killed\b|Segmentation fault|Out of memory"
    r"|NCCL (?:WARN|error)"
)


#: A markdown table's header row and the separator under it.
_TABLE_HEAD = re.compile(r"^\s*\|(?P<cells>.+)\|\s*\n\s*\|?\s*:?-{2,}", re.MULTILINE)


def table_summary(body: str, limit: int = 200) -> str:
    """A post that is only a table, said by its columns ("A table of phase, tokens, steps,
    est. wall"), or empty when the body has no table."""
    m = _TABLE_HEAD.search(body[:4000])
    if m is None:
        return ""
    cells = [clean_line(c).strip(" *") for c in m.group("cells").split("|")]
    cells = [c for c in cells if c]
    if not cells:
        return ""
    said = "A table of " + ", ".join(cells)
    return said if len(said) <= limit else truncate(said, limit)


def error_text(doc: Document) -> str:
    """The error of a pasted log from where it starts in its line (no host, pid or timestamp
    before it), or empty when the log has none."""
    for line in doc.code:
        m = _ERROR_START.search(line) if _ERROR_LINE.search(line) else None
        if m is not None:
            return clean_line(line[m.start() :]).strip()
    return ""


_WORDY = re.compile(r"[A-Za-z]{3,}")


def code_line(doc: Document) -> str:
    """The most telling line of a post that is only code: its first error line, else its first
    line with words; empty when there is none."""
    lines = [line for line in doc.code if _WORDY.search(line)]
    best = next((line for line in lines if _ERROR_LINE.search(line)), lines[0] if lines else "")
    return clean_line(best) if best else ""
