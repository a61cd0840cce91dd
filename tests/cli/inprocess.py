"""`runscribe …` run inside the test process: `bot.cli.main` with its argv, in a working
directory and an environment of the test's choosing, its exit code and output captured.

For a test that checks what a command says and its exit code: a real process would add only its
start-up. The tests that check what only a process has (signals, the installed entry point,
what start-up imports) start one."""

from __future__ import annotations

import contextlib
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.cli import main

CLEARED = ("RUNSCRIBE_", "DISCORD_")  # what a test's process gets only from the test


@dataclass(frozen=True, slots=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


def run_main(
    cwd: Path,
    *args: str,
    env: dict[str, str] | None = None,
    cleared: tuple[str, ...] = CLEARED,
) -> Done:
    """`main(args)` in `cwd`, with the process environment minus `cleared` plus `env`, as
    `subprocess.run([sys.executable, "-m", "bot", *args], cwd=cwd, env=…)` would run it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith(cleared):
                patch.delenv(name)
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        patch.chdir(cwd)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(list(args))
                except SystemExit as exc:  # argparse's usage errors exit, as in a process
                    code = exc.code if isinstance(exc.code, int) else 1
        finally:  # `main` configures logging for its own process
            root.handlers[:] = handlers
            root.setLevel(level)
    return Done(code, out.getvalue(), err.getvalue())
