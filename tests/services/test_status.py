"""Status, timeline and digest built from a real store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.limits import TOTAL_LIMIT
from bot.models import Event, Incident, LLMOutput, MetricPoint, RunInfo, RunSnapshot
from bot.outputs.statuspage import gather_run_page
from bot.render.cards import sources_text, status_card, timeline_pages
from bot.render.json import status_json, timeline_json
from bot.render.page import render_run_page
from bot.render.terminal import local_formatter, render_card
from bot.services.delivery import gateway_down, gateway_up
from bot.services.digest import build_digest
from bot.services.narrative import Narrative, current_narrative
from bot.services.runs import UnknownRun
from bot.services.status import build_status
from bot.services.timeline import BadFilter, build_timeline
from bot.store import Store

NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)
RUN = "e/p/hero-1"


async def seed(store: Store, *, hours: int = 48, state: str = "running") -> None:
    await store.runs.upsert(
        RunInfo(
            slug="hero",
            name="Hero 535B",
            total_steps=10_000,
            target_tokens=1e12,
            timezone="America/New_York",
            links={"Report": "https://example.org/report"},
            config={"wandb_runs": [RUN]},
        )
    )
    points = [
        MetricPoint(
            RUN,
            step=h * 100,
            at=NOW - timedelta(hours=hours - h),
            tokens=h * 1e9,
            loss=3.0 - h * 0.01,
        )
        for h in range(hours + 1)
    ]
    await store.metrics.add_points("hero", points)
    await store.snapshots.upsert(
        "hero", RunSnapshot(RUN, "hero-1", state, NOW - timedelta(hours=hours), NOW, 4800, NOW)
    )
    for source in ("wandb", "github"):
        await store.health.record_success(source, "hero", NOW - timedelta(minutes=2))


async def test_status_numbers_come_from_the_points(store: Store) -> None:
    await seed(store)
    report = await build_status(store, "hero", NOW)
    narrative = await current_narrative(store, report)
    p = report.progress
    assert p.step == 4800 and p.total_steps == 10_000
    assert p.percent == 48.0
    assert p.steps_per_hour == pytest.approx(100.0)
    assert p.projected_end == NOW + timedelta(hours=52)
    assert report.state == "running" and report.health == "ok"
    assert report.freshness["wandb"] == NOW - timedelta(minutes=2)
    assert report.freshness["discord"] is None
    data = status_json(report, narrative)
    assert data["progress"]["percent"] == data["progress"]["step"] / 10_000 * 100
    for key in (
        "run",
        "slug",
        "state",
        "launched_at",
        "projected_end",
        "last_restart_at",
        "loss",
        "open_incidents",
        "freshness",
        "narrative",
        "links",
    ):
        assert key in data
    assert set(data["freshness"]) == {"wandb", "github", "discord"}
    # the card shows the numbers; the narrative says what they cannot
    assert "Training is running normally in W&B run hero-1." in narrative.text
    assert "4,800" not in narrative.text and "10,000" not in narrative.text


async def test_crashed_run_is_bad_but_stale_monitor_is_not_a_crash(store: Store) -> None:
    await seed(store, state="crashed")
    report = await build_status(store, "hero", NOW)
    assert (report.state, report.health) == ("crashed", "bad")

    await seed(store, state="running")
    await store.health.record_success("wandb", "hero", NOW - timedelta(hours=1))
    stale = await build_status(store, "hero", NOW + timedelta(hours=2))
    assert stale.monitor_stale and stale.health == "stale"
    assert stale.state == "running"  # never "crashed" because W&B could not be reached
    assert "nothing about the run itself" in (await current_narrative(store, stale)).text


async def test_stall_is_reported(store: Store) -> None:
    await seed(store)
    await store.health.record_success("wandb", "hero", NOW + timedelta(hours=1))
    report = await build_status(store, "hero", NOW + timedelta(hours=1))
    assert report.state == "stalled" and report.health == "warning"


async def test_open_incidents_and_stored_narrative(store: Store) -> None:
    await seed(store)
    await store.incidents.save(
        Incident("hero", "node-loss", "node-loss", "Lost node s6", "firing", NOW)
    )
    await store.llm.record(
        LLMOutput("narrative", "narrative", "abc", "m", "All calm.", NOW, "hero")
    )
    report = await build_status(store, "hero", NOW)
    assert [i.title for i in report.open_incidents] == ["Lost node s6"]
    narrative = await current_narrative(store, report)
    assert narrative.text == "All calm." and narrative.by == "llm"


async def test_status_card_fits_discord_limits(store: Store) -> None:
    await seed(store)
    report = await build_status(store, "hero", NOW)
    narrative = Narrative(text="x " * 5000, at=NOW, by="llm")
    card = status_card(report, narrative, local_formatter("America/New_York", NOW))
    assert card.size() <= TOTAL_LIMIT
    assert len(card.description) <= 4096
    text = render_card(card)
    assert "Hero 535B" in text and "48.0%" in text


async def test_unknown_run(store: Store) -> None:
    with pytest.raises(UnknownRun):
        await build_status(store, "nope", NOW)


async def test_timeline_filters_and_pages(store: Store) -> None:
    await seed(store)
    events = [
        Event(
            "hero",
            "github",
            f"comment:{i}",
            "comment",
            NOW - timedelta(hours=i),
            author="ada",
            ref="#12",
            url="https://github.com/o/r/issues/12",
            body="long " * 80,
            summary=f"entry {i} " + "word " * 30,
            tag="ablation" if i % 2 else "optimizer",
        )
        for i in range(120)
    ]
    await store.events.upsert_many(events)
    for e in events:
        assert e.summary is not None and e.tag is not None
        await store.events.set_enrichment(
            e,
            summary=e.summary,
            tag=e.tag,
            incident=False,
            severity=None,
            newsworthy=True,
            enriched_by="test",
        )
    entries = await build_timeline(store, "hero", NOW, days=2)
    assert len(entries) == 49  # hours 0..48 inclusive
    assert entries[0].at > entries[-1].at
    ablations = await build_timeline(store, "hero", NOW, days=7, tag="ablation")
    assert ablations and all(e.tag == "ablation" for e in ablations)
    js = timeline_json(entries)
    assert set(js[0]) == {
        "at",
        "author",
        "source",
        "ref",
        "url",
        "state",
        "summary",
        "tag",
        "tag_by",
        "incident",
    }
    pages = timeline_pages(entries, "Timeline", local_formatter("UTC", NOW))
    assert len(pages) > 1
    for page in pages:
        assert page.size() <= TOTAL_LIMIT and len(page.fields) <= 25
        assert all(len(f.value) <= 1024 for f in page.fields)
    with pytest.raises(BadFilter):
        await build_timeline(store, "hero", NOW, tag="gossip")
    with pytest.raises(BadFilter):
        await build_timeline(store, "hero", NOW, days=0)


async def test_digest_quiet_and_busy(store: Store) -> None:
    await seed(store)
    busy = await build_digest(store, "hero", NOW)
    assert not busy.quiet and busy.steps_gained == 2400
    assert "2,400 steps" in busy.text or "+2,400" in busy.text
    later = NOW + timedelta(days=3)
    quiet = await build_digest(store, "hero", later)
    assert quiet.quiet
    assert "nothing happened" in quiet.text


def test_timeline_lines_keep_untrusted_markdown_inert() -> None:
    from bot.narrative.entries import TimelineEntry
    from bot.render.cards import entry_line

    entry = TimelineEntry(
        NOW,
        "**boss**](https://evil.example)",
        "discord",
        "#hero",
        None,
        None,
        "click [the fix](https://evil.example/x) now",
        "other",
        False,
        "message",
    )
    line = entry_line(entry)
    assert "](https://evil.example/x)" not in line  # no masked link survives
    assert "**boss**" not in line and "\\*\\*boss\\*\\*" in line


async def test_a_day_with_an_incident_open_throughout_is_not_quiet(store: Store) -> None:
    """The one DigestFacts' quiet rule: no newsworthy event, restart or progress, but an
    incident open the whole window is news (the run is down), so the digest is posted."""
    await seed(store)
    later = NOW + timedelta(days=3)
    assert (await build_digest(store, "hero", later)).quiet
    await store.incidents.save(
        Incident("hero", "crash", "crash", "W&B run crashed", "firing", NOW + timedelta(hours=1))
    )
    facts = await build_digest(store, "hero", later)
    assert not facts.quiet and facts.incidents_open == 1 and facts.incidents_opened == 0
    assert "W&B run crashed" in facts.text


async def test_only_newsworthy_events_in_the_window_count(store: Store) -> None:
    await seed(store)
    later = NOW + timedelta(days=3)
    chatter = Event("hero", "discord", "msg:1", "message", later - timedelta(hours=1), body="+1")
    after = Event("hero", "github", "issue:9", "issue", later + timedelta(hours=1), title="Later")
    await store.events.upsert_many([chatter, after])
    await store.events.set_enrichment(
        chatter, summary="+1", tag="other", incident=False, severity=None, newsworthy=False,
        enriched_by="test",
    )  # fmt: skip
    facts = await build_digest(store, "hero", later)
    assert facts.events_in_window == 0 and facts.quiet  # noise, and an event after the window


async def test_sources_follow_the_runs_file_and_keep_when_failing_began(store: Store) -> None:
    """Only the sources the run uses are reported; a failing one keeps the time its failures
    began (not the latest attempt) and its error, and a success clears both."""
    await seed(store)  # uses W&B only; GitHub has a health row but is not configured
    began = NOW - timedelta(minutes=30)
    for minutes in (30, 20, 10):
        await store.health.record_failure(
            "wandb", "hero", NOW - timedelta(minutes=minutes), "run e/p/hero-1 not found", None
        )
    report = await build_status(store, "hero", NOW)
    assert set(report.sources) == {"wandb", "github", "discord"}
    assert report.sources["github"] is None and report.sources["discord"] is None
    wandb = report.sources["wandb"]
    assert wandb is not None and not wandb.ok
    assert wandb.failing_since == began and wandb.error == "run e/p/hero-1 not found"
    assert wandb.last_success_at == NOW - timedelta(minutes=2)
    assert report.failing_sources == ["wandb"]
    text = render_card(
        status_card(report, Narrative("x", NOW, "template"), local_formatter("UTC", NOW))
    )
    assert "W&B failing since 11:30 UTC — run e/p/hero-1 not found" in text
    assert "GitHub" not in text

    await store.health.record_success("wandb", "hero", NOW)
    await store.health.record_failure("wandb", "hero", NOW + timedelta(minutes=5), "HTTP 502", None)
    wandb = (await build_status(store, "hero", NOW + timedelta(minutes=6))).sources["wandb"]
    assert wandb is not None and wandb.failing_since == NOW + timedelta(minutes=5)


async def test_discord_says_connected_and_its_last_message_apart(store: Store) -> None:
    """Discord is fed by the gateway: while it is connected the card says so, and the newest
    message's age is given apart ("last message 5 h ago"), not as a failing source's age."""
    await seed(store)
    run = await store.runs.get("hero")
    assert run is not None
    run.config = run.config.model_copy(update={"watch_channels": [42]})
    await store.runs.upsert(run)
    await store.health.record_success("discord", "hero", NOW - timedelta(minutes=1))  # on_ready
    await gateway_up(store, NOW - timedelta(minutes=1))
    message = Event(
        "hero", "discord", "msg:1", "message", NOW - timedelta(hours=5, minutes=24),
        author="Larry", ref="#hero-run", body="gate norm plot attached", thread="discord:42",
    )  # fmt: skip
    await store.events.upsert_many([message])
    report = await build_status(store, "hero", NOW)
    discord = report.sources["discord"]
    assert discord is not None and discord.connected is True
    assert discord.last_message_at == message.at
    text = sources_text(report.sources, NOW, local_formatter("America/New_York", NOW))
    assert "Discord connected · last message 5 h 24 min ago" in text, text
    page = render_run_page(await gather_run_page(store, "hero", NOW, days=7))
    assert "Discord connected · last message 5 h 24 min ago" in page  # the status page's too
    await gateway_down(store, NOW, "disconnected from the Discord gateway")
    report = await build_status(store, "hero", NOW)
    text = sources_text(report.sources, NOW, local_formatter("America/New_York", NOW))
    assert "Discord disconnected · last message 5 h 24 min ago" in text, text


async def test_a_repository_alone_says_it_tracks_no_thread(store: Store) -> None:
    """A run whose runs file names a repository but no issue, label or keyword follows no thread:
    the card and the page say "no threads tracked" instead of a fresh poll time (issue 41)."""
    await seed(store)
    run = await store.runs.get("hero")
    assert run is not None
    run.config = run.config.model_copy(update={"github_repo": "lab/model"})
    await store.runs.upsert(run)
    await store.health.record_success("github", "hero", NOW - timedelta(seconds=11))
    report = await build_status(store, "hero", NOW)
    text = sources_text(report.sources, NOW, local_formatter("UTC", NOW))
    assert "GitHub: no threads tracked" in text and "GitHub 11 s" not in text, text
    page = render_run_page(await gather_run_page(store, "hero", NOW, days=7))
    assert "GitHub: no threads tracked" in page
    run.config = run.config.model_copy(update={"github_labels": ["hero-run"]})
    await store.runs.upsert(run)
    report = await build_status(store, "hero", NOW)
    text = sources_text(report.sources, NOW, local_formatter("UTC", NOW))
    assert "no threads tracked" not in text and "GitHub" in text, text
