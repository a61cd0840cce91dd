"""The recipe of docs/architecture.md ("Where a change goes"), followed to the letter and run.

A new source is its module (here: `MatrixSource` and its builder `live_sources`, in this file)
plus ONE `SourceSpec` registered in `bot.models.SOURCE_SPECS`; a new detector is its function
(`detect_ceiling`) plus ONE `DetectorSpec` registered in `bot.incidents.detectors.DETECTORS`.
Nothing else is touched. Then every surface is asked about them: the live sources a run polls
(`bot.process.wiring.LiveSources`), the pipeline (poll, chat bursts folded into a conversation, the
incident engine), `/status`, `/timeline` and `/digest` through discord.py's real command tree,
the status page and `/healthz`. Each assertion names something only the registration says (the
label "Matrix", its freshness, its conversation, the detector's title and kind words), so a
second per-source or per-detector table that the recipe does not name fails here. The detector's
threshold is declared in its registration only, and a runs file tunes it per run: `[runs.alerts]`
is judged against what is registered (an unknown key, a bad value: refused with the path).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.config.runsfile import ConfigError, RunConfig, Threshold, load_runs_file
from bot.config.settings import RunsFile, Settings
from bot.core.timeutil import utcnow
from bot.incidents.detectors import (
    DETECTORS,
    Detection,
    DetectorSpec,
    Finding,
    RunData,
    threshold,
)
from bot.models import SOURCE_SPECS, Event, SourceSpec
from bot.outputs.statuspage import health_report, render_pages
from bot.process import wiring
from bot.process.pipeline import run_cycle
from bot.process.runtime import record_runs
from bot.render.json import status_json
from bot.services.narrative import status_with_narrative
from bot.sources.base import LiveContext, PollResult
from bot.store import Store
from tests.bot.conftest import StartBot, with_config
from tests.bot.test_cogs import final_message
from tests.cli.inprocess import run_main
from tests.cli.test_fast_imports import clean_env
from tests.fakes.discord import FakeDiscord

SOURCE = "matrix"
LABEL = "Matrix"
CHANNEL = "#ops-room"
CEILING = "loss-ceiling"
TITLE = "Loss above its ceiling"
KIND_WORDS = "loss over its ceiling"

# --- the source's module: what the recipe's "a module in bot/sources/" holds -------------------


class MatrixSource:
    """A chat the team writes in: each poll stores what was said (two messages a minute apart,
    one burst) for every run it serves."""

    name = SOURCE

    def __init__(self, store: Store, slugs: Sequence[str]):
        self.store = store
        self.slugs = list(slugs)
        self.polls = 0

    @property
    def key(self) -> str:
        return f"{SOURCE}:{','.join(self.slugs)}"

    @property
    def run_slugs(self) -> list[str]:
        return self.slugs

    async def poll(self, now: datetime) -> PollResult:
        self.polls += 1
        said = [
            ("ana", "node 12 keeps dropping off the fabric, draining it now"),
            ("bo", "thanks, I will requeue the job on the spare nodes once it is out"),
        ]
        events = [
            Event(
                run_slug=slug,
                source=SOURCE,
                external_id=f"msg:{n}",
                kind="message",
                at=now - timedelta(minutes=5 - n),
                author=author,
                ref=CHANNEL,
                body=text,
                thread=f"{SOURCE}:ops-room",
            )
            for slug in self.slugs
            for n, (author, text) in enumerate(said)
        ]
        result = await self.store.events.upsert_many(events)
        return PollResult(events=len(result.changed))


async def live_sources(context: LiveContext, runs: Sequence[RunConfig]) -> list[MatrixSource]:
    """The builder its registration names (`SourceSpec.build`)."""
    return [MatrixSource(context.store, [run.slug for run in runs])]


# --- the detector: a function and its registry entry ------------------------------------------


def detect_ceiling(data: RunData) -> Detection:
    """The latest loss above a ceiling (its threshold's default is the registration's), with
    what the team said in the Matrix room meanwhile as evidence: the new source's events, which
    the registration says it reads, so the engine hands them over."""
    ceiling = threshold(data, "loss_ceiling")
    latest = next((p for p in reversed(data.series) if p.loss is not None), None)
    if latest is None or latest.loss is None or latest.loss <= ceiling:
        return Detection(clear_at=data.now)
    said = [e for e in data.events_of(SOURCE, "message") if e.at >= data.eval_start]
    finding = Finding(
        fingerprint=CEILING,
        kind="ceiling",
        severity="warning",
        title=f"{TITLE} ({ceiling:g})",
        cause=f"loss {latest.loss:.3f} at step {latest.step:,}",
        since=latest.at,
        event_ids=[e.id for e in said if e.id is not None],
    )
    return Detection(findings=[finding])


SOURCE_SPEC = SourceSpec(
    SOURCE,
    LABEL,
    people=True,
    configured=lambda config: True,
    chat=True,
    build=f"{__name__}:live_sources",
)
DETECTOR_SPEC = DetectorSpec(
    CEILING,
    detect_ceiling,
    "monitor",  # judged whatever W&B's own freshness (the sample's is hours old)
    words="loss ceiling",
    kind="ceiling",
    kind_words=KIND_WORDS,
    description="the loss above a fixed ceiling",
    # below any loss the sample logs; a runs file may set any positive ceiling
    thresholds=(Threshold("loss_ceiling", 0.001, gt=0),),
    reads=((SOURCE, "message"),),  # the new source's messages, read for it by the engine
)
TUNED = 0.0025  # what the recipe's runs file sets


@pytest.fixture
def registered() -> Iterator[None]:
    """The one registration of each, through the public registries; both restored after."""
    SOURCE_SPECS.register(SOURCE_SPEC)
    DETECTORS.register(DETECTOR_SPEC)
    try:
        yield
    finally:
        SOURCE_SPECS.unregister(SOURCE)
        DETECTORS.unregister(CEILING)


def text_of(message: dict[str, Any]) -> str:
    parts = []
    for embed in message["embeds"]:
        parts += [embed.get("title", ""), embed.get("description", "")]
        parts += [f"{f['name']}\n{f['value']}" for f in embed.get("fields", [])]
    return "\n".join(parts)


async def test_a_source_and_a_detector_added_by_the_recipe_reach_every_surface(
    registered: None,
    start_bot: StartBot,
    fake: FakeDiscord,
    seeded_store: Store,
    runs: RunsFile,
) -> None:
    store = seeded_store
    runs = with_config(runs, alerts={"loss_ceiling": TUNED})  # the run's [runs.alerts]
    await record_runs(store, runs)
    [run] = runs.runs
    now = utcnow()

    # Built for the run by wiring, which names no source.
    settings = Settings(_env_file=None, wandb_api_key=None)  # type: ignore[call-arg]
    async with AsyncExitStack() as stack:
        built = await wiring.LiveSources(store, settings, stack).build(runs.runs)
    matrix = [s for s in built if s.name == SOURCE]
    assert len(matrix) == 1 and matrix[0].run_slugs == [run.slug]
    assert {"github", "wandb"} <= {s.name for s in built}  # the sample's own, built the same way

    # The real pipeline: polled (its freshness recorded), the burst folded into one
    # conversation, the registered detector run by the engine.
    summary = await run_cycle(store, matrix, now, detector=wiring.incident_detector(runs.runs))
    assert not summary.errors and summary.poll.failures == {}
    assert isinstance(matrix[0], MatrixSource) and matrix[0].polls == 1
    [conversation] = [
        e
        for e in await store.events.in_thread(run.slug, f"{SOURCE}:ops-room")
        if e.kind == "conversation"
    ]
    assert conversation.source == SOURCE and conversation.author == "ana and bo"
    [incident] = [i for i in await store.incidents.find(run.slug, open_only=True)]
    assert incident.fingerprint == CEILING  # the sample's own incidents are resolved
    assert incident.title == f"{TITLE} ({TUNED:g})"  # judged by the run's own ceiling
    # ... and by the Matrix messages the registration says it reads: cited as its evidence
    messages = await store.events.of_kind(run.slug, SOURCE, "message")
    assert len(messages) == 2
    assert incident.id is not None
    assert {m.id for m in messages} <= set(await store.incidents.linked_ids(incident.id))
    assert [s.source for s in incident.details.signals].count(f"{LABEL} {CHANNEL}") == 2

    # The status report and its JSON: the source's freshness and health, the incident's kind.
    report, narrative = await status_with_narrative(store, run.slug, now)
    assert report.freshness[SOURCE] == now
    status = report.sources[SOURCE]
    assert status is not None and status.ok
    data = status_json(report, narrative)
    assert [i["kind"] for i in data["open_incidents"]] == ["ceiling"]

    await start_bot(runs_file=runs)
    # /status through the command tree: the label with its freshness, and the incident.
    message = await final_message(fake, await fake.slash("status"))
    [embed] = message["embeds"]
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert f"{LABEL} " in fields["Sources"] and "not polled yet" not in fields["Sources"]
    assert TITLE in fields["Open incidents"]

    # /timeline: each message of the conversation, credited to its author, in its channel.
    message = await final_message(fake, await fake.slash("timeline", [_days(1)]))
    shown = text_of(message)
    assert "**ana** #ops-room" in shown and "**bo** #ops-room" in shown, shown

    # /digest: the incident, by its title.
    message = await final_message(fake, await fake.slash("digest"))
    assert TITLE in text_of(message)

    # The status page: the label in the sources line and the timeline's filter, the incident
    # in the detector's own words.
    pages = await render_pages(store, now, only=run.slug)
    page = pages[f"{run.slug}.html"]
    assert f"{LABEL} " in page and f">{LABEL}</label>" in page
    assert TITLE in page and KIND_WORDS in page

    # /healthz: the source configured for the run and healthy.
    health = await health_report(store, now, poll_interval=60, watching_since=now)
    assert health.body["runs"][run.slug][SOURCE]["ok"] is True


def test_the_registration_is_restored_after_the_recipe() -> None:
    assert SOURCE not in SOURCE_SPECS
    assert all(spec.fingerprint != CEILING for spec in DETECTORS)


def _days(n: int) -> dict[str, Any]:
    return {"name": "days", "type": 4, "value": n}


def test_a_registration_that_does_not_hold_together_is_refused() -> None:
    with pytest.raises(ValueError, match="plain lowercase identifier"):
        SourceSpec("Matrix Chat", LABEL, people=True, configured=lambda config: True)
    with pytest.raises(ValueError, match="say which runs use it"):
        SourceSpec(SOURCE, LABEL, people=True)  # polled, yet no run would ever show it
    with pytest.raises(ValueError, match="module:function"):
        SourceSpec(SOURCE, LABEL, people=True, configured=lambda c: True, build="tests.bot")
    with pytest.raises(ValueError, match="registered already"):
        SOURCE_SPECS.register(SourceSpec("github", "GitHub again", people=True, polled=False))
    with pytest.raises(ValueError, match="overlaps"):
        DETECTORS.register(DetectorSpec("drift:train/loss", detect_ceiling, "wandb"))


def test_two_detectors_never_share_a_threshold(registered: None) -> None:
    taken = (Threshold("loss_ceiling", 1),)
    other = DetectorSpec("other", detect_ceiling, "wandb", thresholds=taken)
    with pytest.raises(ValueError, match="threshold name"):
        DETECTORS.register(other)
    engine = (Threshold("pending_minutes", 1),)  # an engine-wide key is no detector's
    with pytest.raises(ValueError, match="threshold name"):
        DETECTORS.register(DetectorSpec("other", detect_ceiling, "wandb", thresholds=engine))
    assert all(spec.fingerprint != "other" for spec in DETECTORS)
    with pytest.raises(ValueError, match="its default: Input should be greater than 0"):
        Threshold("loss_floor", 0, gt=0)


RUNS_FILE = """
[[runs]]
slug = "hero"
name = "Hero"
github_repo = "lab/model"

[runs.alerts]
"""


def _runs_file(tmp_path: Path, alerts: str) -> Path:
    path = tmp_path / "runscribe.toml"
    path.write_text(RUNS_FILE + alerts)
    return path


def test_the_runs_file_tunes_the_registered_threshold(registered: None, tmp_path: Path) -> None:
    runs = load_runs_file(_runs_file(tmp_path, "loss_ceiling = 2.5\nstall_minutes = 5\n"))
    assert runs.runs[0].alerts.value("loss_ceiling") == 2.5
    assert runs.runs[0].alerts.value("stall_minutes") == 5  # a built-in detector's, alongside
    untuned = load_runs_file(_runs_file(tmp_path, ""))
    assert untuned.runs[0].alerts.value("loss_ceiling") == 0.001  # the registration's default


@pytest.mark.parametrize(
    ("alerts", "problem"),
    [
        ("loss_celing = 2.5\n", "runs[0].alerts.loss_celing: unknown key"),
        (
            "loss_ceiling = -1\n",
            "runs[0].alerts.loss_ceiling: Input should be greater than 0 (got -1)",
        ),
        (
            'loss_ceiling = "high"\n',
            "runs[0].alerts.loss_ceiling: Input should be a valid number",
        ),
    ],
)
def test_the_runs_file_is_judged_by_the_registration(
    registered: None, tmp_path: Path, alerts: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_runs_file(_runs_file(tmp_path, alerts))
    assert [p for p in raised.value.problems if p.startswith(problem)] != [], raised.value.problems


def test_an_unregistered_detector_has_no_threshold_to_set(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"runs\[0\]\.alerts\.loss_ceiling: unknown key"):
        load_runs_file(_runs_file(tmp_path, "loss_ceiling = 2.5\n"))


CLEARED = ("RUNSCRIBE_", "DISCORD_", "ANTHROPIC_", "WANDB_", "GITHUB_")  # as clean_env clears


@pytest.mark.parametrize(
    ("alerts", "code", "said"),
    [
        ("loss_ceiling = 2.5\n", 0, "1 run(s) OK"),
        ("loss_ceiling = 0\n", 2, "runs[0].alerts.loss_ceiling: Input should be greater than 0"),
        ("loss_ceiling_x = 1\n", 2, "runs[0].alerts.loss_ceiling_x: unknown key"),
    ],
)
def test_check_config_judges_the_registered_threshold(
    registered: None, tmp_path: Path, alerts: str, code: int, said: str
) -> None:
    """`runscribe check-config` with the dummy detector registered: exit 2 and the path for a
    bad value or an unknown key, like every config error."""
    _runs_file(tmp_path, alerts)
    done = run_main(tmp_path, "check-config", env=clean_env(tmp_path), cleared=CLEARED)
    assert done.returncode == code, done.stderr
    assert said in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
