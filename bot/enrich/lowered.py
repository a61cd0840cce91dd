"""Patterns that read lowercased text.

Python's engine folds case as it matches, which costs several times as much as matching text
that is already lower case. A pattern whose words are all lower case matches the same spans of
``text.lower()`` without IGNORECASE, wherever lowering keeps every character in its place
(``aligned``), so a match there points into the original text too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: Escapes ("\S", "\W") and group names ("(?P<metric>") name no letter to match.
_NOT_WORDS = re.compile(r"\\.|\(\?P(?:<\w+>|=\w+\))")
#: A character class: "[A-Za-z]" reads lowered text as it read any text, "[A-Z]" alone not.
_CLASS = re.compile(r"\[(?:\\.|[^\]])*\]")


def _reads_lowered(class_: str) -> bool:
    return not any(c.isupper() for c in (class_.replace("A-Z", "") if "a-z" in class_ else class_))


def lowered(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """``pattern`` without IGNORECASE, for lowercased text; None when its words tell cases apart
    ("(?-i:FAILED)", a capital outside a class, a class of capitals only)."""
    text = _NOT_WORDS.sub("", pattern.pattern)
    if "(?-i" in pattern.pattern or not all(map(_reads_lowered, _CLASS.findall(text))):
        return None
    if any(c.isupper() for c in _CLASS.sub("", text)):
        return None
    return re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)


def must_lower(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``lowered`` of a pattern written all in lower case (an error at import if it is not)."""
    fast = lowered(pattern)
    if fast is None:
        raise ValueError(f"a pattern with capitals cannot read lowercased text: {pattern.pattern}")
    return fast


def aligned(text: str, lowered_text: str) -> bool:
    """Lowering kept every character in its place ("İ" becomes two)."""
    return len(text) == len(lowered_text)


class Words:
    """A pattern and its twin for lowercased text: asks whether, how often or where the pattern
    occurs, reading lowercased text wherever that is exact (``low``: the text lowercased, when
    the caller has it already)."""

    __slots__ = ("lower", "pattern")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.lower = must_lower(pattern)

    def _read(self, text: str, low: str | None) -> tuple[re.Pattern[str], str]:
        low = text.lower() if low is None else low
        return (self.lower, low) if aligned(text, low) else (self.pattern, text)

    def found(self, text: str, low: str | None = None) -> bool:
        pattern, said = self._read(text, low)
        return pattern.search(said) is not None

    def count(self, text: str) -> int:
        pattern, said = self._read(text, None)
        return len(pattern.findall(said))

    def finditer(self, text: str, low: str | None = None) -> Iterator[re.Match[str]]:
        """The matches, their places in ``text`` (their groups lowercased where read so)."""
        pattern, said = self._read(text, low)
        return pattern.finditer(said)
