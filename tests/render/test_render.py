"""The renderers on hand-built reports, no store: the status card, restart wording, the timeline
pages, the digest card, the terminal text and the JSON shapes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.analysis.progress import Progress
from bot.core.limits import FIELD_VALUE_LIMIT, TOTAL_LIMIT
from bot.models import NEW_RUN, RESTORE, Incident, Restart, RunInfo
from bot.narrative.entries import TimelineEntry
from bot.narrative.facts import DigestFacts
from bot.render.cards import (
    CONTINUED,
    TimeStyle,
    digest_card,
    entry_line,
    restart_text,
    status_card,
    timeline_pages,
)
from bot.render.json import digest_json, status_json, timeline_json
from bot.render.terminal import local_formatter, render_card, render_timeline
from bot.services.narrative import Narrative
from bot.services.status import SourceStatus, StatusReport

NOW = datetime(2026, 9, 2, 15, 30, tzinfo=UTC)


def fmt(value: datetime, style: TimeStyle) -> str:
    """A formatter that shows what it was asked for, so tests can see the style chosen."""
    return f"<{style}:{value:%m-%d %H:%M}>"


def progress(**changes: object) -> Progress:
    values: dict[str, object] = {
        "step": 4_800,
        "total_steps": 10_000,
        "tokens": 9.8624e11,
        "target_tokens": 8e12,
        "percent": 48.0,
        "steps_per_hour": 246.0,
        "tokens_per_hour": 1e9,
        "projected_end": NOW + timedelta(days=30),
        "finished": False,
        "last_point_at": NOW - timedelta(minutes=2),
        "loss": 2.06761,
        "rate_window": timedelta(hours=24),
        "rate_spread": 0.05,
    }
    values.update(changes)
    return Progress(**values)  # type: ignore[arg-type]


def report(**changes: object) -> StatusReport:
    values: dict[str, object] = {
        "run": RunInfo(slug="hero", name="Hero 535B", timezone="America/New_York"),
        "now": NOW,
        "state": "running",
        "health": "ok",
        "progress": progress(),
        "launched_at": NOW - timedelta(days=20),
        "last_restart": Restart(
            at=NOW - timedelta(days=2),
            kind=RESTORE,
            wandb_run="lab/hero/hero-1",
            from_step=4_225,
            to_step=4_000,
            stopped_at=NOW - timedelta(days=2, hours=2, minutes=32),
            resumed_at=NOW - timedelta(days=2),
        ),
        "open_incidents": [],
        "freshness": {"wandb": NOW - timedelta(minutes=2), "github": None, "discord": NOW},
        "sources": {
            "wandb": SourceStatus(ok=True, last_success_at=NOW - timedelta(minutes=2)),
            "github": None,  # the run does not use GitHub
            "discord": SourceStatus(ok=True, last_success_at=NOW),
        },
        "monitor_stale": False,
        "heartbeat_at": NOW,
        "links": {"Run spec": "https://example.org/spec"},
        "projected_margin": timedelta(days=1),
    }
    values.update(changes)
    return StatusReport(**values)  # type: ignore[arg-type]


NARRATIVE = Narrative(
    text="Hero is training.",
    at=NOW - timedelta(minutes=12),
    by="llm",
    next_at=NOW + timedelta(minutes=18),
)


def test_status_card_shows_the_numbers_and_the_narrative() -> None:
    card = status_card(report(), NARRATIVE, fmt, chart="chart.png")
    assert card.title == "Hero 535B — running" and card.color == "ok"
    assert "**48.0%**" in card.description and "step **4,800** of 10,000" in card.description
    assert "986B of 8T tokens" in card.description
    assert card.description.endswith("Hero is training.")
    fields = {f.name: f.value for f in card.fields}
    assert fields["Schedule"] == (
        "launched <date:08-13 15:30> · projected end <date:10-02 15:30> ± 1 day\n"
        "at 246 steps/h over the last 24 h, downtime included"
    )
    assert fields["Last restart"].startswith(
        "<datetime:08-31 15:30> (<relative:08-31 15:30>): resumed from step"
    )
    assert fields["Loss"] == "2.068"
    assert fields["Open incidents"] == "none"
    assert fields["Sources"] == "W&B 2 min ago · Discord just now"  # no GitHub: not used
    assert fields["Links"] == "[Run spec](https://example.org/spec)"
    assert card.footer == "AI summary, updated 12 min ago, next update in 18 min"
    assert card.image == "chart.png"


def test_status_card_colours_and_labels_what_the_monitor_cannot_see() -> None:
    stale = status_card(report(health="stale", monitor_stale=True), NARRATIVE, fmt)
    assert stale.color == "stale" and "monitor stale (W&B unreachable)" in stale.title
    crashed = status_card(report(state="crashed", health="bad"), NARRATIVE, fmt)
    assert crashed.color == "bad" and crashed.title.endswith("crashed")
    odd = status_card(report(health="weird"), NARRATIVE, fmt)
    assert odd.color == "unknown"


def test_status_card_lists_open_incidents_and_the_run_total() -> None:
    incident = Incident(
        "hero", "crash", "crash", "W&B run crashed", "firing", NOW - timedelta(hours=1)
    )
    card = status_card(
        report(open_incidents=[incident], incidents_total=4, incidents_self_healed=2),
        Narrative("x", NOW, "template"),
        fmt,
    )
    field = next(f for f in card.fields if f.name == "Open incidents")
    assert (
        field.value
        == "• W&B run crashed (since <relative:09-02 14:30>)\n4 so far, 2 cleared on their own"
    )
    # without a model the card says once that the rules wrote its words, tags included
    assert (
        card.footer == "Summaries and tags written by rules from the recorded data, not by a model"
    )


def test_status_card_stays_within_discord_limits() -> None:
    many = [Incident("hero", f"f{i}", "reported", "x" * 300, "firing", NOW) for i in range(20)]
    card = status_card(report(open_incidents=many), Narrative("y " * 4000, NOW, "llm"), fmt)
    assert card.size() <= TOTAL_LIMIT and len(card.description) <= 4096
    assert all(len(f.value) <= FIELD_VALUE_LIMIT for f in card.fields)


def test_restart_text_words_each_kind_of_restart() -> None:
    restore = Restart(
        NOW, RESTORE, "e/p/a", from_step=76_225, to_step=76_000,
        stopped_at=NOW - timedelta(hours=2, minutes=32), resumed_at=NOW,
    )  # fmt: skip
    assert restart_text(restore) == (
        "resumed from step 76,000 after 2 h 32 min down; 225 steps recomputed"
    )
    new_run = Restart(NOW, NEW_RUN, "e/p/b", previous_run="e/p/a", to_step=55_000)
    assert restart_text(new_run) == "resumed in a new W&B run at step 55,000"


def entry(hours_ago: float, summary: str, **changes: object) -> TimelineEntry:
    values: dict[str, object] = {
        "at": NOW - timedelta(hours=hours_ago),
        "author": "ana",
        "source": "github",
        "ref": "#12",
        "url": "https://github.com/o/r/issues/12",
        "state": "open",
        "summary": summary,
        "tag": "evals",
        "incident": False,
        "kind": "comment",
    }
    values.update(changes)
    return TimelineEntry(**values)  # type: ignore[arg-type]


def test_timeline_pages_group_by_day_newest_first() -> None:
    entries = [entry(1, "new eval"), entry(2, "older eval"), entry(30, "yesterday", incident=True)]
    [page] = timeline_pages(entries, "Timeline — Hero", fmt)
    assert [f.name for f in page.fields] == ["Wed Sep 2, 2026", "Tue Sep 1, 2026"]
    assert page.fields[0].value.splitlines() == [
        "<time:09-02 14:30> **ana** [#12](https://github.com/o/r/issues/12) open — new eval · "
        "`evals`",
        "<time:09-02 13:30> **ana** [#12](https://github.com/o/r/issues/12) open — older eval · "
        "`evals`",
    ]
    assert page.fields[1].value.startswith("<time:09-01 09:30> 🚨 **ana**")
    assert page.footer == "page 1 of 1"
    [empty] = timeline_pages([], "Timeline", fmt)
    assert empty.description == "No entries." and empty.footer == "page 1 of 1"


def test_timeline_pages_split_when_a_page_is_full() -> None:
    entries = [entry(i / 10, f"entry {i} " + "z" * 200) for i in range(60)]
    pages = timeline_pages(entries, "Timeline", fmt, page_budget=2000)
    assert len(pages) > 1
    assert all(p.size() <= 2000 + 300 for p in pages)  # a page closes before passing the budget
    shown = [line for p in pages for f in p.fields for line in f.value.splitlines()]
    assert len(shown) == 60  # nothing lost across pages
    assert pages[1].fields[0].name.endswith("(cont.)")  # the same day continues
    assert [p.footer for p in pages][-1] == f"page {len(pages)} of {len(pages)}"
    for page in pages:  # one heading per day per page; further fields of that day are unnamed
        named = [f.name for f in page.fields if f.name != CONTINUED]
        assert len(named) == len(set(named))


def test_timeline_days_are_the_runs_days() -> None:
    """Entries either side of UTC midnight fall on the run's local day, under one heading each:
    at 23:30 and 01:30 UTC in New York (UTC-4 in September) both are the same evening."""
    late = datetime(2026, 9, 2, 1, 30, tzinfo=UTC)  # 21:30 on Sep 1 in New York
    early = datetime(2026, 9, 1, 23, 30, tzinfo=UTC)  # 19:30 on Sep 1 in New York
    morning = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)  # 08:00 on Sep 1 in New York
    entries = [entry(0, "late", at=late), entry(0, "early", at=early), entry(0, "am", at=morning)]
    [local] = timeline_pages(entries, "Timeline", fmt, zone="America/New_York")
    assert [f.name for f in local.fields] == ["Tue Sep 1, 2026"]
    assert len(local.fields[0].value.splitlines()) == 3
    [utc] = timeline_pages(entries, "Timeline", fmt)
    assert [f.name for f in utc.fields] == ["Wed Sep 2, 2026", "Tue Sep 1, 2026"]


def digest(**changes: object) -> DigestFacts:
    values: dict[str, object] = {
        "run_slug": "hero",
        "run_name": "Hero 535B",
        "now": NOW,
        "step": 4_800,
        "window_start": NOW - timedelta(hours=24),
        "window_end": NOW,
        "step_at_start": 2_400,
        "events_in_window": 3,
        "restarts_in_window": [
            Restart(NOW - timedelta(hours=3), RESTORE, "e/p/a", from_step=4_700, to_step=4_600)
        ],
        "incidents_opened": 1,
        "incidents_resolved": 1,
        "incidents_open": 0,
        "counts_by_tag": {"evals": 2, "infra": 1},
        "entries": [entry(1, "new eval")],
        "text": "A day of evals.",
        "by": "llm",
    }
    values.update(changes)
    return DigestFacts(**values)  # type: ignore[arg-type]


def test_digest_card_and_json() -> None:
    facts = digest()
    card = digest_card(facts, fmt)
    assert card.title == "Daily digest — Hero 535B" and card.description == "A day of evals."
    assert card.footer == "<datetime:09-01 15:30> → <datetime:09-02 15:30> · AI summary"
    data = digest_json(facts)
    assert data["slug"] == "hero" and data["run"] == "Hero 535B"
    assert (data["start"], data["end"]) == ("2026-09-01T15:30:00Z", "2026-09-02T15:30:00Z")
    assert (data["step"], data["steps_gained"], data["restarts"]) == (4_800, 2_400, 1)
    assert (data["incidents_opened"], data["incidents_resolved"], data["incidents_open"]) == (
        1,
        1,
        0,
    )
    assert data["quiet"] is False and data["counts"] == {"evals": 2, "infra": 1}
    assert [e["summary"] for e in data["entries"]] == ["new eval"]


def test_a_quiet_digest_is_quiet_in_json() -> None:
    quiet = digest(events_in_window=0, restarts_in_window=[], step_at_start=4_800)
    assert digest_json(quiet)["quiet"] is True
    assert digest_json(digest(incidents=[]))["quiet"] is False  # steps were gained


def test_status_json_shape() -> None:
    data = status_json(report(), NARRATIVE)
    assert data["run"] == "Hero 535B" and data["slug"] == "hero"
    assert data["progress"]["tokens"] == 9.8624e11 and data["progress"]["percent"] == 48.0
    assert data["last_restart_at"] == "2026-08-31T15:30:00Z"
    assert data["last_restart"]["description"].startswith("resumed from step")
    assert data["freshness"] == {
        "wandb": "2026-09-02T15:28:00Z",
        "github": None,
        "discord": "2026-09-02T15:30:00Z",
    }
    assert (data["narrative"], data["narrative_by"]) == ("Hero is training.", "llm")
    assert data["narrative_at"] == "2026-09-02T15:18:00Z"
    assert data["links"] == {"Run spec": "https://example.org/spec"}


FAILING_WANDB = SourceStatus(
    ok=False,
    error="W&B (api.wandb.ai): run ent/proj/gone not found (check wandb_runs)",
    failing_since=NOW - timedelta(hours=1, minutes=39),
    last_success_at=None,
)


def test_a_failing_source_is_shown_failing_and_colours_the_card() -> None:
    failing = report(
        sources={
            "wandb": FAILING_WANDB,
            "github": SourceStatus(ok=True, last_success_at=NOW - timedelta(minutes=4)),
            "discord": None,
        }
    )
    card = status_card(failing, NARRATIVE, fmt)
    fields = {f.name: f.value for f in card.fields}
    assert fields["Sources"] == (
        "GitHub 4 min ago\n⚠️ **W&B failing** since <time:09-02 13:51> — W&B (api.wandb.ai): "
        "run ent/proj/gone not found (check wandb\\_runs)"
    )
    assert card.title == "Hero 535B — running · W&B failing"
    assert card.color == "stale"  # what W&B last said may be old: not a green card
    text = render_card(card)
    assert "W&B failing since" in text and "not found" in text

    # GitHub failing on an otherwise healthy run: yellow. A crash stays red.
    github_down = {
        "wandb": SourceStatus(ok=True, last_success_at=NOW),
        "github": SourceStatus(
            ok=False, error="repository o/r not found", failing_since=NOW - timedelta(days=2)
        ),
        "discord": None,
    }
    card = status_card(report(sources=github_down), NARRATIVE, fmt)
    assert card.color == "warning"
    assert "**GitHub failing** since <datetime:08-31 15:30>" in card.fields[-2].value
    crashed = report(sources=github_down, state="crashed", health="bad")
    assert status_card(crashed, NARRATIVE, fmt).color == "bad"


def test_status_json_sources() -> None:
    data = status_json(report(sources={**report().sources, "wandb": FAILING_WANDB}), NARRATIVE)
    assert data["sources"] == {
        "wandb": {
            "ok": False,
            "error": FAILING_WANDB.error,
            "failing_since": "2026-09-02T13:51:00Z",
            "last_success_at": None,
            "connected": None,
            "last_message_at": None,
        },
        "github": None,
        "discord": {
            "ok": True,
            "error": None,
            "failing_since": None,
            "last_success_at": "2026-09-02T15:30:00Z",
            "connected": None,
            "last_message_at": None,
        },
    }


def test_timeline_json_shape() -> None:
    [item] = timeline_json([entry(1, "new eval")])
    assert item == {
        "at": "2026-09-02T14:30:00Z",
        "author": "ana",
        "source": "github",
        "ref": "#12",
        "url": "https://github.com/o/r/issues/12",
        "state": "open",
        "summary": "new eval",
        "tag": "evals",
        "tag_by": "rules",
        "incident": False,
    }


def test_an_untagged_entry_shows_no_tag_and_says_who_judged_it() -> None:
    untagged = entry(1, "new eval", tag=None, tag_by="model")
    [item] = timeline_json([untagged])
    assert (item["tag"], item["tag_by"]) == (None, "model")
    line = entry_line(untagged)
    assert line.endswith("— new eval") and "`" not in line and "other" not in line
    local = local_formatter("America/New_York", NOW)
    assert render_timeline([untagged], local).splitlines()[1] == "  10:30 EDT  ana #12 [open]"


def test_terminal_text_in_the_runs_zone() -> None:
    local = local_formatter("America/New_York", NOW)
    assert local(NOW, "date") == "Sep 2, 2026"
    assert local(NOW, "time") == "11:30 EDT"
    assert local(NOW + timedelta(hours=3), "relative") == "in 3 h"
    assert local(NOW - timedelta(minutes=5), "relative") == "5 min ago"
    assert local_formatter("Mars/Base", NOW)(NOW, "time") == "15:30 UTC"  # unknown zone: UTC
    text = render_card(status_card(report(), NARRATIVE, local))
    assert text.splitlines()[0] == "Hero 535B — running"
    assert "Run spec (https://example.org/spec)" in text  # links spelled out, markdown dropped
    assert "**" not in text and "`" not in text
    timeline = render_timeline([entry(1, "new eval"), entry(30, "old", incident=True)], local)
    assert timeline.splitlines() == [
        "Sep 2, 2026",
        "  10:30 EDT  ana #12 [open]  (evals)",
        "      new eval",
        "",
        "Sep 1, 2026",
        "! 05:30 EDT  ana #12 [open]  (evals)",
        "      old",
    ]
    assert render_timeline([], local) == "No timeline entries."


def test_words_map_every_internal_identifier_to_plain_words() -> None:
    from bot.incidents.detectors import condition_words, incident_kind_words
    from bot.models import SOURCE_SPECS, WANDB_STATES
    from bot.narrative import words

    for source in SOURCE_SPECS.names():
        assert words.source_name(source) != source or source.istitle()
    assert words.credit(None, "wandb") == "W&B" and words.credit("  ", "github") == "GitHub"
    assert words.credit("Dana", "discord") == "Dana"
    for state in WANDB_STATES:
        assert state in words.STATE_WORDS, state
    assert condition_words("wandb-state") == "W&B run state"
    assert condition_words("drift:train/grad_norm") == "forecast drift (train/grad_norm)"
    assert condition_words("report:oom:github:o/r#1") == "a person's report (oom)"
    assert incident_kind_words("nan") == "loss became NaN"
    assert words.severity_words("critical") == "critical"
