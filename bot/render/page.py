"""The public status page: data in, one self-contained HTML document out.

Pure functions over the typed report `/status` shows (`StatusReport`, of which `status --json` is
a serialisation), its narrative and the timeline's entries (plus the chart series), so the page
can be written to disk (`runscribe page`) or served (`runscribe web`) from the same code, and a
renamed field is a type error, never a blank on the page. Nothing is loaded from elsewhere: the
style sheet and the small script are inline and allowed by hash in the page's
Content-Security-Policy, the chart is SVG drawn here. Every string from GitHub, Discord or W&B is
escaped; only http(s) URLs become links.

Without JavaScript the page is complete and the tag/source filters still work (radio buttons and
`:checked` rules); the script only keeps relative times current and mirrors the filters in the
URL fragment (`#tag=optimizer&source=github`), so a filtered view can be shared.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html import escape
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from bot.analysis.forecast import LossCurve
from bot.analysis.goodput import describe_run
from bot.core.mentions import URL_RE, masked_links, outermost, trim_url
from bot.core.mentions import body as neutralised
from bot.core.numbers import fmt_big, fmt_int, fmt_percent, fmt_value
from bot.core.timeutil import humanize_delta, resolve_zone
from bot.incidents.detectors import incident_kind_words
from bot.incidents.service import public_kind
from bot.models import SOURCE_SPECS
from bot.narrative.entries import TimelineEntry
from bot.render.cards import RULES_NOTE
from bot.services.narrative import Narrative
from bot.services.status import StatusReport

MAX_PAGE_BYTES = 300_000
# What the page may spend on everything but the timeline is small (a few KB of style, script,
# header and chart); the timeline gets the rest of this budget and says what it left out.
PAGE_BUDGET = 290_000
SUMMARY_CHARS = 320


@dataclass(frozen=True, slots=True)
class ChartData:
    """The loss series (already in training order), restart steps and the predicted curve."""

    points: Sequence[tuple[int, float]] = ()
    segments: Sequence[int] = ()  # indexes into points where a new segment starts (a restart)
    restarts: Sequence[tuple[int, datetime | None]] = ()  # (resumed at step, when)
    forecast: Sequence[tuple[float, float]] = ()  # (step, loss) knots, interpolated in log-log


@dataclass(frozen=True, slots=True)
class RunPage:
    report: StatusReport  # what `/status` shows (`status --json` is its serialisation)
    narrative: Narrative
    timeline: Sequence[TimelineEntry]  # what `timeline` shows, newest first
    now: datetime
    days: int = 30
    chart: ChartData = field(default_factory=ChartData)
    last_cycle_at: datetime | None = None
    poll_interval: float | None = None  # seconds
    index_href: str = "index.html"
    # the projected end as precisely as the pace allows ("late April 2027"); without it the
    # page names the JSON's date
    projected_end: str | None = None


@dataclass(frozen=True, slots=True)
class IndexEntry:
    report: StatusReport
    href: str


# --- small helpers ---------------------------------------------------------------------------


def esc(value: object) -> str:
    """Text for an element or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def safe_url(url: object) -> str | None:
    """The URL if it is a plain http(s) URL, else None (shown as text, never linked)."""
    if not isinstance(url, str):
        return None
    text = url.strip()
    if not text or len(text) > 2000 or any(ord(c) < 0x21 or c in "\"'<>\\`" for c in text):
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return text


def link(text: str, url: object, *, cls: str = "") -> str:
    href = safe_url(url)
    klass = f' class="{cls}"' if cls else ""
    if href is None:
        return f"<span{klass}>{esc(text)}</span>" if cls else esc(text)
    return f'<a{klass} href="{esc(href)}">{esc(text)}</a>'


_MD_ESCAPE = re.compile(r"\\([\\*_~`|\[\]()<>#-])")
_HTTP = re.compile(r"https?://", re.IGNORECASE)


def rich_text(text: str) -> str:
    """Escaped text in which markdown links and bare http(s) URLs become links (read by
    `bot.core.mentions.masked_links` and `URL_RE`, as every surface reads them). Markdown escapes
    are honoured and dropped: an escaped link (`\\[name\\](url)`, `\\<url>`, how the sanitiser
    neutralises a masked link in a person's name or message) stays text."""
    found: list[tuple[int, int, str, str]] = []  # (start, end, label, url)
    for masked in outermost(masked_links(text)):
        if masked.start is None or masked.escaped or not masked.closed:
            continue
        if masked.label and _HTTP.match(masked.url):
            found.append(
                (masked.start, masked.end, _MD_ESCAPE.sub(r"\1", masked.label), masked.url)
            )
    taken = [(start, end) for start, end, _, _ in found]
    for match in URL_RE.finditer(text):
        start = match.start()
        if any(a <= start < b for a, b in taken) or text[max(0, start - 2) : start] in (
            "\\(",
            "\\<",
        ):
            continue  # inside a link, or the URL of an escaped link: text, like the rest of it
        url = trim_url(match.group(0))
        found.append((start, start + len(url), url, url))
    out: list[str] = []
    pos = 0
    for start, end, label, url in sorted(found):
        out.append(_plain(text[pos:start]))
        out.append(link(label, url))
        pos = end
    out.append(_plain(text[pos:]))
    return "".join(out)


def _plain(text: str) -> str:
    return esc(_MD_ESCAPE.sub(r"\1", text))


def css_ident(value: object) -> str:
    """A class-name-safe form of a tag or source (those come from the store, so are data)."""
    ident = re.sub(r"[^a-z0-9-]", "", str(value or "").lower())[:32]
    return ident or "other"


def _day(value: datetime, zone: ZoneInfo, now: datetime) -> str:
    local = value.astimezone(zone)
    year = f", {local.year}" if local.year != now.astimezone(zone).year else ""
    return f"{local:%b} {local.day}{year}"


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _relative(then: datetime, now: datetime) -> str:
    if then >= now:
        text = humanize_delta(then - now)
        return "due now" if text == "just now" else f"in {text}"
    text = humanize_delta(now - then)
    return text if text == "just now" else f"{text} ago"


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


# --- style and script (fixed text, allowed by hash) ------------------------------------------

_CSS = """
:root{--bg:#fff;--fg:#1d232b;--muted:#5d6875;--line:#dde2e8;--accent:#2f6fd6;--soft:#eef3fb;
--bad:#c0392b;--warn:#b7791f;--ok:#2e8b57;--chip:#f2f4f7}
@media (prefers-color-scheme:dark){:root{--bg:#14181d;--fg:#e4e8ee;--muted:#97a3b1;
--line:#2c333c;--accent:#79a8ff;--soft:#1c2532;--bad:#ff7b6b;--warn:#f0b54a;--ok:#5fcf8f;
--chip:#222933}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.55 system-ui,-apple-system,
"Segoe UI",Roboto,sans-serif}
main{max-width:52rem;margin:0 auto;padding:1rem}
a{color:var(--accent)}
h1{font-size:1.6rem;line-height:1.2;margin:.4rem 0}
h2{font-size:1.1rem;margin:2rem 0 .5rem}
h3{font-size:.95rem;margin:1.2rem 0 .3rem;color:var(--muted)}
.muted,.meta,.crumbs,footer{color:var(--muted);font-size:.9rem}
.meta,.links{margin:.2rem 0}
.links a{margin-right:1rem}
.state{display:inline-block;font-size:.8rem;padding:0 .5rem;border-radius:1rem;
border:1px solid currentColor;vertical-align:middle}
.h-ok{color:var(--ok)}.h-bad{color:var(--bad)}.h-warning,.h-stale{color:var(--warn)}
.h-done,.h-unknown{color:var(--muted)}
.bar{display:block;width:100%;height:14px;margin:.4rem 0}
.bar .track{fill:var(--line)}.bar .done{fill:var(--accent)}
.row{display:flex;justify-content:space-between;gap:1rem;flex-wrap:wrap;font-size:.9rem}
.big{font-size:1.15rem;font-weight:600}
.narrative p{margin:.8rem 0}
.chart{width:100%;height:auto;display:block;color:var(--muted)}
.chart .loss{fill:none;stroke:var(--accent);stroke-width:1.6}
.chart .fc{fill:none;stroke:var(--warn);stroke-width:1.4;stroke-dasharray:6 4}
.chart .rs{stroke:var(--bad);stroke-width:1;stroke-dasharray:3 3}
.chart .grid{stroke:var(--line);stroke-width:1}
.chart text{fill:currentColor}
.key{font-size:.85rem;color:var(--muted)}
.key span{margin-right:1rem}.key .k-loss{color:var(--accent)}.key .k-fc{color:var(--warn)}
.key .k-rs{color:var(--bad)}
.alert{border-left:4px solid var(--bad);background:var(--soft);padding:.5rem .8rem;
margin:.5rem 0}
.alert.drift{border-color:var(--warn)}
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.filters{display:flex;flex-wrap:wrap;gap:.35rem;align-items:center;margin:.3rem 0;
font-size:.85rem}
.filters b{font-weight:600;margin-right:.2rem}
.filters label{background:var(--chip);border:1px solid var(--line);border-radius:1rem;
padding:.1rem .65rem;cursor:pointer}
.days ul{list-style:none;margin:0;padding:0}
.days li{padding:.55rem 0;border-bottom:1px solid var(--line)}
.days li p{margin:.15rem 0 0}
.days small{font-size:.85rem;color:var(--muted)}
.days small b{color:var(--fg)}
.days em{display:inline-block;background:var(--chip);border-radius:.3rem;padding:0 .4rem;
font-size:.78rem;font-style:normal}
.days .inc em{color:var(--bad)}
.more{color:var(--muted);font-style:italic}
.runs{list-style:none;padding:0}
.runs li{padding:.8rem 0;border-bottom:1px solid var(--line)}
.runs a{font-size:1.1rem;font-weight:600}
@media (max-width:34rem){body{font-size:15px}main{padding:.7rem}h1{font-size:1.35rem}}
.chart text{font-size:var(--chart-text,11px)}
@media (max-width:34rem){.chart{--chart-text:20px}}
@media (max-width:24rem){.chart{--chart-text:26px}}
""".strip()

_SCRIPT = """
(function(){var d=document;
function span(s){s=Math.max(0,Math.round(s/1000));if(s<10)return"just now";if(s<60)return s+" s";
var m=Math.floor(s/60);if(m<60)return m+" min";var h=Math.floor(m/60);m%=60;
if(h<24)return h+" h"+(m?" "+m+" min":"");var dd=Math.floor(h/24);h%=24;
return dd+" d"+(h?" "+h+" h":"")}
function tick(){var n=Date.now();d.querySelectorAll("time[data-rel]").forEach(function(t){
var v=Date.parse(t.getAttribute("datetime"))-n;var s=span(Math.abs(v));
t.textContent=v>0?"in "+s:(t.dataset.rel==="next"?"due now":(s==="just now"?s:s+" ago"))})}
function load(){var p=new URLSearchParams(location.hash.slice(1));["tag","source"].forEach(
function(k){var e=d.getElementById(k+"-"+(p.get(k)||"all"));if(e)e.checked=true})}
d.addEventListener("change",function(e){var t=e.target;if(t.name!=="tag"&&t.name!=="source")
return;var q=[];["tag","source"].forEach(function(k){var c=d.querySelector(
"input[name="+k+"]:checked");if(c&&c.value!=="all")q.push(k+"="+c.value)});
history.replaceState(null,"",q.length?"#"+q.join("&"):location.pathname+location.search)});
addEventListener("hashchange",load);load();tick();setInterval(tick,30000)})();
""".strip()

SCRIPT_HASH = _sha256(_SCRIPT)


def content_security_policy(style: str) -> str:
    """Nothing from anywhere: only this page's own style and script (by hash) and data: images."""
    return (
        f"default-src 'none'; style-src '{_sha256(style)}'; script-src '{SCRIPT_HASH}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _document(title: str, body: str, extra_css: str = "") -> str:
    style = _CSS + extra_css
    csp = content_security_policy(style)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">\n'
        '<meta name="viewport" content="width=device-width,initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="color-scheme" content="light dark">\n'
        f"<title>{esc(title)}</title>\n<style>{style}</style></head>\n"
        f"<body><main>\n{body}\n</main><script>{_SCRIPT}</script></body></html>\n"
    )


# --- the run page ----------------------------------------------------------------------------


def render_run_page(page: RunPage) -> str:
    report = page.report
    zone = resolve_zone(report.run.timezone)
    head = "\n".join(
        [
            _header(page, zone),
            _progress(report, zone, page.now, page.projected_end),
            _narrative(page.narrative),
            _chart_section(page.chart),
            _alerts(report, zone, page.now),
        ]
    )
    tags = _ordered({css_ident(e.tag) for e in page.timeline if e.tag}, "tag")
    sources = _ordered({css_ident(e.source) for e in page.timeline}, "source")
    filter_css = _filter_css(tags, sources)
    footer = _footer(report, page.narrative, page.now, page.timeline)
    fixed = len(_document(report.run.name, head + footer, filter_css).encode())
    timeline = _timeline(page, zone, tags, sources, budget=PAGE_BUDGET - fixed)
    return _document(f"{report.run.name} — status", head + timeline + footer, filter_css)


def _header(page: RunPage, zone: ZoneInfo) -> str:
    report = page.report
    progress = report.progress
    health = css_ident(report.health or "unknown")
    bits = []
    if progress.target_tokens:
        bits.append(f"{esc(fmt_big(progress.target_tokens))} tokens")
    launched = report.launched_at
    if launched:
        bits.append(f"launched {esc(_day(launched, zone, page.now))}")
    # Updated when the poller last finished a cycle; without one on record (a database filled
    # by the demo or an old copy), when a source last answered: never simply "now".
    seen = [t for t in report.freshness.values() if t is not None]
    updated = page.last_cycle_at or (max(seen) if seen else None)
    if updated is not None:
        local = updated.astimezone(zone)
        bits.append(
            f'updated <time data-rel="ago" datetime="{_iso(updated)}" '
            f'title="{esc(local.strftime("%Y-%m-%d %H:%M %Z"))}">'
            f"{esc(_relative(updated, page.now))}</time>"
        )
    interval = timedelta(seconds=page.poll_interval or 0)
    # "next in …" only while the loop keeps time; a snapshot of a stopped poller says when it ran.
    last = page.last_cycle_at
    if last is not None and interval and page.now - last <= 3 * interval:
        nxt = last + interval
        bits.append(
            f'next <time data-rel="next" datetime="{_iso(nxt)}">{esc(_relative(nxt, page.now))}'
            "</time>"
        )
    links = "".join(link(str(label), url) + " " for label, url in report.links.items()).strip()
    return (
        f'<p class="crumbs"><a href="{esc(page.index_href)}">All runs</a></p>\n'
        f"<h1>{esc(report.run.name)} "
        f'<span class="state h-{health}">{esc(report.state or "unknown")}</span></h1>\n'
        f'<p class="meta">{" · ".join(bits)}</p>\n'
        + (f'<p class="links">{links}</p>\n' if links else "")
    )


def _bar(percent: float | None) -> str:
    width = 0.0 if percent is None else max(0.0, min(100.0, float(percent)))
    label = "progress unknown" if percent is None else f"{fmt_percent(width)} done"
    return (
        '<svg class="bar" viewBox="0 0 100 4" preserveAspectRatio="none" role="img" '
        f'aria-label="{label}"><rect class="track" width="100" height="4" rx="1"/>'
        f'<rect class="done" width="{width:.2f}" height="4" rx="1"/></svg>'
    )


def _progress(
    report: StatusReport, zone: ZoneInfo, now: datetime, projected: str | None = None
) -> str:
    p = report.progress
    percent = p.percent
    head = []
    if percent is not None:
        head.append(fmt_percent(percent))
    if p.step is not None:
        steps = f"step {fmt_int(p.step)}"
        if p.total_steps:
            steps += f" of {fmt_int(p.total_steps)}"
        head.append(steps)
    launched = report.launched_at
    end = p.projected_end
    tokens = ""
    if p.tokens is not None:
        tokens = f"{fmt_big(p.tokens)}"
        if p.target_tokens:
            tokens += f" of {fmt_big(p.target_tokens)}"
        tokens += " tokens"
    start_label = f"launched {_day(launched, zone, now)}" if launched else ""
    end_label = f"projected end {projected or _day(end, zone, now)}" if end else ""
    if p.finished:
        end_label = "finished"
    return (
        '<section aria-label="progress">\n'
        f'<div class="big">{esc(" · ".join(head) or "no progress reported yet")}</div>\n'
        f"{_bar(percent)}\n"
        f'<div class="row"><span>{esc(start_label)}</span><span>{esc(tokens)}</span>'
        f"<span>{esc(end_label)}</span></div>\n{_goodput(report)}</section>"
    )


def _goodput(report: StatusReport) -> str:
    if report.goodput is None:
        return ""
    lines = "<br>".join(esc(line) for line in describe_run(report.goodput))
    return f'<p class="goodput">Goodput {lines}</p>\n'


def _narrative(narrative: Narrative) -> str:
    text = (narrative.text or "").strip()
    if not text:
        return ""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    body = "\n".join(f"<p>{rich_text(p)}</p>".replace("\n", "<br>") for p in paragraphs)
    return f'<section class="narrative" aria-label="narrative">\n{body}\n</section>'


def _alerts(report: StatusReport, zone: ZoneInfo, now: datetime) -> str:
    out = []
    if report.open_incidents:
        out.append("<h2>Open incidents</h2>")
        for incident in report.open_incidents:
            local = incident.started_at.astimezone(zone)
            since = f" · since {_day(local, zone, now)} {local:%H:%M %Z}"
            reported = incident.details.reported_cause
            cause = reported.text if reported is not None else None
            # a person's words: their masked links stay text, a URL they wrote shows as itself
            cause_html = f"<br>reported: {rich_text(neutralised(cause))}" if cause else ""
            kind = public_kind(incident)
            words = incident_kind_words(kind) if kind else ""
            out.append(
                f'<div class="alert"><b>{esc(incident.title)}</b> '
                f'<span class="muted">{esc(words)}{esc(since)}</span>'
                f"{cause_html}</div>"
            )
    drifting = [f for f in report.forecasts if f.state == "drifting"]
    if drifting:
        out.append("<h2>Drifting from forecast</h2>")
        for fc in drifting:
            band = ""
            if fc.low is not None and fc.high is not None:
                band = f" (expected {fmt_value(fc.low)}–{fmt_value(fc.high)})"
            out.append(
                f'<div class="alert drift"><b>{esc(fc.label or fc.metric)}</b>: '
                f"{esc(fmt_value(fc.value))} against a forecast of "
                f"{esc(fmt_value(fc.forecast))}{esc(band)}</div>"
            )
    return "\n".join(out)


def _footer(
    report: StatusReport,
    narrative: Narrative,
    now: datetime,
    timeline: Sequence[TimelineEntry] = (),
) -> str:
    fresh = []
    for key, when in report.freshness.items():
        status = report.sources.get(key)
        if status is not None and status.connected is not None:  # fed by the bot's gateway
            said = f"{_label(key)} {'connected' if status.connected else 'disconnected'}"
            if status.last_message_at is not None:
                said += f" · last message {_relative(status.last_message_at, now)}"
            fresh.append(said)
        elif status is not None and status.tracks_nothing:
            fresh.append(f"{_label(key)}: no threads tracked")
        elif when is not None:
            fresh.append(f"{_label(key)} {_relative(when, now)}")
    line = f"Sources: {', '.join(fresh)}. " if fresh else ""
    return f"\n<footer><p>{esc(line)}{esc(written_by(narrative, timeline))}</p></footer>"


def written_by(narrative: Narrative, timeline: Sequence[TimelineEntry]) -> str:
    """Who wrote the page's words, said once: without a model (no key set) the rules wrote the
    summary and every timeline summary and tag."""
    by_model = any(e.tag_by == "model" for e in timeline)
    if narrative.by != "llm" and not by_model:
        return f"{RULES_NOTE}."
    if narrative.by != "llm":
        return "Summary written by rules from the recorded data; timeline entries by AI."
    if not by_model and timeline:
        return "Summary written by AI from the recorded data; timeline summaries and tags by rules."
    return "Summary written by AI from the recorded data."


# --- the chart -------------------------------------------------------------------------------

# The chart is drawn in a 720-unit-wide box scaled to the page's width, so its text shrinks with
# it: on a phone (a 320-400 px page) the CSS gives the labels more units (`--chart-text`), for
# about 11 px as read; the margins leave room for them.
_W, _H = 720, 260
_L, _R, _T, _B = 64, 12, 12, 34


def forecast_at(knots: Sequence[tuple[float, float]], step: float) -> float | None:
    """The predicted loss at `step` (`bot.analysis.forecast.LossCurve`: piecewise linear in
    log(step)–log(loss) between knots, extended along the end segments)."""
    pts = sorted((float(s), float(v)) for s, v in knots if s > 0 and v > 0)
    curve = LossCurve.from_config(pts)
    return curve.at(step) if curve is not None else None


def _nice_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(count + 2) if first + i * step <= hi + 1e-12]


def _chart_section(chart: ChartData) -> str:
    svg = chart_svg(chart)
    if not svg:
        return ""
    keys = ['<span class="k-loss">— loss</span>']
    if chart.forecast:
        keys.append('<span class="k-fc">- - forecast</span>')
    if chart.restarts:
        keys.append('<span class="k-rs">┆ restart</span>')
    return f'<h2>Loss</h2>\n{svg}\n<p class="key">{"".join(keys)}</p>'


def chart_svg(chart: ChartData) -> str:
    pts = [(s, v) for s, v in chart.points if math.isfinite(v)]
    if len(pts) < 2:
        return ""
    x0 = min(s for s, _ in pts)
    x1 = max(s for s, _ in pts)
    if x1 <= x0:
        return ""
    # The first few percent of training (loss falling from ~10) would flatten everything after;
    # the y range is set by the rest, and earlier points are drawn clipped at the top.
    settled = [v for s, v in pts if s >= x0 + 0.05 * (x1 - x0)] or [v for _, v in pts]
    lo, hi = min(settled), max(settled)
    fc_values = _forecast_samples(chart, x0, x1)
    if fc_values:
        lo = min(lo, *(v for _, v in fc_values))
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    lo, hi = lo - pad, hi + pad

    def px(step: float) -> float:
        return _L + (step - x0) / (x1 - x0) * (_W - _L - _R)

    def py(value: float) -> float:
        value = min(max(value, lo), hi)
        return _T + (hi - value) / (hi - lo) * (_H - _T - _B)

    parts = [
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" '
        'aria-label="training loss against step">'
    ]
    parts += _ticks(lo, hi, x0, x1, px, py)
    for step, _when in chart.restarts:
        if x0 <= step <= x1:
            x = px(step)
            parts.append(
                f'<line class="rs" x1="{x:.1f}" x2="{x:.1f}" y1="{_T}" y2="{_H - _B}">'
                f"<title>restart at step {fmt_int(step)}</title></line>"
            )
    if fc_values:
        d = " ".join(f"{px(s):.1f},{py(v):.1f}" for s, v in fc_values)
        parts.append(f'<polyline class="fc" points="{d}"/>')
    # One polyline per stretch of training: a restart starts a new one, and points above the
    # range (the first steps) are left out rather than drawn flat along the top.
    breaks = set(chart.segments)
    line: list[str] = []
    for i, (step, value) in enumerate(pts):
        if i in breaks or value > hi:
            _flush(parts, line)
        if value <= hi:
            line.append(f"{px(step):.1f},{py(value):.1f}")
    _flush(parts, line)
    parts.append("</svg>")
    return "".join(parts)


def _forecast_samples(chart: ChartData, x0: float, x1: float) -> list[tuple[float, float]]:
    """The forecast at 41 evenly spaced steps across the chart (none without a forecast)."""
    fc_values: list[tuple[float, float]] = []
    if chart.forecast:
        for i in range(41):
            step = x0 + (x1 - x0) * i / 40
            value = forecast_at(chart.forecast, max(step, 1.0))
            if value is not None:
                fc_values.append((step, value))
    return fc_values


def _ticks(
    lo: float,
    hi: float,
    x0: float,
    x1: float,
    px: Callable[[float], float],
    py: Callable[[float], float],
) -> list[str]:
    """Grid lines with loss labels, and step labels along the bottom."""
    parts = []
    for tick in _nice_ticks(lo, hi):
        y = py(tick)
        parts.append(
            f'<line class="grid" x1="{_L}" x2="{_W - _R}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt_value(tick)}</text>'
        )
    for tick in _nice_ticks(float(x0), float(x1)):
        parts.append(
            f'<text x="{px(tick):.1f}" y="{_H - 6}" text-anchor="middle">{fmt_big(tick)}</text>'
        )
    return parts


def _flush(parts: list[str], line: list[str]) -> None:
    if len(line) >= 2:
        parts.append(f'<polyline class="loss" points="{" ".join(line)}"/>')
    line.clear()


# --- the timeline ----------------------------------------------------------------------------


def _label(source: str) -> str:
    return SOURCE_SPECS.label(source) or source


def _ordered(values: Iterable[str], kind: str) -> list[str]:
    order = SOURCE_SPECS.names() if kind == "source" else ()
    return sorted(values, key=lambda v: (order.index(v) if v in order else len(order), v))


def _filter_css(tags: Sequence[str], sources: Sequence[str]) -> str:
    rules = []
    for kind, values, prefix in (("tag", tags, "t"), ("source", sources, "s")):
        for value in values:
            ident = f"{kind}-{value}"
            # Separate rules: a browser without :has() drops only the day-hiding one.
            rules.append(
                f"#{ident}:checked~.days li:not(.{prefix}-{value}){{display:none}}\n"
                f"#{ident}:checked~.days .day:not(:has(.{prefix}-{value})){{display:none}}\n"
                f"#{ident}:checked~.filters label[for={ident}]{{background:var(--accent);"
                "color:var(--bg)}"
            )
        rules.append(
            f"#{kind}-all:checked~.filters label[for={kind}-all]{{background:var(--accent);"
            "color:var(--bg)}"
        )
    return "\n" + "\n".join(rules)


def _entry(entry: TimelineEntry, zone: ZoneInfo) -> str:
    # an untagged entry has no tag class: any tag filter hides it, "all" shows it
    tag = f"t-{css_ident(entry.tag)} " if entry.tag else ""
    source = css_ident(entry.source)
    local = entry.at.astimezone(zone)
    # the zone on every time: a reader elsewhere (or across a DST change) is never left guessing
    meta = [f'<time datetime="{_iso(entry.at)}">{esc(local.strftime("%H:%M %Z"))}</time>']
    if entry.author:
        meta.append(f"<b>{esc(entry.author)}</b>")
    if entry.ref:
        meta.append(link(entry.ref, entry.url))
    elif safe_url(entry.url):
        meta.append(link("link", entry.url))
    if entry.state:
        meta.append(f"<i>{esc(entry.state)}</i>")
    if entry.tag:
        meta.append(f"<em>{esc(entry.tag)}</em>")
    summary = entry.summary or ""
    if len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1].rstrip() + "…"
    inc = " inc" if entry.incident else ""
    return (
        f'<li class="{tag}s-{source}{inc}"><small>{" ".join(meta)}</small>'
        f"<p>{esc(summary)}</p></li>"
    )


def _timeline(
    page: RunPage, zone: ZoneInfo, tags: Sequence[str], sources: Sequence[str], *, budget: int
) -> str:
    head = [
        f'\n<section id="timeline" aria-label="timeline">\n<h2>Timeline, last {page.days} days</h2>'
    ]
    if not page.timeline:
        head.append('<p class="muted">Nothing recorded in this period.</p></section>')
        return "\n".join(head)
    for kind, values in (("tag", tags), ("source", sources)):
        for value in ["all", *values]:
            checked = " checked" if value == "all" else ""
            head.append(
                f'<input class="vh" type="radio" name="{kind}" id="{kind}-{value}" '
                f'value="{value}"{checked}>'
            )
    for kind, values, title in (("tag", tags, "Tag"), ("source", sources, "Source")):
        labels = " ".join(
            f'<label for="{kind}-{v}">{esc(_label(v) if kind == "source" else v)}</label>'
            for v in ["all", *values]
        )
        head.append(f'<div class="filters"><b>{title}</b> {labels}</div>')
    head.append('<div class="days">')
    out = "\n".join(head)
    used = len(out.encode())
    days: list[str] = []
    current_day: str | None = None
    items: list[str] = []
    shown = 0
    for entry in page.timeline:
        day = _day(entry.at, zone, page.now)
        html = _entry(entry, zone)
        cost = len(html.encode()) + 1 + (80 if day != current_day else 0)
        if used + cost > budget:
            break
        used += cost
        if day != current_day:
            if items:
                days.append(_day_block(current_day or "", items))
            current_day, items = day, []
        items.append(html)
        shown += 1
    if items:
        days.append(_day_block(current_day or "", items))
    more = ""
    if shown < len(page.timeline):
        oldest = page.timeline[shown - 1].at if shown else None
        since = f" before {_day(oldest, zone, page.now)}" if oldest else ""
        more = (
            f'\n<p class="more">Older entries{esc(since)} do not fit on this page; '
            f"<code>runscribe timeline --days {page.days}</code> lists them all.</p>"
        )
    return out + "\n" + "\n".join(days) + more + "\n</div>\n</section>"


def _day_block(day: str, items: list[str]) -> str:
    return (
        f'<section class="day"><h3>{esc(day)}</h3><ul>\n' + "\n".join(items) + "\n</ul></section>"
    )


# --- the index -------------------------------------------------------------------------------


def render_index(entries: Sequence[IndexEntry], now: datetime, title: str = "Training runs") -> str:
    items = []
    for entry in entries:
        report = entry.report
        p = report.progress
        bits = []
        if p.percent is not None:
            bits.append(fmt_percent(p.percent))
        if p.step is not None:
            bits.append(
                f"step {fmt_int(p.step)}"
                + (f" of {fmt_int(p.total_steps)}" if p.total_steps else "")
            )
        incidents = len(report.open_incidents)
        if incidents:
            bits.append(f"{incidents} open incident{'s' if incidents != 1 else ''}")
        health = css_ident(report.health or "unknown")
        items.append(
            f'<li><a href="{esc(entry.href)}">{esc(report.run.name)}</a> '
            f'<span class="state h-{health}">{esc(report.state or "unknown")}</span>'
            f'<div class="muted">{esc(" · ".join(bits))}</div>{_bar(p.percent)}</li>'
        )
    body = (
        f"<h1>{esc(title)}</h1>\n"
        + (
            '<ul class="runs">\n' + "\n".join(items) + "\n</ul>"
            if items
            else '<p class="muted">No runs are recorded yet.</p>'
        )
        + f'\n<footer><p>Generated <time data-rel="ago" datetime="{_iso(now)}">just now</time> '
        "by Runscribe.</p></footer>"
    )
    return _document(title, body)
