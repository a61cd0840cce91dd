"""The status page in a real browser (headless Chromium), served by the real web server: it
renders the progress and the timeline, hostile text stays inert, nothing is fetched from
elsewhere, the tag and source filters hide entries (with and without JavaScript), the dark
scheme applies, a phone-width view does not scroll sideways, and a screenshot is taken."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bot.core.timeutil import utcnow
from bot.store import Store
from bot.web.server import serve
from tests.web.browser import browser
from tests.web.seed import HOSTILE_IMG, HOSTILE_SCRIPT, SLUG, seed_run

VISIBLE = (
    "[...document.querySelectorAll('#timeline li')]"
    ".filter(li => li.offsetParent !== null).map(li => li.querySelector('p').textContent)"
)


async def test_status_page_in_chromium(store: Store, tmp_path: Path) -> None:
    now = utcnow()
    await seed_run(store, now)
    await store.cycles.record(now - timedelta(seconds=3), now, 60)
    async with (
        serve(store, "127.0.0.1", 0, poll_interval=60) as (_site, port),
        browser(tmp_path / "profile") as page,
    ):
        url = f"http://127.0.0.1:{port}/runs/{SLUG}"
        await page.goto(url)
        text = await page.eval("document.body.innerText")
        assert "64.0% · step 640 of 1,000" in text
        assert "2.56B of 4B tokens" in text
        assert "Weight decay for the gate and router lowered from 0.05 to 0.02" in text
        assert "updated just now" in text  # rewritten by the page's own script: CSP let it run
        # Hostile text is on the page as text, and none of it ran or loaded anything.
        assert HOSTILE_SCRIPT in text and HOSTILE_IMG in text
        assert await page.eval("typeof window.__pwned") == "undefined"
        assert await page.eval("document.images.length + document.scripts.length") == 1
        assert page.requested() == [url]
        assert not [line for line in page.console() if "Content Security Policy" in line]

        entries = await page.eval(VISIBLE)
        assert len(entries) == 6
        # A tag filter: click its chip; only the optimizer entries stay, and the URL says so.
        await page.eval("document.querySelector('label[for=tag-optimizer]').click()")
        shown = await page.eval(VISIBLE)
        assert sorted(shown) == sorted(
            ["Weight decay for the gate and router lowered from 0.05 to 0.02", entries[1]]
        )
        assert "Attention gate norm" not in await page.eval(
            "document.getElementById('timeline').innerText"
        )
        assert await page.eval("location.hash") == "#tag=optimizer"
        # Both filters together, from a shared link's fragment.
        await page.goto("about:blank")
        await page.goto(url + "#tag=optimizer&source=discord")
        assert await page.eval(VISIBLE) == [entries[1]]

        light = await page.screenshot()
        await page.send(
            "Emulation.setEmulatedMedia",
            features=[{"name": "prefers-color-scheme", "value": "dark"}],
        )
        dark = await page.eval("getComputedStyle(document.body).backgroundColor")
        assert dark == "rgb(20, 24, 29)"
        dark_png = await page.screenshot()
        for png in (light, dark_png):
            assert png.startswith(b"\x89PNG") and len(png) > 20_000
        assert light != dark_png

        # A phone: nothing wider than the screen.
        await page.send(
            "Emulation.setDeviceMetricsOverride",
            width=390,
            height=844,
            deviceScaleFactor=2,
            mobile=True,
        )
        await page.goto(url)
        assert await page.eval("document.documentElement.scrollWidth") <= 390

        # Without JavaScript the page is whole and the filters still work (CSS only).
        await page.send("Emulation.setScriptExecutionDisabled", value=True)
        await page.goto("about:blank")
        await page.goto(url)
        assert "step 640 of 1,000" in await page.eval("document.body.innerText")
        await page.eval("document.getElementById('source-wandb').checked = true")
        assert await page.eval(VISIBLE) == ["Resumed from step 500 in hero-2"]
