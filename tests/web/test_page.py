"""The rendered page: what it shows, that nothing untrusted is active, nothing is loaded from
elsewhere, and that a busy month stays under 300 KB."""

from __future__ import annotations

import base64
import hashlib
import random
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import Any

import pytest

from bot.analysis.progress import compute_progress
from bot.config.settings import RunConfig
from bot.core.timeutil import ensure_utc
from bot.models import Incident, IncidentDetails, ReportedCause, RunInfo
from bot.narrative.entries import TimelineEntry
from bot.outputs.statuspage import gather_run_page, render_pages
from bot.render.json import status_json
from bot.render.page import (
    MAX_PAGE_BYTES,
    ChartData,
    IndexEntry,
    RunPage,
    chart_svg,
    forecast_at,
    render_index,
    render_run_page,
    rich_text,
    safe_url,
)
from bot.services.forecasts import ForecastView
from bot.services.narrative import Narrative
from bot.services.status import StatusReport
from bot.store import Store
from tests.web.seed import (
    HOSTILE_IMG,
    HOSTILE_SCRIPT,
    HOSTILE_SVG,
    SLUG,
    Entry,
    add_entries,
    seed_run,
)


class Parsed(HTMLParser):
    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts.append(data)
        elif self._in == "style":
            self.styles.append(data)
        else:
            self.text.append(data)

    def attrs(self, name: str) -> list[str]:
        return [a[name] or "" for _, a in self.tags if name in a]


def sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def assert_inert(html: str) -> Parsed:
    """Nothing from the sources is active and nothing is loaded from elsewhere."""
    doc = Parsed(html)
    names = [tag for tag, _ in doc.tags]
    for banned in ("img", "iframe", "object", "embed", "link", "base", "form", "meta-refresh"):
        assert banned not in names, banned
    assert names.count("script") == 1 and names.count("style") == 1
    for tag, attrs in doc.tags:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        assert "src" not in attrs and "style" not in attrs and "srcset" not in attrs, tag
    for href in doc.attrs("href"):
        assert re.match(r"^(https?://|/|[a-z0-9_-]+\.html$)", href), href
    assert "javascript:" not in " ".join(doc.attrs("href")).lower()
    assert "url(" not in doc.styles[0] and "@import" not in doc.styles[0]
    # The CSP allows exactly the page's own script and style, by hash.
    csp = next(
        a["content"] for t, a in doc.tags if a.get("http-equiv") == "Content-Security-Policy"
    )
    assert csp is not None
    assert "default-src 'none'" in csp
    assert f"script-src '{sha(doc.scripts[0])}'" in csp
    assert f"style-src '{sha(doc.styles[0])}'" in csp
    assert "unsafe" not in csp and "connect-src" not in csp
    return doc


async def test_run_page_shows_progress_timeline_and_chart(store: Store, now: datetime) -> None:
    await seed_run(store, now)
    await store.cycles.record(now - timedelta(seconds=70), now - timedelta(seconds=65), 300)
    page = await gather_run_page(store, SLUG, now, days=7)
    html = render_run_page(page)
    doc = assert_inert(html)
    text = " ".join(" ".join(doc.text).split())
    assert "Hero 70B" in text
    assert "step 640 of 1,000" in text and "64.0%" in text
    assert "2.56B of 4B tokens" in text
    assert "launched Aug 31" in text  # two days before, in Europe/Berlin
    assert "updated 1 min ago" in text and "next in 3 min" in text
    # the projected end as precisely as the pace allows, the same words as /status
    assert page.projected_end and f"projected end {page.projected_end}" in text
    # said once: without a model the rules wrote the summaries and the tags
    assert text.count("written by rules") == 1
    assert "Summaries and tags written by rules from the recorded data, not by a model." in text
    assert "template" not in text.lower()
    # Links: the run's links and the timeline's refs.
    hrefs = doc.attrs("href")
    assert "https://wandb.ai/ent/proj/reports/hero" in hrefs
    assert "https://github.com/lab/model/pull/8833" in hrefs
    # Grouped by local day, newest first, each with author, ref, state, summary and tag.
    timeline = text[text.index("Timeline, last 7 days") :]
    assert timeline.index("Sep 2") < timeline.index("Sep 1") < timeline.index("Aug 31")
    assert "larry #8833 open optimizer Weight decay for the gate and router lowered" in text
    # Every entry's time carries its zone (Europe/Berlin: CEST in September).
    times = re.findall(r'<time datetime="[^"]+">([^<]+)</time>', timeline_html(html))
    assert times and all(re.fullmatch(r"\d\d:\d\d CES?T", t) for t in times), times
    # The chart: two segments (the restore), a restart marker from the stored event, a forecast.
    assert html.count('class="loss"') == 2
    assert "restart at step 500" in html
    # The forecast curve comes from the runs file's `loss_forecast`.
    assert html.count('class="fc"') == (1 if "loss_forecast" in RunConfig.model_fields else 0)


def timeline_html(html: str) -> str:
    return html[html.index('id="timeline"') :]


async def test_hostile_text_is_shown_as_text(store: Store, now: datetime) -> None:
    await seed_run(store, now)
    html = render_run_page(await gather_run_page(store, SLUG, now, days=7))
    doc = assert_inert(html)
    text = "".join(doc.text)
    for hostile in (HOSTILE_SCRIPT, HOSTILE_IMG, HOSTILE_SVG):
        assert hostile in text  # shown exactly as written, as text
    assert '<b onmouseover="window.__pwned = 5">mallory</b>' in text
    # The comment whose URL is javascript: keeps its ref, unlinked; a data: URL likewise.
    assert "#8840" in text and "#8840" not in " ".join(doc.attrs("href"))
    assert not [h for h in doc.attrs("href") if h.startswith("data:")]


def test_safe_url_and_rich_text() -> None:
    assert safe_url("https://github.com/a/b/issues/1") == "https://github.com/a/b/issues/1"
    assert safe_url("HTTP://example.org/x") == "HTTP://example.org/x"
    for bad in (
        "javascript:alert(1)",
        " javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,x",
        "vbscript:x",
        "//evil.example/x",
        "https://",
        'https://x.org/"onmouseover="a()',
        "https://x.org/<script>",
        None,
        42,
    ):
        assert safe_url(bad) is None, bad
    out = rich_text(
        "see [the PR](https://github.com/a/b/pull/2). and https://x.org/a, [x](javascript:y) <i>"
    )
    assert '<a href="https://github.com/a/b/pull/2">the PR</a>' in out
    assert '<a href="https://x.org/a">https://x.org/a</a>,' in out
    assert "[x](javascript:y) &lt;i&gt;" in out
    # A link the sanitiser escaped (a member's name or message) is shown as text, escapes dropped.
    escaped = rich_text(
        r"by \[Official status\]\(https://evil.example/s) and \<https://evil.example/x>"
    )
    assert "href" not in escaped
    assert (
        escaped == "by [Official status](https://evil.example/s) and &lt;https://evil.example/x&gt;"
    )


def test_forecast_interpolates_in_log_log() -> None:
    knots = [(10, 4.0), (1000, 1.0)]
    assert forecast_at(knots, 10) == pytest.approx(4.0)
    assert forecast_at(knots, 100) == pytest.approx(2.0)  # the geometric midpoint
    assert forecast_at(knots, 1000) == pytest.approx(1.0)
    assert forecast_at([(10, 4.0)], 100) is None


def test_chart_draws_segments_restarts_and_the_forecast() -> None:
    assert chart_svg(ChartData(points=[(1, 2.0)])) == ""
    points = [(s, 4.0 * (s + 10) ** -0.1) for s in range(0, 1001, 10)]
    svg = chart_svg(
        ChartData(
            points=points,
            segments=[50],
            restarts=[(500, None), (9000, None)],
            forecast=[(10, 4.0), (1000, 2.5)],
        )
    )
    assert svg.count("<title>restart") == 1  # step 9000 lies outside the data
    assert svg.count('class="loss"') == 2  # split at the restart
    assert svg.count('class="fc"') == 1
    assert 'class="fc"' not in chart_svg(ChartData(points=points))


def busy_month(now: datetime, per_day: int) -> list[Entry]:
    rng = random.Random(15)
    words = [
        "gate",
        "router",
        "decay",
        "loss",
        "spike",
        "checkpoint",
        "node",
        "restart",
        "eval",
        "ladder",
        "mixture",
        "shard",
    ]
    tags = ["optimizer", "infra", "evals", "data", "ablation", "training-dynamics", "incident"]
    out = []
    for i in range(30 * per_day):
        source = rng.choice(["github", "github", "discord", "wandb"])
        number = 8000 + rng.randrange(900)
        out.append(
            Entry(
                source,
                "comment" if source == "github" else "message",
                rng.choice(["larry", "percy-liang", "kaiyue-wen", "helw150", "loom-oa-dev"]),
                f"#{number}" if source == "github" else "#hero-run",
                f"https://github.com/lab-name/model-repo/issues/{number}"
                f"#issuecomment-{4 * 10**9 + i}"
                if source == "github"
                else "https://discord.com/channels/1201188830310170624/1213462791155945512/"
                f"{10**18 + i}",
                "open" if source == "github" else None,
                " ".join(rng.choice(words) for _ in range(rng.randrange(18, 34))).capitalize(),
                rng.choice(tags),
                i * 24 / per_day + 0.01,
            )
        )
    return out


# Busy: 20 entries a day, five times the reference page's pace, with full-length Discord and
# GitHub comment URLs and 100-200 character summaries. 80 a day exercises the byte budget.
@pytest.mark.parametrize("per_day", [20, 80])
async def test_a_busy_month_stays_under_300_kb(store: Store, now: datetime, per_day: int) -> None:
    await seed_run(store, now, entries=())
    entries = busy_month(now, per_day)
    await add_entries(store, SLUG, now, entries)
    pages = await render_pages(store, now, days=30)
    html = pages[f"{SLUG}.html"]
    size = len(html.encode())
    print(f"{per_day}/day x 30 days: {size:,} bytes")
    assert size < MAX_PAGE_BYTES
    assert_inert(html)
    shown = html.count("<li class=")
    if per_day == 20:
        assert shown == len(entries)  # all 600 fit
        assert "do not fit on this page" not in html
    else:  # 6,000: the newest that fit, and an honest note about the rest
        assert 0 < shown < len(entries)
        assert re.search(r"Older entries before \w+ \d+ do not fit on this page", html)
    assert "index.html" in pages


def report(now: datetime, name: str = "R", **changes: Any) -> StatusReport:
    """A StatusReport as `build_status` returns it for a run that has logged nothing yet,
    with `changes` applied."""
    nothing = compute_progress([], total_steps=None, target_tokens=None, now=ensure_utc(now))
    fields: dict[str, Any] = {
        "run": RunInfo(slug=name.lower(), name=name),
        "now": now,
        "state": "unknown",
        "health": "unknown",
        "progress": nothing,
        "launched_at": None,
        "last_restart": None,
        "open_incidents": [],
        "freshness": {},
        "monitor_stale": False,
        "heartbeat_at": None,
    }
    return StatusReport(**{**fields, **changes})


def page_of(status: StatusReport, **changes: Any) -> RunPage:
    quiet = Narrative(text="", at=None, by="template")
    return RunPage(
        **{"report": status, "narrative": quiet, "timeline": [], "now": status.now, **changes}
    )


def test_updated_is_the_last_cycle_else_the_freshest_source() -> None:
    now = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
    status = report(
        now,
        freshness={
            "wandb": datetime(2026, 9, 2, 9, 0, tzinfo=UTC),
            "github": datetime(2026, 9, 2, 10, 30, tzinfo=UTC),
        },
    )
    old = render_run_page(page_of(status))
    assert "updated <time" in old and ">1 h 30 min ago</time>" in old and "next " not in old
    cycle = now - timedelta(minutes=2)
    live = render_run_page(page_of(status, last_cycle_at=cycle, poll_interval=300))
    assert ">2 min ago</time>" in live and ">in 3 min</time>" in live
    # A poller that stopped long ago: when it last ran, and no promise of a next cycle.
    stale = render_run_page(
        page_of(status, now=now + timedelta(hours=1), last_cycle_at=cycle, poll_interval=300)
    )
    assert ">1 h 2 min ago</time>" in stale and "next " not in stale
    assert "updated" not in render_run_page(page_of(report(now)))


def test_open_incidents_and_drifting_forecasts() -> None:
    now = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
    crash = Incident(
        run_slug="r",
        fingerprint="wandb-state",
        kind="crash",
        title="<b>W&B run crashed</b>",
        status="firing",
        started_at=datetime(2026, 9, 2, 11, 20, tzinfo=UTC),
        details=IncidentDetails(
            reported_cause=ReportedCause(
                text="node s12 lost, see https://github.com/lab/model/issues/9",
                author="ana",
                source="Discord #hero-run",
                at=datetime(2026, 9, 2, 11, 25, tzinfo=UTC),
            )
        ),
    )
    forecasts = [
        ForecastView("train/loss", "loss", 2.31, 2.2, 2.15, 2.26, "drifting"),
        ForecastView("train/grad_norm", "gradient norm", 0.4, 0.41, 0.3, 0.5, "ok"),
    ]
    html = render_run_page(page_of(report(now, open_incidents=[crash], forecasts=forecasts)))
    doc = assert_inert(html)
    text = " ".join("".join(doc.text).split())
    assert "<b>W&B run crashed</b> crash · since Sep 2 11:20 UTC" in text
    assert "reported: node s12 lost, see https://github.com/lab/model/issues/9" in text
    assert "https://github.com/lab/model/issues/9" in doc.attrs("href")
    assert (
        "Drifting from forecast loss: 2.31 against a forecast of 2.2 (expected 2.15–2.26)" in text
    )
    assert "gradient norm" not in text  # on forecast: not listed
    quiet = render_run_page(page_of(report(now, forecasts=forecasts[1:])))
    assert "Drifting" not in quiet and "Open incidents" not in quiet


def test_an_untagged_entry_is_shown_without_a_tag_never_as_other() -> None:
    now = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
    common: dict[str, Any] = {"author": "ana", "source": "github", "ref": "#12", "url": None}
    timeline = [
        TimelineEntry(
            now, **common, state=None, summary="Unsure", tag=None, incident=False, kind="comment"
        ),
        TimelineEntry(
            now,
            **common,
            state=None,
            summary="Evals in",
            tag="evals",
            incident=False,
            kind="comment",
        ),
    ]
    html = render_run_page(page_of(report(now), timeline=timeline))
    assert "<em>evals</em>" in html and 'for="tag-evals"' in html
    assert "<em>other</em>" not in html and "t-other" not in html
    assert 'for="tag-other"' not in html  # no filter for entries nobody tagged
    # the rules wrote both, and the page says so once
    assert html.count("written by rules") == 1


def test_empty_run_page_renders() -> None:
    now = datetime(2026, 9, 2, 12, 0)
    html = render_run_page(page_of(report(now, name="Fresh")))
    doc = assert_inert(html)
    text = " ".join(doc.text)
    assert "no progress reported yet" in text and "Nothing recorded in this period." in text


async def test_the_page_renders_the_report_status_json_serialises(
    store: Store, now: datetime
) -> None:
    """One typed report: the page is drawn from the `StatusReport` `/status` uses, and what it
    shows is what `status --json` prints of that same report."""
    await seed_run(store, now)
    page = await gather_run_page(store, SLUG, now, days=7)
    assert isinstance(page.report, StatusReport)
    printed = status_json(page.report, page.narrative)
    doc = assert_inert(render_run_page(page))
    text = " ".join(" ".join(doc.text).split())
    assert f"{printed['run']} {printed['state']}" in text
    progress = printed["progress"]
    assert f"{progress['percent']:.1f}% · step {progress['step']:,} of" in text
    assert f"of {progress['total_steps']:,}" in text
    for label in printed["links"]:
        assert label in text


def _renamed(status: StatusReport, gone: str) -> StatusReport:
    """`status` as if its field `gone` had been renamed."""

    class Renamed:
        def __getattr__(self, name: str) -> Any:
            if name == gone:
                raise AttributeError(f"'StatusReport' object has no attribute {name!r}")
            return getattr(status, name)

    return Renamed()  # type: ignore[return-value]


@pytest.mark.parametrize(
    "field",
    ["run", "state", "health", "progress", "launched_at", "open_incidents", "freshness", "links"],
)
def test_a_renamed_report_field_fails_loudly_instead_of_showing_a_blank(field: str) -> None:
    now = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
    status = report(now)
    assert render_run_page(page_of(status))  # whole, it renders
    with pytest.raises(AttributeError, match=field):
        render_run_page(page_of(_renamed(status, field)))
    if field in ("run", "state", "health", "progress", "open_incidents"):
        with pytest.raises(AttributeError, match=field):
            render_index([IndexEntry(report=_renamed(status, field), href="r.html")], now)
