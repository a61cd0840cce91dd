"""The grounding check: every number, date, time, reference and link in model output must come
from the facts the model was given. Numbers come from code (a design principle); this is where
that is enforced.

`FactIndex.build(text)` reads the exact text the model saw (facts, summaries, open threads) with
the same extractor that later reads the output, so both sides agree on what a number is.

What counts, and what is allowed:

- **Numbers written with digits** are always checked, single digits included: a digit is a
  quantitative claim, and the facts carry the true counts (incidents, restarts, events by tag).
  `54,000`, `54000`, `54k`, `54 thousand` and `54.0K` are the same value; `x`/`×` suffixes are
  read as plain values; ordinals (`2nd`) as their number. `64K` is also read as 65,536 and `1M`
  as 1,048,576 (how sequence lengths and sizes are said).
- **Compound tokens are read in parts.** `535B-A23B` backs `535B`, `23B` and `A23B`;
  `d512-d2048` backs `d512`; `4h34m` is a duration that backs `4 h 34 min`.
- **Units.** A percent (`%`, `percent`) is checked against percents; a duration (`47 min`,
  `4h34m`, `18 h 3 min`, `2 days`, `47-minute`) against durations, in seconds, so `4 h 34 min`,
  `274 minutes` and `about 4.5 hours` are all the same fact; a size (`4,995 GiB`, `5 TiB`,
  `5.4 TB`) against sizes, in bytes, read both as decimal and binary units. A number written
  without a unit may stand for a fact's number as written ("down 47" for "47 min").
- **Rounding is for measurements only.** A measurement (a decimal, a scaled value such as `2.46T`,
  a percent, a duration, a size, or a plain integer of 1,000 or more that is not a step) may be
  written rounded to the output's own precision: |x − f| ≤ half a unit of x's last significant
  digit (a unit of 5 when that digit is 5: "4.5 hours") AND within 5 % of the fact (10 % for
  durations, which people round to the hour). "About 2.5T" for 2.46T passes; "3T" does not.
  A **step, a count or an id must match a fact exactly**, and no rounding ever lands on one:
  a number after "step", before "steps", after "resumed/restarted/rolled back … from/at/to",
  the total in "step N of M", a plain integer under 1,000, a year, a number inside an identifier
  or a reference. So "restarted from step 56,000" fails when the facts say 55,000 and 55,500.
  A sum or difference the model computed itself fails even when right; the facts carry any
  derived number worth saying.
- **Number words**: zero…ten and the ordinals first…tenth are free, because prose needs them
  ("one question stays open", "the second fault"). Larger number words ("eighteen hours") are
  parsed and checked like digits. Known gap: a wrong small count spelled as a word ("three
  restarts" for two) is not caught.
- **Dates** (`Sep 2`, `September 2nd, 2026`, `2 Sept`, `2026-09-02`) must name a day of the facts
  (with the year, when one is written); a day of the month is a date, never a number that backs
  anything else. **Months** on their own (`in April`, `late April 2027`, `mid-May`) must be a
  month the facts name, and "early/mid/late" must agree with the facts' days or wording: a
  projected end of "mid-April 2027" does not back "late April".
- **Times are instants.** A time with a zone (`7:39 p.m. EDT`, `23:39 UTC`, `19:39 -04:00`) is
  compared as a moment: the same moment in another zone passes, and a date written with it may
  be that moment's date in the zone the output used. A time without a zone must be a time of day
  the facts name (in their own zone, or in UTC).
- **References**: `#8818` and channel names like `#hero-run` must appear verbatim.
- **Identifiers with digits** (`d1024`, `s55sxs64`, `NVL72`, a W&B run id) must appear in the
  facts, whole or as a part of a compound one; a compound written in the output passes when each
  of its parts does.
- **Links**: every URL must appear in the facts, in full (compared after trimming trailing
  punctuation and slashes). A URL the facts show cut short (ending in "…") backs nothing.

- **Rewordings a careful reader allows**: a number word with a duration unit is a duration
  ("fifteen minutes" is "15 min", both ways); a small number after "about", "around", "nearly"
  … is a rounded measurement ("about 12" for 12.2), not a count; an id may be written as a run of
  its parts ("hero_12d8b6f0" of "hero_12d8b6f0-dee637", "hero_run_3" of "marin_moe/hero_run_3").

Numbers are checked as a bag, not as statements: "step 47" passes when 47 is a downtime in the
text checked against. Cited prose (`bot.llm.cited`) makes the bag one sentence's cited facts and
reads which value goes with which words; on its own this check catches invented and garbled
numbers, not misattribution."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone

from bot.core.months import MONTH_NAMES, month_number
from bot.llm.safety import URL_RE, normalise_url

_MONTH = rf"(?P<mon>{MONTH_NAMES})\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATE_PATTERNS = (
    re.compile(r"(?<!\d)(?P<year>\d{4})-(?P<mnum>\d{2})-(?P<day>\d{2})(?!\d)"),
    re.compile(
        rf"\b{_MONTH}\s+(?P<day>\d{{1,2}}){_ORD}(?![\d:])(?:,?\s+(?P<year>\d{{4}})(?!\d))?",
        re.IGNORECASE,
    ),
    re.compile(
        rf"(?<![\w.,])(?P<day>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MONTH}(?:,?\s+(?P<year>\d{{4}})(?!\d))?\b",
        re.IGNORECASE,
    ),
)
# A month on its own: capitalised (never the verb "may" or "march"), optionally with a part of it.
_MONTH_NAMES = rf"(?P<mon>{MONTH_NAMES})\b\.?"
_MONTH_ONLY = re.compile(
    r"(?<![\w-])(?:(?P<part>early|mid|late|end\s+of|start\s+of|beginning\s+of|middle\s+of)[\s-]*(?:of\s+)?)?"
    rf"{_MONTH_NAMES}(?:,?\s+(?P<year>\d{{4}})(?!\d))?",
    re.IGNORECASE,
)
_MONTH_CAPITAL = re.compile(r"[A-Z]")
_PARTS = {
    "early": "early",
    "start of": "early",
    "beginning of": "early",
    "mid": "mid",
    "middle of": "mid",
    "late": "late",
    "end of": "late",
}
_ZONE = (
    r"(?P<zone>UTC(?:\s?[+-]\d{1,2}(?::?\d{2})?)?|GMT(?:\s?[+-]\d{1,2}(?::?\d{2})?)?"
    r"|[A-Z]{2,4}T|Z(?![\w])|[+-]\d{2}(?::?\d{2})?(?![\d:]))"
)
_AMPM = r"(?P<ampm>[ap])\.?\s?m\b\.?"
_TIME = re.compile(
    rf"(?<![\d:.])(?P<h>\d{{1,2}}):(?P<m>\d{{2}})(?::\d{{2}}(?:\.\d+)?)?(?:\s*{_AMPM})?"
    rf"(?:\s?{_ZONE})?",
    re.IGNORECASE,
)
_HOUR = re.compile(rf"(?<![\w.:])(?P<h>\d{{1,2}})\s*{_AMPM}(?:\s?{_ZONE})?", re.IGNORECASE)
# A date followed closely by a time: one instant ("Sep 1, 2026, 7:39 p.m. EDT", "Sep 2 at 02:30").
_DATE_TIME_GAP = re.compile(r"^(?:,?\s*(?:at\s+|@\s*)?|T)$", re.IGNORECASE)
_REF = re.compile(r"(?<![\w&/])#[A-Za-z0-9][\w\-]*")
_SCALE = {
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "million": 1e6,
    "b": 1e9,
    "billion": 1e9,
    "t": 1e12,
    "trillion": 1e12,
}
_BINARY_SCALE = {"k": 1024.0, "m": 1024.0**2}
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<num>\d+(?:\.\d+)?[eE][-+]?\d+|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:(?P<ord>st|nd|rd|th)|\s?(?P<scale>[kKMBT](?![A-Za-z])|thousand|million|billion|trillion)"
    r"|\s?(?P<pct>%|percent\b|pct\b)|\s?(?P<times>x(?![A-Za-z])|×))?"
    r"(?![\w])",
)
_NUM = r"\d+(?:\.\d+)?"
_DURATION_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "wk": 604800,
    "wks": 604800,
    "week": 604800,
    "weeks": 604800,
}
_DUR_UNIT = r"(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|wks?|w)(?![a-z])"
_DURATION = re.compile(
    r"(?<![\w.,])(?P<all>\d+h\d+m(?:\d+s)?|\d+d\d+h|\d+m\d+s"
    rf"|{_NUM}(?:\s?|-)(?P<u0>{_DUR_UNIT})(?![\w])"
    rf"(?:(?:\s+|\s+and\s+){_NUM}\s?{_DUR_UNIT}(?![\w]))*)",
    re.IGNORECASE,
)
_DURATION_PART = re.compile(rf"(?P<n>{_NUM})(?:\s?|-)(?P<u>{_DUR_UNIT})", re.IGNORECASE)
_SIZE_UNITS = {
    "kb": (1e3, 1024.0),
    "mb": (1e6, 1024.0**2),
    "gb": (1e9, 1024.0**3),
    "tb": (1e12, 1024.0**4),
    "pb": (1e15, 1024.0**5),
    "kib": (1024.0, 1e3),
    "mib": (1024.0**2, 1e6),
    "gib": (1024.0**3, 1e9),
    "tib": (1024.0**4, 1e12),
    "pib": (1024.0**5, 1e15),
}
_SIZE = re.compile(
    r"(?<![\w.,])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s?"
    r"(?P<u>[KMGTP]i?B)(?![A-Za-z])",
    re.IGNORECASE,
)
_IDENT = re.compile(r"[\w][\w.\-/]*")
_IDENT_SPLIT = re.compile(r"[-/_.:]+")
_EMBEDDED = re.compile(r"(?P<num>\d+(?:\.\d+)?)(?P<scale>[kKMBT](?![a-z]))?")

# Steps, the totals of "step N of M", and restart points are exact: never rounded, never reached
# by rounding. (Read in the text around a number, the same way on both sides.)
_STEP_BEFORE = re.compile(
    r"(?:\bsteps?\s*(?:#|no\.?\s*|number\s+)?"
    r"|\b(?:ckpt|checkpoint)s?\s+(?:at\s+|from\s+)?(?:step\s+)?"
    r"|\b(?:resum\w*|restart\w*|relaunch\w*|restor\w*|roll\w*\s+back|rolled|back\s+up|revert\w*"
    r"|reached|requeu\w*|recover\w*|crash\w*|died|stopp\w*|failed|hung"
    r"|stuck|stall\w*)(?:\s+\w+){0,2}\s+(?:from|at|to|around|near|after|since|on)\s+"
    r"(?:step\s+)?(?:~\s*)?"
    r"|\bsteps?\s+[\d,.]+[kKM]?\s*(?:of|/)\s*(?:the\s+)?)$",
    re.IGNORECASE,
)
_STEP_AFTER = re.compile(r"^\s*(?:training\s+|optimizer\s+|total\s+)?steps?\b", re.IGNORECASE)
COUNT_EXACT_BELOW = 1000  # plain integers below this are counts or ids: exact only
# ... unless hedged: "about 12" is 12.2 rounded, a measurement, not a count
_HEDGE = re.compile(
    r"(?:\b(?:about|around|roughly|nearly|almost|approximately|approx\.?|some|under|over)|~)\s*$",
    re.IGNORECASE,
)

_SMALL_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS_WORDS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALE_WORDS = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_WORD = re.compile(r"[A-Za-z]+|[^\sA-Za-z]")
FREE_WORD_MAX = 10  # number words up to ten are prose, not claims

RELATIVE_TOLERANCE = 0.05
DURATION_TOLERANCE = 0.10  # durations are rounded to the hour or the day by people and models

# Zone abbreviations a model (or the facts) may write after a time, in minutes east of UTC.
ZONE_OFFSETS = {
    "UTC": 0,
    "GMT": 0,
    "Z": 0,
    "WET": 0,
    "WEST": 60,
    "BST": 60,
    "CET": 60,
    "CEST": 120,
    "EET": 120,
    "EEST": 180,
    "MSK": 180,
    "IST": 330,
    "SGT": 480,
    "HKT": 480,
    "CST": -360,
    "CDT": -300,
    "EST": -300,
    "EDT": -240,
    "MST": -420,
    "MDT": -360,
    "PST": -480,
    "PDT": -420,
    "AKST": -540,
    "AKDT": -480,
    "HST": -600,
    "JST": 540,
    "KST": 540,
    "AEST": 600,
    "AEDT": 660,
    "NZST": 720,
    "NZDT": 780,
}


@dataclass(frozen=True, slots=True)
class Number:
    """One number as written. `value` is what the digits say (scale applied: "54k" is 54,000);
    `readings` are what it may mean, as (dimension, value in the base unit) with "" for a plain
    number, "%" for a percent, "s" for a duration in seconds, "B" for a size in bytes; `unit`
    is the place value of its last significant digit in `value`'s terms (0 = exact only) and
    `scale` the factor from `value`'s terms to each reading's base unit. `exact`: a step, count
    or id, which is matched only exactly."""

    raw: str
    value: float
    unit: float
    readings: tuple[tuple[str, float, float], ...] = ()  # (dimension, base value, base unit)
    exact: bool = False

    def all_readings(self) -> tuple[tuple[str, float, float], ...]:
        return self.readings or (("", self.value, self.unit),)


@dataclass(slots=True)
class GroundingReport:
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def feedback(self) -> str:
        return "\n".join(f"- {problem}" for problem in self.problems)


def _unit(digits: str, scale: float) -> float:
    """'53,000' → 1000; '13.7' → 0.1; '2.46' with scale 1e12 → 1e10; '4.5' → 0.5 (a half)."""
    digits = digits.replace(",", "")
    if "e" in digits.lower():
        return 0.0  # scientific notation: exact values only
    if "." in digits:
        decimals = len(digits.split(".", 1)[1])
        place = 10.0**-decimals
    else:
        stripped = digits.rstrip("0")
        zeros = len(digits) - len(stripped) if stripped else 0
        place = 10.0**zeros
    significant = digits.replace(".", "").strip("0")
    if significant.endswith("5") and len(significant) > 1:
        place *= 5  # "4.5", "53,500": rounded to a half
    return place * scale


def _blank(text: str, span: tuple[int, int]) -> str:
    start, end = span
    return text[:start] + " " * (end - start) + text[end:]


def _is_step(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 60) : start]
    return bool(_STEP_BEFORE.search(before) or _STEP_AFTER.match(text, end, end + 30))


def _word_numbers(text: str, keep_small: bool = False) -> list[Number]:
    """Runs of number words ("forty-seven", "ten thousand", "two hundred and five"). Single words
    up to ten are prose and left out unless `keep_small` (the facts side keeps them, so a digit
    in the output can be backed by a word in the facts)."""
    found: list[Number] = []
    joined = re.sub(r"(?<=[A-Za-z])-(?=[A-Za-z])", " ", text)
    words = [(m.group(0).lower(), m.group(0)) for m in _WORD.finditer(joined)]
    run: list[tuple[str, str]] = []

    def flush(following: str | None = None) -> None:
        while run and run[-1][0] == "and":
            run.pop()
        if not run:
            return
        total = 0.0
        current = 0.0
        for word, _ in run:
            if word in _SMALL_WORDS:
                current += _SMALL_WORDS[word]
            elif word in _TENS_WORDS:
                current += _TENS_WORDS[word]
            elif word == "hundred":
                current = (current or 1) * 100
            elif word in _SCALE_WORDS:
                total += (current or 1) * _SCALE_WORDS[word]
                current = 0
        value = total + current
        raw = " ".join(original for _, original in run)
        seconds = _DURATION_UNITS.get(following or "") if len(following or "") > 1 else None
        if not (keep_small or len(run) > 1 or value > FREE_WORD_MAX):
            pass
        elif seconds is not None:
            # "fifteen minutes" is a duration, the same fact as "15 min"
            readings = (("s", value * seconds, 0.0), ("", value, 0.0))
            found.append(Number(raw=f"{raw} {following}", value=value, unit=0.0, readings=readings))
        else:
            found.append(Number(raw=raw, value=value, unit=0.0))
        run.clear()

    for token in words:
        lower, _original = token
        last = run[-1][0] if run else None
        joins_scale = last in _SCALE_WORDS or last == "and"
        if lower in _SMALL_WORDS:
            small = _SMALL_WORDS[lower]
            if run and not (joins_scale or (last in _TENS_WORDS and small < 10)):
                flush()
            run.append(token)
        elif lower in _TENS_WORDS:
            if run and not joins_scale:
                flush()
            run.append(token)
        elif lower in _SCALE_WORDS or (lower == "and" and last in _SCALE_WORDS):
            run.append(token)
        else:
            flush(lower)
    flush()
    # "a hundred", "hundreds of" alone are vague quantifiers: drop pure scale words
    return [n for n in found if not (n.raw.lower() in _SCALE_WORDS and " " not in n.raw)]


def zone_offset(zone: str | None) -> int | None:
    """Minutes east of UTC for a zone as written after a time ("EDT", "UTC+2", "-04:00")."""
    if not zone:
        return None
    zone = zone.strip().upper().replace(" ", "")
    if zone in ZONE_OFFSETS:
        return ZONE_OFFSETS[zone]
    match = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?", zone)
    if match is None:
        return None
    sign = 1 if match.group(1) == "+" else -1
    minutes = int(match.group(2)) * 60 + int(match.group(3) or 0)
    return sign * minutes if minutes <= 14 * 60 else None  # "19:39-20:15" is a range


@dataclass(frozen=True, slots=True)
class Clock:
    """A time of day as written: hour, minute (None for "7 pm"), and the zone's offset if one
    was written."""

    raw: str
    hour: int
    minute: int | None
    offset: int | None

    def utc(self) -> tuple[int, int | None] | None:
        if self.offset is None:
            return None
        total = (self.hour * 60 + (self.minute or 0) - self.offset) % (24 * 60)
        return total // 60, (total % 60 if self.minute is not None else None)


@dataclass(slots=True)
class Extracted:
    numbers: list[Number] = field(default_factory=list)
    dates: list[tuple[str, int | None, int, int]] = field(default_factory=list)  # raw, y, m, d
    months: list[tuple[str, int | None, int, str | None]] = field(default_factory=list)
    times: list[Clock] = field(default_factory=list)
    # a date with a zoned time: the moment (UTC) and whether the minute was written
    instants: list[tuple[str, datetime, bool]] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    idents: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)


def _clock(match: re.Match[str]) -> Clock | None:
    groups = match.groupdict()
    hour = int(groups["h"])
    minute = int(groups["m"]) if groups.get("m") else None
    ampm = (groups.get("ampm") or "").lower()
    if ampm and not 1 <= hour <= 12:
        return None
    if ampm == "p" and hour < 12:
        hour += 12
    elif ampm == "a" and hour == 12:
        hour = 0
    if hour > 23 or (minute is not None and minute > 59):
        return None
    zone = groups.get("zone")
    offset = zone_offset(zone)
    raw = match.group(0)
    if zone and offset is None:  # "7:39 p.m. ABC": the letters are not a zone we know
        raw = raw[: match.start("zone") - match.start()].rstrip()
    return Clock(raw=raw, hour=hour, minute=minute, offset=offset)


def _date_of(groups: dict[str, str | None]) -> tuple[int | None, int, int] | None:
    mnum, mon = groups.get("mnum"), groups.get("mon")
    month = int(mnum) if mnum else month_number(mon or "")
    day = int(groups["day"] or 0)
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    year_text = groups.get("year")
    return (int(year_text) if year_text else None), month, day


def _instant(year: int, month: int, day: int, clock: Clock) -> datetime | None:
    if clock.offset is None:
        return None
    try:
        local = datetime(
            year,
            month,
            day,
            clock.hour,
            clock.minute or 0,
            tzinfo=timezone(timedelta(minutes=clock.offset)),
        )
    except ValueError:
        return None
    return local.astimezone(UTC)


def _duration(match: re.Match[str], text: str) -> Number | None:
    parts = list(_DURATION_PART.finditer(match.group("all")))
    seconds = 0.0
    unit_seconds = 1.0
    last_digits = ""
    for part in parts:
        unit_name = part.group("u").lower()
        factor = _DURATION_UNITS.get(unit_name)
        if factor is None:
            return None
        seconds += float(part.group("n")) * factor
        unit_seconds = factor
        last_digits = part.group("n")
    if not parts:
        return None
    first = parts[0]
    written = float(first.group("n"))
    place = _unit(last_digits, 1.0)
    readings: list[tuple[str, float, float]] = [("s", seconds, place * unit_seconds)]
    if len(parts) == 1 and first.group("u") == "m":
        readings.append(("", written * 1e6, _unit(first.group("n"), 1e6)))  # "5m": 5 million?
    return Number(
        raw=match.group("all"),
        value=written,
        unit=_unit(first.group("n"), 1.0),
        readings=tuple(readings),
    )


def extract(text: str, *, facts: bool = False) -> Extracted:
    """Pull every checkable claim out of a text; each span is consumed by one pass only. With
    `facts`, small number words are kept as numbers too, and the parts of compound identifiers
    and the numbers inside them are kept as identifiers and numbers."""
    out = Extracted()
    work = _take_urls(out, text, facts)
    work = _take_dates(out, work, facts)
    work = _take_months(out, work)
    work = _take_times(out, work)
    for match in _REF.finditer(work):
        out.refs.append(match.group(0).lower())
        work = _blank(work, match.span())
    for match in _DURATION.finditer(work):
        number = _duration(match, work)
        if number is not None:
            out.numbers.append(number)
            work = _blank(work, match.span("all"))
    work = _take_sizes(out, work)
    work = _take_numbers(out, work, text)
    work = _take_idents(out, work, facts)
    out.numbers.extend(_word_numbers(work, keep_small=facts))
    return out


def _take_urls(out: Extracted, work: str, facts: bool) -> str:
    for match in URL_RE.finditer(work):
        url = normalise_url(match.group(0))
        after = work[match.end() : match.end() + 1]
        if not (facts and (url.endswith(("…", "...")) or after == "…")):
            out.urls.append(url)
        work = _blank(work, match.span())
    return work


def _take_dates(out: Extracted, work: str, facts: bool) -> str:
    """Dates, each possibly with a zoned time after it (an instant)."""
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(work):
            date = _date_of(match.groupdict())
            mon = match.groupdict().get("mon")
            if date is None or (mon and not _MONTH_CAPITAL.match(mon)):
                continue  # "3 may be": a verb, not a month
            year, month, day = date
            out.dates.append((match.group(0), year, month, day))
            work = _blank(work, match.span())
            work = _take_instant(out, work, match, date, facts)
    return work


def _take_instant(
    out: Extracted,
    work: str,
    match: re.Match[str],
    date: tuple[int | None, int, int],
    facts: bool,
) -> str:
    """A zoned time right after the date `match` makes an instant of the two."""
    year, month, day = date
    for time_pattern in (_TIME, _HOUR):
        timed = time_pattern.search(work, match.end(), match.end() + 40)
        if timed is None or not _DATE_TIME_GAP.match(work[match.end() : timed.start()]):
            continue
        clock = _clock(timed)
        if clock is None:
            continue
        if year is not None and clock.offset is not None:
            moment = _instant(year, month, day, clock)
            if moment is not None:
                raw = f"{match.group(0)} {clock.raw}"
                out.instants.append((raw, moment, clock.minute is not None))
                work = _blank(work, (timed.start(), timed.start() + len(clock.raw)))
                if facts:  # the parts are facts too ("Sep 1", "7:39 p.m.")
                    out.times.append(clock)
                else:  # the day is checked as part of the moment
                    out.dates.pop()
        break
    return work


def _take_months(out: Extracted, work: str) -> str:
    for match in _MONTH_ONLY.finditer(work):
        mon = match.group("mon")
        if not _MONTH_CAPITAL.match(mon):
            continue
        part = _PARTS.get(" ".join((match.group("part") or "").lower().split()))
        if mon.lower() == "may" and not (part or match.group("year")):
            before = work[max(0, match.start() - 12) : match.start()].lower()
            if not re.search(
                r"\b(?:in|of|by|since|until|till|through|from|to|early|late)\s+$", before
            ):
                continue  # "May" is a verb more often than a month
        year = int(match.group("year")) if match.group("year") else None
        out.months.append((match.group(0), year, month_number(mon), part))
        work = _blank(work, match.span())
    return work


def _take_times(out: Extracted, work: str) -> str:
    for pattern in (_TIME, _HOUR):
        for match in pattern.finditer(work):
            clock = _clock(match)
            if clock is None:
                continue
            out.times.append(clock)
            work = _blank(work, (match.start(), match.start() + len(clock.raw)))
    return work


def _take_sizes(out: Extracted, work: str) -> str:
    for match in _SIZE.finditer(work):
        digits = match.group("num")
        written = float(digits.replace(",", ""))
        decimal, binary = _SIZE_UNITS[match.group("u").lower()]
        place = _unit(digits, 1.0)
        out.numbers.append(
            Number(
                raw=match.group(0),
                value=written,
                unit=place,
                readings=(
                    ("B", written * decimal, place * decimal),
                    ("B", written * binary, place * binary),
                ),
            )
        )
        work = _blank(work, match.span())
    return work


def _take_numbers(out: Extracted, work: str, text: str) -> str:
    """Plain numbers; `text` (unblanked) decides hedging and step numbers."""
    for match in _NUMBER.finditer(work):
        out.numbers.append(_plain_number(match, text))
        work = _blank(work, match.span())
    return work


def _plain_number(match: re.Match[str], text: str) -> Number:
    digits = match.group("num")
    scale_word = (match.group("scale") or "").lower()
    scale = _SCALE.get(scale_word, 1.0)
    value = float(digits.replace(",", "")) * scale
    unit = _unit(digits, scale)
    readings: list[tuple[str, float, float]] = []
    if match.group("pct"):
        readings.append(("%", value, unit))
    else:
        readings.append(("", value, unit))
        if scale_word in _BINARY_SCALE:
            binary = float(digits.replace(",", "")) * _BINARY_SCALE[scale_word]
            readings.append(("", binary, _unit(digits, _BINARY_SCALE[scale_word])))
    plain_int = (
        not scale_word
        and not match.group("pct")
        and "." not in digits
        and "e" not in digits.lower()
    )
    hedged = bool(_HEDGE.search(text[max(0, match.start() - 16) : match.start()]))
    exact = _is_step(text, *match.span()) or (
        plain_int
        and (
            (value < COUNT_EXACT_BELOW and not hedged)
            or (len(digits) == 4 and 1900 <= value <= 2100)
        )
    )
    return Number(
        raw=match.group(0).strip(),
        value=value,
        unit=unit,
        readings=tuple(readings),
        exact=exact,
    )


def _take_idents(out: Extracted, work: str, facts: bool) -> str:
    for match in _IDENT.finditer(work):
        token = match.group(0).strip(".-/")
        if any(ch.isdigit() for ch in token):
            out.idents.append(token.lower())
            work = _blank(work, match.span())
            if facts:
                _split_ident(out, token)
    return work


def _split_ident(out: Extracted, token: str) -> None:
    """The parts of a compound identifier, and the numbers inside them, are facts too."""
    for part in _IDENT_SPLIT.split(token):
        if any(ch.isdigit() for ch in part):
            out.idents.append(part.lower())
            for inner in _EMBEDDED.finditer(part):
                scale = _SCALE.get((inner.group("scale") or "").lower(), 1.0)
                base = float(inner.group("num"))
                for value in {base, base * scale}:
                    out.numbers.append(
                        Number(raw=inner.group(0), value=value, unit=0.0, exact=True)
                    )


def _third(day: int) -> str:
    return "early" if day <= 10 else "mid" if day <= 20 else "late"


@dataclass(slots=True)
class FactIndex:
    """What the model may say: numbers, days, months, times, moments, references, identifiers
    and links."""

    numbers: list[Number] = field(default_factory=list)
    days: set[tuple[int, int]] = field(default_factory=set)
    full_dates: set[tuple[int, int, int]] = field(default_factory=set)
    # (year or 0, month) → the parts of it the facts name ("early", "mid", "late"; all three
    # when the month is named without a part)
    months: dict[tuple[int, int], set[str]] = field(default_factory=dict)
    times: set[tuple[int, int]] = field(default_factory=set)
    hours: set[int] = field(default_factory=set)
    utc_times: set[tuple[int, int]] = field(default_factory=set)
    utc_hours: set[int] = field(default_factory=set)
    instants: set[datetime] = field(default_factory=set)
    refs: set[str] = field(default_factory=set)
    idents: set[str] = field(default_factory=set)
    urls: set[str] = field(default_factory=set)
    # Numbers the reader already sees next to the text (the status card's fields), which the
    # text must not restate: (what it is, value, the coarsest rounding that still restates it).
    shown: list[tuple[str, float, float]] = field(default_factory=list)

    @property
    def values(self) -> list[float]:
        return [n.value for n in self.numbers]

    def _add_month(self, year: int | None, month: int, parts: set[str]) -> None:
        for key in ((year or 0, month), (0, month)):
            self.months.setdefault(key, set()).update(parts)

    def _add_day(self, year: int | None, month: int, day: int) -> None:
        self.days.add((month, day))
        if year is not None:
            self.full_dates.add((year, month, day))
        self._add_month(year, month, {_third(day)})

    @classmethod
    def build(cls, *texts: str) -> FactIndex:
        index = cls()
        for text in texts:
            found = extract(text, facts=True)
            for number in found.numbers:
                index.numbers.append(number)
                if number.readings and number.readings[0][0] in ("%", "s", "B"):
                    # a number with a unit backs the same number written without it
                    index.numbers.append(
                        Number(raw=number.raw, value=number.value, unit=0.0, exact=True)
                    )
            for _, year, month, day in found.dates:
                index._add_day(year, month, day)
            for _, year, month, part in found.months:
                index._add_month(year, month, {part} if part else {"early", "mid", "late"})
            for _, moment, _minute in found.instants:
                index.instants.add(moment)
                index._add_day(moment.year, moment.month, moment.day)
                index.utc_times.add((moment.hour, moment.minute))
                index.utc_hours.add(moment.hour)
            for clock in found.times:
                index.hours.add(clock.hour)
                if clock.minute is not None:
                    index.times.add((clock.hour, clock.minute))
                utc = clock.utc()
                if utc is not None:
                    index.utc_hours.add(utc[0])
                    if utc[1] is not None:
                        index.utc_times.add((utc[0], utc[1]))
            index.refs.update(found.refs)
            index.urls.update(found.urls)
            index.idents.update(found.idents)
            # identifiers and refs may legitimately be quoted as bare numbers ("issue 8818")
            for ref in found.refs:
                if ref[1:].isdigit():
                    index.numbers.append(
                        Number(raw=ref, value=float(ref[1:]), unit=0.0, exact=True)
                    )
            index.idents.update(n.raw.lower() for n in found.numbers)
        return index

    def number_ok(self, number: Number) -> bool:
        return any(_matches(number, fact) for fact in self.numbers)

    def restated(self, number: Number) -> str | None:
        """What the number restates from `shown`, or None. A number that is exactly another
        fact ("the 60k checkpoint" beside step 62,840) states that fact, not the card's."""
        for label, value, coarsest in self.shown:
            if number.unit <= coarsest and _close(number.value, number.unit, value, 0.05):
                if not math.isclose(number.value, value) and any(
                    _matches(replace(number, unit=0.0, readings=()), fact) for fact in self.numbers
                ):
                    continue
                return label
        return None

    def ident_ok(self, ident: str) -> bool:
        if ident in self.idents:
            return True
        parts = [p for p in _IDENT_SPLIT.split(ident) if any(ch.isdigit() for ch in p)]
        if len(parts) > 1 and all(p in self.idents for p in parts):
            return True
        # a run of whole parts of a fact's identifier: "hero_12d8b6f0" of "hero_12d8b6f0-dee637",
        # "hero_run_3" of "marin_moe/hero_run_3" (ids are written with and without their prefix),
        # with "_" and "-" alike ("hero_12d8b6f0" of "hero-12d8b6f0-dee637")
        same = _dashes(ident)
        whole = re.compile(rf"(?:^|[-/.:]){re.escape(same)}(?:$|[-/.:])")
        return any(same in fact and whole.search(fact) for fact in map(_dashes, self.idents))

    def date_ok(self, year: int | None, month: int, day: int) -> bool:
        if (month, day) not in self.days:
            return False
        return year is None or (year, month, day) in self.full_dates

    def month_ok(self, year: int | None, month: int, part: str | None) -> bool:
        parts = self.months.get((year or 0, month))
        if not parts:
            return False
        return part is None or part in parts

    def time_ok(self, clock: Clock) -> bool:
        utc = clock.utc()
        if utc is not None:
            hour, minute = utc
            if minute is None:
                return hour in self.utc_hours
            return (hour, minute) in self.utc_times
        if clock.minute is None:
            return clock.hour in self.hours or clock.hour in self.utc_hours
        return (clock.hour, clock.minute) in self.times or (
            clock.hour,
            clock.minute,
        ) in self.utc_times

    def instant_ok(self, moment: datetime, minute: bool) -> bool:
        for fact in self.instants:
            if minute and abs((fact - moment).total_seconds()) < 60:
                return True
            if not minute and fact.replace(minute=0) == moment.replace(minute=0):
                return True
        return False


def _dashes(ident: str) -> str:
    return ident.replace("_", "-")


def _close(value: float, unit: float, fact: float, rel: float) -> bool:
    """The fact itself, or the fact rounded as the number is written."""
    if math.isclose(value, fact, rel_tol=1e-9, abs_tol=1e-9):
        return True
    diff = abs(value - fact)
    return unit > 0 and diff <= unit / 2 * (1 + 1e-9) and diff <= rel * abs(fact)


def _matches(number: Number, fact: Number, *, strict: bool = True) -> bool:
    """The output number states the fact: the same dimension and value (after unit conversion),
    rounded only when neither is a step, count or id (unless not `strict`)."""
    roundable = not strict or (not number.exact and not fact.exact)
    for dim, value, unit in number.all_readings():
        for fact_dim, fact_value, _ in fact.all_readings():
            if dim != fact_dim:
                continue
            rel = DURATION_TOLERANCE if dim == "s" else RELATIVE_TOLERANCE
            if _close(value, unit if roundable else 0.0, fact_value, rel):
                return True
    return False


def check(text: str, index: FactIndex) -> GroundingReport:
    """Every claim in `text` must be backed by `index`; the report lists the ones that are not."""
    found = extract(text)
    report = GroundingReport()
    seen: set[str] = set()

    def problem(message: str) -> None:
        if message not in seen:
            seen.add(message)
            report.problems.append(message)

    for url in found.urls:
        if url not in index.urls:
            problem(f"the link {url} is not in the facts (write links in full, exactly as given)")
    for raw, moment, minute in found.instants:
        if not index.instant_ok(moment, minute):
            problem(f"the time “{raw}” is not in the facts")
    for raw, year, month, day in found.dates:
        if not index.date_ok(year, month, day):
            problem(f"the date “{raw}” is not in the facts")
    for raw, year, month, part in found.months:
        if not index.month_ok(year, month, part):
            problem(f"“{raw}” is not in the facts")
    for clock in found.times:
        if not index.time_ok(clock):
            problem(f"the time “{clock.raw}” is not in the facts")
    for ref in found.refs:
        if ref not in index.refs:
            problem(f"the reference {ref} is not in the facts")
    for number in found.numbers:
        if not index.number_ok(number):
            if any(_matches(number, fact, strict=False) for fact in index.numbers):
                problem(
                    f"the number “{number.raw}” is not in the facts: steps, counts and ids are "
                    "written exactly as given, never rounded"
                )
            else:
                problem(f"the number “{number.raw}” is not in the facts")
        elif (label := index.restated(number)) is not None:
            problem(
                f"“{number.raw}” restates the {label}, which the status card already shows "
                "next to your text: say what it means instead, or leave it out"
            )
    for ident in found.idents:
        if not index.ident_ok(ident):
            problem(f"“{ident}” is not in the facts")
    return report


__all__ = [
    "ZONE_OFFSETS",
    "Clock",
    "FactIndex",
    "GroundingReport",
    "Number",
    "check",
    "extract",
    "zone_offset",
]
