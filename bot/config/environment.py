"""`RUNSCRIBE_DB` and `RUNSCRIBE_CONFIG` read the way `Settings` reads them, for the commands that
only read the database (`status`, `timeline`): importing pydantic-settings and validating every
other variable costs a one-shot command more than its whole answer. `tests/test_environment.py`
holds this to what `Settings()` says, so the two cannot drift apart."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DATABASE_VARIABLE = "runscribe_db"
DEFAULT_DATABASE = Path("runscribe.db")
CONFIG_VARIABLE = "runscribe_config"
DEFAULT_CONFIG = Path("runscribe.toml")


def _setting_path(
    variable: str, default: Path, environ: Mapping[str, str] | None, env_file: Path | None
) -> Path:
    """The environment first, then the `.env` file, then the default; names match in any case
    (`Settings` is case-insensitive), a later spelling wins over an earlier one, and a blank
    value means unset (as `Settings` reads them)."""
    found: str | None = None
    for name, value in (os.environ if environ is None else environ).items():
        if name.lower() == variable and value:
            found = value
    if found is None and env_file is not None and env_file.is_file():
        from dotenv import dotenv_values  # pydantic-settings' own .env reader

        for name, text in dotenv_values(env_file, encoding="utf-8").items():
            if name.lower() == variable and text:
                found = text
    return default if found is None else Path(found)


def database_path(
    environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")
) -> Path:
    """`RUNSCRIBE_DB` as `Settings` reads it."""
    return _setting_path(DATABASE_VARIABLE, DEFAULT_DATABASE, environ, env_file)


def config_path(
    environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")
) -> Path:
    """`RUNSCRIBE_CONFIG` (the runs file) as `Settings` reads it."""
    return _setting_path(CONFIG_VARIABLE, DEFAULT_CONFIG, environ, env_file)


__all__ = ["config_path", "database_path"]
