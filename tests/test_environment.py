"""The read-only commands' RUNSCRIBE_DB and RUNSCRIBE_CONFIG (`bot.config.environment`) agree with
`Settings` in every case they can differ on: environment, `.env`, both, neither, any letter
case, quoting."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.environment import config_path, database_path
from bot.config.settings import Settings

DB_CASES = [
    ({}, None),
    ({"RUNSCRIBE_DB": "/data/env.db"}, None),
    ({}, "RUNSCRIBE_DB=/data/file.db\n"),
    ({"RUNSCRIBE_DB": "/data/env.db"}, "RUNSCRIBE_DB=/data/file.db\n"),
    ({"runscribe_db": "lower.db"}, None),
    ({}, "# comment\nexport runscribe_db='quoted path.db'\nGITHUB_TOKEN=x\n"),
    ({}, 'RUNSCRIBE_DB="${HOME_DIR}/a.db"\nHOME_DIR=/srv\n'),
    ({"OTHER": "1"}, "OTHER=2\n"),
    ({}, "RUNSCRIBE_DB=\n"),  # blank means unset: the default
    ({"RUNSCRIBE_DB": ""}, "RUNSCRIBE_DB=/data/file.db\n"),
]
CONFIG_CASES = [
    ({}, None),
    ({"RUNSCRIBE_CONFIG": "/etc/env.toml"}, "RUNSCRIBE_CONFIG=/etc/file.toml\n"),
    ({}, "runscribe_config='runs file.toml'\n"),
    ({"RUNSCRIBE_CONFIG": ""}, "RUNSCRIBE_CONFIG=\n"),
]
READERS = {"runscribe_db": database_path, "runscribe_config": config_path}


@pytest.mark.parametrize(
    ("setting", "environ", "dotenv"),
    [("runscribe_db", *case) for case in DB_CASES]
    + [("runscribe_config", *case) for case in CONFIG_CASES],
)
def test_the_path_is_what_settings_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
    environ: dict[str, str],
    dotenv: str | None,
) -> None:
    for name in (setting.upper(), setting):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    env_file = tmp_path / ".env"
    if dotenv is not None:
        env_file.write_text(dotenv, encoding="utf-8")
    expected = getattr(Settings(_env_file=env_file), setting)  # type: ignore[call-arg]
    assert READERS[setting](env_file=env_file) == expected


def test_status_reads_no_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad unrelated variable does not stop `status` (it reads the database only), while a
    command that needs the environment still reports it."""
    from bot.cli import main

    monkeypatch.setenv("RUNSCRIBE_DB", str(tmp_path / "missing.db"))
    monkeypatch.setenv("GITHUB_API_URL", "not a url")
    assert main(["status"]) == 2
    assert "no database at" in capsys.readouterr().err
    assert main(["usage"]) == 2
    assert "GITHUB_API_URL" in capsys.readouterr().err
