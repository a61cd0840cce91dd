"""`RUNSCRIBE_DB` read the way `Settings` reads it, for the commands that only read the database
(`status`, `timeline`): importing pydantic-settings and validating every other variable costs a
one-shot command more than its whole answer. `tests/test_environment.py` holds this to what
`Settings().runscribe_db` says, so the two cannot drift apart."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DATABASE_VARIABLE = "runscribe_db"
DEFAULT_DATABASE = Path("runscribe.db")


def database_path(
    environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")
) -> Path:
    """The environment first, then the `.env` file, then the default; names match in any case
    (`Settings` is case-insensitive), a later spelling wins over an earlier one, and a blank
    value means unset (as `Settings` reads them)."""
    found: str | None = None
    for name, value in (os.environ if environ is None else environ).items():
        if name.lower() == DATABASE_VARIABLE and value:
            found = value
    if found is None and env_file is not None and env_file.is_file():
        from dotenv import dotenv_values  # pydantic-settings' own .env reader

        for name, text in dotenv_values(env_file, encoding="utf-8").items():
            if name.lower() == DATABASE_VARIABLE and text:
                found = text
    return DEFAULT_DATABASE if found is None else Path(found)


__all__ = ["database_path"]
