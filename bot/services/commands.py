"""Which slash commands were last published where: a hash of their definition in the store, so
the bot publishes on a first start and whenever the commands change, and never otherwise
(Discord rate-limits command updates)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.store import Store

SOURCE = "discord-commands"  # the store's cursor namespace; the key is `application:scope`


def definition_hash(definition: Sequence[Mapping[str, Any]]) -> str:
    """A stable hash of the commands' JSON as sent to Discord, whatever their order."""
    ordered = sorted(definition, key=lambda command: str(command.get("name")))
    text = json.dumps(ordered, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def commands_changed(store: Store, key: str, definition: Sequence[Mapping[str, Any]]) -> bool:
    """True when `definition` is not what was last published under `key`."""
    published, _ = await store.cursors.get(SOURCE, key)
    return published != definition_hash(definition)


async def commands_published(
    store: Store, key: str, definition: Sequence[Mapping[str, Any]]
) -> None:
    await store.cursors.set(SOURCE, key, definition_hash(definition))
