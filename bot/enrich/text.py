"""Markdown → plain prose, and one-line summaries, without an LLM.

The input is untrusted text from GitHub, Discord and W&B: long comments with tables, logs, stack
traces, quoted replies, issue-template HTML comments and ``<details>`` blocks. Everything here is
linear in the input: block structure is found with a line scanner and string methods, inline
markup with precompiled regexes whose repeated parts are negated character classes (so they never
backtrack over the same text twice), and analysis stops after ``SCAN_LIMIT`` characters.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Final

#: Characters of a body examined for summaries, tags and incidents. Real comments put what matters
#: first; the cap bounds the cost of a hostile 200 KB paste.
SCAN_LIMIT: Final = 20_000

NO_TEXT: Final = "(no text)"
ELLIPSIS: Final = "…"

# Block kinds produced by the scanner.
PARA: Final = "para"
ITEM: Final = "item"
HEADING: Final = "heading"
LOG: Final = "log"
PROSE_KINDS: Final = frozenset({PARA, ITEM, HEADING})


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of cleaned text: a paragraph, a list item, a heading or a log-looking line."""

    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class Document:
    """A body reduced to cleaned blocks. ``had_code`` records dropped code/log/table content."""

    blocks: tuple[Block, ...]
    had_code: bool

    @property
    def prose(self) -> str:
        """Paragraphs, list items and headings, one per line."""
        return "\n".join(b.text for b in self.blocks if b.kind in PROSE_KINDS)

    @property
    def logs(self) -> str:
        return "\n".join(b.text for b in self.blocks if b.kind == LOG)


# --------------------------------------------------------------------------------------------
# Mentions


_DISCORD_TOKEN = re.compile(
    r"<(?:@[!&]?\d{1,25}|#\d{1,25}|a?:\w{1,64}:\d{1,25}|t:-?\d{1,20}(?::[tTdDfFR])?"
    r"|/[\w -]{1,64}:\d{1,25})>"
)
_MASS_MENTION = re.compile(r"@(everyone|here)\b", re.IGNORECASE)


def strip_mentions(text: str) -> str:
    """Neutralise Discord pings: drop ``<@id>``, ``<@!id>``, ``<@&id>`` (and channel, emoji and
    timestamp tokens), and break ``@everyone``/``@here`` with a zero-width space."""
    if "<" in text:
        text = _DISCORD_TOKEN.sub("", text)
    if "@" in text:
        text = _MASS_MENTION.sub("@\u200b\\1", text)
    return text


# --------------------------------------------------------------------------------------------
# Inline markup (applied to many blocks at once: they are joined by newlines, and no pattern
# crosses a newline)

_HTML_TAGS = (
    "a|abbr|b|blockquote|br|center|code|dd|del|div|dl|dt|em|figcaption|figure|font|h[1-6]|hr|i"
    "|img|input|ins|kbd|li|mark|ol|p|picture|pre|q|s|samp|small|source|span|strike|strong|sub"
    "|summary|sup|table|tbody|td|tfoot|th|thead|tr|tt|u|ul|var|video"
)
_INLINE_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # (trigger substring, pattern, replacement); a rule runs only when its trigger is present.
    # images (markdown and inline/reference style): dropped with their alt text
    ("![", re.compile(r"!\[[^\[\]\n]*\]\([^()\n]*\)"), ""),
    ("![", re.compile(r"!\[[^\[\]\n]*\]\[[^\[\]\n]*\]"), ""),
    ("<", re.compile(r"<img\b[^<>\n]*>", re.IGNORECASE), ""),
    # links keep their text; reference links too
    ("](", re.compile(r"\[([^\[\]\n]*)\]\([^()\n]*\)"), r"\1"),
    ("][", re.compile(r"\[([^\[\]\n]+)\]\[[^\[\]\n]*\]"), r"\1"),
    # autolinks and remaining HTML tags
    ("<", re.compile(r"<(?:https?|ftp|mailto):[^<>\s]*>", re.IGNORECASE), ""),
    ("<", re.compile(r"</?(?:br|p|div|li|hr|tr|td|th)\b[^<>\n]*>", re.IGNORECASE), " "),
    ("<", re.compile(rf"</?(?:{_HTML_TAGS})\b[^<>\n]*>", re.IGNORECASE), ""),
    # mass mentions carry no meaning in a summary
    ("@", re.compile(r"(?<![\w@])@(?:everyone|here)\b", re.IGNORECASE), ""),
    # emphasis and strikethrough keep the words
    ("**", re.compile(r"\*\*([^*\n]+)\*\*"), r"\1"),
    ("__", re.compile(r"(?<![\w_])__([^_\n]+)__(?![\w_])"), r"\1"),
    ("*", re.compile(r"(?<![\w*])\*([^*\s][^*\n]*)\*(?![\w*])"), r"\1"),
    ("_", re.compile(r"(?<![\w_])_([^_\s][^_\n]*)_(?![\w_])"), r"\1"),
    ("~~", re.compile(r"~~([^~\n]+)~~"), r"\1"),
    ("", re.compile(r"\*{2,}|_{3,}|~{2,}"), ""),
    # markdown escapes, emoji shortcodes
    ("\\", re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~<])"), r"\1"),
    (":", re.compile(r"(?<![\w:]):[a-z0-9_+\-]{2,40}:(?![\w:])"), ""),
)
_URL = re.compile(r"\b(?:https?|ftp|gs|s3|hf|file)://\S+|\bwww\.[^\s.]\S*", re.IGNORECASE)
_EMPTY_BRACKETS = re.compile(r"\([ \t]*\)|\[[ \t]*\]|<[ \t]*>")
_SPACE_BEFORE_PUNCT = re.compile(r" +([,.;:!?)])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]")
_WS = re.compile(r"[ \t\r\f\v\xa0]+")


def _url_repl(match: re.Match[str]) -> str:
    """Drop a URL but keep punctuation that ends the sentence around it."""
    url = match.group(0)
    kept = url.rstrip(".,;:!?)]'\"")
    return url[len(kept) :]


def _clean_inline(text: str) -> str:
    """Inline markdown/HTML → plain words; newlines are preserved so blocks stay separate."""
    if "`" in text:
        text = text.replace("`", "")
    for trigger, pattern, repl in _INLINE_RULES:
        if trigger in text:
            text = pattern.sub(repl, text)
    if "://" in text or "www." in text:
        text = _URL.sub(_url_repl, text)
    if "&" in text:  # entities may decode to newlines, which separate blocks here
        text = "\n".join(html.unescape(line).replace("\n", " ") for line in text.split("\n"))
    text = strip_mentions(text)
    text = _CONTROL.sub("", text)
    if "(" in text or "[" in text or "<" in text:
        text = _EMPTY_BRACKETS.sub("", text)
    text = _WS.sub(" ", text)
    if " " in text:
        text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    return text


def _clean_many(texts: list[str]) -> list[str]:
    if not texts:
        return []
    joined = "\n".join(t.replace("\n", " ") for t in texts)
    lines = _clean_inline(joined).split("\n")
    if len(lines) != len(texts):  # defensive: no rule should add or remove a newline
        return [_clean_inline(t).replace("\n", " ").strip() for t in texts]
    return [line.strip() for line in lines]


def clean_line(text: str) -> str:
    """Clean one line of inline markdown (a title, say) and collapse whitespace."""
    return " ".join(_clean_inline(text.replace("\n", " ")).split())


# --------------------------------------------------------------------------------------------
# Block structure


_BLANK_RUNS = re.compile(r"\n(?:[ \t]*\n)+")
_LIST_MARKER = re.compile(r"[ \t]*(?:[-*+•]|\d{1,9}[.)])(?:[ \t]+|$)")
_CHECKBOX = re.compile(r"\[[ xX]\](?:[ \t]+|$)")
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]|$)")
_HR = re.compile(r" {0,3}([-*_=])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_REF_DEF = re.compile(r" {0,3}\[[^\]\n]{1,200}\]:[ \t]*\S")
_DROP_TAG = re.compile(r"<(/?)(details|pre|table|script|style)\b[^<>]*>", re.IGNORECASE)
_LOG_LINE = re.compile(
    r"""[ \t]*(?:
        \[?\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}            # ISO timestamp
      | \[?\d{1,2}:\d{2}:\d{2}\b                          # clock time
      | [IWEF]\d{4}[ ]\d{2}:\d{2}                         # glog prefix
      | Traceback[ ]\(most[ ]recent[ ]call[ ]last\)
      | File[ ]"[^"\n]*",[ ]line[ ]\d
      | at[ ][\w$.]+\([\w.]*:\d
      | (?:INFO|DEBUG|WARN|WARNING|ERROR|CRITICAL|FATAL|TRACE)(?:[ ]*[:|\]-]|[ ]+\d)
      | \((?:[\w]+[ ])?pid=\d+                            # ray worker prefixes
      | [\w.]*(?:Error|Exception|Interrupt|Exit):[ ]      # an exception line
      | \$[ ]|>>>[ ]|\#[ ]\w+@                            # shell and REPL prompts
      | [\w.-]+@[\w.-]+:[~/]
    )""",
    re.VERBOSE,
)
_NON_LETTERS = re.compile(r"[^A-Za-z\u00c0-\u024f]+")
_BOILERPLATE = re.compile(
    r"""[ \t]*(?:
        (?:co-authored-by|signed-off-by|reviewed-by|change-id)\s*:
      | 🤖
      | generated[ ]with[ ]\[?(?:claude|copilot|cursor)
      | (?:\#+[ ]*)?\[?codecov\]?[ ]report
      | :(?:umbrella|warning|x|white_check_mark|rocket):[ ]
      | this[ ](?:issue|pull[ ]request|pr)[ ](?:has[ ]been|was|is)[ ](?:automatically|marked)
      | this[ ]issue[ ]is[ ]stale
      | (?:documentation[ ]|docs[ ])?preview[ ](?:deployment|url|is[ ]ready)
      | thank[ ]you[ ]for[ ](?:your[ ]contribution|opening|submitting)
      | pull[ ]request[ ](?:overview|summary)[ ]by
      | \[?[\w-]+\[bot\]
      | (?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|part[ ]of|related(?:[ ]to)?|refs?|see|re
          |addresses|follow-?up[ ](?:to|of)|supersedes|depends[ ]on|blocked[ ]by)
        [:\s]+(?:[\w./-]*\#\d+[\s,]*(?:and[ ]+)?)+\.?[ \t]*$
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_EMAIL_QUOTE_HEADER = re.compile(r"On .{5,120} wrote:$")


def _looks_like_log(stripped: str) -> bool:
    if _LOG_LINE.match(stripped):
        return True
    n = len(stripped) - stripped.count(" ")
    if n < 24:
        return False
    letters = len(_NON_LETTERS.sub("", stripped))
    # symbol soup (numbers, paths, hex, progress bars) is not prose
    return letters < 0.3 * n


def _strip_html_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """Remove ``<!-- ... -->`` from one line, tracking comments that span lines."""
    out: list[str] = []
    pos = 0
    while True:
        if in_comment:
            end = line.find("-->", pos)
            if end < 0:
                return "".join(out), True
            pos = end + 3
            in_comment = False
        start = line.find("<!--", pos)
        if start < 0:
            out.append(line[pos:])
            return "".join(out), False
        out.append(line[pos:start])
        pos = start + 4
        in_comment = True


def _strip_drop_tags(line: str, depth: int) -> tuple[str, int]:
    """Remove the contents of ``<details>``/``<pre>``/``<table>`` blocks (nesting-aware)."""
    out: list[str] = []
    pos = 0
    for m in _DROP_TAG.finditer(line):
        if depth == 0:
            out.append(line[pos : m.start()])
        depth = max(0, depth - 1) if m.group(1) else depth + 1
        pos = m.end()
    if depth == 0:
        out.append(line[pos:])
    return "".join(out), depth


class _Scanner:
    """Line-oriented markdown block scanner. Collects raw block texts; inline markup is cleaned
    afterwards in one pass over all blocks."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.texts: list[str] = []
        self.para: list[str] = []
        self.para_kind = PARA
        self.had_code = False

    def flush(self) -> None:
        if self.para:
            self.kinds.append(self.para_kind)
            self.texts.append(" ".join(self.para))
            self.para = []
        self.para_kind = PARA

    def emit(self, kind: str, text: str) -> None:
        self.flush()
        self.kinds.append(kind)
        self.texts.append(text)

    def scan(self, text: str) -> None:
        """Feed the whole (capped) text; a state machine reads best in one place."""
        in_comment = False
        drop_depth = 0
        fence: str | None = None  # the fence string that opened the current code block
        in_quote = False
        in_table = False
        prev_blank = True
        prev_code = False
        for line in text.split("\n"):
            if fence is not None:
                stripped = line.strip()
                if stripped.startswith(fence) and not stripped.strip(fence[0]):
                    fence = None
                continue
            if in_comment or "<!--" in line:
                line, in_comment = _strip_html_comments(line, in_comment)
                if not line.strip():
                    continue
            if drop_depth or "<" in line:
                before = drop_depth
                line, drop_depth = _strip_drop_tags(line, drop_depth)
                if before or drop_depth:
                    self.had_code = True
                if not line.strip():
                    if before or drop_depth:
                        self.flush()
                    continue
            stripped = line.strip()
            if not stripped:
                self.flush()
                prev_blank, in_quote, in_table = True, False, False
                continue
            indent = len(line) - len(line.lstrip(" \t"))
            first = stripped[0]

            # indented code: only after a blank line (it cannot interrupt a paragraph)
            in_list = bool(self.kinds) and self.kinds[-1] == ITEM
            if indent >= 4 and (prev_code or (prev_blank and not in_list)):
                self.flush()
                self.had_code = prev_code = True
                prev_blank = False
                continue
            prev_code = False
            was_blank, prev_blank = prev_blank, False

            if first in "`~" and indent <= 3:
                m = _FENCE.match(line)
                if m and not (m.group(1)[0] == "`" and "`" in line[m.end() :]):
                    self.flush()
                    fence = m.group(1)
                    self.had_code = True
                    continue
            if (first == ">" and indent <= 3) or in_quote:
                # quoted reply (and its lazy continuation lines)
                self.flush()
                in_quote = True
                continue
            if in_table:
                if "|" in stripped:
                    continue
                in_table = False
            if "|" in stripped:
                if first == "|" and stripped.count("|") >= 2:
                    self.flush()
                    self.had_code = in_table = True
                    continue
                if "-" in stripped and not stripped.strip("|:- \t"):
                    # delimiter row of a table whose rows have no leading pipe
                    if self.para and "|" in self.para[-1]:
                        self.para.pop()
                    self.flush()
                    self.had_code = in_table = True
                    continue
            if first in "-*_=" and _HR.match(line):
                if self.para and first in "=-" and not was_blank:
                    self.para_kind = HEADING  # setext heading underline
                self.flush()
                continue
            if first == "#":
                m = _HEADING.match(line)
                if m:
                    body = stripped[len(m.group(1)) :].strip()
                    body = body.rstrip("#").rstrip() if body.endswith("#") else body
                    if body:
                        self.emit(HEADING, body)
                    else:
                        self.flush()
                    continue
            if first in "-*+•0123456789":
                m = _LIST_MARKER.match(line)
                if m:
                    item = line[m.end() :]
                    c = _CHECKBOX.match(item)
                    if c:
                        item = item[c.end() :]
                    self.flush()
                    if item.strip():
                        self.para = [item.strip()]
                        self.para_kind = ITEM
                    continue
            if first == "[" and _REF_DEF.match(line):
                continue
            if not self.para and (
                _BOILERPLATE.match(stripped)
                or (first == "O" and _EMAIL_QUOTE_HEADER.match(stripped))
            ):
                continue  # boilerplate starts its own line: "Fixes #12", "Signed-off-by: …"
            # a line starting in lower case continues prose (log lines start otherwise)
            if (not first.islower() or stripped.startswith("at ")) and _looks_like_log(stripped):
                self.emit(LOG, stripped)
                continue
            self.para.append(stripped)
        self.flush()


def parse(text: str, limit: int | None = SCAN_LIMIT) -> Document:
    """Reduce a markdown/plain body to cleaned blocks, examining at most ``limit`` characters."""
    if limit is not None and len(text) > limit:
        text = text[:limit]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\n\n" in text:
        text = _BLANK_RUNS.sub("\n\n", text)
    scanner = _Scanner()
    scanner.scan(text)
    cleaned = _clean_many(scanner.texts)
    blocks = tuple(
        Block(kind, t) for kind, t in zip(scanner.kinds, cleaned, strict=True) if t.strip(" .,:;")
    )
    return Document(blocks, scanner.had_code)


def clean_text(text: str) -> str:
    """Markdown (GitHub or Discord flavoured) → plain prose.

    Drops quoted replies, fenced and indented code, tables, HTML comments, ``<details>`` contents,
    images, bare URLs and bot boilerplate; keeps link text, inline-code words and emphasised
    words. Blocks (paragraphs, list items, headings, log-looking lines) are separated by newlines,
    whitespace inside a block is collapsed, and mass mentions are neutralised.
    """
    return "\n".join(b.text for b in parse(text, limit=None).blocks)


# --------------------------------------------------------------------------------------------
# Sentences, fillers and chit-chat


def wordset(text: str) -> frozenset[str]:
    """A frozen set of the whitespace-separated words of ``text`` (readable word tables)."""
    return frozenset(text.split())


_ABBREVIATIONS = wordset(
    "e.g i.e vs etc approx cf fig no nos mr mrs ms dr st al eq incl resp w.r.t a.k.a"
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
      | (?:hi|hey|hello|howdy|yo|greetings|good[ ](?:morning|afternoon|evening)
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
    1 welcome np no problem interesting indeed true right exactly totally
    """
)
_TOKEN = re.compile(r"[a-z0-9+']+")
_MENTION_WORD = re.compile(r"@[\w.\-\u200b]+")
_LAUGH = re.compile(r"(?:ha|he|ah)+h?|l+o+l+|h+m+|o+k+|no+ice|ye+s+|\\+1+")


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


_BOILERPLATE_HEADINGS = wordset(
    """
    description summary motivation context changes changelog what why how testing tests test
    plan checklist screenshots screenshot notes note related issues issue todo background
    overview details logs log steps to reproduce expected behavior behaviour actual environment
    additional problem solution proposal results result update updates tl;dr tldr reproduction
    repro version versions system info information type of change pr
    """
)


def _is_boilerplate_heading(text: str) -> bool:
    return all(w in _BOILERPLATE_HEADINGS for w in words(text)) or len(text) < 4


def _is_filler(sentence: str) -> bool:
    if is_chitchat(sentence):
        return True
    # "Details below:", "Logs:", "Here's the trace:" — short lead-ins to dropped content
    return sentence.endswith(":") and len(sentence.split()) < 7


# --------------------------------------------------------------------------------------------
# Summaries

_CUT_STRIP = " ,;:—–-([{'\"/"


def truncate(text: str, limit: int) -> str:
    """Cap ``text`` at ``limit`` characters: prefer a sentence boundary in the last half, else a
    word boundary, adding an ellipsis when words were cut."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    head = text[: limit + 1]
    best = -1
    for m in _SENTENCE_END.finditer(head):
        if m.end() <= limit:
            best = m.end()
    if best >= limit // 2:
        return text[:best].rstrip()
    cut = text[: limit - 1]
    clause = max(cut.rfind(", "), cut.rfind("; "), cut.rfind(" — "), cut.rfind(" – "))
    space = cut.rfind(" ")
    if clause >= (limit - 1) * 0.7:
        cut = cut[:clause]  # end on a clause rather than mid-phrase
    elif space >= (limit - 1) * 0.5:
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
    """The first meaningful sentence(s) of a document, uncapped; None when there is none."""
    fallback: str | None = None
    heading: str | None = None
    tldr_next = False
    # A TL;DR line (or a paragraph under a TL;DR heading) beats the first sentence.
    for b in doc.blocks[:40]:
        if tldr_next and b.kind != HEADING:
            return _first_meaningful([b], limit) or None
        tldr_next = False
        if b.kind == HEADING:
            tldr_next = bool(_TLDR.match(b.text)) and not _TLDR.sub("", b.text).strip()
        elif b.kind in (PARA, ITEM):
            m = _TLDR.match(b.text)
            if m and b.text[m.end() :].strip() and b.text[: m.end()].rstrip()[-1:] in ":—–-":
                return _first_meaningful([Block(b.kind, b.text[m.end() :])], limit) or None
    lead = _first_meaningful([b for b in doc.blocks if b.kind in (PARA, ITEM)], limit)
    if lead:
        return lead
    for b in doc.blocks:
        if b.kind == HEADING and heading is None and not _is_boilerplate_heading(b.text):
            heading = b.text
        elif b.kind != HEADING and fallback is None:
            fallback = _LEAD_FILLER.sub("", b.text).strip() or b.text
    return heading or fallback


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


def _one_line(text: str) -> str:
    return " ".join(strip_mentions(text).split())


def compose_summary(doc: Document, title: str | None, limit: int = 200) -> str:
    """Title (when given) plus the lead sentence of ``doc``, capped at ``limit`` characters."""
    limit = max(1, limit)
    lead = lead_sentence(doc, limit)
    lead = _one_line(lead) if lead else ""
    if lead[:1].islower() and not lead[1:2].isupper():
        lead = lead[0].upper() + lead[1:]  # "the run…" after a stripped "TL;DR:" or greeting
    t = _one_line(clean_title(title))
    if t and lead:
        if t.lower().rstrip(".") in lead.lower():
            return truncate(lead, limit)
        sep = " " if t[-1] in ".!?" else " — "
        if len(t) + len(sep) + len(lead) <= limit:
            return f"{t}{sep}{lead}"
        room = limit - len(t) - len(sep)
        if room >= 40:
            return f"{t}{sep}{truncate(lead, room)}"
        return truncate(t, limit)
    text = lead or t
    return truncate(text, limit) if text else truncate(NO_TEXT, limit)


def summarize(body: str, title: str | None = None, limit: int = 200) -> str:
    """One line of at most ``limit`` characters: the title (if any) and the first meaningful
    sentence of ``body``, markdown stripped, greetings and acks skipped, pings neutralised.
    Never empty: falls back to the title, then to ``"(no text)"``."""
    return compose_summary(parse(body), title, limit)
