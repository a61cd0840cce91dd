"""Markdown → plain prose: the block scanner and inline cleaning, without an LLM.

The input is untrusted text from GitHub, Discord and W&B: long comments with tables, logs, stack
traces, quoted replies, issue-template HTML comments and ``<details>`` blocks. Everything here is
linear in the input: block structure is found with a line scanner and string methods, inline
markup with precompiled regexes whose repeated parts are negated character classes (so they never
backtrack over the same text twice), and analysis stops after ``SCAN_LIMIT`` characters.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Final

from bot.core.mentions import CONTROL_CHARS, INVISIBLE_CHARS, drop_discord_tokens

#: Characters of a body examined for summaries, tags and incidents. Real comments put what matters
#: first; the cap bounds the cost of a hostile 200 KB paste.
SCAN_LIMIT: Final = 20_000

#: Lines (and characters per line) of dropped code kept for a post that has nothing else.
CODE_LINES: Final = 40
CODE_CHARS: Final = 300

# Block kinds produced by the scanner.
PARA: Final = "para"
ITEM: Final = "item"
HEADING: Final = "heading"
LOG: Final = "log"
FOLDED: Final = "folded"  # text inside <details>: kept, but not read as the post's own point
PROSE_KINDS: Final = frozenset({PARA, ITEM, HEADING})


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of cleaned text: a paragraph, a list item, a heading or a log-looking line."""

    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class Document:
    """A body reduced to cleaned blocks. ``had_code`` records dropped code/log/table content;
    ``code`` keeps the first lines of fenced or indented code, raw, for a post that is nothing
    else (a pasted traceback is still worth a line)."""

    blocks: tuple[Block, ...]
    had_code: bool
    code: tuple[str, ...] = ()
    #: Table rows with a warning mark ("| DCGM | ❌ | 1 uncorrectable ECC |"), cells joined:
    #: an agent's status table flags a fault in a row, which prose never holds.
    flagged_rows: tuple[str, ...] = ()
    #: Paragraphs, list items and headings, one per line; joined once, as every rule reads it.
    prose: str = field(init=False, repr=False, compare=False)
    #: The log-looking lines, one per line.
    logs: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        prose = "\n".join(b.text for b in self.blocks if b.kind in PROSE_KINDS)
        object.__setattr__(self, "prose", prose)
        object.__setattr__(self, "logs", "\n".join(b.text for b in self.blocks if b.kind == LOG))


# --------------------------------------------------------------------------------------------
# Mentions


# One sanitiser for untrusted text lives in bot.core.mentions; summaries use its dropping form.
strip_mentions = drop_discord_tokens


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
_CONTROL = re.compile(f"[{CONTROL_CHARS}{INVISIBLE_CHARS}\u2028\u2029]")
_WS = re.compile(r"[ \t\r\f\v\xa0]+")
#: A phone's or a document's typographic quotes, read as the keyboard's: "we’re down" is
#: "we're down".
_TYPOGRAPHIC: Final = str.maketrans({"‘": "'", "’": "'", "‛": "'", "“": '"', "”": '"'})


def _url_repl(match: re.Match[str]) -> str:
    """Drop a URL but keep punctuation that ends the sentence around it."""
    url = match.group(0)
    kept = url.rstrip(".,;:!?)]'\"")
    return url[len(kept) :]


def _clean_inline(text: str) -> str:
    """Inline markdown/HTML → plain words; newlines are preserved so blocks stay separate."""
    text = text.translate(_TYPOGRAPHIC)
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
# Contents dropped with their tags. ``<details>`` is not among them: people fold whole write-ups
# into one, so its text is kept as FOLDED blocks (its ``<summary>`` label goes).
_DROP_TAG = re.compile(r"<(/?)(summary|pre|table|script|style)\b[^<>]*>", re.IGNORECASE)
_DETAILS_TAG = re.compile(r"<(/?)details\b[^<>]*>", re.IGNORECASE)
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
#: A letter of any script: a line of Korean or Chinese is prose, not symbol soup.
_LETTER = re.compile(r"[^\W\d_]")
#: Trailer lines recognised whole: the pattern must reach the end of the line, so a sentence that
#: merely starts like one ("Fixes #12 by moving the loader …") is never a trailer.
_TRAILER = re.compile(
    r"""[ \t]*(?:
        (?:co-authored-by|signed-off-by|reviewed-by|acked-by|tested-by|reported-by)[ \t]*:
          [^<>\n]{0,80}<[^<>\s]+@[^<>\s]+>
      | change-id[ \t]*:[ \t]*\w+
      | 🤖?[ \t]*generated[ ]with[ ]\[?(?:claude|copilot|cursor|codex|aider|gemini)(?:[ ]code)?
          \]?(?:\([^()\s]*\))?
      | (?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|part[ ]of|related(?:[ ]to)?|refs?|see|re
          |addresses|follow-?up[ ](?:to|of)|supersedes|depends[ ]on|blocked[ ]by)
        [:\s]+(?:[\w./-]*\#\d+[\s,]*(?:and[ ]+)?)+
    )[ \t.]*$""",
    re.VERBOSE | re.IGNORECASE,
)
#: Openers of what bots post (stale notices, preview links, coverage reports). A paragraph they
#: open is dropped only while it is footer-sized (``FOOTER_WORDS``): prose always survives.
_BOT_OPENER = re.compile(
    r"""[ \t]*(?:
        (?:\#+[ ]*)?\[?codecov\]?[ ]report
      | this[ ](?:issue|pull[ ]request|pr)[ ](?:has[ ]been|was|is)[ ](?:automatically|marked)
      | this[ ]issue[ ]is[ ]stale
      | (?:documentation[ ]|docs[ ])?preview[ ](?:deployment|url|is[ ]ready)
      | pull[ ]request[ ](?:overview|summary)[ ]by
      | \W{0,3}[ ]?all[ ](?:checks|tests|jobs)[ ](?:have[ ])?(?:passed|succeeded|failed)
      | \[?[\w-]+\[bot\]
    )""",
    re.VERBOSE | re.IGNORECASE,
)
#: Checklist items a PR or issue template ships with ("- [ ] I have run the tests").
_TEMPLATE_ITEM = re.compile(
    r"""(?:i[ ]have|i've|i[ ](?:ran|added|updated|read|confirm|agree|understand)
      |my[ ](?:code|changes)
      |(?:new[ ]and[ ]existing[ ])?(?:unit[ ])?tests?[ ](?:pass|were[ ]added|added|have[ ]been)
      |(?:the[ ])?(?:docs|documentation)[ ](?:is[ ]|are[ ]|has[ ]been[ ]|have[ ]been[ ])?updated
      |(?:the[ ])?code[ ]follows|this[ ](?:pr|change)[ ](?:is|has|follows|includes)
      |(?:ran|run)[ ](?:the[ ])?(?:pre-commit|linters?|tests|formatter)|self-review
      |breaking[ ]change|bug[ ]fix|new[ ]feature|documentation[ ]update|refactor(?:ing)?$)""",
    re.VERBOSE | re.IGNORECASE,
)
_EMAIL_QUOTE_HEADER = re.compile(r"On .{5,120} wrote:$")
#: A boilerplate rule may remove a block of fewer words than this, never a longer one.
FOOTER_WORDS: Final = 20
_PROSE_WORD = re.compile(r"[A-Za-z\u00c0-\u024f][a-z\u00df-\u024f']+")


def is_prose_line(stripped: str) -> bool:
    """A line of running words ("the run rolled back to step 48k after …"), whatever opens it:
    at least a dozen words, most of them ordinary lower-case words."""
    tokens = stripped.split()
    if len(tokens) < 12:
        return False
    wordy = sum(1 for t in tokens if _PROSE_WORD.fullmatch(t.strip(".,;:!?()'\"")))
    return wordy >= 0.6 * len(tokens)


def _looks_like_log(stripped: str) -> bool:
    if _LOG_LINE.match(stripped):
        return not is_prose_line(stripped)  # "[09:14] The run rolled back to …" is prose
    n = len(stripped) - stripped.count(" ")
    if n < 24:
        return False
    letters = len(_LETTER.findall(stripped))
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
    """Remove the contents of ``<pre>``/``<table>``/``<summary>`` blocks (nesting-aware)."""
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

    def __init__(self, lazy_quotes: bool = True) -> None:
        self.lazy_quotes = lazy_quotes  # a quote takes the unmarked lines after it (CommonMark)
        self.kinds: list[str] = []
        self.texts: list[str] = []
        self.para: list[str] = []
        self.para_kind = PARA
        self.para_boilerplate = False  # the open block began like bot or template boilerplate
        self.had_code = False
        self.folded = 0  # depth of <details> around the current line
        self.code: list[str] = []  # first lines of dropped code
        self.flagged_rows: list[str] = []  # table rows with a warning mark

    def flush(self) -> None:
        if self.para:
            text = " ".join(self.para)
            # boilerplate goes only while it is footer-sized: a paragraph of prose always stays
            if not (self.para_boilerplate and len(text.split()) < FOOTER_WORDS):
                self.kinds.append(FOLDED if self.folded else self.para_kind)
                self.texts.append(text)
            self.para = []
        self.para_kind = PARA
        self.para_boilerplate = False

    def emit(self, kind: str, text: str) -> None:
        self.flush()
        self.kinds.append(FOLDED if self.folded and kind in PROSE_KINDS else kind)
        self.texts.append(text)

    # Long on purpose: one linear state machine over lines; its state would leak across helpers.
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
                elif stripped and len(self.code) < CODE_LINES:
                    self.code.append(stripped[:CODE_CHARS])
                continue
            if in_comment or "<!--" in line:
                line, in_comment = _strip_html_comments(line, in_comment)
                if not line.strip():
                    continue
            if "<" in line and _DETAILS_TAG.search(line):
                self.flush()
                for tag in _DETAILS_TAG.finditer(line):
                    self.folded = max(0, self.folded - 1) if tag.group(1) else self.folded + 1
                line = _DETAILS_TAG.sub("", line)
                if not line.strip():
                    prev_blank = True
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
                prev_blank, in_table = True, False
                in_quote = in_quote and not self.lazy_quotes  # Discord's ">>> " runs to the end
                continue
            indent = len(line) - len(line.lstrip(" \t"))
            first = stripped[0]

            # indented code: only after a blank line (it cannot interrupt a paragraph)
            in_list = bool(self.kinds) and self.kinds[-1] == ITEM
            if indent >= 4 and (prev_code or (prev_blank and not in_list)):
                self.flush()
                self.had_code = prev_code = True
                if len(self.code) < CODE_LINES:
                    self.code.append(stripped[:CODE_CHARS])
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
                # quoted reply (and its lazy continuation lines, or on Discord after ">>> ")
                self.flush()
                in_quote = self.lazy_quotes or in_quote or stripped.startswith(">>>")
                continue
            if in_table:
                if "|" in stripped:
                    if _ROW_FLAG.search(stripped) and len(self.flagged_rows) < CODE_LINES:
                        self.flagged_rows.append(" ".join(stripped.replace("|", " ").split()))
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
                        # "- [ ] I have run the tests": a template's checklist, not news
                        self.para_boilerplate = bool(c) and bool(
                            _TEMPLATE_ITEM.match(item.strip().lstrip("*_"))
                        )
                    continue
            if first == "[" and _REF_DEF.match(line):
                continue
            if _TRAILER.match(stripped) or (
                not self.para and first == "O" and _EMAIL_QUOTE_HEADER.match(stripped)
            ):
                continue  # a whole-line trailer: "Fixes #12", "Signed-off-by: A <a@b.c>"
            if not self.para and _BOT_OPENER.match(stripped):
                self.para_boilerplate = True
            # a line starting in lower case continues prose (log lines start otherwise)
            if (not first.islower() or stripped.startswith("at ")) and _looks_like_log(stripped):
                self.emit(LOG, stripped)
                continue
            self.para.append(stripped)
        self.flush()


def parse_post(text: str, source: str) -> Document:
    """``parse`` by the markdown of the place ``text`` was posted (``source``)."""
    return parse(text, lazy_quotes=source != "discord")


#: What a chat bridge (Slack, Matrix, IRC) puts before the words it relays: "[#train-ops]
#: Mariko T.: …", "[slack] mariko: …", "↳ replying to Gabe H. (#train-ops) Tomasz W.: …".
_RELAYED = re.compile(
    r"^(?:↳\s*replying\s+to\s+[^()\n]{1,40}\(#[\w.-]{1,40}\)"
    r"|\[(?:#[\w.-]{1,40}|(?i:slack|matrix|irc|teams|telegram|zulip|mattermost))\])"
    r"\s+[^:\n]{1,40}?:\s+"
)


def relayed_words(doc: Document) -> Document:
    """``doc`` without a chat bridge's channel and speaker before its first line, so the
    relayed words are read as their speaker said them ("is shrike down?")."""
    for n, block in enumerate(doc.blocks):
        if block.kind not in PROSE_KINDS:
            continue
        m = _RELAYED.match(block.text)
        if m is None or m.end() == len(block.text):
            return doc
        blocks = (*doc.blocks[:n], Block(block.kind, block.text[m.end() :]), *doc.blocks[n + 1 :])
        return Document(blocks, doc.had_code, doc.code, doc.flagged_rows)
    return doc


def parse(text: str, limit: int | None = SCAN_LIMIT, *, lazy_quotes: bool = True) -> Document:
    """Reduce a markdown/plain body to cleaned blocks, examining at most ``limit`` characters.

    ``lazy_quotes`` is CommonMark's (GitHub's) quote: "> " takes the unmarked lines after it up
    to a blank line. Discord's does not: "> " quotes its own line, ">>> " the rest of the
    message (``parse_post`` picks by source)."""
    if limit is not None and len(text) > limit:
        text = text[:limit]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\n\n" in text:
        text = _BLANK_RUNS.sub("\n\n", text)
    scanner = _Scanner(lazy_quotes)
    scanner.scan(text)
    cleaned = _clean_many(scanner.texts)
    blocks = [
        Block(kind, t) for kind, t in zip(scanner.kinds, cleaned, strict=True) if t.strip(" .,:;")
    ]
    # a template's headings with nothing under them ("## Testing" then "## Checklist")
    kept = [
        b
        for i, b in enumerate(blocks)
        if not (
            b.kind == HEADING
            and is_template_heading(b.text)
            and (i + 1 == len(blocks) or blocks[i + 1].kind == HEADING)
        )
    ]
    return Document(tuple(kept), scanner.had_code, tuple(scanner.code), tuple(scanner.flagged_rows))


#: The warning marks a status table flags a row with.
_ROW_FLAG = re.compile(r"⚠|❌|🔴")


def wordset(text: str) -> frozenset[str]:
    """A frozen set of the whitespace-separated words of ``text`` (readable word tables)."""
    return frozenset(text.split())


_TEMPLATE_HEADING_WORDS = wordset(
    """
    description summary motivation context changes changelog what why how testing tests test
    plan checklist screenshots screenshot notes note related issues issue todo background
    overview details logs log steps to reproduce expected behavior behaviour actual environment
    additional problem solution proposal results result update updates tl;dr tldr reproduction
    repro version versions system info information type of change pr the this does and
    """
)
_HEADING_TOKEN = re.compile(r"[a-z0-9+;']+")


def is_template_heading(text: str) -> bool:
    """A heading a template ships with ("Description", "Steps to reproduce", "Type of change")."""
    tokens = _HEADING_TOKEN.findall(text.lower())
    return len(text) < 4 or all(t in _TEMPLATE_HEADING_WORDS for t in tokens)


def clean_text(text: str) -> str:
    """Markdown (GitHub or Discord flavoured) → plain prose.

    Drops quoted replies, fenced and indented code, tables, HTML comments, images, bare URLs and
    recognised boilerplate (whole-line trailers such as "Co-Authored-By: …" and "🤖 Generated with
    …", footer-sized bot notices, template checklists and empty template headings; never a
    paragraph of prose); keeps link text, inline-code words and emphasised words. Blocks
    (paragraphs, list items, headings, log-looking lines) are separated by newlines, whitespace
    inside a block is collapsed, and mass mentions are neutralised.
    """
    return "\n".join(b.text for b in parse(text, limit=None).blocks)
