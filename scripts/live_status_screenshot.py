"""Regenerate docs/live-status.png: the bundled sample run's live status message as the bot posts
it to the fake Discord the tests use (the real discord.py client, the real outbox), drawn in
Discord's dark style and photographed by headless Chromium.

Usage: .venv/bin/python scripts/live_status_screenshot.py [--chromium /usr/bin/chromium]
Offline; nothing leaves the machine."""

from __future__ import annotations

import argparse
import asyncio
import base64
import html
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.app import LoopIntervals, RunscribeBot, apply_endpoints  # noqa: E402
from bot.config.settings import Settings, parse_runs  # noqa: E402
from bot.core.timeutil import utcnow  # noqa: E402
from bot.process.demo import replay_into, sample_runs_file  # noqa: E402
from bot.process.runtime import Runtime, record_runs  # noqa: E402
from bot.sources.replay import load_sample  # noqa: E402
from bot.store import Database, Store  # noqa: E402
from tests.fakes.discord import MANAGE_MESSAGES, FakeDiscord  # noqa: E402

STATUS = 1213463398226931745


def _relative(at: datetime, now: datetime) -> str:
    seconds = (at - now).total_seconds()
    minutes = round(abs(seconds) / 60)
    if minutes < 1:
        return "just now"
    words = f"{minutes} minute{'s' if minutes != 1 else ''}"
    if minutes >= 60:
        hours = round(minutes / 60)
        words = f"{hours} hour{'s' if hours != 1 else ''}"
    if minutes >= 60 * 36:
        days = round(minutes / 1440)
        words = f"{days} day{'s' if days != 1 else ''}"
    return f"in {words}" if seconds > 0 else f"{words} ago"


def _stamp(match: re.Match[str], now: datetime) -> str:
    at = datetime.fromtimestamp(int(match.group(1)), UTC)
    style = match.group(2)
    if style == "R":
        text = _relative(at, now)
    elif style == "D":
        text = f"{at:%B} {at.day}, {at.year}"
    elif style == "t":
        text = f"{at:%H:%M}"
    else:
        text = f"{at:%B} {at.day}, {at.year} {at:%H:%M}"
    return f'<span class="ts">{text}</span>'


def markdown(text: str, now: datetime) -> str:
    """The little of Discord's markdown the card uses: bold, links, timestamps, line breaks."""
    text = text.replace("\u2063", "")
    out = html.escape(re.sub(r"[\u200b-\u200f\u2060-\u2064]", "", text))
    out = re.sub(r"&lt;t:(-?\d+):([RDtf])&gt;", lambda m: _stamp(m, now), out)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"\[([^\]]+)\]\((https?://[^)\s]+)\)", r'<a href="\2">\1</a>', out)
    return out.replace("\n", "<br>")


CSS = """
body { margin: 0; background: #313338; font-family: 'DejaVu Sans', 'Noto Sans', sans-serif;
       color: #dbdee1; font-size: 15px; }
.msg { display: flex; padding: 16px 16px 18px 16px; }
.avatar { width: 40px; height: 40px; border-radius: 50%; background: #5865f2; color: white;
          font-weight: bold; display: flex; align-items: center; justify-content: center;
          margin-right: 16px; flex: none; }
.name { color: #f2f3f5; font-weight: 600; } .bot { background: #5865f2; color: white;
  font-size: 10px; padding: 1px 4px; border-radius: 3px; margin-left: 4px; vertical-align: 2px; }
.time { color: #949ba4; font-size: 12px; margin-left: 6px; }
.pin { color: #949ba4; font-size: 12px; margin-left: 6px; }
.content { margin: 2px 0 6px 0; line-height: 1.375; }
.ts { background: rgba(255,255,255,0.06); border-radius: 3px; padding: 0 2px; }
.embed { display: flex; max-width: 516px; background: #2b2d31; border-radius: 4px; }
.bar { width: 4px; border-radius: 4px 0 0 4px; flex: none; }
.inner { padding: 8px 16px 16px 12px; min-width: 0; }
.title { color: #f2f3f5; font-weight: 600; margin-top: 8px; }
.desc { margin-top: 8px; font-size: 14px; line-height: 1.3; }
.fields { display: grid; grid-template-columns: repeat(2, 1fr); gap: 8px 16px; margin-top: 8px; }
.field { font-size: 14px; grid-column: 1 / -1; } .field.inline { grid-column: auto; }
.fname { color: #f2f3f5; font-weight: 600; margin-bottom: 2px; }
.image img { max-width: 100%; border-radius: 4px; margin-top: 16px; display: block; }
.footer { color: #b5bac1; font-size: 12px; margin-top: 8px; }
a { color: #00a8fc; text-decoration: none; }
"""


def page(message: dict[str, Any], uploads: dict[str, bytes], now: datetime) -> str:
    [embed] = message["embeds"]
    color = f"#{int(embed.get('color') or 0x5865F2):06x}"
    fields = "".join(
        f'<div class="field{" inline" if f.get("inline") else ""}">'
        f'<div class="fname">{markdown(f["name"], now)}</div>{markdown(f["value"], now)}</div>'
        for f in embed.get("fields", [])
    )
    image = ""
    if embed.get("image"):
        attachment = next(a for a in message["attachments"] if a["url"] == embed["image"]["url"])
        data = base64.b64encode(uploads[attachment["id"]]).decode()
        image = f'<div class="image"><img src="data:image/png;base64,{data}"></div>'
    footer = markdown((embed.get("footer") or {}).get("text", ""), now)
    pinned = '<span class="pin">· pinned</span>' if message.get("pinned") else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>{CSS}</style></head>
<body><div class="msg"><div class="avatar">R</div><div style="min-width:0">
<div><span class="name">Runscribe</span><span class="bot">APP</span>
<span class="time">Today at {now:%H:%M}</span>{pinned}</div>
<div class="content">{markdown(message["content"], now)}</div>
<div class="embed"><div class="bar" style="background:{color}"></div><div class="inner">
<div class="title">{markdown(embed.get("title", ""), now)}</div>
<div class="desc">{markdown(embed.get("description", ""), now)}</div>
<div class="fields">{fields}</div>{image}<div class="footer">{footer}</div>
</div></div></div></div></body></html>"""


async def live_message(work: Path) -> tuple[dict[str, Any], dict[str, bytes], datetime]:
    now = utcnow()
    sample = load_sample(now)
    db_path = work / "runscribe.db"
    async with Database.open(db_path) as db:
        await replay_into(Store(db), sample)
    base = sample_runs_file(sample).runs[0].model_dump(mode="json")
    runs = parse_runs({"runs": [{**base, "status_channel": STATUS}]})
    async with (
        FakeDiscord(channels=sample.discord_channels) as fake,
        Database.open(db_path, readers=2) as db,
    ):
        fake.bot_permissions |= MANAGE_MESSAGES
        store = Store(db)
        await record_runs(store, runs)
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            discord_token=fake.token,
            discord_api_base=fake.api_base,
            discord_gateway_url=fake.gateway_url,
            runscribe_db=db_path,
            runscribe_config=work / "runscribe.toml",
        )
        apply_endpoints(settings)
        bot = RunscribeBot(
            Runtime(settings=settings, runs=runs, store=store),
            intervals=LoopIntervals(poll=3600, outbox=0.1, narrative=3600),
            warm_charts=False,
        )
        # The replay is this bot's first W&B round (it has no W&B source of its own): the
        # message shows a bot that has heard from W&B, not one just restarted.
        bot.live.started_at = now
        task = asyncio.create_task(bot.start(fake.token))
        try:

            def posted() -> dict[str, Any] | None:
                for message in fake.posted(STATUS):
                    if "Live status" in message["content"] and message.get("pinned"):
                        return message
                return None

            message = await fake.wait_for(posted, within=120)
        finally:
            await bot.close()
            await asyncio.wait_for(task, 10)
        return message, dict(fake.uploads), now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "live-status.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        message, uploads, now = asyncio.run(live_message(work))
        html_path = work / "live.html"
        html_path.write_text(page(message, uploads, now), encoding="utf-8")
        subprocess.run(
            [args.chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--hide-scrollbars", "--window-size=600,1040", f"--screenshot={args.out}",
             html_path.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    print(f"{args.out} written")


if __name__ == "__main__":
    main()
