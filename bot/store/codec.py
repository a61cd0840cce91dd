"""Helpers shared by the repositories: JSON columns and parameter chunks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

_CHUNK = 400  # stays under SQLite's host-parameter limit with room to spare


def chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
