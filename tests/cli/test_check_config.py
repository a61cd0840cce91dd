"""`runscribe check-config` as a user runs it: real files, exit codes, what it prints. One test
runs it as a real process (`python -m bot`); the rest call the CLI in-process, which is the same
code without the start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.inprocess import Done, run_main

ALERTS = "alerts_channel = 123456789012345678"
GOOD = """
[[runs]]
slug = "hero"
name = "Hero 535B"
wandb_runs = ["lab/proj/hero-1"]
wandb_run_pattern = "^hero-"
total_steps = 390251
target_tokens = 18e12
launched_at = 2026-08-20
github_repo = "lab/model"
github_issues = [8435]
github_labels = ["hero-run"]
github_keywords = ["hero run"]
watch_channels = [123456789012345678]
alerts_channel = 123456789012345678
digest_channel = 123456789012345678
digest_time = "09:00"
timezone = "America/New_York"

[runs.metrics]
step = "_step"
tokens = "throughput/total_tokens"
loss = "train/loss"

[runs.links]
"W&B report" = "https://wandb.ai/lab/proj/reports/x"
"""


def run_cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Done:
    return run_main(tmp_path, *args, env=env)


def run_process(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def check(tmp_path: Path, toml: str | None, **env: str):
    path = tmp_path / "runscribe.toml"
    if toml is not None:
        path.write_text(toml)
    return run_cli(tmp_path, "check-config", env={"RUNSCRIBE_CONFIG": str(path), **env})


def test_good_file_passes(tmp_path: Path) -> None:
    result = check(tmp_path, GOOD)
    assert result.returncode == 0, result.stderr
    assert "1 run(s) OK" in result.stdout
    assert "hero: Hero 535B" in result.stdout


def test_a_real_process_checks_the_file_and_exits_with_its_code(tmp_path: Path) -> None:
    path = tmp_path / "runscribe.toml"
    path.write_text(GOOD)
    good = run_process(tmp_path, "check-config", env={"RUNSCRIBE_CONFIG": str(path)})
    assert good.returncode == 0 and "1 run(s) OK" in good.stdout, good.stderr
    path.write_text(GOOD.replace("total_steps = 390251", "total_steps = 0"))
    bad = run_process(tmp_path, "check-config", env={"RUNSCRIBE_CONFIG": str(path)})
    assert bad.returncode == 2 and "runs[0].total_steps" in bad.stderr


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (None, "runs file not found"),
        ("[[runs]\nslug = 1\n", "invalid TOML"),
        (
            GOOD.replace('timezone = "America/New_York"', 'timezone = "Mars/Base"'),
            "runs[0].timezone: unknown time zone 'Mars/Base'",
        ),
        (GOOD.replace('digest_time = "09:00"', 'digest_time = "9am"'), "runs[0].digest_time"),
        (GOOD.replace("total_steps = 390251", "total_steps = 0"), "runs[0].total_steps"),
        (
            GOOD.replace('wandb_run_pattern = "^hero-"', 'wandb_run_pattern = "(["'),
            "runs[0].wandb_run_pattern: invalid regular expression",
        ),
        (GOOD + 'colour = "blue"\n', "runs[0].links: link 'colour' must be an http(s) URL"),
        (GOOD.replace('slug = "hero"', 'slgu = "hero"'), "runs[0].slug: required key is missing"),
        (
            GOOD.replace('slug = "hero"', 'slug = "hero"\nmodel_size = 3'),
            "runs[0].model_size: unknown key",
        ),
        (GOOD.replace("total_steps = 390251", 'total_steps = "lots"'), "runs[0].total_steps"),
        (
            GOOD.replace("watch_channels = [123456789012345678]", 'watch_channels = ["general"]'),
            "runs[0].watch_channels[0]",
        ),
        (GOOD.replace('github_repo = "lab/model"', 'github_repo = "model"'), "runs[0].github_repo"),
        (
            GOOD.replace(ALERTS, ALERTS + "\nalert_role = -5"),
            "runs[0].alert_role: -5 is not a Discord id",
        ),
        (GOOD.replace(ALERTS, ALERTS + '\nalert_role = "oncall"'), "runs[0].alert_role"),
        (
            GOOD.replace(ALERTS, ALERTS + "\nstatus_channel = 0"),
            "runs[0].status_channel: 0 is not a Discord id",
        ),
        (
            GOOD.replace(ALERTS, ALERTS + "\nstatus_refresh_minutes = 0"),
            "runs[0].status_refresh_minutes: Input should be greater than or equal to 1",
        ),
        (
            GOOD.replace(ALERTS, ALERTS + '\nstatus_refresh_minutes = "often"'),
            "runs[0].status_refresh_minutes",
        ),
        ("", "runs: required key is missing"),
        (
            GOOD + GOOD.replace('name = "Hero 535B"', 'name = "Other"'),
            "runs[1].slug: 'hero' is already used by runs[0]",
        ),
        ('runs = "x"', "runs: each run is a [[runs]] table (two brackets), not [runs]"),
        (GOOD + "[runs.alerts]\nstall_minute = 5\n", "runs[0].alerts.stall_minute: unknown key"),
        (
            GOOD + "[runs.alerts]\nstall_minutes = 0\n",
            "runs[0].alerts.stall_minutes: Input should be greater than 0 (got 0)",
        ),
        (
            GOOD + "[runs.alerts]\nthroughput_drop_percent = 100\n",
            "runs[0].alerts.throughput_drop_percent: Input should be less than 100 (got 100)",
        ),
        (
            GOOD + "[runs.alerts]\nloss_spike_points = 2.5\n",
            "runs[0].alerts.loss_spike_points: Input should be a valid integer",
        ),
        (
            GOOD + "[runs.alerts]\npending_minutes = -1\n",
            "runs[0].alerts.pending_minutes: Input should be greater than or equal to 0",
        ),
        (
            GOOD + '[runs.alerts]\nreminder_minutes = "hourly"\n',
            "runs[0].alerts.reminder_minutes: Input should be a valid number",
        ),
    ],
)
def test_each_problem_is_named_with_its_path(
    tmp_path: Path, toml: str | None, expected: str
) -> None:
    result = check(tmp_path, toml)
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_every_documented_threshold_is_accepted(tmp_path: Path) -> None:
    """The README's `[runs.alerts]` keys, each set in a real runs file that `check-config`
    accepts (the built-in thresholds are declared with nothing imported first)."""
    alerts = (
        "[runs.alerts]\nheartbeat_minutes = 15\nstall_minutes = 20\nloss_spike_percent = 25\n"
        "loss_spike_points = 3\nthroughput_drop_percent = 25\nthroughput_minutes = 30\n"
        "pending_minutes = 0\nreminder_minutes = 60\n"
    )
    result = check(tmp_path, GOOD + alerts)
    assert result.returncode == 0, result.stderr
    assert "1 run(s) OK" in result.stdout


def test_invalid_toml_reports_the_line(tmp_path: Path) -> None:
    result = check(tmp_path, 'x = 1\n\n[[runs]]\nslug = "a\n')
    assert result.returncode == 2
    assert "line 4" in result.stderr


def test_every_problem_is_listed_not_just_the_first(tmp_path: Path) -> None:
    bad = GOOD.replace('timezone = "America/New_York"', 'timezone = "Nowhere"').replace(
        'digest_time = "09:00"', 'digest_time = "99:99"'
    )
    result = check(tmp_path, bad)
    assert result.returncode == 2
    assert "runs[0].timezone" in result.stderr and "runs[0].digest_time" in result.stderr


def test_a_run_needs_a_source(tmp_path: Path) -> None:
    result = check(tmp_path, '[[runs]]\nslug = "x"\nname = "X"\n')
    assert result.returncode == 2
    assert "needs at least one source" in result.stderr


def test_bad_environment_names_the_variable(tmp_path: Path) -> None:
    result = check(tmp_path, GOOD, GITHUB_API_URL="not a url")
    assert result.returncode == 2
    assert "GITHUB_API_URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_dotenv_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DISCORD_GUILD_ID=notanumber\n")
    result = check(tmp_path, GOOD)
    assert result.returncode == 2
    assert "DISCORD_GUILD_ID" in result.stderr


def test_blank_secrets_from_a_copied_env_example_mean_unset(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DISCORD_TOKEN=\nANTHROPIC_API_KEY=\n")
    result = check(tmp_path, GOOD)
    assert result.returncode == 0, result.stderr
    assert "DISCORD_TOKEN is not set" in result.stdout
    run = run_cli(tmp_path, "run", env={"RUNSCRIBE_CONFIG": str(tmp_path / "runscribe.toml")})
    assert run.returncode == 2 and "DISCORD_TOKEN: required" in run.stderr


def test_wandb_runs_without_a_key_are_warned_about(tmp_path: Path) -> None:
    result = check(tmp_path, GOOD, WANDB_API_KEY="")  # blank means unset
    assert result.returncode == 0, result.stderr
    assert "WANDB_API_KEY is not set but W&B runs are configured" in result.stdout
    keyed = check(tmp_path, GOOD, WANDB_API_KEY="k" * 40)
    assert keyed.returncode == 0
    assert "WANDB_API_KEY" not in keyed.stdout


def test_every_option_of_every_command_has_help() -> None:
    import argparse

    from bot.cli import _parser

    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert commands.choices
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


LIVE = GOOD.replace(ALERTS, ALERTS + "\nstatus_channel = 123456789012345690")


def test_a_status_channel_gets_the_pin_permission_hint(tmp_path: Path) -> None:
    result = check(tmp_path, LIVE)
    assert result.returncode == 0, result.stderr
    assert (
        "note: hero: the live status message in channel 123456789012345690 is pinned only if "
        "the bot has Manage Messages there" in result.stdout
    )
    assert "live status" not in check(tmp_path, GOOD).stdout


def test_a_refused_pin_recorded_by_the_bot_is_named(tmp_path: Path) -> None:
    import asyncio

    from bot.core.timeutil import utcnow
    from bot.store import Database, Store

    db = tmp_path / "runscribe.db"

    async def refused() -> None:
        async with Database.open(db) as opened:
            store = Store(opened)
            await store.live.posted(
                "hero", 123456789012345690, 42, chart_digest=None, attachment_id=None,
                at=utcnow(),
            )  # fmt: skip
            await store.live.set_pin("hero", pinned=False, refused=True)

    asyncio.run(refused())
    result = check(tmp_path, LIVE, RUNSCRIBE_DB=str(db))
    assert result.returncode == 0, result.stderr
    assert (
        "note: hero: Discord refused to pin the live status message in channel "
        "123456789012345690: give the bot Manage Messages there" in result.stdout
    )


def test_a_channel_refusing_posts_recorded_by_the_bot_is_named(tmp_path: Path) -> None:
    import asyncio

    from bot.core.timeutil import utcnow
    from bot.store import Database, Store

    db = tmp_path / "runscribe.db"

    async def refused() -> None:
        async with Database.open(db) as opened:
            store = Store(opened)
            why = "403 Missing Permissions (code 50013)"
            await store.delivery.failed(123456789012345678, utcnow(), why, refused=True)
            await store.delivery.failed(123456789012345679, utcnow(), "503 down", refused=False)

    asyncio.run(refused())
    result = check(tmp_path, GOOD, RUNSCRIBE_DB=str(db))
    assert result.returncode == 0, result.stderr
    assert (
        "note: Discord refuses the bot's posts in channel 123456789012345678 (403 Missing "
        "Permissions (code 50013)): give the bot View Channel, Send Messages" in result.stdout
    )
    assert "123456789012345679" not in result.stdout  # a server error is no permission
