"""Every data file the code reads from inside `bot/` ships in the package: CI installs the project
non-editable, but most tests import it from the checkout, where a file left out of
`[tool.setuptools.package-data]` is still found."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = {".py", ".pyc", ".pyi", ".typed"}


def test_every_data_file_under_bot_is_declared_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared: dict[str, list[str]] = config["tool"]["setuptools"]["package-data"]
    data = [
        path
        for path in (ROOT / "bot").rglob("*")
        if path.is_file() and path.suffix not in CODE and "__pycache__" not in path.parts
    ]
    assert any(p.name == "tag_model.json" for p in data)  # the walk sees the models
    missing = []
    for path in data:
        relative = path.relative_to(ROOT)
        shipped = False
        for package, patterns in declared.items():
            folder = Path(*package.split("."))
            if folder in relative.parents:
                inside = relative.relative_to(folder).as_posix()
                shipped |= any(fnmatch.fnmatch(inside, pattern) for pattern in patterns)
        if not shipped:
            missing.append(str(relative))
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
