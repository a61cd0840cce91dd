"""`/admin reload` rebuilds the sources from the new runs file: a repository, a label or a run
added to it is polled from the next cycle on, without a restart. The runtime is the real one
(`bot.process.wiring.open_runtime`) against the fake GitHub and the fake Discord."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.config.settings import load_runs_file
from bot.process.wiring import open_runtime
from bot.store import Store
from tests.bot.conftest import StartBot, fake_settings
from tests.fakes.discord import FakeDiscord
from tests.fakes.github import FakeGitHub
from tests.waiting import PATIENCE

MANAGE_GUILD = 0x20

BEFORE = """
[[runs]]
slug = "hero"
name = "Hero 70B"
github_repo = "lab/model"
github_labels = ["hero-run"]
"""
AFTER = """
[[runs]]
slug = "hero"
name = "Hero 70B"
github_repo = "lab/model"
github_labels = ["hero-run", "ablation"]

[[runs]]
slug = "side"
name = "Side run"
github_repo = "lab/data"
github_labels = ["side-run"]
"""


async def titles(store: Store, slug: str) -> set[str]:
    events = await store.events.timeline(slug, limit=50)
    return {e.title for e in events if e.kind == "issue"}


async def test_reload_polls_new_repositories_and_labels(
    start_bot: StartBot, fake: FakeDiscord, db_file: Path
) -> None:
    async with FakeGitHub() as gh:
        model = gh.repo("lab/model")
        model.add_issue("Loss spike at step 1,200", labels=["hero-run"])
        model.add_issue("Ablation: no weight decay on the gate", labels=["ablation"])
        gh.repo("lab/data").add_issue("Shard 17 is corrupt", labels=["side-run"])
        config = db_file.parent / "runscribe.toml"
        config.write_text(BEFORE)
        settings = fake_settings(fake, db_file).model_copy(update={"github_api_url": gh.url})
        async with open_runtime(settings, load_runs_file(config)) as runtime:
            bot = await start_bot(runtime=runtime)
            await bot.poll_once()
            store = bot.runtime.store
            assert await titles(store, "hero") == {"Loss spike at step 1,200"}
            assert [s.key for s in bot.runtime.sources] == ["github:lab/model"]

            config.write_text(AFTER)
            record = await fake.slash("admin", subcommand="reload", permissions=MANAGE_GUILD)
            body = await asyncio.wait_for(record.callback, PATIENCE)
            assert "Runs file reloaded: hero, side." in body["data"]["content"]
            assert sorted(s.key for s in bot.runtime.sources) == [
                "github:lab/data",
                "github:lab/model",
            ]

            await bot.poll_once()
            assert await titles(store, "hero") == {
                "Loss spike at step 1,200",
                "Ablation: no weight decay on the gate",
            }
            assert await titles(store, "side") == {"Shard 17 is corrupt"}
            assert [r.slug for r in await store.runs.all() if r.slug in ("hero", "side")] == [
                "hero",
                "side",
            ]
