"""The one mention sanitiser for text Runscribe posts or shows."""

from __future__ import annotations

import re

_MENTION = re.compile(r"@(everyone|here|[!&]?\d+>)")


def escape_mentions(text: str) -> str:
    """Break `@everyone`, `@here`, `<@id>`, `<@!id>`, `<@&role>` with a zero-width space so they
    cannot ping even if a client-side setting were lost. (allowed_mentions stays none too.)"""
    return _MENTION.sub("@\u200b\\1", text)
