"""Untrusted text in, safe text out.

Inbound: every piece of GitHub, Discord or W&B text that goes into a prompt is wrapped by `fence`
in `<untrusted_data source=… ref=…>…</untrusted_data>`; anything inside that looks like the fence's
own tags (in any case or spacing) is neutralised so the data cannot close the fence and talk to the
model as the operator. The system prompt tells the model that fenced text is data.

Outbound: `sanitize_output` removes Discord mentions (`@everyone`, `@here`, `<@id>`, `<@!id>`,
`<@&id>`), drops links whose URL did not appear in the sources or facts (keeping the link text),
strips control characters and caps the length. Discord posts also go out with `allowed_mentions`
none; this is the second lock on the same door."""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.core.mentions import UNPRINTABLE as _CONTROL
from bot.core.mentions import (
    URL_RE,
    MaskedLink,
    cap_length,
    defuse_links,
    defuse_mentions,
    fold_lookalikes,
    masked_links,
    normalise_url,
    outermost,
)

FENCE_TAG = "untrusted_data"

_FENCE_LOOKALIKE = re.compile(r"<(\s*/?\s*)(untrusted[\s_\-]*data)", re.IGNORECASE)
_ATTR_UNSAFE = re.compile(r"[\"<>\r\n\t&]")


_LINK_PASSES = 50  # nested links undone one level a pass; past this, escaped


URL_ATTR_LIMIT = 2000  # a link is given whole or not at all: a cut link is a broken link
_URL_ATTR_UNSAFE = {'"': "%22", "<": "%3C", ">": "%3E"}


def _attr(value: object, limit: int = 80) -> str:
    text = _CONTROL.sub("", str(value))
    text = _ATTR_UNSAFE.sub(" ", text).strip()
    return text[:limit]


def _url_attr(value: object) -> str | None:
    """A link as an attribute, whole: unsafe characters percent-encoded (never cut, never
    blanked, so the model sees, and the allow-list holds, the link people can open). A link
    longer than `URL_ATTR_LIMIT` is left out rather than cut."""
    text = "".join(_CONTROL.sub("", str(value)).split())
    for char, code in _URL_ATTR_UNSAFE.items():
        text = text.replace(char, code)
    return text if len(text) <= URL_ATTR_LIMIT else None


def neutralise(text: str) -> str:
    """Make fence look-alikes inert: `</untrusted_data>` becomes `&lt;/untrusted_data>`."""
    return _FENCE_LOOKALIKE.sub(lambda m: "&lt;" + m.group(1) + m.group(2), text)


def fence(text: str, *, source: str, **attrs: object) -> str:
    """Wrap untrusted text as labelled data. Attribute values are escaped and capped (a `url`
    is kept whole, see `_url_attr`); attributes whose value is None or empty are left out."""
    parts = [f'source="{_attr(source, 20)}"']
    for key, value in attrs.items():
        if value is None or value == "":
            continue
        if key == "url":
            url = _url_attr(value)
            if url:
                parts.append(f'url="{url}"')
            continue
        parts.append(f'{key}="{_attr(value)}"')
    body = neutralise(_CONTROL.sub("", text)).strip()
    return f"<{FENCE_TAG} {' '.join(parts)}>\n{body}\n</{FENCE_TAG}>"


def urls_in(texts: Iterable[str | None]) -> set[str]:
    """Normalised URLs found in the given texts (the allow-list for output links)."""
    found: set[str] = set()
    for text in texts:
        if text:
            found.update(normalise_url(m.group(0)) for m in URL_RE.finditer(text))
    return found


def limit_links(text: str, allowed: set[str]) -> str:
    """Keep links whose URL is allowed; a disallowed masked link keeps its label (nested
    brackets and all, its own links limited in turn), a disallowed bare URL is removed. Links
    are read by `bot.core.mentions.masked_links`, the same reader as every other surface's."""
    allowed_norm = {normalise_url(url) for url in allowed}
    text = fold_lookalikes(text)

    def ok(link: MaskedLink) -> bool:
        return bool(link.url) and normalise_url(link.url) in allowed_norm

    for _ in range(_LINK_PASSES):
        bad = outermost(link for link in masked_links(text) if not ok(link))
        if not bad:
            break
        for link in reversed(bad):  # right to left: the positions before stay valid
            if link.start is None:  # `](url)` with no label: the destination goes
                text = text[: link.close + 1] + text[link.end :]
            else:
                text = text[: link.start] + link.label + text[link.end :]
    else:
        text = defuse_links(text, allowed_norm)
    kept = [(link.url_start, link.url_end) for link in masked_links(text) if ok(link)]
    out: list[str] = []
    last = 0
    for match in URL_RE.finditer(text):
        start, end = match.span()
        if any(a <= start < b for a, b in kept):
            continue  # the destination of an allowed link
        raw = match.group(0)
        url = normalise_url(raw)
        if url in allowed_norm:
            continue
        out.append(text[last:start])
        out.append(raw[len(url) :] if raw.startswith(url) else "")
        last = end
    out.append(text[last:])
    return re.sub(r"[ \t]{2,}", " ", "".join(out))


def sanitize_output(text: str, *, allowed_urls: set[str], limit: int) -> str:
    """Everything model output goes through before it is stored or posted."""
    text = _CONTROL.sub("", text)
    text = neutralise(text)
    text = defuse_mentions(text)
    text = limit_links(text, allowed_urls)
    return cap_length(text, limit)


__all__ = [
    "FENCE_TAG",
    "URL_RE",
    "cap_length",
    "fence",
    "limit_links",
    "neutralise",
    "normalise_url",
    "sanitize_output",
    "urls_in",
]
