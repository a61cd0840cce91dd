"""The thread context really flows through the live path: a few corpus threads served by the fake
GitHub, polled by `runscribe poll --once` (the real GitHub source, no LLM key), then read back
with `runscribe timeline --json` (both commands run in-process, to keep the test fast).

Every entry the timeline shows must say what the corpus bench says for the same entry (which
builds the event the way the source does), and the entries that only come out right with their
thread's context (a "still stuck" follow-up in an incident's thread, an OOM inside an ablation,
a stranger's advertisement) must come out right here too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot import cli
from bot.config.settings import Settings
from tests.enrich.signal_corpus import enrich, load
from tests.fakes.github import FakeGitHub

REPO = "lab/model"
THREADS = (
    "[incident] Hero hung at step 41,200: NCCL allreduce timeout",
    "small-scale ablation: z-loss coefficient at 300M (1e-4 vs 1e-5 vs off)",
    "[infra] Upgrade cuBLAS to 12.4.5 to fix GEMM scheduling corruption",
    "Cheap H100 / H200 rental for your training run",
    "Training hangs after step 95k, all ranks idle in all_gather",
    "Long-context eval OOMs on prompts over 64k",
)


async def run_cli(settings: Settings, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """One command, as `main` would run it, in this process; returns what it printed."""
    capsys.readouterr()
    code = await cli._COMMANDS[argv[0]](settings, cli._parser().parse_args(argv))
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return out


def serve(github: FakeGitHub, entries: list[dict[str, Any]]) -> tuple[list[int], dict[str, str]]:
    """Add the corpus threads to the fake repository; returns the thread numbers and, per
    corpus id, the URL GitHub gives that entry."""
    repo = github.repo(REPO)
    numbers: list[int] = []
    urls: dict[str, str] = {}
    for title in THREADS:
        posts = [e for e in entries if e["source"] == "github" and e["thread_title"] == title]
        opening = next(e for e in posts if e["kind"] in ("issue", "pull"))
        number = repo.add_issue(
            opening["title"],
            opening["body"],
            user=opening["author"],
            labels=opening["thread_labels"],
            pull=opening["kind"] == "pull",
            association=opening["author_association"],
        )
        numbers.append(number)
        kind = "pull" if opening["kind"] == "pull" else "issues"
        urls[opening["id"]] = f"https://github.com/{REPO}/{kind}/{number}"
        for post in posts:
            if post is opening:
                continue
            github.advance(minutes=5)
            if post["kind"] == "review":
                review = repo.add_review(
                    number,
                    post["body"],
                    user=post["author"],
                    association=post["author_association"],
                )
                urls[post["id"]] = (
                    f"https://github.com/{REPO}/pull/{number}#pullrequestreview-{review}"
                )
            else:
                comment = repo.add_comment(
                    number,
                    post["body"],
                    user=post["author"],
                    association=post["author_association"],
                )
                urls[post["id"]] = (
                    f"https://github.com/{REPO}/{kind}/{number}#issuecomment-{comment}"
                )
    return numbers, urls


async def test_corpus_threads_through_the_live_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries = [e for e in load() if e["source"] == "github" and e["thread_title"] in THREADS]
    assert len({e["thread_title"] for e in entries}) == len(THREADS)
    async with FakeGitHub() as github:
        numbers, urls = serve(github, entries)
        (tmp_path / "runscribe.toml").write_text(
            f'[[runs]]\nslug = "hero"\nname = "Hero"\ngithub_repo = "{REPO}"\n'
            f"github_issues = {numbers}\n"
        )
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            github_api_url=github.url,
            github_token=None,
            anthropic_api_key=None,
            runscribe_db=tmp_path / "hero.db",
            runscribe_config=tmp_path / "runscribe.toml",
        )
        await run_cli(settings, capsys, "poll", "--once")
        out = await run_cli(settings, capsys, "timeline", "--json", "--days", "3650")

    shown = {row["url"]: row for row in json.loads(out) if row["source"] == "github"}
    by_id = {e["id"]: e for e in entries}
    for ident, url in urls.items():
        expected = enrich(by_id[ident])  # what the bench says, from the same entry
        row = shown.get(url)
        if not expected.newsworthy:
            assert row is None, ident
            continue
        assert row is not None, ident
        # no tag when the rules are not sure ("other"), and the rules said so
        tag = None if expected.tag == "other" else expected.tag
        assert (row["tag"], row["incident"]) == (tag, expected.incident), ident
        assert row["tag_by"] == "rules", ident
        assert row["summary"] and row["summary"] != "(no text)", ident

    def live(ident: str) -> dict[str, Any] | None:
        return shown.get(urls[ident])

    # Only right with the thread's context: "Still stuck right now." in the hang's own thread…
    stuck = live("c015")
    assert stuck is not None and stuck["incident"] and stuck["tag"] == "incident"
    # …an OOM inside an ablation is a result, not an outage…
    oom = live("c026")
    assert oom is not None and not oom["incident"] and oom["tag"] in ("ablation", None)
    # …and a stranger's advertisement stays out, while the member closing it is shown.
    assert live("c088") is None and live("c089") is None
    assert live("c090") is not None
    # A comment that is only a bot footer has nothing to say and is not shown.
    assert live("c033") is None
    # An issue titled by its symptom, no incident label: its report and "same on the third
    # attempt" are 🚨; an eval that runs out of memory is not the run's incident.
    for ident in ("c281", "c282"):
        row = live(ident)
        assert row is not None and row["incident"] and row["tag"] == "incident", ident
    eval_oom = live("c286")
    assert eval_oom is not None and not eval_oom["incident"]
