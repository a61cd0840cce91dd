"""The bundled sample run: deterministic, shifted to end at `now`, and shaped like the live
sources' output (so the demo exercises the real pipeline)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from bot.models import WANDB_STATES
from bot.sources.replay import SampleRun, available_samples, load_sample

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)

DESIGN_KEYS = {
    "slug",
    "name",
    "wandb_runs",
    "wandb_run_pattern",
    "total_steps",
    "target_tokens",
    "launched_at",
    "github_repo",
    "github_issues",
    "github_labels",
    "github_keywords",
    "watch_channels",
    "alerts_channel",
    "digest_channel",
    "digest_time",
    "timezone",
    "metrics",
    "links",
}


@pytest.fixture(scope="module")
def sample() -> SampleRun:
    return load_sample(NOW)


def _github(sample: SampleRun):
    return [e for e in sample.events if e.source == "github"]


def _discord(sample: SampleRun):
    return [e for e in sample.events if e.source == "discord"]


def _threads(sample: SampleRun):
    return {e.thread: e for e in sample.events if e.kind in ("issue", "pull")}


# --- loading ------------------------------------------------------------------------------------


def test_aurora_is_available() -> None:
    assert "aurora" in available_samples()


def test_unknown_or_unsafe_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="no bundled sample"):
        load_sample(NOW, name="nope")
    with pytest.raises(ValueError, match="invalid sample name"):
        load_sample(NOW, name="../pyproject")


def test_load_is_deterministic() -> None:
    first, second = load_sample(NOW), load_sample(NOW)
    assert first == second
    assert first.points == second.points
    assert first.events == second.events
    assert first.superseded == second.superseded


def test_default_now_is_the_current_time() -> None:
    before = datetime.now(UTC)
    sample = load_sample()
    assert before <= sample.end <= datetime.now(UTC)


def test_naive_now_is_taken_as_utc() -> None:
    assert load_sample(NOW.replace(tzinfo=None)).end == NOW


# --- time shift ---------------------------------------------------------------------------------


def test_sample_ends_at_now_and_spans_three_weeks(sample: SampleRun) -> None:
    assert sample.end == NOW
    assert timedelta(days=20) <= sample.end - sample.start <= timedelta(days=23)


def test_every_time_lies_within_the_sample(sample: SampleRun) -> None:
    times = [p.at for p in sample.points]
    times += [s.at for s in sample.state_history]
    times += [s.heartbeat_at for s in sample.state_history if s.heartbeat_at]
    for event in sample.events + sample.superseded:
        times.append(event.at)
        if event.updated_at:
            times.append(event.updated_at)
    for snap in sample.snapshots:
        times += [t for t in (snap.created_at, snap.heartbeat_at) if t]
    assert all(sample.start <= t <= sample.end for t in times)
    assert all(t.tzinfo is not None and t.utcoffset() == timedelta(0) for t in times)


def test_shift_is_a_single_offset() -> None:
    later = NOW + timedelta(days=3, minutes=17)
    a, b = load_sample(NOW), load_sample(later)
    offset = later - NOW
    assert [p.at + offset for p in a.points] == [p.at for p in b.points]
    assert [p.step for p in a.points] == [p.step for p in b.points]
    assert [p.loss for p in a.points] == [p.loss for p in b.points]
    assert [e.at + offset for e in a.events] == [e.at for e in b.events]
    assert [s.at + offset for s in a.state_history] == [s.at for s in b.state_history]
    launched_a = datetime.fromisoformat(a.run_config["launched_at"])
    launched_b = datetime.fromisoformat(b.run_config["launched_at"])
    assert launched_b - launched_a == offset


# --- run config ---------------------------------------------------------------------------------


def test_config_has_design_keys(sample: SampleRun) -> None:
    config = sample.run_config
    assert config.keys() >= DESIGN_KEYS
    assert config["slug"] == "aurora"
    assert set(config["metrics"]) == {"step", "tokens", "loss"}
    assert isinstance(config["total_steps"], int)
    assert isinstance(config["target_tokens"], float)
    assert re.fullmatch(r"\d\d:\d\d", config["digest_time"])
    assert all(isinstance(c, int) for c in config["watch_channels"])
    assert isinstance(config["alerts_channel"], int)
    assert set(config["watch_channels"]) <= set(sample.discord_channels)
    assert config["github_repo"] == "aurora-lab/aurora"
    assert config["launched_at"] == sample.snapshots[0].created_at.isoformat().replace(
        "+00:00", "Z"
    )
    assert all(v.startswith("https://") for v in config["links"].values())


def test_config_is_a_fresh_copy() -> None:
    load_sample(NOW).run_config["slug"] = "changed"
    assert load_sample(NOW).run_config["slug"] == "aurora"


def test_wandb_chain_matches_config(sample: SampleRun) -> None:
    paths = [s.wandb_run for s in sample.snapshots]
    assert paths == sample.run_config["wandb_runs"]
    assert {p.wandb_run for p in sample.points} == set(paths)
    pattern = re.compile(sample.run_config["wandb_run_pattern"])
    assert all(pattern.search(s.name or "") for s in sample.snapshots)
    assert all(path.count("/") == 2 for path in paths)


# --- W&B history --------------------------------------------------------------------------------


def test_points_are_time_ordered_and_dense(sample: SampleRun) -> None:
    times = [p.at for p in sample.points]
    assert times == sorted(times)
    per_run = defaultdict(list)
    for p in sample.points:
        per_run[p.wandb_run].append(p)
    short_gaps = 0
    gaps = 0
    for pts in per_run.values():
        for prev, cur in pairwise(pts):
            gaps += 1
            short_gaps += (cur.at - prev.at) <= timedelta(minutes=20)
    assert short_gaps / gaps > 0.97  # one point every 10–20 min except across outages


def test_tokens_follow_steps(sample: SampleRun) -> None:
    config = sample.run_config
    per_step = config["target_tokens"] / config["total_steps"]
    for p in sample.points:
        assert p.tokens == pytest.approx(p.step * per_step, rel=1e-3)


def test_progress_is_early_in_the_run(sample: SampleRun) -> None:
    final = sample.points[-1]
    assert 0.10 <= final.step / sample.run_config["total_steps"] <= 0.20


def test_loss_falls_with_noise_and_one_spike(sample: SampleRun) -> None:
    losses = [p.loss for p in sample.points if p.loss is not None]
    assert len(losses) == len(sample.points)
    assert losses[0] > 10
    assert 1.9 < losses[-1] < 2.3
    # noisy: the curve is not monotonic
    assert sum(b > a for a, b in pairwise(losses)) > 100
    # a brief spike: a jump of > 0.2 between neighbours that recovers within a few hours
    jumps = [
        (a, b)
        for a, b in pairwise(sample.points)
        if a.wandb_run == b.wandb_run and b.step > a.step and b.loss - a.loss > 0.2
    ]
    assert len(jumps) == 1
    before, peak = jumps[0]
    recovered = [
        p
        for p in sample.points
        if p.wandb_run == peak.wandb_run and peak.at < p.at <= peak.at + timedelta(hours=4)
    ]
    assert min(p.loss for p in recovered) < before.loss + 0.03


def test_history_contains_restores_within_a_run(sample: SampleRun) -> None:
    restores = []
    for prev, cur in pairwise(sample.points):
        if cur.wandb_run == prev.wandb_run and cur.step < prev.step:
            restores.append((prev, cur))
    assert len(restores) >= 3
    # the big one: a crash with ~1 h of silence, resumed from an earlier checkpoint
    big = [(a, b) for a, b in restores if a.step - b.step >= 1000]
    assert big
    last_good, resumed = big[0]
    assert resumed.step % 1000 == 0
    assert timedelta(minutes=45) <= resumed.at - last_good.at <= timedelta(minutes=90)
    crashed = [
        s for s in sample.state_history if s.state == "crashed" and last_good.at < s.at < resumed.at
    ]
    assert crashed and crashed[0].heartbeat_at is not None
    assert crashed[0].heartbeat_at - last_good.at < timedelta(minutes=5)
    assert crashed[0].last_step == last_good.step


def test_fork_starts_below_its_parents_last_step(sample: SampleRun) -> None:
    parent, fork = sample.run_config["wandb_runs"][:2]
    parent_points = [p for p in sample.points if p.wandb_run == parent]
    fork_points = [p for p in sample.points if p.wandb_run == fork]
    assert fork_points[0].step < max(p.step for p in parent_points)
    assert fork_points[0].at > parent_points[-1].at


def test_state_history(sample: SampleRun) -> None:
    states = sample.state_history
    assert [s.at for s in states] == sorted(s.at for s in states)
    assert all(s.state in WANDB_STATES for s in states)
    seen = {s.state for s in states}
    assert {"running", "crashed", "finished", "killed"} <= seen
    first_of = {}
    for s in states:
        first_of.setdefault(s.wandb_run, s)
    assert all(s.state == "running" for s in first_of.values())
    # a hang: running with heartbeats but no steps logged until it was killed
    killed = next(s for s in states if s.state == "killed")
    relaunched = max(s.at for s in states if s.wandb_run == killed.wandb_run and s.at < killed.at)
    assert not [p for p in sample.points if relaunched <= p.at <= killed.at]
    assert killed.heartbeat_at is not None and killed.heartbeat_at - relaunched > timedelta(hours=1)


def test_run_ends_running_and_healthy(sample: SampleRun) -> None:
    final = sample.snapshots[-1]
    assert final.state == "running"
    assert final.heartbeat_at is not None
    assert sample.end - final.heartbeat_at < timedelta(minutes=2)
    assert final.observed_at == sample.end
    assert final.last_step == sample.points[-1].step
    last = sample.points[-1]
    assert last.wandb_run == final.wandb_run
    assert timedelta(0) < sample.end - last.at <= timedelta(minutes=10)
    assert sample.state_history[-1].state == "running"
    metrics = sample.run_config["metrics"]
    assert final.summary[metrics["step"]] == last.step
    assert final.summary[metrics["loss"]] == last.loss
    parent = sample.snapshots[0]
    assert parent.state == "finished"
    assert parent.observed_at == sample.end


# --- events -------------------------------------------------------------------------------------


def test_event_counts(sample: SampleRun) -> None:
    assert len(_github(sample)) >= 35
    assert len(_discord(sample)) >= 25
    kinds = {e.kind for e in _github(sample)}
    assert kinds == {"issue", "pull", "comment", "review"}
    assert {e.source for e in sample.events} == {"github", "discord"}


def test_events_are_time_ordered_with_unique_ids(sample: SampleRun) -> None:
    assert [e.at for e in sample.events] == sorted(e.at for e in sample.events)
    ids = [(e.source, e.external_id) for e in sample.events]
    assert len(ids) == len(set(ids))
    assert all(e.run_slug == "aurora" for e in sample.events + sample.superseded)


def test_enrichment_is_left_to_the_pipeline(sample: SampleRun) -> None:
    for e in sample.events:
        assert e.summary is None and e.tag is None and e.severity is None
        assert e.incident is False and e.enriched_by is None and e.id is None
        assert e.deleted is False


def test_github_threads(sample: SampleRun) -> None:
    repo = sample.run_config["github_repo"]
    threads = [e for e in _github(sample) if e.kind in ("issue", "pull")]
    assert len(threads) >= 10
    for e in threads:
        number = int(e.external_id.removeprefix("issue:"))
        assert e.external_id == f"issue:{number}"
        assert e.ref == f"#{number}"
        path = "pull" if e.kind == "pull" else "issues"
        assert e.url == f"https://github.com/{repo}/{path}/{number}"
        assert e.thread == f"github:{repo}#{number}"
        assert e.title and e.body and e.author
        assert e.updated_at is not None and e.updated_at >= e.at
        assert set(e.extra) == {"labels", "merged_at"}
        assert isinstance(e.extra["labels"], list)
        if e.state == "merged":
            assert e.kind == "pull"
            merged = datetime.fromisoformat(e.extra["merged_at"])
            assert e.at < merged <= e.updated_at
        else:
            assert e.state in ("open", "closed")
            assert e.extra["merged_at"] is None
    states = {e.state for e in threads}
    assert states == {"open", "closed", "merged"}
    tracked = sample.run_config["github_issues"]
    labelled = [e for e in threads if "aurora-run" in e.extra["labels"]]
    assert {int(e.ref[1:]) for e in threads} >= set(tracked)
    assert 0 < len(labelled) < len(threads)


def test_github_comments_and_reviews(sample: SampleRun) -> None:
    repo = sample.run_config["github_repo"]
    threads = _threads(sample)
    comments = [e for e in _github(sample) if e.kind in ("comment", "review")]
    assert len(comments) >= 25
    for e in comments:
        parent = threads[e.thread]
        number = int(parent.ref[1:])
        assert e.ref == parent.ref
        assert e.state == parent.state
        assert e.at >= parent.at
        assert e.author and e.body
        assert e.updated_at is not None and e.updated_at >= e.at
        if e.kind == "comment":
            cid = int(e.external_id.removeprefix("comment:"))
            assert e.url == f"https://github.com/{repo}/issues/{number}#issuecomment-{cid}"
        else:
            rid = int(e.external_id.removeprefix("review:"))
            assert parent.kind == "pull"
            assert e.url == f"https://github.com/{repo}/pull/{number}#pullrequestreview-{rid}"
            assert e.extra["review_state"] in ("APPROVED", "CHANGES_REQUESTED", "COMMENTED")


def test_threads_reference_each_other(sample: SampleRun) -> None:
    numbers = {e.ref for e in sample.events if e.kind in ("issue", "pull")}
    mentioned = set()
    for e in sample.events:
        mentioned |= {m for m in re.findall(r"#\d+", e.body) if m != e.ref}
    assert len(mentioned & numbers) >= 8


def test_realistic_bodies(sample: SampleRun) -> None:
    bodies = [e.body for e in _github(sample)]
    assert any("|---|" in b for b in bodies)  # markdown tables
    assert sum("```" in b for b in bodies) >= 5  # log snippets
    assert any("- [x]" in b and "- [ ]" in b for b in bodies)  # checklists
    assert any(line.startswith("> ") for b in bodies for line in b.splitlines())  # quotes
    assert max(len(b) for b in bodies) > 2000


def test_edited_comment_keeps_its_first_version(sample: SampleRun) -> None:
    assert sample.superseded
    current = {e.external_id: e for e in sample.events}
    for old in sample.superseded:
        new = current[old.external_id]
        assert old.source == new.source == "github"
        assert old.body != new.body
        assert old.at == new.at
        assert old.updated_at is not None and new.updated_at is not None
        assert old.updated_at < new.updated_at
        assert old.content_hash != new.content_hash


def test_hostile_comment_is_plain_data(sample: SampleRun) -> None:
    hostile = [e for e in sample.events if "@everyone" in e.body]
    assert len(hostile) == 1
    body = hostile[0].body
    assert hostile[0].source == "github" and hostile[0].kind == "comment"
    assert "<@&123456789>" in body
    assert "ignore previous instructions" in body.lower()
    link = re.search(r"\[[^\]]+\]\((https?://[^)]+)\)", body)
    assert link and "github.com" not in link.group(1) and "wandb.ai" not in link.group(1)


def test_discord_messages(sample: SampleRun) -> None:
    guild = sample.discord_guild_id
    watched = set(sample.run_config["watch_channels"])
    messages = _discord(sample)
    for e in messages:
        channel_id = int(e.thread.removeprefix("discord:"))
        message_id = int(e.external_id.removeprefix("msg:"))
        assert channel_id in watched
        assert e.kind == "message"
        assert e.ref == f"#{sample.discord_channels[channel_id]}"
        assert e.url == f"https://discord.com/channels/{guild}/{channel_id}/{message_id}"
        assert e.author and e.body
        assert e.title is None and e.state is None
    assert len({e.thread for e in messages}) == 2
    chit_chat = [e for e in messages if e.body.strip().lower() in {"nice", "🎉", "looking"}]
    assert len(chit_chat) >= 3
    # a burst: at least four consecutive messages in one channel within ten minutes
    by_channel = defaultdict(list)
    for e in messages:
        by_channel[e.thread].append(e.at)
    assert any(
        times[i + 3] - times[i] <= timedelta(minutes=10)
        for times in by_channel.values()
        for i in range(len(times) - 3)
    )


def test_dates_written_in_the_sample_move_with_it() -> None:
    """The changelog's "launched" date and a kernel log's stamps name the replayed days."""
    from bot.sources.replay import shift_text_dates

    offset = timedelta(days=271, hours=3)
    moved = shift_text_dates(
        {
            "items": [
                {
                    "body": "- 2026-03-02: launched\n[Wed Mar  4 02:15:41 2026] link down",
                    "url": "https://x/2026-03-02",
                    "created_at": "2026-03-02T13:40:00Z",
                }
            ],
            "content": "see ladder-2026-03 and 2026-02-30",
        },
        offset,
    )
    item = moved["items"][0]
    assert item["body"] == "- 2026-11-28: launched\n[Mon Nov 30 05:15:41 2026] link down"
    assert item["url"] == "https://x/2026-03-02"  # only prose moves
    assert item["created_at"] == "2026-03-02T13:40:00Z"
    assert moved["content"] == "see ladder-2026-03 and 2026-02-30"  # not a date: left alone

    sample = load_sample(datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
    changelog = next(e for e in sample.events if "Changelog" in (e.body or "")[:40])
    launch = next(p for p in sample.points)  # the first point: the launch day, shifted
    assert launch.at.date().isoformat() in "".join(e.body for e in sample.events)
    assert "2026-03-" not in changelog.body
