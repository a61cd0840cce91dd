"""The grounding check: every number, date, time, reference and link in model output must come
from the facts the model was given. Numbers come from code (DESIGN.md principle 2); this is where
that is enforced.

`FactIndex.build(text)` reads the exact text the model saw (facts, summaries, open threads) with
the same extractor that later reads the output, so both sides agree on what a number is.

What counts, and what is allowed:

- **Numbers written with digits** are always checked, single digits included: a digit is a
  quantitative claim, and the facts carry the true counts (incidents, restarts, events by tag).
  `54,000`, `54000`, `54k`, `54 thousand` and `54.0K` are the same value; `%`/`percent` and
  `x`/`×` suffixes are read as plain values; ordinals (`2nd`) as their number.
- **Rounding is allowed, arithmetic is not.** An output number matches a fact when it is equal, or
  when it is that fact rounded to the precision the output wrote (|x − f| ≤ half a unit of x's last
  significant digit) AND within 5 % of it: "about 53,000" or "53k" for 53,421 pass; "54k", "50,000"
  and "100k" do not. A sum or difference the model computed itself fails even when right; the
  facts should carry any derived number worth saying.
- **Number words**: zero…ten and the ordinals first…tenth are free, because prose needs them ("one
  question stays open", "the second fault"). Larger number words ("eighteen hours", "ten
  thousand steps") are parsed and checked like digits. Known gap: a wrong small count spelled as a
  word ("three restarts" for two) is not caught; the prompt asks for words only for small counts
  but the check cannot tell a right one from a wrong one.
- **Dates** (`Sep 2`, `September 2nd, 2026`, `2 Sept`, `2026-09-02`) must name a day that appears
  in the facts (with the year, when one is written). **Times** (`7:39 p.m.`, `19:39`, `7 pm`) must
  name a time of day in the facts. Facts render dates and times in the run's time zone; a model
  that converts zones is rejected.
- **References**: `#8818` and channel names like `#hero-run` must appear verbatim.
- **Identifiers with digits** (`d1024`, `s55sxs64`, `NVL72`, a W&B run id) must appear verbatim.
- **Links**: every URL must appear in the facts (compared after trimming trailing punctuation and
  slashes).

Numbers are checked as a bag, not as statements: "step 47" passes when 47 is a downtime in the
facts. The check catches invented and garbled numbers, not every misattribution."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from bot.llm.safety import URL_RE, normalise_url

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_ORD = r"(?:st|nd|rd|th)?"
_DATE_PATTERNS = (
    re.compile(r"(?<!\d)(?P<year>\d{4})-(?P<mnum>\d{2})-(?P<day>\d{2})(?!\d)"),
    re.compile(
        rf"\b{_MONTH}\s+(?P<day>\d{{1,2}}){_ORD}(?!\d)(?:,?\s+(?P<year>\d{{4}})(?!\d))?",
        re.IGNORECASE,
    ),
    re.compile(
        rf"(?<![\w.,])(?P<day>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MONTH}(?:,?\s+(?P<year>\d{{4}})(?!\d))?\b",
        re.IGNORECASE,
    ),
)
_AMPM = r"(?P<ampm>[ap])\.?\s?m\b\.?"
_TIME = re.compile(
    rf"(?<![\d:.])(?P<h>\d{{1,2}}):(?P<m>\d{{2}})(?::\d{{2}}(?:\.\d+)?)?(?:\s*{_AMPM})?",
    re.IGNORECASE,
)
_HOUR = re.compile(rf"(?<![\w.:])(?P<h>\d{{1,2}})\s*{_AMPM}", re.IGNORECASE)
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
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<num>\d+(?:\.\d+)?[eE][-+]?\d+|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:(?P<ord>st|nd|rd|th)|\s?(?P<scale>[kKMBT](?![A-Za-z])|thousand|million|billion|trillion)"
    r"|\s?(?P<pct>%|percent)|\s?(?P<times>x(?![A-Za-z])|×))?"
    r"(?![\w])",
)
_IDENT = re.compile(r"[\w][\w.\-/]*")

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


@dataclass(frozen=True, slots=True)
class Number:
    raw: str
    value: float
    unit: float  # place value of the last significant digit as written (0 = exact only)


@dataclass(slots=True)
class GroundingReport:
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def feedback(self) -> str:
        return "\n".join(f"- {problem}" for problem in self.problems)


def _unit(digits: str, scale: float) -> float:
    """'53,000' → 1000; '13.7' → 0.1; '2.46' with scale 1e12 → 1e10."""
    digits = digits.replace(",", "")
    if "e" in digits.lower():
        return 0.0  # scientific notation: exact values only
    if "." in digits:
        decimals = len(digits.split(".", 1)[1])
        return 10.0**-decimals * scale
    stripped = digits.rstrip("0")
    zeros = len(digits) - len(stripped) if stripped else 0
    return 10.0**zeros * scale


def _blank(text: str, span: tuple[int, int]) -> str:
    start, end = span
    return text[:start] + " " * (end - start) + text[end:]


def _word_numbers(text: str, keep_small: bool = False) -> list[Number]:
    """Runs of number words ("forty-seven", "ten thousand", "two hundred and five"). Single words
    up to ten are prose and left out unless `keep_small` (the facts side keeps them, so a digit
    in the output can be backed by a word in the facts)."""
    found: list[Number] = []
    joined = re.sub(r"(?<=[A-Za-z])-(?=[A-Za-z])", " ", text)
    words = [(m.group(0).lower(), m.group(0)) for m in _WORD.finditer(joined)]
    run: list[tuple[str, str]] = []

    def flush() -> None:
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
        if keep_small or len(run) > 1 or value > FREE_WORD_MAX:
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
            flush()
    flush()
    # "a hundred", "hundreds of" alone are vague quantifiers: drop pure scale words
    return [n for n in found if not (n.raw.lower() in _SCALE_WORDS and " " not in n.raw)]


@dataclass(slots=True)
class Extracted:
    numbers: list[Number] = field(default_factory=list)
    dates: list[tuple[str, int | None, int, int]] = field(default_factory=list)  # raw, y, m, d
    times: list[tuple[str, int, int | None]] = field(default_factory=list)  # raw, hour, minute
    refs: list[str] = field(default_factory=list)
    idents: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)


def extract(text: str, *, facts: bool = False) -> Extracted:
    """Pull every checkable claim out of a text; each span is consumed by one pass only. With
    `facts`, small number words are kept as numbers too."""
    out = Extracted()
    work = text
    for match in URL_RE.finditer(work):
        out.urls.append(normalise_url(match.group(0)))
        work = _blank(work, match.span())
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(work):
            groups = match.groupdict()
            month = (
                int(groups["mnum"]) if groups.get("mnum") else _MONTHS[groups["mon"][:3].lower()]
            )
            day = int(groups["day"])
            if not 1 <= month <= 12 or not 1 <= day <= 31:
                continue
            year = int(groups["year"]) if groups.get("year") else None
            out.dates.append((match.group(0), year, month, day))
            work = _blank(work, match.span())
    for pattern in (_TIME, _HOUR):
        for match in pattern.finditer(work):
            hour = int(match.group("h"))
            minute = (
                int(match.group("m")) if "m" in match.groupdict() and match.group("m") else None
            )
            ampm = (match.group("ampm") or "").lower()
            if ampm == "p" and hour < 12:
                hour += 12
            elif ampm == "a" and hour == 12:
                hour = 0
            if hour > 23 or (minute is not None and minute > 59):
                continue
            out.times.append((match.group(0), hour, minute))
            work = _blank(work, match.span())
    for match in _REF.finditer(work):
        out.refs.append(match.group(0).lower())
        work = _blank(work, match.span())
    for match in _NUMBER.finditer(work):
        digits = match.group("num")
        scale_word = (match.group("scale") or "").lower()
        scale = _SCALE.get(scale_word, 1.0)
        value = float(digits.replace(",", "")) * scale
        out.numbers.append(
            Number(raw=match.group(0).strip(), value=value, unit=_unit(digits, scale))
        )
        work = _blank(work, match.span())
    for match in _IDENT.finditer(work):
        token = match.group(0).strip(".-/")
        if any(ch.isdigit() for ch in token):
            out.idents.append(token.lower())
            work = _blank(work, match.span())
    out.numbers.extend(_word_numbers(work, keep_small=facts))
    return out


@dataclass(slots=True)
class FactIndex:
    """What the model may say: values, days, times, references, identifiers and links."""

    values: list[float] = field(default_factory=list)
    days: set[tuple[int, int]] = field(default_factory=set)
    full_dates: set[tuple[int, int, int]] = field(default_factory=set)
    times: set[tuple[int, int]] = field(default_factory=set)
    hours: set[int] = field(default_factory=set)
    refs: set[str] = field(default_factory=set)
    idents: set[str] = field(default_factory=set)
    urls: set[str] = field(default_factory=set)
    # Numbers the reader already sees next to the text (the status card's fields), which the
    # text must not restate: (what it is, value, the coarsest rounding that still restates it).
    shown: list[tuple[str, float, float]] = field(default_factory=list)

    @classmethod
    def build(cls, *texts: str) -> FactIndex:
        index = cls()
        for text in texts:
            found = extract(text, facts=True)
            index.values.extend(n.value for n in found.numbers)
            for _, year, month, day in found.dates:
                index.days.add((month, day))
                index.values.append(float(day))
                if year is not None:
                    index.full_dates.add((year, month, day))
                    index.values.append(float(year))
            for _, hour, minute in found.times:
                index.hours.add(hour)
                if minute is not None:
                    index.times.add((hour, minute))
            index.refs.update(found.refs)
            index.urls.update(found.urls)
            index.idents.update(found.idents)
            # identifiers and refs may legitimately be quoted as bare numbers ("issue 8818")
            for ref in found.refs:
                if ref[1:].isdigit():
                    index.values.append(float(ref[1:]))
            index.idents.update(n.raw.lower() for n in found.numbers)
        return index

    def number_ok(self, number: Number) -> bool:
        return any(_same(number, fact) for fact in self.values)

    def restated(self, number: Number) -> str | None:
        """What the number restates from `shown`, or None."""
        for label, value, coarsest in self.shown:
            if number.unit <= coarsest and _same(number, value):
                return label
        return None


def _same(number: Number, fact: float) -> bool:
    """The fact itself, or the fact rounded as the number is written."""
    if math.isclose(number.value, fact, rel_tol=1e-9, abs_tol=1e-9):
        return True
    diff = abs(number.value - fact)
    return (
        number.unit > 0
        and diff <= number.unit / 2 * (1 + 1e-9)
        and diff <= RELATIVE_TOLERANCE * abs(fact)
    )


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
            problem(f"the link {url} is not in the facts")
    for raw, year, month, day in found.dates:
        if (month, day) not in index.days or (
            year is not None and (year, month, day) not in index.full_dates
        ):
            problem(f"the date “{raw}” is not in the facts")
    for raw, hour, minute in found.times:
        if minute is None:
            if hour not in index.hours:
                problem(f"the time “{raw}” is not in the facts")
        elif (hour, minute) not in index.times:
            problem(f"the time “{raw}” is not in the facts")
    for ref in found.refs:
        if ref not in index.refs:
            problem(f"the reference {ref} is not in the facts")
    for number in found.numbers:
        if not index.number_ok(number):
            problem(f"the number “{number.raw}” is not in the facts")
        elif (label := index.restated(number)) is not None:
            problem(
                f"“{number.raw}” restates the {label}, which the status card already shows "
                "next to your text: say what it means instead, or leave it out"
            )
    for ident in found.idents:
        if ident not in index.idents:
            problem(f"“{ident}” is not in the facts")
    return report


def check_against(text: str, *fact_texts: str) -> GroundingReport:
    return check(text, FactIndex.build(*fact_texts))


__all__ = ["FactIndex", "GroundingReport", "Number", "check", "check_against", "extract"]
