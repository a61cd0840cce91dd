"""A runs-file mistake a person makes in the first hour names the fix: a near-miss key gets
"did you mean", a `[runs]` table where `[[runs]]` is meant says so, `default_run` must name a
run (issue 41)."""

from __future__ import annotations

import tomllib

import pytest

from bot.config.runsfile import ConfigError, parse_runs

RUN = 'slug = "hero"\nname = "Hero"\ngithub_repo = "lab/model"\n'


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_runs(tomllib.loads(text))
    return caught.value.problems


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[run]]\n" + RUN, "run: unknown key (did you mean 'runs'?)"),
        ("[runs]\n" + RUN, "runs: each run is a [[runs]] table (two brackets), not [runs]"),
        (
            "[[runs]]\n" + RUN + "github_isues = [1]\n",
            "runs[0].github_isues: unknown key (did you mean 'github_issues'?)",
        ),
        (
            "[[runs]]\n" + RUN + "[runs.alerts]\nstall_minute = 5\n",
            "runs[0].alerts.stall_minute: unknown key (did you mean 'stall_minutes'?)",
        ),
        ('default_rnu = "hero"\n[[runs]]\n' + RUN, "default_rnu: unknown key (did you mean"),
        (
            'default_run = "zero"\n[[runs]]\n' + RUN,
            "default_run: 'zero' is not a run's slug (the runs are: hero)",
        ),
    ],
)
def test_a_mistake_names_its_fix(text: str, expected: str) -> None:
    assert any(problem.startswith(expected) for problem in problems(text)), problems(text)


def test_a_key_like_no_other_gets_no_guess() -> None:
    assert problems("[[runs]]\n" + RUN + "model_size = 3\n") == ["runs[0].model_size: unknown key"]


def test_default_run_names_a_run() -> None:
    runs = parse_runs(tomllib.loads('default_run = "hero"\n[[runs]]\n' + RUN))
    assert runs.default_run == "hero"
