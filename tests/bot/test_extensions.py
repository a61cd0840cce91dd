"""Every cog is loaded, and errors have one handler: the command tree's own (`RunscribeTree`,
passed to the bot as `tree_cls`), never patched on from a cog."""

from __future__ import annotations

import ast
from pathlib import Path

from bot.app import DEFAULT_EXTENSIONS, RunscribeTree
from tests.bot.conftest import StartBot

COGS = Path(__file__).resolve().parents[2] / "cogs"


def modules_with_setup() -> set[str]:
    """`cogs.x` for each module under cogs/ that defines a top-level `setup` (an extension)."""
    found = set()
    for path in COGS.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "setup"
            for node in tree.body
        ):
            parts = path.relative_to(COGS.parent).with_suffix("").parts
            found.add(".".join(parts))
    return found


def test_every_module_with_setup_is_in_the_extension_list() -> None:
    assert len(set(DEFAULT_EXTENSIONS)) == len(DEFAULT_EXTENSIONS)
    assert modules_with_setup() == set(DEFAULT_EXTENSIONS)


async def test_every_extension_is_loaded_and_the_tree_handles_errors(start_bot: StartBot) -> None:
    bot = await start_bot()
    assert set(bot.extensions) == set(DEFAULT_EXTENSIONS)
    assert type(bot.tree) is RunscribeTree
    assert "on_error" not in vars(bot.tree)  # the class's handler, not one patched on
