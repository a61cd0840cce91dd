"""The cogs driven through discord.py's real CommandTree with real Interaction objects: the bot
runs in-process against the fake Discord, which dispatches INTERACTION_CREATE payloads and
records the responses."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from datetime import timedelta
from typing import Any

import discord
import pytest

from bot.core.errors import UserFacingError
from bot.models import MetricPoint
from bot.render.cards import Card
from bot.render.chart import REDRAW_EVERY, ChartCache
from tests.bot.conftest import Seed, StartBot
from tests.fakes.discord import FakeDiscord, Interaction
from tests.waiting import PATIENCE

OWNER = 900_000_000_000_000_003
MANAGE_GUILD = 0x20


async def answered(record: Interaction, within: float = PATIENCE) -> dict[str, Any]:
    return await asyncio.wait_for(record.callback, within)


async def final_message(fake: FakeDiscord, record: Interaction) -> dict[str, Any]:
    body = await answered(record)
    if body["type"] == 5:  # deferred: the answer is a followup
        await fake.wait_for(lambda: record.followups, within=PATIENCE)
        return record.followups[0]
    assert record.original is not None
    return record.original


def option(name: str, value: Any, type_: int = 3) -> dict[str, Any]:
    return {"name": name, "type": type_, "value": value}


async def test_status_answers_fast_with_progress_and_chart(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    record = await fake.slash("status")
    # Discord's 3 s are kept by design, not by luck: the chart is not cached yet, so the command
    # defers before drawing it. (How fast a cached answer is belongs in bench/bench_bot.py.)
    assert (await answered(record))["type"] == 5
    message = await final_message(fake, record)
    [embed] = message["embeds"]
    assert "Aurora 310B-A17B MoE" in embed["title"]
    assert "step **" in embed["description"] and "of 953,674" in embed["description"]
    assert "%" in embed["description"]
    names = [f["name"] for f in embed["fields"]]
    assert {"Schedule", "Open incidents", "Sources"} <= set(names)
    schedule = next(f["value"] for f in embed["fields"] if f["name"] == "Schedule")
    assert ":D>" in schedule  # Discord timestamps, local to each reader
    assert ":R>" not in schedule  # a projected end is a date, never a countdown
    assert "projected end" in schedule and "over the last 24 h" in schedule
    assert embed["image"]["url"] == "attachment://chart.png"
    assert [name for name, _ in record.files] == ["chart.png"]
    assert record.files[0][1].startswith(b"\x89PNG")


async def test_status_serves_cached_chart_without_deferring(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    first = await fake.slash("status", [option("run", "aurora")])
    assert (await answered(first))["type"] == 5  # chart drawn: deferred once
    await fake.wait_for(lambda: first.followups)
    second = await fake.slash("status", [option("run", "aurora")])
    body = await answered(second)
    assert body["type"] == 4  # cached: answered directly, nothing drawn


async def test_start_draws_each_runs_chart_so_the_first_status_does_not_wait(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    bot = await start_bot(warm_charts=True, chart_process=True)
    # after the first W&B round, the chart of the sample run (it has W&B runs) is drawn once
    version = await bot.reader.metrics.version("aurora")
    await fake.wait_for(
        lambda: bot.charting.cache.ready("aurora", version) is not None, within=PATIENCE
    )
    record = await fake.slash("status", [option("run", "aurora")])
    # answered with the chart drawn at start (deferred only if a loop's round was running)
    message = await final_message(fake, record)
    assert message["embeds"][0]["image"]["url"] == "attachment://chart.png"
    assert [name for name, _ in record.files] == ["chart.png"]
    assert record.files[0][1].startswith(b"\x89PNG")
    assert bot.charting.cache.draws == 1 and bot.charting.drawer.started == 1


async def _one_more_point(bot: Any, slug: str) -> str:
    """A W&B row newer than the stored ones, as the W&B source would add it; the new version."""
    latest = await bot.reader.metrics.latest(slug)
    assert latest is not None
    await bot.store.metrics.add_points(
        slug,
        [
            MetricPoint(
                wandb_run=latest.wandb_run,
                step=latest.step + 10,
                at=latest.at + timedelta(minutes=1),
                tokens=latest.tokens,
                loss=latest.loss,
            )
        ],
    )
    return str(await bot.reader.metrics.version(slug))


async def test_status_on_newer_data_attaches_the_last_chart_and_redraws_it_in_the_background(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    bot = await start_bot()
    bot.charting.cache = ChartCache(min_interval=0.0)  # every new version is worth a redraw
    first = await fake.slash("status", [option("run", "aurora")])
    assert (await answered(first))["type"] == 5  # the run's first chart: deferred, then drawn
    await fake.wait_for(lambda: first.followups)
    old_png = first.files[0][1]
    version = await _one_more_point(bot, "aurora")
    assert bot.charting.cache.ready("aurora", version) is None  # the chart is out of date

    # the next draw is held until the answer is in: an answer that waited for it never comes
    gate = asyncio.Event()
    draw = bot.charting.draw

    async def held(slug: str) -> bytes | None:
        await gate.wait()
        return await draw(slug)

    bot.charting.draw = held  # type: ignore[method-assign]
    second = await fake.slash("status", [option("run", "aurora")])
    message = await final_message(fake, second)
    assert message["embeds"][0]["image"]["url"] == "attachment://chart.png"
    assert [name for name, _ in second.files] == ["chart.png"]
    assert second.files[0][1] == old_png  # the newest finished chart...
    assert bot.charting.cache.version_of("aurora") != version
    gate.set()  # ...while this version is drawn behind the answer, for the next one
    await fake.wait_for(lambda: bot.charting.cache.version_of("aurora") == version, within=PATIENCE)
    assert bot.charting.cache.draws == 2


async def test_a_wandb_round_with_new_points_redraws_the_chart_without_any_command(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    bot = await start_bot(warm_charts=True)
    version = await bot.reader.metrics.version("aurora")
    await fake.wait_for(lambda: bot.charting.cache.version_of("aurora") == version, within=PATIENCE)
    bot.charting.cache = ChartCache(min_interval=0.0)
    newer = await _one_more_point(bot, "aurora")
    await bot.poll_family("wandb")  # the round's end schedules the redraw
    await fake.wait_for(lambda: bot.charting.cache.version_of("aurora") == newer, within=PATIENCE)
    # and the chart process stays up between redraws: it outlives two poll intervals, and the
    # longest gap between two redraws (the cache's minute plus the round that comes after it)
    assert bot.charting.drawer.idle >= 2 * bot.intervals.poll
    assert bot.charting.drawer.idle > REDRAW_EVERY + bot.intervals.poll
    record = await fake.slash("status", [option("run", "aurora")])
    await final_message(fake, record)
    assert [name for name, _ in record.files] == ["chart.png"]
    assert bot.charting.cache.draws == 1  # the answer drew nothing


async def test_unknown_run_gets_a_private_hint(start_bot: StartBot, fake: FakeDiscord) -> None:
    await start_bot()
    record = await fake.slash("status", [option("run", "nope")])
    body = await answered(record)
    assert body["type"] == 4
    assert body["data"]["flags"] & 64  # ephemeral
    assert "unknown run 'nope'" in body["data"]["content"]
    assert "aurora" in body["data"]["content"]


async def test_timeline_pages_only_for_the_invoker(start_bot: StartBot, fake: FakeDiscord) -> None:
    await start_bot()
    record = await fake.slash("timeline", [option("days", 60, 4)])
    message = await final_message(fake, record)
    [embed] = message["embeds"]
    assert embed["footer"]["text"].startswith("page 1 of ")
    pages = int(embed["footer"]["text"].split(" of ")[1])
    assert pages >= 2
    buttons = [c for row in message["components"] for c in row["components"]]
    newer, older = buttons
    assert newer["disabled"] is True and older.get("disabled", False) is False

    stranger = await fake.click(message, older["custom_id"], user_id=800_000_000_000_000_999)
    body = await answered(stranger)
    assert body["type"] == 4 and body["data"]["flags"] & 64  # a private "not yours"

    click = await fake.click(message, older["custom_id"])
    body = await answered(click)
    assert body["type"] == 7  # the message is updated in place
    page2 = body["data"]["embeds"][0]
    assert page2["footer"]["text"].startswith("page 2 of ")
    for page in (embed, page2):
        assert len(page["fields"]) <= 25
        assert all(len(f["value"]) <= 1024 for f in page["fields"])
        size = len(page["title"]) + sum(len(f["name"]) + len(f["value"]) for f in page["fields"])
        assert size + len(page["footer"]["text"]) <= 6000


async def test_opening_more_pagers_than_kept_retires_the_oldest(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    bot = await start_bot()
    cog = bot.get_cog("Timeline")
    assert cog is not None
    cog.live_pagers = 2  # type: ignore[attr-defined]
    records = []
    for _ in range(3):
        record = await fake.slash("timeline", [option("days", 60, 4)])
        message = await final_message(fake, record)
        assert message["components"], "a timeline of several pages has buttons"
        records.append(record)
    # The oldest lost its buttons and its pages; the two newest still page.
    oldest = records[0]
    await fake.wait_for(lambda: oldest.original is not None and not oldest.original["components"])
    pagers = list(cog._pagers)  # type: ignore[attr-defined]
    assert len(pagers) == 2 and all(not p.is_finished() and p.count >= 2 for p in pagers)
    for record in records[1:]:
        message = record.original if record.original is not None else record.followups[0]
        assert message["components"]


async def _every_page(fake: FakeDiscord, record: Interaction) -> list[str]:
    """Presses ◀ Newer back to the first page, then Older ▶ to the last: every page's text.
    (The recorded message is the first answer; presses are answered in place, so which page
    the pager is on is read from each press's answer.)"""
    message = await final_message(fake, record)

    async def press(which: int) -> str:
        nonlocal message
        button = [c for row in message["components"] for c in row["components"]][which]
        body = await answered(await fake.click(message, button["custom_id"]))
        assert body["type"] == 7
        message = {**message, **body["data"]}
        return str(message["embeds"][0]["footer"]["text"])

    while not (await press(0)).startswith("page 1 of "):
        pass
    texts = [json.dumps(message["embeds"][0])]
    last = message["embeds"][0]["footer"]["text"].split(" of ")[1]
    while not (await press(1)).startswith(f"page {last} of "):
        texts.append(json.dumps(message["embeds"][0]))
    texts.append(json.dumps(message["embeds"][0]))
    return texts


async def test_a_timeline_pager_reads_its_pages_from_the_store_on_each_press(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    """A pager keeps its question, not its pages (memory that grew with the run's history):
    a press shows what the store holds now within the window asked for. An entry backfilled
    into that window shows up; one dated after the question waits for the next /timeline."""
    from bot.models import Event

    bot = await start_bot()
    record = await fake.slash("timeline", [option("days", 60, 4)])
    first = await _every_page(fake, record)
    assert len(first) >= 2 and len(set(first)) == len(first)
    cog = bot.get_cog("Timeline")
    assert cog is not None
    [pager] = cog._pagers  # type: ignore[attr-defined]
    held = [v for v in vars(pager).values() if isinstance(v, list | tuple)]
    assert not any(isinstance(item, Card) for value in held for item in value)  # one page only

    now = bot.clock()
    late = Event(
        run_slug="aurora", source="github", external_id="issue:990001", kind="issue",
        at=now - timedelta(days=2), author="erin", ref="#990001",
        title="Xyzzy backfilled into the window", body="Xyzzy backfilled into the window",
    )  # fmt: skip
    after = Event(
        run_slug="aurora", source="github", external_id="issue:990002", kind="issue",
        at=now + timedelta(minutes=5), author="erin", ref="#990002",
        title="Plugh arrived after the question", body="Plugh arrived after the question",
    )  # fmt: skip
    await bot.runtime.store.events.upsert_many([late, after])
    again = await _every_page(fake, record)
    assert not any("Xyzzy" in page for page in first)
    assert any("Xyzzy" in page for page in again), "a press reads the store again"
    assert not any("Plugh" in page for page in again), "the window ends where it was asked"
    fresh = await _every_page(fake, await fake.slash("timeline", [option("days", 60, 4)]))
    assert any("Plugh" in page for page in fresh)


async def test_timeline_filters_and_rejects_bad_ones(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    record = await fake.slash("timeline", [option("days", 60, 4), option("source", "discord")])
    message = await final_message(fake, record)
    fields = message["embeds"][0]["fields"]
    assert fields and all("#" in f["value"] for f in fields)
    bad = await fake.slash("timeline", [option("tag", "nonsense")])
    body = await answered(bad)
    assert body["data"]["flags"] & 64 and "unknown tag" in body["data"]["content"]


async def test_digest_defers_then_answers(start_bot: StartBot, fake: FakeDiscord) -> None:
    calls: list[str] = []
    deferred = asyncio.Event()

    async def composer(facts: Any) -> str:
        calls.append(facts.run_slug)
        await deferred.wait()  # composing until the test has seen the deferral
        return "Composed for the test."

    await start_bot(digest_composer=composer)
    record = await fake.slash("digest")
    assert (await answered(record))["type"] == 5
    deferred.set()
    await fake.wait_for(lambda: record.followups)
    [embed] = record.followups[0]["embeds"]
    assert embed["title"].startswith("Daily digest")
    said = embed["description"].removeprefix("Composed for the test.")
    assert said == "" or said.startswith("\n\nGoodput since launch ")  # code's own sentence
    assert calls == ["aurora"]


async def test_admin_needs_manage_server_and_sync_needs_owner(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    denied = await fake.slash("admin", subcommand="reload")
    body = await answered(denied)
    assert body["data"]["flags"] & 64 and "Manage Server" in body["data"]["content"]

    not_owner = await fake.slash("admin", subcommand="sync", permissions=MANAGE_GUILD)
    body = await answered(not_owner)
    assert "owner" in body["data"]["content"]

    syncs = len([r for r in fake.requests if r.method == "PUT"])
    owner = await fake.slash("admin", subcommand="sync", permissions=MANAGE_GUILD, user_id=OWNER)
    await fake.wait_for(lambda: owner.followups)
    assert "commands (guild)" in owner.followups[0]["content"]
    assert len([r for r in fake.requests if r.method == "PUT"]) == syncs + 1


async def test_admin_post_digest_goes_through_the_outbox(
    start_bot: StartBot, fake: FakeDiscord, seed: Seed
) -> None:
    await start_bot()
    channel = int(seed.config["digest_channel"])
    record = await fake.slash("admin", subcommand="post-digest", permissions=MANAGE_GUILD)
    await fake.wait_for(lambda: record.followups)
    reply = record.followups[0]["content"]
    assert reply == f"Digest on its way to <#{channel}>."  # no "outbox item 15"
    [posted] = await fake.wait_for(lambda: fake.posted(channel))
    assert posted["embeds"][0]["title"].startswith("Daily digest")


async def test_unexpected_error_is_logged_and_apologised(
    start_bot: StartBot,
    fake: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("database on fire")

    await start_bot()
    # load_extension executes a fresh module object: patch the one the bot loaded
    monkeypatch.setattr(sys.modules["cogs.status"], "status_with_narrative", broken)
    with caplog.at_level(logging.ERROR, logger="bot.app"):
        record = await fake.slash("status", [option("run", "aurora")], user_name="bob")
        # deferred first (the chart must be drawn): the apology is the followup
        message = await final_message(fake, record)
    assert message["flags"] & 64
    assert message["content"].startswith("Sorry")
    [entry] = [r for r in caplog.records if r.name == "bot.app"]
    text = entry.getMessage()
    assert "/status" in text and "bob" in text and "'run': 'aurora'" in text
    assert entry.exc_info is not None and "database on fire" in str(entry.exc_info[1])


async def test_autocomplete_lists_runs(start_bot: StartBot, fake: FakeDiscord) -> None:
    bot = await start_bot()
    command = bot.tree.get_command("status", guild=discord.Object(fake.guild_id))
    assert command is not None
    payload = fake_interaction_payload(
        fake, "status", [{"name": "run", "type": 3, "value": "aur", "focused": True}]
    )
    payload["type"] = 4  # APPLICATION_COMMAND_AUTOCOMPLETE
    record = await fake._interaction(4, payload["data"], 800_000_000_000_000_001, "alice", 0, None)
    body = await answered(record)
    assert body["type"] == 8
    assert body["data"]["choices"] == [{"name": "aurora — Aurora 310B-A17B MoE", "value": "aurora"}]


def fake_interaction_payload(
    fake: FakeDiscord, name: str, options: list[dict[str, Any]]
) -> dict[str, Any]:
    command = next(c for cmds in fake.commands.values() for c in cmds if c["name"] == name)
    return {
        "type": 2,
        "data": {
            "id": command["id"],
            "name": name,
            "type": 1,
            "options": options,
            "guild_id": command["guild_id"],
        },
    }


async def test_tree_call_with_an_interaction_built_from_a_payload(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    """The discord.py test-suite way: build discord.Interaction from a payload and hand it to
    CommandTree._call directly (no gateway), with the real HTTP state pointed at the fake."""
    bot = await start_bot()
    command = next(c for cmds in fake.commands.values() for c in cmds if c["name"] == "timeline")
    data = {
        "id": "1234567890123456789",
        "application_id": str(fake.app_id),
        "type": 2,
        "token": "direct-token",
        "version": 1,
        "attachment_size_limit": 1024,
        "guild_id": str(fake.guild_id),
        "channel_id": next(iter(fake.channels)),
        "member": fake.member(800_000_000_000_000_001, "carol"),
        "data": {
            "id": command["id"],
            "name": "timeline",
            "type": 1,
            "guild_id": str(fake.guild_id),
            "options": [{"name": "days", "type": 4, "value": 1}],
        },
    }
    loop = asyncio.get_running_loop()
    record = Interaction(
        1234567890123456789, "direct-token", data, loop.create_future(), time.monotonic()
    )
    fake.interactions[record.id] = record
    interaction: discord.Interaction = discord.Interaction(data=data, state=bot._connection)  # type: ignore[arg-type]
    await bot.tree._call(interaction)
    body = await answered(record)
    assert body["type"] == 4
    assert body["data"]["embeds"][0]["title"].startswith("Timeline")
    assert body["data"]["allowed_mentions"] == {"parse": []}


def test_user_facing_error_is_plain_python() -> None:
    assert not issubclass(UserFacingError, discord.DiscordException)
