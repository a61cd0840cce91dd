"""`runscribe poll --once` as a real process against the fake GitHub and W&B servers, then the
query commands (in-process) on what it stored: the right step, tokens, last restart and
freshness, and an idle second cycle that costs GitHub two 304s."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.inprocess import run_main
from tests.fakes.github import FakeGitHub
from tests.fakes.wandb import FakeWandb
from tests.waiting import PATIENCE

RUNS = """
[[runs]]
slug = "hero"
name = "Hero 70B"
wandb_runs = ["ent/proj/hero-1"]
wandb_run_pattern = "^hero-"
total_steps = 1000
target_tokens = 4e9
github_repo = "lab/model"
github_labels = ["hero-run"]
timezone = "Europe/Berlin"

[runs.metrics]
step = "_step"
tokens = "throughput/total_tokens"
loss = "train/loss"
"""


@pytest.fixture(scope="module")
def wandb_server() -> Iterator[FakeWandb]:
    fake = FakeWandb().start()
    yield fake
    fake.stop()


def environment(tmp_path: Path, github: FakeGitHub, wandb: FakeWandb) -> dict[str, str]:
    """A process environment pointing every source at the fakes, with the runs file written."""
    (tmp_path / "runscribe.toml").write_text(RUNS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "WANDB_"))}
    env.update(
        RUNSCRIBE_CONFIG=str(tmp_path / "runscribe.toml"),
        RUNSCRIBE_DB=str(tmp_path / "hero.db"),
        GITHUB_API_URL=github.url,
        WANDB_BASE_URL=wandb.base_url,
        WANDB_API_KEY=wandb.api_key,
        WANDB__GRAPHQL_RETRY_MAX="1",
    )
    env.pop("ANTHROPIC_API_KEY", None)
    return env


async def cli(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """`runscribe poll` as a real process; the commands that only read what it stored
    (`status`, `timeline`, `page`) in-process (the same code without a process's start-up)."""
    if args[0] in ("status", "timeline", "page"):
        done = await asyncio.to_thread(run_main, tmp_path, *args, env=env, cleared=("",))
        return done.returncode, done.stdout, done.stderr
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_poll_once_then_status(tmp_path: Path, wandb_server: FakeWandb) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    wandb_server.reset()
    first = wandb_server.add_run("ent/proj/hero-1", created_at=now - timedelta(hours=6))
    wandb_server.log(first.path, 300, start=now - timedelta(hours=6), every=timedelta(seconds=48))
    wandb_server.set_state(first.path, "crashed", heartbeat_at=now - timedelta(hours=2))
    # A forked continuation from an earlier checkpoint (step 250), discovered by the pattern.
    fork = wandb_server.add_run("ent/proj/hero-2", created_at=now - timedelta(hours=1, minutes=30))
    rows = [
        {
            "_step": 250 + i,
            "_timestamp": (
                now - timedelta(hours=1, minutes=30) + timedelta(seconds=60 * i)
            ).timestamp(),
            "train/loss": 2.5 - i * 0.001,
            "throughput/total_tokens": 4_000_000.0 * (251 + i),
        }
        for i in range(85)
    ]
    wandb_server.append_rows(fork.path, rows)
    wandb_server.set_state(fork.path, "running", heartbeat_at=now)

    async with FakeGitHub() as github:
        repo = github.repo("lab/model")
        number = repo.add_issue(
            "Hero run: lost node s12",
            "Node s12 lost connectivity and the gang failed.",
            labels=["hero-run"],
        )
        repo.add_comment(number, "Iris restarted the job from the last checkpoint.")
        repo.add_issue("Unrelated docs fix", "typo")

        env = environment(tmp_path, github, wandb_server)

        code, out, err = await cli(tmp_path, env, "poll", "--once")
        assert code == 0, out + err

        code, out, err = await cli(tmp_path, env, "status", "--json")
        assert code == 0, err
        status = json.loads(out)
        assert status["progress"]["step"] == 334
        assert status["progress"]["tokens"] == pytest.approx(4_000_000.0 * 335)
        assert status["progress"]["percent"] == pytest.approx(33.4)
        assert status["state"] == "running"  # the crashed run was superseded by the fork
        # The restart as the W&B source recorded it: hero-1's last step (299, at 6 h - 299 x 48 s
        # ago) to the fork's first (250, 1 h 30 min ago): 30 min 48 s down, steps 250..299 twice.
        restart = status["last_restart"]
        assert status["last_restart_at"] == restart["at"]
        assert (restart["kind"], restart["from_step"], restart["to_step"]) == ("new-run", 299, 250)
        assert restart["runs"] == ["ent/proj/hero-1", "ent/proj/hero-2"]
        assert restart["down_seconds"] == 6 * 3600 - 299 * 48 - 90 * 60
        assert restart["recomputed_steps"] == 50
        assert restart["cause"] == "W&B run hero-1 crashed"
        assert restart["description"] == (
            "resumed in a new W&B run at step 250 after 30 min down; 50 steps recomputed"
        )
        code, out, err = await cli(tmp_path, env, "status")
        assert code == 0, err
        card = " ".join(out.split())  # the terminal wraps long fields
        assert "Last restart:" in card  # the card's field, with the same record's figures
        assert "at step 250 after 30 min down; 50 steps recomputed" in card
        assert status["freshness"]["wandb"] is not None
        assert status["freshness"]["github"] is not None

        # The fake GitHub keeps its own clock (September 2026): look back far enough.
        code, out, err = await cli(tmp_path, env, "timeline", "--json", "--days", "365")
        assert code == 0, err
        entries = json.loads(out)
        refs = {e["ref"] for e in entries if e["source"] == "github"}
        assert refs == {f"#{number}"}  # the unlabelled issue is not tracked
        assert any(e["source"] == "wandb" for e in entries)
        assert any(e["incident"] for e in entries if e["source"] == "github")

        mark = len(github.log)
        code, out, err = await cli(tmp_path, env, "poll", "--once")
        assert code == 0, out + err
        idle = github.log[mark:]
        assert len(idle) == 2 and all(r.status == 304 for r in idle)


async def test_one_failing_source_does_not_fail_the_cycle(
    tmp_path: Path, wandb_server: FakeWandb
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    wandb_server.reset()
    run = wandb_server.add_run("ent/proj/hero-1", created_at=now - timedelta(hours=1))
    wandb_server.log(run.path, 20, start=now - timedelta(minutes=30), every=timedelta(minutes=1))
    async with FakeGitHub() as github:  # no repository "lab/model" here: GitHub answers 404
        env = environment(tmp_path, github, wandb_server)
        code, out, err = await cli(tmp_path, env, "poll", "--once")
        assert code == 0, out + err
        assert "lab/model" in out + err  # one clear line naming the repository
        code, out, err = await cli(tmp_path, env, "status", "--json")
        status = json.loads(out)
        assert status["progress"]["step"] == 19
        assert status["freshness"]["wandb"] is not None
        assert status["freshness"]["github"] is None

        # Nothing reachable at all: that cycle did fail.
        env["WANDB_BASE_URL"] = "http://127.0.0.1:9"  # discard port: connection refused
        env["RUNSCRIBE_DB"] = str(tmp_path / "other.db")
        code, out, err = await cli(tmp_path, env, "poll", "--once")
        assert code == 1, out + err


async def test_missing_run_and_repository_are_shown_failing(
    tmp_path: Path, wandb_server: FakeWandb
) -> None:
    """The runs file names a W&B run and a repository that do not exist (both fakes answer not
    found): `status --json` says so per source, `status` says "failing" with the error, and the
    next `poll --once` names both sources it skipped and when it will try them again."""
    wandb_server.reset()  # no run "ent/proj/hero-1"
    async with FakeGitHub() as github:  # no repository "lab/model"
        env = environment(tmp_path, github, wandb_server)
        code, out, err = await cli(tmp_path, env, "poll", "--once")
        assert code == 2, out + err  # no source could be polled, each for its configuration

        code, out, err = await cli(tmp_path, env, "status", "--json")
        assert code == 0, err
        sources = json.loads(out)["sources"]
        assert sources["discord"] is None  # the run watches no channel
        for name, needle in (("wandb", "ent/proj/hero-1 not found"), ("github", "lab/model")):
            assert sources[name]["ok"] is False, sources
            assert needle in sources[name]["error"]
            assert sources[name]["failing_since"] is not None
            assert sources[name]["last_success_at"] is None

        code, out, err = await cli(tmp_path, env, "status")
        assert code == 0, err
        assert "W&B failing since" in out and "GitHub failing since" in out
        assert "not found" in out and "Discord" not in out

        code, out, err = await cli(tmp_path, env, "poll", "--once")
        assert code == 2, out + err
        lines = (out + err).splitlines()
        assert not [line for line in lines if " skipped " in line], out + err
        at_once = [line for line in lines if "trying at once" in line]
        assert len(at_once) == 2, out + err
        assert any("wandb:hero" in line for line in at_once)
        assert any("github:lab/model" in line for line in at_once)
        assert sum("not found" in line and " failed: " in line for line in lines) == 2, out + err


async def test_refused_credentials_are_a_configuration_error(
    tmp_path: Path, wandb_server: FakeWandb
) -> None:
    """A bad GitHub token and a wrong W&B key: `poll --once` exits 2 (fix the configuration)
    naming both, as any configuration error does, not 1 (an outage: try again later)."""
    wandb_server.reset()
    async with FakeGitHub(token="the-right-token") as github:
        env = environment(tmp_path, github, wandb_server)
        env.update(GITHUB_TOKEN="a-revoked-token", WANDB_API_KEY="wrong-key-" + "y" * 30)
        code, out, err = await cli(tmp_path, env, "poll", "--once")
    assert code == 2, out + err
    assert "GITHUB_TOKEN" in out + err and "WANDB_API_KEY" in out + err, out + err
    assert "runscribe: no source could be polled: fix the configuration" in err
    assert "a-revoked-token" not in out + err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_poll_stops_cleanly_on_sigterm_and_sigint(
    tmp_path: Path, wandb_server: FakeWandb, sig: signal.Signals
) -> None:
    """The long-running `poll` handles its own stop: started as a background job does (SIGINT
    inherited as ignored), it polls, then exits 0 on SIGTERM (`docker stop`) or SIGINT with its
    store closed, so `status` reads what it stored."""
    now = datetime.now(UTC).replace(microsecond=0)
    wandb_server.reset()
    run = wandb_server.add_run("ent/proj/hero-1", created_at=now - timedelta(hours=1))
    wandb_server.log(run.path, 40, start=now - timedelta(hours=1), every=timedelta(seconds=60))
    wandb_server.set_state(run.path, "running", heartbeat_at=now)
    async with FakeGitHub() as github:
        github.repo("lab/model")
        env = environment(tmp_path, github, wandb_server)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "poll", cwd=tmp_path, env=env,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        said: list[str] = []
        try:
            assert process.stdout is not None
            while not any("wandb:hero:" in line for line in said):  # a W&B round is stored
                line = (await asyncio.wait_for(process.stdout.readline(), PATIENCE)).decode()
                assert line, "poll exited early:\n" + "".join(said)
                said.append(line)
            assert any(line.startswith("polling every ") for line in said)
            process.send_signal(sig)
            rest = await asyncio.wait_for(process.stdout.read(), PATIENCE)
            await asyncio.wait_for(process.wait(), PATIENCE)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        output = "".join(said) + rest.decode()
        assert process.returncode == 0, output
        assert "stopping: the poll loops are cancelled" in output
        assert "Traceback" not in output
        code, out, err = await cli(tmp_path, env, "status", "--json")
        assert code == 0, err
        assert json.loads(out)["progress"]["step"] == 39
