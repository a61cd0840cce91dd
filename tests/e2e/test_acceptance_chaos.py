"""Chaos acceptance, replayed the way the chaos check runs it: the whole bot against the
fake Discord (and, where a crash or a report is needed, a real Runtime polling the fake W&B and
GitHub), the real command tree, the real CLI as a process; assertions on what Discord received.

- A crash between send and mark, then 150 newer messages in the channel and chatter in the
  watched channels while the bot is down: after the restart, no duplicate, and the chatter is in
  `/timeline`.
- No post anywhere (alert head, thread, digest, /status, /incidents, /ask, /timeline) and not
  the status page has a live link to a URL the sources did not contain, although a member's
  display name and bodies are hostile masked links.
- A member without `responder_role` (and without Manage Server) cannot silence or unsilence,
  and gets a short private reply.
- 60 × 429: every post once, in order.
- After a 5xx outage ends, the queued alert is due within 30 s (the poster's capped wait plus one
  outbox tick, on an injected clock).
- Every bad database path (not SQLite, a directory, under a file, unreadable, in a folder that
  cannot be searched): one line, exit 2, from a real process.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app import LoopIntervals
from bot.core.timeutil import utcnow
from bot.models import OutboxItem
from bot.outbox.payload import make_payload
from bot.store import Store
from tests.bot.conftest import Seed, StartBot
from tests.bot.test_cogs import option
from tests.e2e.deployment import (
    FIRST,
    MIN,
    ONCALL,
    REPO,
    WATCHED,
    SimClock,
    deployed,
    healthy_run,
    make_runs,
    make_settings,
    now_utc,
)
from tests.e2e.test_acceptance_alerts import answer, body_text, cli, message_body, stored
from tests.fakes.discord import FakeDiscord, Interaction
from tests.fakes.github import FakeGitHub
from tests.fakes.wandb import FakeWandb
from tests.waiting import PATIENCE, until

MARKER = "\u2063"


def visible(message: dict[str, Any]) -> str:
    return str(message["content"]).split(MARKER)[0]


async def queue(store: Store, channel: int, key: str, text: str) -> int:
    item = OutboxItem(channel_id=channel, kind="alert", payload=make_payload(text), dedup_key=key)
    item_id = await store.outbox.enqueue(item)
    assert item_id is not None
    return item_id


async def until_sent(store: Store, *item_ids: int, within: float = PATIENCE) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        items = [await store.outbox.get(i) for i in item_ids]
        if all(item is not None and item.status == "sent" for item in items):
            return
        assert asyncio.get_running_loop().time() < deadline, [i and i.status for i in items]
        await asyncio.sleep(0.02)


# --- a crash between send and mark, a busy channel, chatter while down --------------------------


async def test_crash_between_send_and_mark_then_150_newer_messages_and_chatter_while_down(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts = int(seed.config["alerts_channel"])
    general, oncall = (int(c) for c in seed.config["watch_channels"])
    fake.honor_nonce = False  # the history check alone must find the post
    text = "Loss is NaN at step 117,600 (acceptance)"
    item_id = await queue(seeded_store, alerts, "acceptance-crash", text)
    # Discord creates the message, but its answer never reaches the bot: the process dies.
    fake.inject("POST", rf"^/channels/{alerts}/messages$", 0, hang=60, record_first=True)
    bot = await start_bot()
    await fake.wait_for(
        lambda: any(text in str(m["content"]) for m in fake.posted(alerts)), within=PATIENCE
    )
    await bot.close()
    item = await seeded_store.outbox.get(item_id)
    assert item is not None and item.status == "queued"  # sent, never marked
    assert item.anchor_id is not None  # the bot recorded where the channel was before sending

    # While it is down: 150 messages in the alerts channel, people talk in the watched ones
    # (the gateway delivers none of it: the next session starts fresh).
    for n in range(150):
        await fake.say(alerts, f"busy {n}", author_id=43, author_name="ada")
    away = [
        await fake.say(general, "eval sweep done: HellaSwag 71.3"),
        await fake.say(oncall, "r09 back in the pool after the PSU swap"),
    ]

    bot = await start_bot()
    await until_sent(seeded_store, item_id)
    assert sum(text in str(m["content"]) for m in fake.posted(alerts)) == 1  # no duplicate
    await stored_events(seeded_store, away)
    timeline = await answer(
        fake, "timeline", option("days", 1, 4), option("source", "discord"), channel_id=general
    )
    shown = json.dumps(timeline["embeds"], ensure_ascii=False)
    assert "HellaSwag 71.3" in shown and "PSU swap" in shown, shown


async def stored_events(store: Store, messages: list[dict[str, Any]]) -> None:
    async def all_stored() -> bool:
        found = [
            await store.events.get_by_external("aurora", "discord", f"msg:{m['id']}")
            for m in messages
        ]
        return all(found)

    await until(all_stored, "messages sent while the bot was down stored")


# --- 60 × 429 -----------------------------------------------------------------------------------


async def test_sixty_429s_deliver_every_post_once_in_order(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    alerts = int(seed.config["alerts_channel"])
    ids = [await queue(seeded_store, alerts, f"storm:{n}", f"storm alert {n}") for n in range(40)]
    fake.inject("POST", rf"^/channels/{alerts}/messages$", 429, count=60, retry_after=0.01)
    await start_bot()
    await until_sent(seeded_store, *ids, within=PATIENCE)
    assert [visible(m) for m in fake.posted(alerts)] == [f"storm alert {n}" for n in range(40)]
    path = f"/channels/{alerts}/messages"
    posts = [r for r in fake.requests if r.method == "POST" and r.path == path]
    assert sum(r.status == 429 for r in posts) == 60
    assert sum(r.status == 200 for r in posts) == 40  # no post sent twice


# --- after a 5xx outage, the queued alert is due within 30 s ------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


async def test_after_a_5xx_outage_the_oldest_alert_is_due_within_30_s(
    start_bot: StartBot, fake: FakeDiscord, seeded_store: Store, seed: Seed
) -> None:
    """The outage may end just after a failed try: the alert then waits the poster's capped
    delay, plus at most one tick of the outbox loop before a drain sees it due. Together under
    30 s, on the bot's own clock; then the oldest alert goes first."""
    alerts = int(seed.config["alerts_channel"])
    fake.inject("POST", rf"^/channels/{alerts}/messages$", 503, count=10)
    clock = Clock()
    oldest = await queue(seeded_store, alerts, "outage:1", "Node r12n4 lost during the outage")
    newer = await queue(seeded_store, alerts, "outage:2", "Throughput down 40 %")
    tick = LoopIntervals().outbox  # how often the bot's outbox loop drains
    bot = await start_bot(clock=clock, outbox_backoff=2.0, run_loops=False)
    for _ in range(20):  # the outbox loop, one drain at a time on the bot's clock
        report: Any = await bot.drain_outbox()
        if report.sent:
            break
        item = await seeded_store.outbox.get(oldest)
        assert item is not None and item.not_before is not None, item
        wait = (item.not_before - clock.now).total_seconds()
        # Worst case: the outage ended the moment this try failed.
        assert wait + tick <= 30.0, f"due {wait:.0f} s + one {tick:.0f} s tick after the outage"
        clock.now = item.not_before  # the next drain at which it is due
    await until_sent(seeded_store, oldest, newer)
    assert [visible(m) for m in fake.posted(alerts)] == [
        "Node r12n4 lost during the outage",
        "Throughput down 40 %",
    ]


# --- no forged links anywhere, and silences only by responders ----------------------------------

EVIL_NAME = "[Official status](https://evil.example/status)"
EVIL_BODY = (
    "node r12n4 lost, ECC errors on GPU 3; updates at [Official status](https://evil.example/status)"
    " and <https://evil.example/x>. Requeueing onto a spare."
)
EVIL_TITLE = "Hero run: node lost, see [the fix](https://evil.example/fix)"
RESPONDERS = 1_300_000_000_000_000_088
MEMBER = {"user_id": 800_000_000_000_000_010, "user_name": "mallory"}
RESPONDER = {"user_id": 800_000_000_000_000_011, "user_name": "rita", "roles": [RESPONDERS]}
# A masked link is `[label](url)` whose `[` and `](` are not escaped; an autolink is `<url>`.
_LIVE_MASKED = re.compile(r"(?<!\\)\[[^\]\n]*(?<!\\)\]\(\s*<?(https?://[^\s)>]+)")
_LIVE_AUTOLINK = re.compile(r"(?<!\\)<(https?://[^\s>]+)>")
_HREF = re.compile(r"""href\s*=\s*["']?([^"'\s>]+)""", re.I)


def live_links(body: dict[str, Any]) -> set[str]:
    """Every URL a Discord client would open from this message: masked links and autolinks in
    its text, embed and author URLs, link buttons."""
    text = body_text(body)
    found = {m.group(1) for m in _LIVE_MASKED.finditer(text)}
    found |= {m.group(1) for m in _LIVE_AUTOLINK.finditer(text)}
    for embed in body.get("embeds") or []:
        found |= {u for u in (embed.get("url"), (embed.get("author") or {}).get("url")) if u}
    for row in body.get("components") or []:
        found |= {c["url"] for c in row.get("components", []) if c.get("url")}
    return found


def from_the_sources(url: str, wandb: FakeWandb) -> bool:
    """A URL the sources gave: Discord jump links, GitHub pages, W&B runs (the fake's own)."""
    return url.startswith(
        (
            "https://discord.com/channels/",
            "https://github.com/",
            wandb.base_url,
            "https://wandb.ai/",
        )
    )


async def private_reply(record: Interaction) -> str:
    body = await asyncio.wait_for(record.callback, PATIENCE)
    assert body["type"] == 4 and body["data"]["flags"] & 64, body  # only the member sees it
    return str(body["data"]["content"])


async def test_hostile_names_and_bodies_never_become_links_and_only_responders_silence(
    tmp_path: Path, wb: FakeWandb, watched_discord: FakeDiscord
) -> None:
    fake = watched_discord
    fake.add_role(RESPONDERS, "responders")
    t0 = now_utc() - timedelta(minutes=40)
    healthy_run(wb, t0)
    clock = SimClock(t0)
    async with FakeGitHub() as github:
        github.advance(seconds=(t0 - github.now).total_seconds())
        repo = github.repo(REPO)
        settings = make_settings(tmp_path, fake, wb, github)
        runs = make_runs(
            watch_channels=[WATCHED],
            alert_role=ONCALL,
            responder_role=RESPONDERS,
            github_repo=REPO,
            github_labels=["hero-run"],
        )
        async with deployed(settings, runs, clock, fake) as d:
            wb.set_state(FIRST, "crashed", heartbeat_at=t0 + MIN)
            github.advance(minutes=5)
            await d.cycle(t0 + 5 * MIN)
            # The hostile member reports in the watched channel and chats; a GitHub thread with
            # a masked link in its title and body; all while the incident is open.
            said = [
                await fake.say(WATCHED, EVIL_BODY, author_id=66, author_name=EVIL_NAME),
                await fake.say(
                    WATCHED, "thanks [here](https://evil.example/x)", author_id=66,
                    author_name=EVIL_NAME,
                ),
            ]  # fmt: skip
            for message in said:
                await stored(d, message)
            repo.add_issue(EVIL_TITLE, EVIL_BODY, user="mallory", labels=["hero-run"])
            t1 = max(now_utc() + timedelta(seconds=1), d.clock.now)
            github.advance(seconds=(t1 - github.now).total_seconds())
            await d.cycle(t1)
            [head] = d.channel()
            assert d.thread(head), "no thread update for the report"
            assert "Official status" in "\n".join(body_text(m) for m in [*d.thread(head), head])

            # Every command that shows people's text.
            answers = [
                await answer(fake, "status", option("run", "hero")),
                await answer(fake, "incidents", option("scope", "all"), subcommand="list"),
                await answer(fake, "timeline", option("days", 1, 4)),
                await answer(fake, "ask", option("question", "what happened to node r12n4?")),
                await answer(fake, "digest", option("run", "hero")),
            ]
            shown = "\n".join(body_text(a) for a in answers)
            assert "Official status" in shown  # the name is shown, as text
            assert "r12n4" in shown

            # Silences: a member without the responder role (nor Manage Server) is refused.
            refused = await private_reply(
                await fake.slash(
                    "incidents",
                    [option("condition", "all"), option("duration", "14d"),
                     option("reason", "noise")],
                    subcommand="silence", **MEMBER,
                )
            )  # fmt: skip
            assert "\n" not in refused.strip() and len(refused) <= 200, refused
            assert not await d.store.incidents.silences("hero")
            made = await private_reply(
                await fake.slash(
                    "incidents",
                    [option("condition", "stall"), option("duration", "2h"),
                     option("reason", "maintenance")],
                    subcommand="silence", **RESPONDER,
                )
            )  # fmt: skip
            [silence] = await d.store.incidents.silences("hero")
            assert made.startswith("Silence #") and silence.id is not None
            refused = await private_reply(
                await fake.slash(
                    "incidents", [option("silence_id", silence.id, 4)], subcommand="unsilence",
                    **MEMBER,
                )
            )  # fmt: skip
            assert "\n" not in refused.strip() and len(refused) <= 200, refused
            assert [s.id for s in await d.store.incidents.active_silences("hero", d.clock.now)] == [
                silence.id
            ]

            # The status page, from the same database.
            code, _, err = await cli(settings, tmp_path, "page", "--out", str(tmp_path / "site"))
            assert code == 0, err
            html = "\n".join(p.read_text() for p in (tmp_path / "site").glob("*.html"))
            assert "r12n4" in html

        # Nothing Discord received links anywhere the sources did not.
        bodies = [b for b in (message_body(r) for r in fake.message_requests()) if b]
        assert len(bodies) >= 8
        for body in bodies:
            for url in live_links(body):
                assert "evil.example" not in url, body_text(body)
                assert from_the_sources(url, wb), (url, body_text(body))
        hrefs = {m.group(1) for m in _HREF.finditer(html)}
        assert not [h for h in hrefs if "evil.example" in h], hrefs


# --- every bad database path: one line, exit 2 --------------------------------------------------


def _not_sqlite(tmp: Path) -> Path:
    path = tmp / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    return path


def _a_directory(tmp: Path) -> Path:
    (tmp / "data").mkdir()
    return tmp / "data"


def _under_a_file(tmp: Path) -> Path:
    (tmp / "data").write_text("a file where a folder should be")
    return tmp / "data" / "runscribe.db"


def _unreadable(tmp: Path) -> Path:
    path = tmp / "locked.db"
    path.write_bytes(b"")
    path.chmod(0)
    return path


def _in_a_closed_folder(tmp: Path) -> Path:
    (tmp / "closed").mkdir()
    (tmp / "closed").chmod(0)
    return tmp / "closed" / "runscribe.db"


def _without_override() -> list[str]:
    """A prefix that runs a command without root's power to read anything (as root, file modes
    would not stop it)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to test unreadable paths as root"
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def restore_modes(tmp_path: Path) -> Iterator[None]:
    yield
    for path in tmp_path.rglob("*"):
        path.chmod(0o700)


BAD_PATHS: list[Callable[[Path], Path]] = [
    _not_sqlite, _a_directory, _under_a_file, _unreadable, _in_a_closed_folder,
]  # fmt: skip


@pytest.mark.parametrize("bad", BAD_PATHS, ids=lambda f: f.__name__.strip("_"))
async def test_every_bad_database_path_is_one_line_and_exit_2(
    bad: Callable[[Path], Path], tmp_path: Path, restore_modes: None
) -> None:
    """`runscribe run` as the checker starts it (every command, in process, is in
    tests/cli/test_bad_database.py; unreadable paths need a process without root's override)."""
    (tmp_path / "runscribe.toml").write_text(
        '[[runs]]\nslug = "hero"\nname = "Hero"\ngithub_repo = "lab/model"\n'
    )
    path = bad(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNSCRIBE_", "DISCORD_"))}
    env.update(
        RUNSCRIBE_DB=str(path),
        RUNSCRIBE_CONFIG=str(tmp_path / "runscribe.toml"),
        DISCORD_TOKEN="not-used",
        GITHUB_API_URL="http://127.0.0.1:9",
    )
    process = await asyncio.create_subprocess_exec(
        *_without_override(), sys.executable, "-m", "bot", "run", cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert process.returncode == 2, err.decode()
    assert len(lines) == 1 and lines[0].startswith("runscribe: "), err.decode()
    assert str(path) in lines[0] or path.name in lines[0], lines[0]
    assert "Traceback" not in out.decode() + err.decode()
