"""The one mention sanitiser: everything Runscribe posts or stores as prose goes through it (the
outbox for every post, the LLM writers for model output), and every post also goes out with
`allowed_mentions` none. Text from GitHub, Discord or W&B is data and must never ping."""

from __future__ import annotations

import re

_EVERYONE = re.compile(r"@(everyone|here)", re.IGNORECASE)
_USER = re.compile(r"<@!?\d+>")
_ROLE = re.compile(r"<@&\d+>")


def defuse_mentions(text: str) -> str:
    """Everything Discord would turn into a ping, as plain words: `@everyone` → `everyone`,
    `@here` → `here`, `<@id>` and `<@!id>` → `someone`, `<@&id>` → `a role`. Idempotent;
    e-mail addresses and other `@` are left alone."""
    text = _EVERYONE.sub(lambda m: m.group(1), text)
    text = _ROLE.sub("a role", text)
    return _USER.sub("someone", text)
