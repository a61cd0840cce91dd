"""A pushed body's JSON, read with a bound on its nesting: a body that parses but nests deeper
than any sender's message is refused as malformed (a 400), never a crash of the handler."""

from __future__ import annotations

import json
from typing import Any

#: Alertmanager's message nests 4 levels, GitHub's deliveries under 10.
MAX_DEPTH = 32


class TooDeep(ValueError):
    pass


def load_json(text: str | bytes) -> Any:
    """`json.loads`, with `ValueError` (`TooDeep`) for a value nested over `MAX_DEPTH` levels:
    past the interpreter's recursion limit the parser itself gives up (RecursionError), below it
    the parsed value is measured without recursion."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"the JSON nests deeper than {MAX_DEPTH} levels") from None
    if depth(value) > MAX_DEPTH:
        raise TooDeep(f"the JSON nests deeper than {MAX_DEPTH} levels")
    return value


def depth(value: Any) -> int:
    """How deep lists and objects nest in a parsed JSON value (a scalar: 0)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        stack.extend((child, level) for child in children)
    return deepest
