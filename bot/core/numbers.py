"""How a run's numbers read to people: steps and counts, tokens, metric values, percentages and
rates. Every surface formats through these (the status card and the terminal, the live message,
the narrative and the facts the LLM writes from, the digest, incident posts and titles, forecasts,
the status page, the W&B events' own words), so one value reads the same everywhere, and
`bot.llm.grounded` checks a model's numbers against facts written by the same functions.

Durations are `bot.core.timeutil`'s: `humanize_duration` for how long something lasted ("under a
minute", "47 min"), `humanize_delta` for an age ("just now", "4 min"). Dates and times are
`bot.narrative.format`'s. `tests/test_numbers.py` keeps number formatting out of the surfaces."""

from __future__ import annotations

import math

MISSING = "—"  # a number not known (yet)


def fmt_int(value: float | None) -> str:
    """Steps and counts, exact and grouped: 54000 → '54,000' (a float is rounded: 245.6 →
    '246')."""
    return MISSING if value is None else f"{round(value):,}"


def fmt_big(value: float | None) -> str:
    """Tokens and other large counts, three significant digits: 2.46e12 → '2.46T'; 18e12 →
    '18T'; 9.8624e11 → '986B'; 5.3e8 → '530M'; below a thousand as written (950 → '950')."""
    if value is None:
        return MISSING
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            scaled = value / scale
            text = f"{scaled:.{max(0, 2 - math.floor(math.log10(abs(scaled))))}f}"
            if "." in text:  # '530' stays '530', '2.50' becomes '2.5'
                text = text.rstrip("0").rstrip(".")
            return text + suffix
    return f"{value:g}"


def fmt_value(value: float | None) -> str:
    """A metric's value (a loss, a gradient norm, a forecast, a threshold), four significant
    digits: 2.34567 → '2.346'; 0.012 → '0.012'; from a thousand on whole and grouped (12,346),
    from a million on like tokens (1.5M). NaN and infinities are shown as what they are."""
    if value is None:
        return MISSING
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 1e6:
        return fmt_big(value)
    if abs(value) >= 1e3:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def fmt_percent(value: float | None, decimals: int | None = 1) -> str:
    """'37.4%' (progress); `decimals=0` for a change ('down 45%'); `None` for a configured
    threshold, as a value ('12.5%', '30%')."""
    if value is None:
        return MISSING
    return f"{fmt_value(value)}%" if decimals is None else f"{value:.{decimals}f}%"


def fmt_rate(per_hour: float, unit: str) -> str:
    """A rate per hour: '246 steps/h', '1.23B tokens/h' (tokens like tokens, steps exact)."""
    number = fmt_big(per_hour) if unit.startswith("tokens") else fmt_int(per_hour)
    return f"{number} {unit}"


def fmt_points(value: float) -> str:
    """A change of a percentage, in percentage points: '1.2 pt' (its sign is the caller's)."""
    return f"{abs(value):.1f} pt"
