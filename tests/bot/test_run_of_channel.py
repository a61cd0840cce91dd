"""The run a person means (issue 41): a command without `run` in a channel that belongs to one
run answers for that run, in a thread of it too; elsewhere the runs file's `default_run`; only
then the private pick list. Driven through the real CommandTree against the fake Discord."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.config.runsfile import ConfigError, RunsFile, parse_runs
from bot.process.runtime import record_runs
from bot.services.runs import channel_run, pick_run
from bot.store import Store
from tests.bot.conftest import StartBot
from tests.fakes.discord import FakeDiscord, Interaction
from tests.waiting import PATIENCE

LADDER_CHANNEL = 910_000_000_000_000_077
ELSEWHERE = 910_000_000_000_000_099
THREAD = 910_000_000_000_000_123


def two_runs(runs: RunsFile, **top: Any) -> RunsFile:
    aurora = runs.runs[0].model_dump(mode="json")
    ladder = {
        "slug": "ladder",
        "name": "Scaling ladder",
        "github_repo": "lab/ladder",
        "github_issues": [1],
        "watch_channels": [LADDER_CHANNEL],
    }
    return parse_runs({"runs": [aurora, ladder], **top})


async def content(fake: FakeDiscord, record: Interaction) -> tuple[str, bool]:
    """The answer's text (initial or, when deferred, its followup) and whether it was private."""
    body = await asyncio.wait_for(record.callback, PATIENCE)
    data = body.get("data", {})
    if body["type"] == 5:
        await fake.wait_for(lambda: record.followups, within=PATIENCE)
        data = record.followups[0]
    return str(data.get("content") or data.get("embeds")), bool(data.get("flags", 0) & 64)


async def test_a_command_answers_for_the_run_its_channel_belongs_to(
    start_bot: StartBot, fake: FakeDiscord, runs: RunsFile, seeded_store: Store
) -> None:
    both = two_runs(runs)
    await record_runs(seeded_store, both)  # as `runscribe run` does at start
    aurora_channel = both.runs[0].alerts_channel
    assert aurora_channel is not None
    fake.add_channel(LADDER_CHANNEL, "ladder")
    fake.add_channel(ELSEWHERE, "random")
    fake.add_thread(THREAD, LADDER_CHANNEL, "a thread")
    await start_bot(runs_file=both)

    text, private = await content(fake, await fake.slash("timeline", channel_id=aurora_channel))
    assert not private and "Several runs" not in text
    text, private = await content(fake, await fake.slash("status", channel_id=LADDER_CHANNEL))
    assert not private and "Scaling ladder" in text, text
    text, private = await content(fake, await fake.slash("status", channel_id=THREAD))
    assert not private and "Scaling ladder" in text, text
    text, private = await content(fake, await fake.slash("status", channel_id=ELSEWHERE))
    assert private and "Several runs" in text and "default_run" in text


async def test_default_run_decides_outside_the_runs_channels(
    start_bot: StartBot, fake: FakeDiscord, runs: RunsFile, seeded_store: Store
) -> None:
    fake.add_channel(ELSEWHERE, "random")
    both = two_runs(runs, default_run="ladder")
    await record_runs(seeded_store, both)
    await start_bot(runs_file=both)
    text, private = await content(fake, await fake.slash("status", channel_id=ELSEWHERE))
    assert not private and "Scaling ladder" in text, text


def test_a_channel_two_runs_share_decides_nothing(runs: RunsFile) -> None:
    both = two_runs(runs)
    shared = both.runs[0].model_copy(update={"watch_channels": [LADDER_CHANNEL]})
    configs = [shared, both.runs[1]]
    assert channel_run(configs, LADDER_CHANNEL) is None
    assert channel_run(configs, None, LADDER_CHANNEL) is None
    assert channel_run(both.runs, ELSEWHERE, LADDER_CHANNEL) == "ladder"  # a thread's parent
    words = {"none": "none", "several": "pick {slugs}"}
    assert pick_run(["aurora", "ladder"], None, channel=None, default="ladder", **words) == "ladder"
    assert pick_run(["aurora", "ladder"], None, channel="aurora", default="ladder", **words) == (
        "aurora"
    )
    assert pick_run(["aurora", "ladder"], "LADDER", channel="aurora", **words) == "ladder"


def test_default_run_must_name_a_run(runs: RunsFile) -> None:
    with pytest.raises(ConfigError, match=r"default_run: 'hero' is not a run's slug"):
        two_runs(runs, default_run="hero")


async def test_autocomplete_lists_the_channels_run_first(
    start_bot: StartBot, fake: FakeDiscord, runs: RunsFile
) -> None:
    fake.add_channel(LADDER_CHANNEL, "ladder")
    await start_bot(runs_file=two_runs(runs))
    data = {"name": "status", "type": 1, "options": [
        {"name": "run", "type": 3, "value": "", "focused": True}
    ]}  # fmt: skip
    record = await fake._interaction(4, data, 800_000_000_000_000_001, "alice", 0, LADDER_CHANNEL)
    body = await asyncio.wait_for(record.callback, PATIENCE)
    assert [choice["value"] for choice in body["data"]["choices"]] == ["ladder", "aurora"]
