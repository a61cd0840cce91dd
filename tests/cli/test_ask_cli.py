"""`runscribe ask` as a user runs it: the fixed `--json` shape, plain text, one-line errors with
exit 2, and (in a real process) an LLM answer from the fake Anthropic whose pings and invented
links never reach the output."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import pytest

from bot import cli
from bot.store import Database, Store
from tests.ask import corpus
from tests.fakes.anthropic import FakeAnthropic, text
from tests.waiting import PATIENCE

QUESTION = "What caused the hang at step 41,200?"


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ask") / "corpus.db"

    async def build() -> None:
        async with Database.open(path) as db:
            await corpus.load(Store(db))

    asyncio.run(build())
    return path


def use_database(path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI in-process over `path`, with no stray .env or Runscribe settings around it."""
    monkeypatch.chdir(workdir)
    for name in list(os.environ):
        if name.startswith(("RUNSCRIBE_", "DISCORD_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RUNSCRIBE_DB", str(path))
    return path


@pytest.fixture
def env(corpus_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_database(corpus_db, tmp_path, monkeypatch)


def test_json_has_the_fixed_shape(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ask", "--json", "--limit", "5", QUESTION]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"question", "run", "answer", "by", "citations"}
    assert data["question"] == QUESTION and data["run"] == "hero" and data["by"] == "search"
    citations = data["citations"]
    assert 1 <= len(citations) <= 5
    for n, citation in enumerate(citations, 1):
        assert set(citation) == {"n", "at", "author", "source", "ref", "url", "summary"}
        assert citation["n"] == n and citation["url"].startswith("https://")
    assert {int(n) for n in re.findall(r"\[(\d+)\]", data["answer"])} <= set(range(1, 6))
    wanted = {e["url"] for e in corpus.entries() if e["id"] in {"c020", "c017", "c014"}}
    assert wanted & {c["url"] for c in citations[:3]}


def test_text_lists_sources_with_links(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ask", "--run", "hero", "has", "the", "NVLink", "fault", "come", "back?"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Q: has the NVLink fault come back?")
    assert "Closest matches:" in out and "https://" in out and "[1] " in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", ""], "Ask a question"),
        (["ask", "x" * 2001], "2,000"),
        (["ask", "?!", "(*)", "AND", "-"], "nothing to search for"),
        (["ask", "--run", "nope", "why is the loss flat"], "unknown run 'nope'"),
        (["ask", "--limit", "0", "why is the loss flat"], "--limit"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    env: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and captured.err.count("\n") == 1


async def test_llm_answer_in_a_real_process(env: Path) -> None:
    async with FakeAnthropic() as fake:
        fake.handler = lambda request: text("@everyone The NCCL watchdog fired on every rank [1].")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "ask",
            "--json",
            QUESTION,
            env={**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": fake.base_url},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode == 0, err.decode()
    data = json.loads(out)
    assert data["by"] == "llm", data
    assert "@everyone" not in data["answer"] and "[1]" in data["answer"]
    assert len(data["citations"]) == 1
    assert fake.message_requests[0].body["model"] == "claude-haiku-4-5"
