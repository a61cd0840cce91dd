"""Untrusted text (GitHub, Discord, W&B: names, titles, bodies) on its way to Discord. Every place
such text reaches a post or a reply goes through one of these, and every post also goes out with
`allowed_mentions` none:

- `defuse_mentions`: pings as plain words (also applied by the outbox to every post);
- `drop_discord_tokens`: pings and Discord tokens dropped, for enrichment's summaries;
- `plain`: for places that show no markdown (thread names): zero-width and bidi controls
  removed, mentions defused, on one line;
- `inert`: a name or title inside markdown: invisible characters removed, mentions defused and
  every markdown character escaped, so it cannot bold, hide, quote, make a heading or forge a
  masked link or an autolink;
- `unlinked`: a title mixing code's words and a member's: only what makes links, headings and
  quotes escaped (a metric name's `_` stays as it is);
- `body`: a multi-line text (a cause, a summary, a narrative): `plain` per line, masked links
  `[x](url)` and autolinks `<url>` escaped unless the URL is one of `allowed` (the sources' own
  URLs), headings (`#`, `-#`) and block quotes (`>`, `>>>`) neutralised at line start.

Links the bot means are made by code around the escaped text (`[#8818](issue url)`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_EVERYONE = re.compile(r"@(everyone|here)", re.IGNORECASE)
_USER = re.compile(r"<@!?\d+>")
_ROLE = re.compile(r"<@&\d+>")
#: zero-width characters, soft hyphen, bidi embeddings/overrides/isolates, BOM
ZERO_WIDTH = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_MARKDOWN = re.compile(r"([\\*_~`|\[\]<>#])")
_LINKISH = re.compile(r"([\[\]<])")
_MASKED = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^\s)>]*)>?[^)\n]*\)")
_AUTOLINK = re.compile(r"<((?:https?|ftp|steam|mailto|discord)[^>\s]*)>", re.IGNORECASE)
_LINE_START = re.compile(r"^([ \t]*)(#{1,3}[ \t]|-#[ \t]|>>>|>)", re.MULTILINE)


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
    return " ".join(defuse_mentions(ZERO_WIDTH.sub("", text)).split())


def inert(text: str) -> str:
    """A name or title shown as written inside markdown: invisible characters removed, mentions
    defused, markdown characters escaped (line breaks are kept: `plain` first for one line)."""
    text = _MARKDOWN.sub(r"\\\1", defuse_mentions(ZERO_WIDTH.sub("", text)))
    return text.replace("\\](", "\\]\\(")


def unlinked(text: str) -> str:
    """A title made of code's words and a member's (an incident title, "… reported by NAME"):
    invisible characters removed, mentions defused, link brackets (`[`, `]`, `<`) escaped and
    line-start headings and quotes neutralised; other markdown is left as it is."""
    text = _LINKISH.sub(r"\\\1", defuse_mentions(ZERO_WIDTH.sub("", text)))
    text = text.replace("\\](", "\\]\\(")  # no `](` left for a masked link to hang on
    return _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)


URL_RE = re.compile(r"https?://[^\s<>()\[\]\"'`]+", re.IGNORECASE)
_TRAILING = ".,;:!?'\"”’"


def normalise_url(url: str) -> str:
    """A URL as compared with the allow-list: trailing punctuation, an unbalanced closing
    parenthesis and a trailing slash dropped."""
    url = url.strip().rstrip(_TRAILING)
    while url.endswith(")") and url.count("(") < url.count(")"):
        url = url[:-1]
    return url.rstrip("/")


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


def _norm(url: str) -> str:
    return url.strip().rstrip(".,;:!?'\"").rstrip("/")


def body(text: str, allowed: Iterable[str] = ()) -> str:
    """A multi-line untrusted text inside markdown: invisible characters removed, mentions
    defused, links to URLs outside `allowed` (and all masked links with no URL) escaped,
    headings, subtext and block quotes shown as written."""
    trusted = {_norm(url) for url in allowed}
    text = defuse_mentions(ZERO_WIDTH.sub("", text))

    def masked(match: re.Match[str]) -> str:
        whole, url = match.group(0), match.group(2)
        if url and _norm(url) in trusted:
            return whole
        return whole.replace("[", "\\[", 1).replace("](", "\\]\\(", 1)

    def autolink(match: re.Match[str]) -> str:
        return match.group(0) if _norm(match.group(1)) in trusted else "\\" + match.group(0)

    text = _MASKED.sub(masked, text)
    text = _AUTOLINK.sub(autolink, text)
    return _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)


__all__ = [
    "URL_RE",
    "ZERO_WIDTH",
    "body",
    "cap_length",
    "defuse_mentions",
    "inert",
    "normalise_url",
    "plain",
    "unlinked",
]
