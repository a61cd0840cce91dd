"""Discord stays at the edge, and the setup guide's numbers match discord.py's."""

from __future__ import annotations

import re
from pathlib import Path

import discord

ROOT = Path(__file__).resolve().parents[2]
IMPORT = re.compile(r"^\s*(import discord|from discord[\s.])", re.MULTILINE)


def test_only_app_and_cogs_import_discord() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "bot").rglob("*.py")
        if path.name != "app.py" and IMPORT.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


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
    guide = (ROOT / "docs" / "discord-setup.md").read_text(encoding="utf-8")
    assert f"permissions={wanted.value}" in guide
    assert f"**{wanted.value}**" in guide
