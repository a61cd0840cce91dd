"""End to end against the fake Discord gateway and REST server: the bot logs in, syncs, answers,
posts through the outbox under 429 storms and 5xx, resumes a dropped websocket, watches
channels, never pings anyone, and (as a real `python -m bot run` process) survives a kill -9
between sending and marking without posting twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp

from bot.config.settings import RunsFile
from bot.core.timeutil import utcnow
from bot.models import Event, OutboxItem
from bot.outbox.payload import make_payload, payload_from_card
from bot.render.cards import Card
from bot.store import Database, Store
from tests.bot.conftest import Seed, StartBot, digest_due_now
from tests.fakes.discord import FakeDiscord, Recorded, snowflake
from tests.waiting import PATIENCE, port_in_log, until

MESSAGE_CONTENT = 1 << 15
HOSTILE = "@everyone @here <@&1> <@123456789012345678> [totally safe](https://evil.example/x)"


def channels(seed: Seed) -> tuple[int, int, int]:
    config = seed.config
    return int(config["alerts_channel"]), int(config["digest_channel"]), config["watch_channels"][1]


async def alert(store: Store, channel: int, key: str, text: str, **kw: Any) -> int:
    payload = kw.pop("payload", None) or make_payload(text)
    item = OutboxItem(channel_id=channel, kind="alert", payload=payload, dedup_key=key, **kw)
    item_id = await store.outbox.enqueue(item)
    assert item_id is not None
    return item_id


async def eventually(check: Callable[[], Awaitable[bool]], within: float = PATIENCE) -> None:
    """Wait for a positive signal the bot gives on its own schedule (a store write)."""
    await until(check, "the bot's store write", within=within)


def visible(message: dict[str, Any]) -> str:
    return str(message["content"]).split("\u2063")[0]


async def test_login_identify_and_guild_sync(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store
) -> None:
    started = utcnow()
    await start_bot()
    paths = [(r.method, r.path) for r in fake.requests]
    assert ("GET", "/users/@me") in paths
    assert ("GET", "/oauth2/applications/@me") in paths
    puts = [p for m, p in paths if m == "PUT"]
    assert puts == [f"/applications/{fake.app_id}/guilds/{fake.guild_id}/commands"]  # never global
    names = {c["name"] for c in fake.commands[fake.guild_id]}
    assert {"admin", "digest", "incidents", "status", "timeline"} <= names
    [identify] = fake.identifies
    assert identify["intents"] & MESSAGE_CONTENT

    async def recorded_at_ready() -> bool:
        health = await seeded_store.health.get("discord", "aurora")
        return health is not None and (health.last_success_at or started) > started

    await eventually(recorded_at_ready)  # on_ready records it; the seed's value is older


async def test_digest_and_alert_thread_delivered_through_outbox(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    alerts, digest_channel, _ = channels(seed)
    head = await alert(
        seeded_store,
        alerts,
        "incident:1:fired",
        "",
        payload=payload_from_card(
            Card(title="Aurora crashed at step 117,000", color="bad"),
            thread_name="Incident: Aurora crashed",
            buttons=[{"custom_id": "runscribe:incident-ack:1", "label": "Acknowledge"}],
        ),
    )
    await alert(seeded_store, alerts, "incident:1:comment", "New comment on #1507", reply_to=head)
    await alert(
        seeded_store,
        alerts,
        "incident:1:head",
        "",
        payload=payload_from_card(
            Card(title="Aurora crashed — resolved", color="ok"), edit_of=head
        ),
    )
    await alert(seeded_store, alerts, "incident:1:resolved", "Resumed from step 117,000.")
    started = utcnow()
    bot = await start_bot(runs_file=digest_due_now(runs, started))

    [digest] = await fake.wait_for(lambda: fake.posted(digest_channel))
    assert digest["embeds"][0]["title"] == "Daily digest — Aurora 310B-A17B MoE"
    # The digest was scheduled at the local wall time of one minute before `started`, so it is
    # that instant's local date (whatever side of midnight the test runs on).
    scheduled = started - timedelta(minutes=1)
    day = scheduled.astimezone(runs.runs[0].zone).date().isoformat()
    queued = await seeded_store.outbox.get_by_key(f"digest:aurora:{day}")
    assert queued is not None

    await fake.wait_for(
        lambda: len(fake.posted(alerts)) == 2 and fake.posted(int(fake.posted(alerts)[0]["id"]))
    )
    head_message, resolved = fake.posted(alerts)
    assert visible(resolved) == "Resumed from step 117,000."
    [in_thread] = fake.posted(int(head_message["id"]))
    assert visible(in_thread) == "New comment on #1507"
    [row] = head_message["components"]
    assert row["components"][0]["custom_id"] == "runscribe:incident-ack:1"
    await fake.wait_for(lambda: head_message["edited_timestamp"])
    assert head_message["embeds"][0]["title"] == "Aurora crashed — resolved"
    assert head_message["components"] == [row]  # an edit without "buttons" keeps them
    for _ in range(3):  # more drains and scheduler ticks (the loops' own bodies): nothing twice
        await bot.schedule_digests()
        await bot.drain_outbox()
    assert len(fake.posted(digest_channel)) == 1 and len(fake.posted(alerts)) == 2


async def test_thread_forbidden_falls_back_to_channel(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts, _, _ = channels(seed)
    fake.no_threads.add(alerts)
    head = await alert(
        seeded_store, alerts, "h", "", payload=make_payload("Node lost", thread_name="Node lost")
    )
    await alert(seeded_store, alerts, "r", "Update: node replaced", reply_to=head)
    await start_bot()
    await fake.wait_for(lambda: len(fake.posted(alerts)) == 2)
    assert [visible(m) for m in fake.posted(alerts)] == ["Node lost", "Update: node replaced"]


async def test_429_storm_and_5xx_deliver_everything_once_in_order(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts, _, _ = channels(seed)
    path = rf"^/channels/{alerts}/messages$"
    fake.inject("POST", path, 429, count=12, retry_after=0.02)  # beyond discord.py's 5 tries
    fake.inject("POST", path, 503, count=3)
    for n in range(8):
        await alert(seeded_store, alerts, f"storm:{n}", f"alert {n}")
    bot = await start_bot()
    await fake.wait_for(lambda: len(fake.posted(alerts)) >= 8, within=PATIENCE)

    async def all_marked_sent() -> bool:
        return await seeded_store.outbox.pending_count() == 0

    await eventually(all_marked_sent)
    await bot.drain_outbox()  # one more drain finds nothing left to send
    assert [visible(m) for m in fake.posted(alerts)] == [f"alert {n}" for n in range(8)]
    statuses = [
        r.status
        for r in fake.requests
        if r.method == "POST" and r.path.endswith(f"{alerts}/messages")
    ]
    assert statuses.count(429) == 12 and statuses.count(503) == 3
    assert await seeded_store.outbox.pending_count() == 0


async def test_dropped_websocket_resumes_and_replays(
    start_bot: StartBot, fake: FakeDiscord
) -> None:
    await start_bot()
    await fake.drop_websocket()
    record = await fake.slash("status")  # dispatched while disconnected: replayed on RESUME
    body = await asyncio.wait_for(record.callback, PATIENCE)
    assert body["type"] in (4, 5)
    assert len(fake.identifies) == 1  # no new session
    [resume] = fake.resumes
    assert resume["session_id"] == fake.session_id


async def stored_message(
    store: Store, message: dict[str, Any], until: Callable[[Event], bool] = lambda e: True
) -> Event | None:
    """The stored event for a dispatched message, once it satisfies `until` (the bot
    handles gateway events on its own schedule), or None when it never does."""
    deadline = asyncio.get_running_loop().time() + PATIENCE
    while True:
        event = await store.events.get_by_external("aurora", "discord", f"msg:{message['id']}")
        if event is not None and until(event):
            return event
        if asyncio.get_running_loop().time() > deadline:
            return event
        await asyncio.sleep(0.02)


async def test_threads_under_a_watched_channel_are_watched(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts, _, watched = channels(seed)
    await start_bot()
    thread_id, other_thread = snowflake(), snowflake()
    for tid, parent in ((thread_id, watched), (other_thread, alerts)):
        await fake.dispatch(
            "THREAD_CREATE",
            {
                "id": str(tid),
                "guild_id": str(fake.guild_id),
                "parent_id": str(parent),
                "owner_id": "42",
                "name": "ecc-fault",
                "type": 11,
                "message_count": 0,
                "member_count": 1,
                "rate_limit_per_user": 0,
                "thread_metadata": {
                    "archived": False,
                    "auto_archive_duration": 1440,
                    "archive_timestamp": utcnow().isoformat(),
                    "locked": False,
                },
            },
        )
    inside = fake.message(
        thread_id, "r04n2 fell off the bus again", author_id=42, author_name="dana"
    )
    elsewhere = fake.message(other_thread, "not watched", author_id=42, author_name="dana")
    # The unwatched message goes first: once the watched one is stored, it has been handled.
    for message in (elsewhere, inside):
        await fake.dispatch("MESSAGE_CREATE", message)

    event = await stored_message(seeded_store, inside)
    assert event is not None and event.thread == f"discord:{thread_id}"
    assert event.ref == "#infra-oncall › ecc-fault"
    assert (
        await seeded_store.events.get_by_external("aurora", "discord", f"msg:{elsewhere['id']}")
        is None
    )
    await fake.dispatch(
        "MESSAGE_DELETE",
        {"id": inside["id"], "channel_id": str(thread_id), "guild_id": str(fake.guild_id)},
    )
    event = await stored_message(seeded_store, inside, lambda e: e.deleted)
    assert event is not None and event.deleted


async def test_channel_watch_create_edit_delete_and_ignore(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts, _, watched = channels(seed)
    await start_bot()
    human = fake.message(
        watched, "NCCL timeout on node 17 " + "x" * 5000, author_id=42, author_name="dana"
    )
    bot_post = fake.message(
        watched, "I am another bot", author_id=43, author_name="ci-bot", bot=True
    )
    unwatched = fake.message(alerts, "not for the store", author_id=42, author_name="dana")
    # The two to ignore go first: once the human's message is stored, they have been handled.
    for message in (bot_post, unwatched, human):
        await fake.dispatch("MESSAGE_CREATE", message)

    async def stored(message: dict[str, Any]) -> Event | None:
        return await seeded_store.events.get_by_external(
            "aurora", "discord", f"msg:{message['id']}"
        )

    event = await until(lambda: stored(human), "the member's message stored")
    assert event is not None
    assert (
        event.author == "dana"
        and event.ref == "#infra-oncall"
        and event.thread == f"discord:{watched}"
    )
    assert event.url == f"https://discord.com/channels/{fake.guild_id}/{watched}/{human['id']}"
    assert len(event.body) == 4000
    assert await stored(bot_post) is None and await stored(unwatched) is None

    edited = dict(
        human,
        content="NCCL timeout on node 17, fixed by reboot",
        edited_timestamp=utcnow().isoformat(),
    )
    await fake.dispatch("MESSAGE_UPDATE", edited)
    await fake.dispatch(
        "MESSAGE_DELETE",
        {"id": human["id"], "channel_id": str(watched), "guild_id": str(fake.guild_id)},
    )

    async def deleted() -> Event | None:
        event = await stored(human)
        return event if event is not None and event.deleted else None

    event = await until(deleted, "the deletion stored")
    assert (
        event is not None
        and event.deleted
        and event.body == "NCCL timeout on node 17, fixed by reboot"
    )
    assert event.updated_at is not None


async def test_hostile_text_never_pings(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed, runs: RunsFile
) -> None:
    alerts, digest_channel, _ = channels(seed)
    now = utcnow()
    hostile = Event(
        run_slug="aurora",
        source="github",
        external_id="comment:hostile",
        kind="comment",
        at=now - timedelta(minutes=5),
        author="@everyone",
        ref="#1507",
        url="https://github.com/aurora-lab/aurora/issues/1507",
        title=HOSTILE,
        body=HOSTILE + " " + "A" * 4000,
        summary=HOSTILE,
        tag="incident",
    )
    await seeded_store.events.upsert_many([hostile])
    await alert(seeded_store, alerts, "hostile", HOSTILE + " " + "B" * 4000)
    await start_bot(runs_file=digest_due_now(runs, now))
    timeline = await fake.slash("timeline", [{"name": "days", "type": 4, "value": 1}])
    status = await fake.slash("status")
    await asyncio.wait_for(timeline.callback, PATIENCE)
    await asyncio.wait_for(status.callback, PATIENCE)
    await fake.wait_for(lambda: fake.posted(digest_channel) and len(fake.posted(alerts)) >= 3)
    await fake.wait_for(lambda: status.followups or status.original)

    requests = fake.message_requests()
    assert len(requests) >= 6
    for request in requests:
        body = _message_body(request)
        if body is None:
            continue  # a bare defer carries no message
        assert body.get("allowed_mentions") == {"parse": []}, (request.path, body)
        text = json.dumps(body, ensure_ascii=False)
        for ping in ("@everyone", "@here", "<@&1>", "<@123456789012345678>"):
            assert ping not in text, (request.path, ping)
    assert all(len(m["content"]) <= 2000 for m in fake.posted(alerts))


def _message_body(request: Recorded) -> dict[str, Any] | None:
    body = request.json or {}
    if "/callback" in request.path:
        return body.get("data") if body.get("type") in (4, 7) else None
    return body


# --- a real process: python -m bot run ----------------------------------------------------------


def _toml(config: dict[str, Any]) -> str:
    lines = ["[[runs]]"]
    tables = {}
    for key, value in config.items():
        if value is None:
            continue
        if isinstance(value, dict):
            tables[key] = value
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    for key, table in tables.items():
        lines.append(f"[runs.{key}]")
        lines.extend(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in table.items())
    return "\n".join(lines) + "\n"


async def _spawn(env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    handle = log.open("ab")
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "run",
        env=env,
        stdout=handle,
        stderr=handle,
        cwd=str(Path.cwd()),
    )


async def test_process_answers_and_survives_kill_9_between_send_and_mark(
    fake: FakeDiscord, db_file: Path, seed: Seed, tmp_path: Path
) -> None:
    alerts, _, _ = channels(seed)
    config = {k: v for k, v in seed.config.items() if k not in ("wandb_runs", "wandb_run_pattern")}
    runs_path = tmp_path / "runscribe.toml"
    runs_path.write_text(_toml(config))
    env = {
        **os.environ,
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "DISCORD_GUILD_ID": str(fake.guild_id),
        "RUNSCRIBE_DB": str(db_file),
        "RUNSCRIBE_CONFIG": str(runs_path),
        "GITHUB_API_URL": "http://127.0.0.1:9",  # nothing listens: the poll fails fast, offline
        "RUNSCRIBE_POLL_INTERVAL": "3600",
    }
    for name in ("GITHUB_TOKEN", "WANDB_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    fake.honor_nonce = False  # rely on the history marker alone
    # The first post is created, then the answer never comes: the process dies before marking.
    fake.inject("POST", rf"^/channels/{alerts}/messages$", 0, hang=30, record_first=True)
    async with Database.open(db_file) as db:
        item_id = await alert(Store(db), alerts, "kill9", "Loss is NaN at step 117,600")
    log = tmp_path / "bot.log"
    process = await _spawn(env, log)
    try:
        await fake.wait_for(lambda: fake.commands.get(fake.guild_id), within=PATIENCE)
        await fake.wait_connected(within=PATIENCE)
        record = await fake.slash("status")
        body = await asyncio.wait_for(record.callback, PATIENCE)
        assert body["type"] in (4, 5)  # answered, or deferred before any slow work
        await fake.wait_for(lambda: record.followups or record.original, within=PATIENCE)
        message = record.followups[0] if record.followups else record.original
        assert message is not None and "of 953,674" in message["embeds"][0]["description"]
        await fake.wait_for(lambda: fake.posted(alerts), within=PATIENCE)
        process.send_signal(signal.SIGKILL)
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    async with Database.open(db_file) as db:
        item = await Store(db).outbox.get(item_id)
        assert item is not None and item.status == "queued"  # sent, never marked

    # This time the bot also serves the status page (RUNSCRIBE_WEB_PORT).
    env["RUNSCRIBE_WEB_PORT"] = "0"  # the system picks a free port; the process logs it
    process = await _spawn(env, log)
    try:
        port = await port_in_log(log, process)

        async def sent() -> OutboxItem | None:
            async with Database.open(db_file) as db:
                item = await Store(db).outbox.get(item_id)
            return item if item is not None and item.status == "sent" else None

        item = await until(sent, "the queued post sent", every=0.05)
        assert item is not None and item.status == "sent", log.read_text()[-3000:]
        health = await _healthz_after_a_cycle(port)
        # The poll loop ran (GitHub points at a closed port): the failing source makes it a 503.
        assert health["status"] == "failing", health
        assert f"{seed.config['slug']}: github failing" in health["problems"]
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/runs/{seed.config['slug']}") as response,
        ):
            assert response.status == 200 and "of 953,674" in await response.text()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), PATIENCE)
        except TimeoutError:
            process.kill()
            await process.wait()
    posted = fake.posted(alerts)
    assert [visible(m) for m in posted] == ["Loss is NaN at step 117,600"]  # exactly once
    assert item.message_id == posted[0]["id"]
    assert "DISCORD_TOKEN" not in log.read_text() and fake.token not in log.read_text()


async def _healthz_after_a_cycle(port: int) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        deadline = asyncio.get_running_loop().time() + PATIENCE
        while asyncio.get_running_loop().time() < deadline:
            try:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                    body = dict(await response.json())
                    if body["last_cycle_at"] is not None:
                        assert response.status == (200 if body["status"] == "ok" else 503)
                        return body
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError("no poll cycle was reported on /healthz")


def test_snowflakes_increase() -> None:
    assert snowflake() < snowflake()
