"""The daily digest through the bot: the real W&B source against the fake W&B server, the fake
Discord, the scheduler's own tick and `/admin post-digest`. A digest due at start waits until
every source the run uses has finished a round; one digest per run and day, a second one asked
for by a person says it is an update, and the schedule does not repeat it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.app import RunscribeBot
from bot.config.settings import RunsFile, parse_runs
from bot.core.timeutil import utcnow
from bot.process.pipeline import THREADS, WANDB
from bot.process.runtime import Runtime, record_runs
from bot.sources.wandb import WandbSource
from bot.sources.wandb_client import WandbClient
from bot.store import Store
from tests.bot.conftest import Seed, StartBot, fake_settings
from tests.fakes.discord import FakeDiscord
from tests.fakes.wandb import FakeWandb
from tests.sources.test_wandb import client, server, wandb_env

__all__ = ["client", "server", "wandb_env"]  # the W&B fixtures, shared

PATH = "ent/proj/hero-1"
MANAGE_GUILD = 0x20
HERO = [{"name": "run", "type": 3, "value": "hero"}]  # the store also holds the sample run


def hero_runs(seed: Seed, digest_time: str) -> RunsFile:
    return parse_runs(
        {
            "runs": [
                {
                    "slug": "hero",
                    "name": "Hero 70B",
                    "wandb_runs": [PATH],
                    "total_steps": 100_000,
                    "digest_channel": int(seed.config["digest_channel"]),
                    "digest_time": digest_time,
                    "timezone": "UTC",
                }
            ]
        }
    )


async def hero_bot(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    client: WandbClient,
    db: Any,
    *,
    digest_time: str,
) -> RunscribeBot:
    runs = hero_runs(seed, digest_time)
    await record_runs(seeded_store, runs)
    source = WandbSource(seeded_store, runs.runs[0], client)
    runtime = Runtime(
        settings=fake_settings(fake, db), runs=runs, store=seeded_store, sources=(source,)
    )
    # no loops: the test drives each round and each scheduler tick itself
    return await start_bot(runtime=runtime, run_loops=False)


def trained(server: FakeWandb) -> None:
    """33 h of training: 2,000 steps, one a minute, up to a minute ago."""
    server.reset()
    now = utcnow()
    server.add_run(PATH, display_name="hero-1", created_at=now - timedelta(hours=34))
    server.log(PATH, 2000, start=now - timedelta(minutes=2000), every=timedelta(minutes=1))
    server.set_state(PATH, "running", heartbeat_at=now)


async def test_a_digest_due_at_start_waits_for_the_first_wandb_round(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    server: FakeWandb,
    client: WandbClient,
    db_file: Any,
) -> None:
    trained(server)
    due = (utcnow() - timedelta(minutes=1)).strftime("%H:%M")
    bot = await hero_bot(start_bot, fake, seeded_store, seed, client, db_file, digest_time=due)
    channel = int(seed.config["digest_channel"])

    assert not bot.rounds.heard_since_start(bot.runs[0])
    assert await bot.schedule_digests() == []  # due, but W&B has not been heard from yet
    assert await seeded_store.outbox.get_by_key(f"digest:hero:{utcnow().date()}") is None

    await bot.poll_family(WANDB)
    await bot.poll_family(THREADS)
    assert not bot.rounds.heard_since_start(bot.runs[0])  # enrichment has not run after it
    await bot.enrich_once()
    assert bot.rounds.heard_since_start(bot.runs[0])
    [(slug, _day, item)] = await bot.schedule_digests()
    assert slug == "hero" and item is not None
    await bot.drain_outbox()
    [posted] = await fake.wait_for(lambda: fake.posted(channel))
    embed = posted["embeds"][0]
    assert embed["title"] == "Daily digest — Hero 70B"
    text = embed["description"]
    assert "stalled" not in text and "nothing happened" not in text
    # 1,440 of the 2,000 steps fall in the last 24 hours
    assert "Hero 70B is running at step 1,999 of 100,000" in text
    assert "steps further than 24 hours ago" in text


async def test_one_digest_a_day_unless_a_person_asks_again(
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    seed: Seed,
    server: FakeWandb,
    client: WandbClient,
    db_file: Any,
) -> None:
    trained(server)
    # scheduled later today: a person asks first, then the schedule comes
    later = utcnow() + timedelta(hours=2)
    if later.date() != utcnow().date():  # near midnight: schedule it a minute ago instead
        later = utcnow() - timedelta(minutes=1)
    bot = await hero_bot(
        start_bot, fake, seeded_store, seed, client, db_file, digest_time=later.strftime("%H:%M")
    )
    channel = int(seed.config["digest_channel"])
    await bot.poll_family(WANDB)
    await bot.poll_family(THREADS)
    await bot.enrich_once()

    first = await fake.slash("admin", HERO, subcommand="post-digest", permissions=MANAGE_GUILD)
    await fake.wait_for(lambda: first.followups)
    [one] = await fake.wait_for(lambda: fake.posted(channel))
    assert one["embeds"][0]["title"] == "Daily digest — Hero 70B"  # the day's first

    second = await fake.slash("admin", HERO, subcommand="post-digest", permissions=MANAGE_GUILD)
    await fake.wait_for(lambda: second.followups)
    one, two = await fake.wait_for(lambda: len(fake.posted(channel)) == 2 and fake.posted(channel))
    assert two["embeds"][0]["title"] == "Daily digest (update) — Hero 70B"
    assert two["embeds"][0]["description"].startswith("An update to today's digest")

    # the scheduled time comes (the bot's clock moved on): today already had its digest
    bot.clock = lambda: later + timedelta(minutes=1)  # type: ignore[method-assign]
    assert await bot.schedule_digests() == []
    await bot.drain_outbox()
    assert len(fake.posted(channel)) == 2
