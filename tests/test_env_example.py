"""`.env.example` is safe to copy as is: as `.env` for a local run (python-dotenv, what
pydantic-settings reads) and for `docker run --env-file` (each line taken literally). Copied
unchanged it sets nothing; the defaults it shows are the current ones; a bad value's error names
the variable and shows the value."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bot.config.runsfile import ConfigError
from bot.config.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / ".env.example"
SHOWN = re.compile(r"^# ([A-Z][A-Z0-9_]*)=(\S*)$")


def docker_env_file(path: Path) -> dict[str, str]:
    """What `docker run --env-file` passes: `NAME=VALUE` lines verbatim (no quotes, no inline
    comments removed), lines starting with `#` and blank lines skipped."""
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, value = line.partition("=")
        values[name] = value
    return values


def image_env() -> set[str]:
    """The variables the Dockerfile's runtime stage sets with ENV."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    runtime = text.rsplit("\nFROM ", 1)[1]
    names: set[str] = set()
    for line in runtime.splitlines():
        if line.startswith("ENV "):
            names |= set(re.findall(r"([A-Z][A-Z0-9_]*)=", line))
    return names


def dump(settings: Settings) -> dict[str, Any]:
    return settings.model_dump(mode="json")


def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)


def test_its_only_active_lines_are_blanks_to_fill_in() -> None:
    active = docker_env_file(EXAMPLE)
    assert {"DISCORD_TOKEN", "GITHUB_TOKEN", "WANDB_API_KEY", "ANTHROPIC_API_KEY"} <= set(active)
    for name, value in active.items():
        assert value == "", f"{name}={value}: an active line sets a value"


def test_copied_as_is_it_changes_no_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean(monkeypatch)
    defaults = dump(Settings(_env_file=None))  # type: ignore[call-arg]
    # Docker: every active line in the container's environment.
    for name, value in docker_env_file(EXAMPLE).items():
        monkeypatch.setenv(name, value)
    assert dump(Settings(_env_file=None)) == defaults  # type: ignore[call-arg]
    monkeypatch.undo()
    clean(monkeypatch)
    # Local: the file as .env.
    env = tmp_path / ".env"
    env.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    assert dump(Settings(_env_file=env)) == defaults  # type: ignore[call-arg]


def test_it_never_overrides_the_images_paths() -> None:
    overridden = image_env() & set(docker_env_file(EXAMPLE))
    assert {"RUNSCRIBE_DB", "RUNSCRIBE_CONFIG"} <= image_env()
    assert not overridden, f"{overridden}: set by .env.example over the image's ENV"


def test_no_value_line_carries_a_comment() -> None:
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        code = line.removeprefix("# ") if SHOWN.match(line) else line
        if "=" in code and not code.startswith("#"):
            assert "#" not in code.partition("=")[2], line
            assert code == code.strip(), line


def test_uncommenting_a_line_enables_nothing_by_its_comment() -> None:
    """A commented `# NAME=...` line, uncommented for Docker's --env-file, sets NAME to what
    follows `=` verbatim: it must be a plain value, never a value followed by a comment (a hook
    would be switched on with the comment text as its secret)."""
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        if re.match(r"^#\s*[A-Z][A-Z0-9_]*=", line):
            assert SHOWN.match(line), f"not a plain '# NAME=value' line: {line!r}"


def test_every_setting_is_shown_with_its_current_default(monkeypatch: pytest.MonkeyPatch) -> None:
    clean(monkeypatch)
    text = EXAMPLE.read_text(encoding="utf-8")
    shown = {m[1]: m[2] for m in map(SHOWN.match, text.splitlines()) if m}
    named = set(shown) | set(docker_env_file(EXAMPLE))
    assert {name.upper() for name in Settings.model_fields} == named
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    for name, value in shown.items():
        field = name.lower()
        if getattr(defaults, field) is None:
            continue  # a service's own default, shown for reference (Discord, W&B, Anthropic)
        uncommented = Settings(_env_file=None, **{field: value})  # type: ignore[call-arg]
        assert getattr(uncommented, field) == getattr(defaults, field), f"{name}={value}"


def test_a_blank_optional_value_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    clean(monkeypatch)
    for name in (
        "DISCORD_GUILD_ID",
        "RUNSCRIBE_WEB_PORT",
        "RUNSCRIBE_POLL_INTERVAL",
        "RUNSCRIBE_DB",
    ):
        monkeypatch.setenv(name, "")
    settings = load_settings(_env_file=None)
    assert settings.discord_guild_id is None and settings.runscribe_web_port is None
    assert settings.runscribe_poll_interval == 60 and settings.runscribe_db == Path("runscribe.db")


def test_a_bad_value_names_the_variable_and_shows_the_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clean(monkeypatch)
    # The line a person uncommented with its old inline comment, as --env-file passes it.
    monkeypatch.setenv("DISCORD_GUILD_ID", "123456789012345678   # sync commands here")
    monkeypatch.setenv("RUNSCRIBE_POLL_INTERVAL", "soon")
    with pytest.raises(ConfigError) as info:
        load_settings(_env_file=None)
    guild, interval = sorted(info.value.problems)
    assert guild.startswith("DISCORD_GUILD_ID=123456789012345678   # sync commands here: ")
    assert "comment" in guild.split(": ", 1)[1]
    assert interval.startswith("RUNSCRIBE_POLL_INTERVAL=soon: ")
