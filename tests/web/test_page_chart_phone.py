"""The status page's loss chart read on a phone: the SVG is scaled to the page's width, so its
labels shrink with it; the page's CSS must give them enough units that they read at about the
body text's size on phone widths (the issue measured about 4 px before)."""

from __future__ import annotations

import re

from bot.render.page import _CSS, _W, ChartData, chart_svg

PHONE_WIDTHS = (320, 360, 390, 430, 544)
ROOT_PX = 16  # rem: the browser's default root font size (the page sets none on html)


def rules_at(width: int) -> str:
    """The CSS that applies at a viewport `width`: the rules outside media queries plus those
    of every `max-width` query it satisfies (in order, so later ones win)."""
    out = []
    for media, body in re.findall(r"@media\s*\(([^)]*)\)\{((?:[^{}]*\{[^{}]*\})*)\}", _CSS):
        found = re.fullmatch(r"max-width:([\d.]+)rem", media.strip())
        if found and width <= float(found.group(1)) * ROOT_PX:
            out.append(body)
    flat = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*\}", "", _CSS)
    return flat + "".join(out)


def last_px(css: str, selector: str, prop: str) -> float:
    values = re.findall(
        rf"(?:^|[}}\s]){re.escape(selector)}\{{[^}}]*{re.escape(prop)}:([\d.]+)(px|rem)", css
    )
    assert values, (selector, prop)
    number, unit = values[-1]
    return float(number) * (ROOT_PX if unit == "rem" else 1)


def chart_text_units(css: str) -> float:
    """The font size of the chart's text, in the SVG's units."""
    declared = re.findall(r"\.chart text\{[^}]*font-size:([^;}]+)", css)[-1]
    var = re.fullmatch(r"var\(--chart-text,([\d.]+)px\)", declared.strip())
    if var is None:
        return float(declared.removesuffix("px"))
    set_ = re.findall(r"\.chart\{[^}]*--chart-text:([\d.]+)px", css)
    return float(set_[-1]) if set_ else float(var.group(1))


def test_chart_labels_read_at_least_10_px_on_a_phone() -> None:
    assert f'viewBox="0 0 {_W} ' in chart_svg(ChartData(points=[(1, 3.0), (100, 2.5)]))
    for width in PHONE_WIDTHS:
        css = rules_at(width)
        padding = last_px(css, "main", "padding")
        shown = min(width - 2 * padding, 52 * ROOT_PX)  # main's max-width
        read = chart_text_units(css) * shown / _W
        assert read >= 10, f"{width} px wide: chart labels read {read:.1f} px"
        assert read <= 16, f"{width} px wide: chart labels read {read:.1f} px"


def test_chart_labels_stay_small_on_a_wide_page() -> None:
    css = rules_at(1280)
    assert 10 <= chart_text_units(css) * 52 * ROOT_PX / _W <= 14
