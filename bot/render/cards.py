"""Platform-neutral cards. A card is what an embed is to Discord and a block of text is to a
terminal: the Discord adapter (cogs) turns it into a `discord.Embed`, `render.terminal` into
lines. Cards already respect Discord's limits (title 256, description 4096, 25 fields, field
value 1024, 6000 characters in all) so no caller has to trim."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Literal

from bot.analysis.goodput import describe_run
from bot.analysis.progress import Progress
from bot.core.limits import (
    DESCRIPTION_LIMIT,
    FIELD_NAME_LIMIT,
    FIELD_VALUE_LIMIT,
    TITLE_LIMIT,
)
from bot.core.mentions import body, inert, plain, unlinked
from bot.core.numbers import fmt_big, fmt_int, fmt_percent, fmt_rate, fmt_value
from bot.core.timeutil import ago, humanize_delta, humanize_duration, resolve_zone
from bot.models import NEW_RUN, Incident, ReportedCause, Restart
from bot.narrative.entries import TimelineEntry
from bot.narrative.facts import DigestFacts
from bot.narrative.format import fmt_projected, fmt_window, margin_days, projection_is_a_day
from bot.narrative.words import credit, source_name, state_words
from bot.services.forecasts import ForecastPanel, ForecastView
from bot.services.narrative import Narrative
from bot.services.status import SourceStatus, StatusReport

Color = Literal["ok", "warning", "bad", "stale", "done", "unknown", "info"]
TimeStyle = Literal["date", "datetime", "relative", "time"]
# Formats a UTC datetime for a reader: Discord uses <t:…:D>, a terminal uses the run's zone.
TimeFormatter = Callable[[datetime, TimeStyle], str]


@dataclass(slots=True)
class CardField:
    name: str
    value: str
    inline: bool = False


@dataclass(slots=True)
class Card:
    title: str
    description: str = ""
    color: Color = "info"
    url: str | None = None
    fields: list[CardField] = field(default_factory=list)
    footer: str | None = None
    image: str | None = None  # attachment file name, e.g. "chart.png"

    def size(self) -> int:
        """Characters counted toward Discord's 6000 limit."""
        return (
            len(self.title)
            + len(self.description)
            + sum(len(f.name) + len(f.value) for f in self.fields)
            + len(self.footer or "")
        )


def clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"


def progress_bar(percent: float | None, width: int = 20) -> str:
    if percent is None:
        return "▱" * width
    filled = round(max(0.0, min(100.0, percent)) / 100 * width)
    return "▰" * filled + "▱" * (width - filled)


SOURCE_ERROR_LIMIT = 200


def _state_label(report: StatusReport) -> str:
    label = state_words(report.state)
    failing = report.failing_sources
    if failing:
        label += " · " + ", ".join(source_name(s) for s in failing) + " failing"
    elif report.monitor_stale:
        label += " · monitor stale (W&B unreachable)"
    if report.restored_at is not None:
        label += " · as stored before a restart"
    return label


def restart_text(restart: Restart) -> str:
    """'resumed from step 76,001 after 2 h 32 min down; 225 steps recomputed' (the step is the
    first one trained again; in a new W&B run, 'resumed in a new W&B run at step …')."""
    if restart.kind == NEW_RUN:
        verb = "resumed in a new W&B run" + (
            "" if restart.to_step is None else f" at step {fmt_int(restart.to_step)}"
        )
    else:
        verb = "resumed" + (
            "" if restart.to_step is None else f" from step {fmt_int(restart.to_step)}"
        )
    text = verb
    if restart.down_for:
        text += f" after {humanize_duration(restart.down_for)} down"
    if restart.recomputed_steps:
        text += f"; {fmt_int(restart.recomputed_steps)} steps recomputed"
    elif restart.recomputed_steps == 0:
        text += "; no steps recomputed"
    return text


def restart_cause_line(cause: ReportedCause | None) -> str | None:
    """'Cause (loom-oa-dev, [GitHub #8506](…)): An InfiniBand port fault …': why the run
    restarted, in the words of the person or the ops log that said it, linked."""
    if cause is None:
        return None
    where = f"[{cause.source}]({cause.url})" if cause.url else cause.source
    who = f"{inert(plain(cause.author))}, {where}" if cause.author else where
    return f"Cause ({who}): {body(plain(clip(cause.text, RESTART_CAUSE_LIMIT)))}"


RESTART_CAUSE_LIMIT = 400


def status_card(
    report: StatusReport, narrative: Narrative, fmt: TimeFormatter, *, chart: str | None = None
) -> Card:
    p = report.progress
    lines = _progress_lines(p)
    card = Card(
        title=clip(f"{report.run.name} — {_state_label(report)}", TITLE_LIMIT),
        color=_color(report),
        description=clip("\n".join(lines) + "\n\n" + narrative.text, DESCRIPTION_LIMIT),
    )
    schedule = _schedule_text(report, fmt)
    if schedule:
        card.fields.append(CardField("Schedule", schedule))
    if report.last_restart:
        r = report.last_restart
        text = f"{fmt(r.at, 'datetime')} ({fmt(r.at, 'relative')}): {restart_text(r)}"
        cause = restart_cause_line(report.restart_cause)
        if cause:
            text += "\n" + cause
        card.fields.append(CardField("Last restart", clip(text, FIELD_VALUE_LIMIT)))
    if report.goodput is not None:
        card.fields.append(CardField("Goodput", "\n".join(describe_run(report.goodput))))
    if p.loss is not None:
        curve = report.loss_forecast
        against = f"\n{curve.reason}" if curve is not None and curve.forecast is not None else ""
        card.fields.append(CardField("Loss", f"{fmt_value(p.loss)}{against}", inline=True))
    card.fields.append(
        CardField(
            "Open incidents",
            clip(_incidents_text(report, fmt), FIELD_VALUE_LIMIT),
            inline=True,
        )
    )
    watched = [f for f in report.forecasts if f.kind == "metric"]
    if watched:
        card.fields.append(
            CardField("Forecasts", clip(forecasts_summary(watched), FIELD_VALUE_LIMIT))
        )
    card.fields.append(
        CardField(
            "Sources",
            clip(
                sources_text(report.sources, report.now, fmt, restored_at=report.restored_at),
                FIELD_VALUE_LIMIT,
            ),
            inline=False,
        )
    )
    if report.links:
        links = " · ".join(f"[{label}]({url})" for label, url in report.links.items())
        card.fields.append(CardField("Links", clip(links, FIELD_VALUE_LIMIT)))
    card.footer = narrative_footer(narrative, report.now)
    card.image = chart
    return card


def _progress_lines(p: Progress) -> list[str]:
    """The bar, the step and the tokens, each against its target when there is one."""
    lines = [f"{progress_bar(p.percent)} **{fmt_percent(p.percent)}**"]
    if p.step is not None:
        total = f" of {fmt_int(p.total_steps)}" if p.total_steps else ""
        lines.append(f"step **{fmt_int(p.step)}**{total}")
    if p.tokens is not None:
        target = f" of {fmt_big(p.target_tokens)}" if p.target_tokens else ""
        lines.append(f"{fmt_big(p.tokens)}{target} tokens")
    return lines


def _schedule_text(report: StatusReport, fmt: TimeFormatter) -> str:
    """Launched, finished or projected end, and the rate while the run goes on ("": none)."""
    p = report.progress
    when = []
    if report.launched_at:
        when.append(f"launched {fmt(report.launched_at, 'date')}")
    if p.finished and p.projected_end:
        when.append(f"finished {fmt(p.projected_end, 'date')}")
    elif p.projected_end:
        when.append(f"projected end {projected_text(report, fmt)}")
    schedule = " · ".join(when)
    rate = rate_text(p)
    if rate and not p.finished:
        schedule += ("\n" if schedule else "") + rate
    return schedule


def _incidents_text(report: StatusReport, fmt: TimeFormatter) -> str:
    """The open incidents ("none") and how many there were in all."""
    lines = [
        f"• {incident_line(i, report)} (since {fmt(i.started_at, 'relative')})"
        for i in report.open_incidents
    ]
    lines = lines or ["none"]
    if report.incidents_total:
        healed = report.incidents_self_healed
        lines.append(
            f"{report.incidents_total} so far"
            + (f", {healed} cleared on its own" if healed == 1 else "")
            + (f", {healed} cleared on their own" if healed > 1 else "")
        )
    return "\n".join(lines)


def incident_line(incident: Incident, report: StatusReport) -> str:
    """An open incident as the card lists it. A watched metric's drift names the metric only:
    its value and band are the Forecasts field's, so the card shows one value per metric (the
    incident's title keeps the value it had when the drift was confirmed)."""
    view = next((f for f in report.forecasts if f.fingerprint == incident.fingerprint), None)
    if view is None or view.state != "drifting":
        return unlinked(incident.title)
    since = f" since step {fmt_int(view.drift_since_step)}" if view.drift_since_step else ""
    way = f" {view.direction}" if view.direction in ("up", "down") else ""
    return unlinked(f"{view.name} drifting{way}{since} (see Forecasts)")


#: Said once, where the card and the page say who wrote them, when no model did: a reader
#: knows the summaries and tags are the rules' (which give a tag only when they are sure).
RULES_NOTE = "Summaries and tags written by rules from the recorded data, not by a model"


def narrative_footer(narrative: Narrative, now: datetime) -> str:
    """Where the words above came from, plainly: an AI summary has an age and a next update; the
    one written by rules from the recorded data alone is always current."""
    if narrative.by != "llm":
        return RULES_NOTE
    updated = ago(narrative.at, now) if narrative.at else "never"
    footer = f"AI summary, updated {updated}"
    if narrative.next_at is not None and narrative.next_at > now:
        footer += f", next update in {humanize_delta(narrative.next_at - now)}"
    return footer


def projected_text(report: StatusReport, fmt: TimeFormatter) -> str:
    """The projected end with honest precision: a day with its range in days ("Nov 28, 2026 ±
    4 days"; the day a Discord timestamp, so each reader sees it in their own zone) when the
    margin allows one, else words in the run's zone."""
    p = report.progress
    assert p.projected_end is not None
    margin = report.projected_margin
    if margin is not None and projection_is_a_day(margin):
        days = margin_days(margin)
        return (
            f"{fmt(p.projected_end, 'date')}{days}"
            if days
            else (f"around {fmt(p.projected_end, 'date')}")
        )
    return fmt_projected(p.projected_end, report.projected_margin, report.run.timezone, report.now)


def rate_text(p: Progress) -> str:
    """Like "at 246 steps/h over the last 24 h, downtime included": the window's real length."""
    if p.rate_window is None:
        return ""
    if p.total_steps and p.steps_per_hour is not None:
        rate = fmt_rate(p.steps_per_hour, "steps/h")
    elif p.tokens_per_hour is not None:
        rate = fmt_rate(p.tokens_per_hour, "tokens/h")
    else:
        return ""
    return f"at {rate} over the last {fmt_window(p.rate_window)}, downtime included"


def failing_since_text(since: datetime | None, now: datetime, fmt: TimeFormatter) -> str:
    """Like "since 01:51" the same day, "since Nov 21, 2026 01:51" before that."""
    if since is None:
        return ""
    style: TimeStyle = "time" if now - since < timedelta(hours=20) else "datetime"
    return f" since {fmt(since, style)}"


def restored_text(at: datetime, now: datetime, fmt: TimeFormatter) -> str:
    """'as of 14:02, before Runscribe restarted' (a date before the time when not today's)."""
    style: TimeStyle = "time" if now - at < timedelta(hours=20) else "datetime"
    return f"as of {fmt(at, style)}, before Runscribe restarted"


def sources_text(
    sources: dict[str, SourceStatus | None],
    now: datetime,
    fmt: TimeFormatter,
    *,
    restored_at: datetime | None = None,
) -> str:
    """Healthy sources on one line ("W&B 2 min ago · GitHub 1 min ago · Discord connected ·
    last message 5 h ago": a gateway-fed source says whether it is connected and its newest
    message's age apart, never as a poll's age), then each failing one
    on its own line with its error ("⚠️ W&B failing since 01:51 — run … not found"). A source
    the run does not use is left out. `restored_at`: W&B shows a state stored before a restart
    (`StatusReport.restored_at`)."""
    healthy, failing = [], []
    for source, status in sources.items():
        if status is None:
            continue
        label = source_name(source)
        if status.ok and status.connected is not None:  # fed by the gateway: say so, apart
            said = f"{label} {'connected' if status.connected else 'disconnected'}"
            if status.last_message_at is not None:
                said += f" · last message {ago(status.last_message_at, now)}"
            healthy.append(said)
            continue
        if status.ok and status.tracks_nothing:  # polled, but follows no thread: not "fresh"
            healthy.append(f"{label}: no threads tracked")
            continue
        if status.ok and source == "wandb" and restored_at is not None:
            healthy.append(f"{label} {restored_text(restored_at, now, fmt)}")
            continue
        if status.ok:
            seen = ago(status.last_success_at, now) if status.last_success_at else "not polled yet"
            healthy.append(f"{label} {seen}")
            continue
        error = inert(clip(status.error or "failed", SOURCE_ERROR_LIMIT))
        failing.append(
            f"⚠️ **{label} failing**{failing_since_text(status.failing_since, now, fmt)} — {error}"
        )
    lines = ([" · ".join(healthy)] if healthy else []) + failing
    return "\n".join(lines) or "no source configured"


def forecast_line(view: ForecastView) -> str:
    """The metric key (from the runs file) in code style, so `a_b_c` stays as written."""
    key = f"`{view.metric}`"
    return view.describe(f"{view.label} ({key})" if view.label != view.metric else key)


def _learning(view: ForecastView) -> str:
    """A learning forecast says what it waits for: the W&B key never logged yet (a key the
    project does not log, or one misspelt in the runs file), or how many points it has."""
    if view.value is None:
        return f"{view.label}: waiting for `{view.metric}`, nothing logged yet"
    if view.reason and view.reason.startswith("learning: "):
        return f"{view.label}: {view.reason.removeprefix('learning: ')}"
    return view.label


def forecasts_summary(views: list[ForecastView]) -> str:
    """Drifting forecasts first, one line each; the rest summarised."""
    drifting = [v for v in views if v.state == "drifting"]
    lines = [f"⚠ {forecast_line(v)}" for v in drifting]
    outside = [v for v in views if v.state == "outside"]
    lines += [f"• {forecast_line(v)}" for v in outside]
    ok = sum(v.state == "ok" for v in views)
    learning = [v for v in views if v.state == "learning"]
    rest = []
    if ok:
        rest.append(f"{ok} within forecast")
    if learning:
        rest.append(f"{len(learning)} learning ({'; '.join(map(_learning, learning))})")
    if rest:
        lines.append(("others: " if drifting or outside else "") + ", ".join(rest))
    return "\n".join(lines)


def _color(report: StatusReport) -> Color:
    """The run's health; a failing source greys out (W&B: the state may be old) or yellows an
    otherwise healthy card, and never hides a crash."""
    failing = report.failing_sources
    if failing and report.health in ("ok", "unknown", "warning"):
        return "stale" if "wandb" in failing else "warning"
    if report.health in ("ok", "warning", "bad", "stale", "done"):
        return report.health  # type: ignore[return-value]
    return "unknown"


def entry_line(entry: TimelineEntry, *, link: bool = True) -> str:
    """`**author** [#8818](url) open — summary · tag` (no tag when the entry has none)"""
    who = f"**{inert(credit(entry.author, entry.source))}**"
    ref = entry.ref or ""
    if ref and entry.url and link:
        ref = f"[{ref}]({entry.url})"
    state = f" {entry.state}" if entry.state and entry.source == "github" else ""
    mark = "🚨 " if entry.incident else ""
    summary = body(entry.summary)  # never a masked link
    tag = f" · `{entry.tag}`" if entry.tag else ""
    return f"{mark}{who} {ref}{state} — {summary}{tag}".replace("  ", " ")


CONTINUED = "\u200b"  # a field name Discord accepts that shows nothing


def day_heading(local: datetime) -> str:
    """A day's heading, for the day as the run's team lives it: "Sat Nov 21, 2026"."""
    return f"{local:%a %b} {local.day}, {local.year}"


def timeline_pages(
    entries: list[TimelineEntry],
    title: str,
    fmt: TimeFormatter,
    *,
    zone: str = "UTC",
    page_budget: int = 4500,
    max_fields: int = 10,
) -> list[Card]:
    """Entries grouped by day in the run's time zone (newest first), each with its time, into
    pages that fit Discord's limits. A day has one heading per page: a day that fills more than
    one field continues under a blank name, and on the next page under "(cont.)"."""
    tz = resolve_zone(zone)
    pages: list[Card] = []
    current = Card(title=clip(title, TITLE_LIMIT), color="info")

    def flush() -> None:
        nonlocal current
        if current.fields:
            pages.append(current)
        current = Card(title=clip(title, TITLE_LIMIT), color="info")

    day_key: date | None = None
    for entry in entries:
        local = entry.at.astimezone(tz)
        line = clip(f"{fmt(entry.at, 'time')} {entry_line(entry)}", FIELD_VALUE_LIMIT)
        key = local.date()
        last = current.fields[-1] if current.fields else None
        fits_field = last is not None and len(last.value) + 1 + len(line) <= FIELD_VALUE_LIMIT
        fits_page = current.size() + len(line) + 1 <= page_budget
        if key == day_key and last is not None and fits_field and fits_page:
            last.value += "\n" + line
            continue
        heading = day_heading(local)
        name = heading if key != day_key else f"{heading} (cont.)"
        if len(current.fields) >= max_fields or current.size() + len(name) + len(line) > (
            page_budget
        ):
            flush()
        elif key == day_key:
            name = CONTINUED  # the same day, on the same page: its heading is already shown
        current.fields.append(CardField(clip(name, FIELD_NAME_LIMIT), line))
        day_key = key
    flush()
    if not pages:
        pages.append(Card(title=clip(title, TITLE_LIMIT), description="No entries.", color="info"))
    for number, page in enumerate(pages, 1):
        page.footer = f"page {number} of {len(pages)}"
    return pages


def source_urls(facts: DigestFacts) -> list[str]:
    """The links the digest's sources themselves carry (not URLs inside names or bodies)."""
    urls = [h.url for h in facts.highlights] + [t.url for t in facts.open_threads]
    urls += list(facts.links.values())  # the run's own pages, which its computed facts cite
    return [url for url in urls if url]


def digest_card(facts: DigestFacts, fmt: TimeFormatter, *, update: bool = False) -> Card:
    """The digest; `update` when a person asked for another on a day that already had one."""
    title = f"Daily digest — {facts.run_name}"
    lead = ""
    if update:
        title = f"Daily digest (update) — {facts.run_name}"
        lead = "An update to today's digest, asked for by a person.\n\n"
    card = Card(
        title=clip(title, TITLE_LIMIT),
        # template or LLM: names in it are the members' own; only the sources' links stay links
        description=clip(lead + body(facts.text, source_urls(facts)), DESCRIPTION_LIMIT),
        color="info",
        footer=f"{fmt(facts.start, 'datetime')} → {fmt(facts.end, 'datetime')}"
        + (" · AI summary" if facts.by == "llm" else ""),
    )
    return card


def forecast_cards(run_name: str, panels: list[ForecastPanel]) -> list[Card]:
    """One card per watched metric for `/forecast`, each with its chart `forecast-<n>.png`."""
    colors: dict[str, Color] = {
        "drifting": "warning",
        "outside": "warning",
        "ok": "ok",
        "learning": "unknown",
    }
    cards = []
    for index, panel in enumerate(panels):
        view = panel.view
        lines = [forecast_line(view)]
        if view.step is not None:
            lines.append(f"latest value at step {fmt_int(view.step)}")
        cards.append(
            Card(
                title=clip(f"{run_name} · {view.name}", TITLE_LIMIT),
                description=clip("\n".join(lines), DESCRIPTION_LIMIT),
                color=colors.get(view.state, "info"),
                image=forecast_image(index),
            )
        )
    return cards


def forecast_image(index: int) -> str:
    return f"forecast-{index}.png"
