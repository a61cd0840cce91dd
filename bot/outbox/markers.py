"""Delivery markers: every message carries Discord's `nonce` and an invisible run of zero-width
characters encoding the outbox id, the part number and a hash of the dedup key (at the end of
the content or of the embed footer). Before re-sending an item, the poster reads the channel's
recent history for these, so a crash between sending and `mark_sent` never produces a
duplicate."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_MARK_EDGE = "\u2063"  # INVISIBLE SEPARATOR
_MARK_DIGITS = "\u200b\u200c\u200d\u2060"  # zero-width space / non-joiner / joiner / word joiner
_MARK_RE = re.compile(f"{_MARK_EDGE}([{_MARK_DIGITS}]+){_MARK_EDGE}")
MARKER_RESERVE = 48  # characters kept free for a marker


@dataclass(slots=True, frozen=True, order=True)
class Marker:
    item_id: int
    part: int
    key_hash: int  # 24 bits of sha1(dedup_key): tells two databases' item 7 apart

    @classmethod
    def for_item(cls, item_id: int, part: int, dedup_key: str) -> Marker:
        digest = hashlib.sha1(dedup_key.encode("utf-8")).digest()
        return cls(item_id, part, int.from_bytes(digest[:3], "big"))

    @property
    def value(self) -> int:
        return (self.item_id << 32) | ((self.part & 0xFF) << 24) | self.key_hash

    @classmethod
    def from_value(cls, value: int) -> Marker:
        return cls(value >> 32, (value >> 24) & 0xFF, value & 0xFFFFFF)

    def encode(self) -> str:
        value, digits = self.value, []
        while True:
            value, rest = divmod(value, 4)
            digits.append(_MARK_DIGITS[rest])
            if not value:
                break
        return _MARK_EDGE + "".join(reversed(digits)) + _MARK_EDGE

    @property
    def nonce(self) -> str:
        """Discord nonces are at most 25 characters."""
        return f"rs{self.item_id:x}.{self.part}.{self.key_hash:06x}"[:25]


def find_markers(text: str) -> list[Marker]:
    found = []
    for match in _MARK_RE.finditer(text):
        value = 0
        for char in match.group(1):
            value = value * 4 + _MARK_DIGITS.index(char)
        found.append(Marker.from_value(value))
    return found
