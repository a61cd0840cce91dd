"""Architecture rules that a reviewer would otherwise have to remember."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_app_and_cogs_import_discord() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "bot").rglob("*.py")
        if path.name != "app.py" or path.parent != ROOT / "bot"
        if "discord" in _imports(path)
    ]
    assert offenders == []


def test_cogs_hold_no_sql_or_http() -> None:
    for path in (ROOT / "cogs").rglob("*.py"):
        imported = _imports(path)
        assert not imported & {"sqlite3", "aiosqlite", "httpx", "anthropic", "wandb"}, path
        text = path.read_text(encoding="utf-8")
        assert "SELECT " not in text and "INSERT " not in text, path


def test_sql_lives_in_the_store() -> None:
    sql = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("bot", "cogs")
        for path in (ROOT / folder).rglob("*.py")
        if "store" not in path.relative_to(ROOT).parts
        if sql.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_migrations_are_numbered_without_duplicates() -> None:
    from bot.store.db import load_migrations

    versions = [m.version for m in load_migrations()]
    assert versions == sorted(set(versions)) and versions[0] == 1


def test_readme_documents_every_setting() -> None:
    from bot.config.runsfile import THRESHOLDS
    from bot.config.settings import RunConfig, Settings, Thresholds

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [name.upper() for name in Settings.model_fields if name.upper() not in readme]
    missing += [f"runs.{name}" for name in RunConfig.model_fields if f"`{name}`" not in readme]
    alerts = [*Thresholds.model_fields, *(t.name for t in THRESHOLDS)]  # engine's, detectors'
    assert "stall_minutes" in alerts
    missing += [f"alerts.{name}" for name in alerts if f"`{name}`" not in readme]
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    missing += [
        f".env.example:{n.upper()}" for n in Settings.model_fields if n.upper() not in example
    ]
    assert missing == []
