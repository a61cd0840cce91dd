"""Untrusted text (GitHub, Discord, W&B: names, titles, bodies; model output) on its way out: the
one sanitiser. Every place such text reaches a post, a reply or a page goes through one of
these, and every post also goes out with `allowed_mentions` none:

- `defuse_mentions`: pings as plain words (also applied by the outbox to every post);
- `drop_discord_tokens`: pings and Discord tokens dropped, for enrichment's summaries;
- `plain`: for places that show no markdown (thread names): invisible characters removed,
  mentions defused, on one line;
- `inert`: a name or title inside markdown: invisible characters removed, mentions defused and
  every markdown character escaped, so it cannot bold, hide, quote, make a heading or forge a
  masked link or an autolink;
- `unlinked`: a title mixing code's words and a member's: only what makes links, headings and
  quotes escaped (a metric name's `_` stays as it is);
- `body`: a multi-line text (a cause, a summary, a narrative): `plain` per line, masked links
  `[x](url)` and autolinks `<url>` escaped unless the URL is one of `allowed` (the sources' own
  URLs), headings (`#`, `-#`) and block quotes (`>`, `>>>`) neutralised at line start.

And the one copy of each rule they share, which the LLM's output check (`bot.llm.safety`), the
clipper, the page and the terminal use too:

- `INVISIBLE` (and `strip_invisible`): the characters that show nothing but can split a word,
  a mention or a link's syntax (a zero-width space between `]` and `(`);
- `URL_RE` and `normalise_url`: what a URL is, and how two are compared;
- `masked_links`: where the masked links are, read the way Discord's markdown reads them:
  labels with nested brackets (`[Official [status]](url)`), backslash escapes (a `]` after one
  backslash closes nothing, after two it does), `<url>` and titled destinations, and
  look-alike brackets (`］（`) that a normalising reader would take for link syntax.

Links the bot means are made by code around the escaped text (`[#8818](issue url)`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_EVERYONE = re.compile(r"@(everyone|here)", re.IGNORECASE)
_USER = re.compile(r"<@!?\d+>")
_ROLE = re.compile(r"<@&\d+>")
#: Characters that show nothing: soft hyphen, combining grapheme joiner, Arabic letter mark,
#: Khmer inherent vowels, Mongolian vowel separator, zero-width space/non-joiner/joiner, LRM/RLM,
#: bidi embeddings/overrides/isolates, word joiner, invisible operators and deprecated format
#: controls, BOM.
INVISIBLE_CHARS = (
    "\u00ad\u034f\u061c\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
)
#: ASCII control characters other than tab, line feed and carriage return.
CONTROL_CHARS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
INVISIBLE = re.compile(f"[{INVISIBLE_CHARS}]")
UNPRINTABLE = re.compile(f"[{CONTROL_CHARS}{INVISIBLE_CHARS}]")
_MARKDOWN = re.compile(r"([\\*_~`|\[\]<>#])")
_LINKISH = re.compile(r"([\[\]<])")
_LINE_START = re.compile(r"^([ \t]*)(#{1,3}[ \t]|-#[ \t]|>>>|>)", re.MULTILINE)


def strip_invisible(text: str) -> str:
    return INVISIBLE.sub("", text)


def defuse_mentions(text: str) -> str:
    """Everything Discord would turn into a ping, as plain words: `@everyone` → `everyone`,
    `@here` → `here`, `<@id>` and `<@!id>` → `someone`, `<@&id>` → `a role`. Idempotent;
    e-mail addresses and other `@` are left alone."""
    text = _EVERYONE.sub(lambda m: m.group(1), text)
    text = _ROLE.sub("a role", text)
    return _USER.sub("someone", text)


_DISCORD_TOKEN = re.compile(
    r"<(?:@[!&]?\d{1,25}|#\d{1,25}|a?:\w{1,64}:\d{1,25}|t:-?\d{1,20}(?::[tTdDfFR])?"
    r"|/[\w -]{1,64}:\d{1,25})>"
)
_MASS_MENTION = re.compile(r"@(everyone|here)\b", re.IGNORECASE)


def drop_discord_tokens(text: str) -> str:
    """For a summary, where the tokens carry no meaning: drop `<@id>`, `<@!id>`, `<@&id>` (and
    channel, emoji, command and timestamp tokens), and break `@everyone`/`@here` with a
    zero-width space. Idempotent."""
    if "<" in text:
        text = _DISCORD_TOKEN.sub("", text)
    if "@" in text:
        text = _MASS_MENTION.sub("@\u200b\\1", text)
    return text


def plain(text: str) -> str:
    """Invisible characters removed, mentions defused, whitespace (newlines too) collapsed."""
    return " ".join(defuse_mentions(strip_invisible(text)).split())


def inert(text: str) -> str:
    """A name or title shown as written inside markdown: invisible characters removed, mentions
    defused, markdown characters escaped (line breaks are kept: `plain` first for one line)."""
    text = _MARKDOWN.sub(r"\\\1", fold_lookalikes(defuse_mentions(strip_invisible(text))))
    return text.replace("\\](", "\\]\\(")


def unlinked(text: str) -> str:
    """A title made of code's words and a member's (an incident title, "… reported by NAME"):
    invisible characters removed, mentions defused, link brackets (`[`, `]`, `<`) escaped and
    line-start headings and quotes neutralised; other markdown is left as it is."""
    text = _LINKISH.sub(r"\\\1", fold_lookalikes(defuse_mentions(strip_invisible(text))))
    text = text.replace("\\](", "\\]\\(")  # no `](` left for a masked link to hang on
    return _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)


URL_RE = re.compile(r"https?://[^\s<>()\[\]\"'`]+", re.IGNORECASE)
_TRAILING = ".,;:!?'\"”’"


def trim_url(url: str) -> str:
    """A URL found in text without what follows it in the sentence: trailing punctuation and
    an unbalanced closing parenthesis."""
    url = url.strip().rstrip(_TRAILING)
    while url.endswith(")") and url.count("(") < url.count(")"):
        url = url[:-1].rstrip(_TRAILING)
    return url


def normalise_url(url: str) -> str:
    """A URL as compared with the allow-list: trimmed (`trim_url`), without a trailing slash."""
    return trim_url(url).rstrip("/")


def cap_length(text: str, limit: int) -> str:
    """Cut at a word boundary and mark the cut with an ellipsis."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


# --- masked links: the one link pattern --------------------------------------------------------

# Link syntax and the characters Unicode normalisation (NFKC) turns into it.
_LOOKALIKES = {
    "[": "\ufe47\uff3b",
    "]": "\ufe48\uff3d",
    "(": "\u207d\u208d\ufe35\ufe59\uff08",
    ")": "\u207e\u208e\ufe36\ufe5a\uff09",
    "<": "\ufe64\uff1c",
    ">": "\ufe65\uff1e",
}
_ASCII = {alike: char for char, alikes in _LOOKALIKES.items() for alike in alikes}
_OPENERS = "[" + _LOOKALIKES["["]
_CLOSERS = "]" + _LOOKALIKES["]"]
_PAREN_OPEN = "(" + _LOOKALIKES["("]
_PAREN_CLOSE = ")" + _LOOKALIKES[")"]
_CLOSE_OPEN = re.compile(f"[{re.escape(_CLOSERS)}][{re.escape(_PAREN_OPEN)}]")
_ANGLED = re.compile(
    f"[<{_LOOKALIKES['<']}]((?:https?|ftp|steam|mailto|discord)[^>{_LOOKALIKES['>']}\\s]*)"
    f"[>{_LOOKALIKES['>']}]",
    re.IGNORECASE,
)
LABEL_REACH = 1000  # how far back a label's opening bracket is looked for


@dataclass(frozen=True, slots=True)
class MaskedLink:
    """A masked link `[label](url)` in a text, by position: what any reader of markdown could
    take for one. `close` is its `]` (which may be escaped: `escaped`, a reader that ignores
    escapes inside a label still links it), `start` its opening bracket (None when none is in
    reach: `](url)` alone is still link syntax); `url_start`/`url_end` the destination as
    written (inside `<…>` when so written); `end` is just past its `)` (or where the
    destination stops when the `)` is missing: `closed` False)."""

    start: int | None
    close: int
    url_start: int
    url_end: int
    end: int
    closed: bool
    escaped: bool
    text: str

    @property
    def url(self) -> str:
        return self.text[self.url_start : self.url_end]

    @property
    def label(self) -> str:
        return "" if self.start is None else self.text[self.start + 1 : self.close]

    @property
    def span(self) -> tuple[int, int]:
        return (self.close if self.start is None else self.start, self.end)


def _escaped(text: str, index: int) -> bool:
    """Whether the character at `index` is escaped: preceded by an odd number of backslashes."""
    count = 0
    while index - count - 1 >= 0 and text[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _opener(text: str, close: int) -> int | None:
    depth = 0
    for index in range(close - 1, max(-1, close - 1 - LABEL_REACH), -1):
        char = text[index]
        if char in _CLOSERS and not _escaped(text, index):
            depth += 1
        elif char in _OPENERS and not _escaped(text, index):
            if depth == 0:
                return index
            depth -= 1
    return None


def _destination(text: str, at: int) -> tuple[int, int, int, bool]:
    """(url start, url end, end, closed) of the destination that starts at `at`."""
    size = len(text)
    pos = at
    while pos < size and text[pos] in " \t":
        pos += 1
    if pos < size and text[pos] in "<" + _LOOKALIKES["<"]:
        stop = pos + 1
        while stop < size and text[stop] not in ">\n" + _LOOKALIKES[">"]:
            stop += 1
        url_start, url_end = pos + 1, stop
        pos = stop + 1 if stop < size and text[stop] != "\n" else stop
    else:
        url_start = pos
        depth = 0
        while pos < size:
            char = text[pos]
            if char.isspace():
                break
            if char == "\\" and pos + 1 < size:
                pos += 2
                continue
            if char in _PAREN_OPEN:
                depth += 1
            elif char in _PAREN_CLOSE:
                if depth == 0:
                    break
                depth -= 1
            pos += 1
        url_end = pos
    while pos < size and text[pos] in " \t":
        pos += 1
    if pos < size and text[pos] in "\"'":  # a title: [x](url "title")
        stop = text.find(text[pos], pos + 1)
        if stop != -1 and "\n" not in text[pos:stop]:
            pos = stop + 1
            while pos < size and text[pos] in " \t":
                pos += 1
    if pos < size and text[pos] in _PAREN_CLOSE:
        return url_start, url_end, pos + 1, True
    return url_start, url_end, url_end, False


def masked_links(text: str) -> list[MaskedLink]:
    """Every masked link in `text`, in the order of their `](`: nested ones as well as the one
    around them, escaped closes too, and link syntax written with look-alike brackets."""
    found = []
    for match in _CLOSE_OPEN.finditer(text):
        close = match.start()
        url_start, url_end, end, closed = _destination(text, close + 2)
        escaped = _escaped(text, close)
        start = _opener(text, close)
        found.append(MaskedLink(start, close, url_start, url_end, end, closed, escaped, text))
    return found


def outermost(links: Iterable[MaskedLink]) -> list[MaskedLink]:
    """The links not inside another's span, by position: how a reader sees them."""
    kept: list[MaskedLink] = []
    for link in sorted(links, key=lambda item: (item.span[0], -item.span[1])):
        if kept and link.span[0] < kept[-1].span[1]:
            continue
        kept.append(link)
    return kept


def link_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where a cut would break a link: each masked link, autolink and bare URL."""
    for link in masked_links(text):
        yield link.span
    for match in _ANGLED.finditer(text):
        yield match.span()
    for match in URL_RE.finditer(text):
        yield match.span()


def fold_lookalikes(text: str) -> str:
    """Look-alike brackets that form link syntax (`［x］（url）`, `＜url＞`) as the ASCII ones a
    normalising reader would see, so the rules below treat them as the links they would be."""
    if not any(char in _ASCII for char in text):
        return text
    positions: set[int] = set()
    for link in masked_links(text):
        positions.update((link.close, link.close + 1))
        if link.start is not None:
            positions.add(link.start)
    for match in _ANGLED.finditer(text):
        positions.update((match.start(), match.end() - 1))
    chars = list(text)
    for pos in positions:
        chars[pos] = _ASCII.get(chars[pos], chars[pos])
    return "".join(chars)


def _escape_at(text: str, positions: Iterable[int]) -> str:
    out = []
    last = 0
    for pos in sorted(set(positions)):
        out.append(text[last:pos])
        out.append("\\" + text[pos])
        last = pos + 1
    out.append(text[last:])
    return "".join(out)


def defuse_links(text: str, trusted: Iterable[str] = ()) -> str:
    """Masked links whose URL is not one of `trusted` made plain text, shown as written: the
    `(` after the `]` escaped (no reader links a `]` and `(` apart), and the brackets too where
    they are not already escaped."""
    allowed = {normalise_url(url) for url in trusted}
    text = fold_lookalikes(text)
    positions = []
    for link in masked_links(text):
        if link.url and normalise_url(link.url) in allowed:
            continue
        positions.append(link.close + 1)
        if not link.escaped:
            positions.append(link.close)
        if link.start is not None:
            positions.append(link.start)
    return _escape_at(text, positions) if positions else text


def body(text: str, allowed: Iterable[str] = ()) -> str:
    """A multi-line untrusted text inside markdown: invisible characters removed, mentions
    defused, links to URLs outside `allowed` (and all masked links with no URL) escaped,
    headings, subtext and block quotes shown as written."""
    trusted = {normalise_url(url) for url in allowed}
    text = defuse_links(defuse_mentions(strip_invisible(text)), trusted)

    def autolink(match: re.Match[str]) -> str:
        whole = match.group(0)
        return whole if normalise_url(match.group(1)) in trusted else "\\" + whole

    text = _ANGLED.sub(autolink, text)
    return _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)


__all__ = [
    "CONTROL_CHARS",
    "INVISIBLE",
    "INVISIBLE_CHARS",
    "UNPRINTABLE",
    "URL_RE",
    "MaskedLink",
    "body",
    "cap_length",
    "defuse_links",
    "defuse_mentions",
    "fold_lookalikes",
    "inert",
    "link_spans",
    "masked_links",
    "normalise_url",
    "outermost",
    "plain",
    "strip_invisible",
    "trim_url",
    "unlinked",
]
