"""The README's Discord setup numbers match discord.py's. (The import boundary itself is
checked in tests/test_layers.py.)"""

from __future__ import annotations

from pathlib import Path

import discord

ROOT = Path(__file__).resolve().parents[2]


def test_setup_guide_permissions_integer() -> None:
    wanted = discord.Permissions(
        view_channel=True,
        send_messages=True,
        embed_links=True,
        attach_files=True,
        read_message_history=True,
        create_public_threads=True,
        send_messages_in_threads=True,
    )
    guide = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"permissions={wanted.value}" in guide
    assert f"**{wanted.value}**" in guide
