"""Short, stable content hashes (prompt versions, narrative fingerprints, cache keys)."""

from __future__ import annotations

import hashlib


def short_hash(*parts: str, length: int = 12) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:length]
