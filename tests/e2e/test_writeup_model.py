"""The model's incident write-up through the whole bot: `open_runtime` with a model key (the fake
Anthropic server), the real bot and its write-up loop, the fake Discord. A crash, a resume in a
new chain run: the resolution is posted while the model still holds the write-up's request, and
the write-up follows in the incident's thread once the model answers: one post, the model's
prose with the code's cost line, saying who wrote it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.posts.writeup import BY_MODEL
from tests.e2e.deployment import (
    MIN,
    SimClock,
    crash,
    deployed,
    full_text,
    healthy_run,
    make_runs,
    make_settings,
    now_utc,
    resume,
    visible,
)
from tests.fakes.anthropic import FakeAnthropic, Recorded, Reply, auto_reply, text
from tests.fakes.discord import FakeDiscord
from tests.fakes.wandb import FakeWandb
from tests.waiting import until

CLOSING = re.compile(r"✅ Resolved <t:\d+:t>; closing this thread\.")


def writeups(thread: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in thread if visible(m).startswith("📝 Write-up of incident #")]


def answer(request: Recorded) -> str:
    """What a model writes to the write-up's request: the crash and how training came back,
    each cited by the number the request gives it."""
    facts = request.user_text
    came_back = re.search(r"^\[(\d+)\] training came back:", facts, re.M)
    assert came_back is not None, facts
    return (
        "W&B run hero-1 crashed at step 99 [1]. "
        f"Training came back in W&B run hero-2 [{came_back.group(1)}]."
    )


async def test_the_resolution_never_waits_for_the_models_writeup_which_follows_once(
    tmp_path: Path, wb: FakeWandb, fake_discord: FakeDiscord
) -> None:
    released = asyncio.Event()
    asked: list[Recorded] = []

    async def model(request: Recorded) -> Reply:
        if "write-up of the incident" not in request.user_text:
            return auto_reply(request)
        asked.append(request)
        await released.wait()
        return text(answer(request))

    async with FakeAnthropic() as anthropic_fake:
        anthropic_fake.handler = model
        t0 = now_utc() - 2 * 60 * MIN
        healthy_run(wb, t0)
        settings = make_settings(tmp_path, fake_discord, wb).model_copy(
            update={
                "anthropic_api_key": SecretStr("sk-ant-fake"),
                "anthropic_base_url": anthropic_fake.base_url,
            }
        )
        async with deployed(settings, make_runs(), SimClock(t0), fake_discord) as d:
            head = await crash(d, wb)
            resume(wb, t0 + 12 * MIN, first_step=80, count=10)
            await d.cycle(t0 + 25 * MIN)
            _, resolved = d.channel()
            assert visible(resolved).startswith("✅ **Resolved** incident #")
            await until(lambda: bool(asked), "the write-up's request reaching the model")
            # closed, while the model holds the write-up (other thread updates may come and go)
            assert any(CLOSING.fullmatch(visible(m)) for m in d.thread(head))
            assert writeups(d.thread(head)) == []
            released.set()
            await until(lambda: bool(writeups(d.thread(head))), "the write-up in the thread")
            [writeup] = writeups(d.thread(head))
            closing = next(m for m in d.thread(head) if CLOSING.fullmatch(visible(m)))
            assert int(closing["id"]) < int(writeup["id"])  # after the resolution
            said = full_text(writeup)
            assert visible(writeup).startswith("📝 Write-up of incident #")
            assert "W&B run hero-1 crashed at step 99 [\\[1\\]](" in said  # linked to its run
            assert "16 min down (last step before the interruption" in said
            assert writeup["embeds"][0]["footer"]["text"].endswith(BY_MODEL)
            # the thread closed again (archived just after the post lands)
            await until(lambda: fake_discord.archived(int(head["id"])), "the thread archived")
            # later rounds neither ask again nor post again
            await d.cycle(t0 + 30 * MIN)
            await asyncio.sleep(0.2)
            assert len(asked) == 1 and len(writeups(d.thread(head))) == 1
