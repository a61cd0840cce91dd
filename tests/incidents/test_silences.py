"""Silence rules without Discord: which conditions exist, how long a silence may last, who may
set one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.errors import UserFacingError
from bot.incidents.detectors import DETECTORS
from bot.incidents.silences import (
    MAX_SILENCE,
    REPORT_KINDS,
    check_condition,
    conditions,
    matches,
    parse_duration,
    require_responder,
)
from bot.models import Incident

T0 = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


def incident(fingerprint: str, kind: str) -> Incident:
    return Incident("hero", fingerprint, kind, "t", "firing", T0)


@pytest.mark.parametrize("text", ["9999999999d", "15d", "337h", "9" * 400 + "m"])
def test_enormous_durations_are_refused_with_the_limit(text: str) -> None:
    with pytest.raises(UserFacingError, match="at most 14 days"):
        parse_duration(text)
    assert parse_duration("14d") == MAX_SILENCE
    assert parse_duration("336h") == MAX_SILENCE


def test_every_listed_condition_silences_something_and_typos_are_refused() -> None:
    produced = [incident("wandb-state", "crash")]  # the one kind unlike its fingerprint
    for spec in DETECTORS:  # a family's kind is its prefix ("drift:<metric>" is a "drift")
        stem = spec.fingerprint.rstrip(":")
        produced.append(incident(f"{spec.fingerprint}x" if spec.family else stem, stem))
    produced += [incident(f"report:{kind}:discord:1", kind) for kind in REPORT_KINDS]
    for name in [*conditions(), *REPORT_KINDS, "report:oom", "report:oom:*", "loss-*", "crash"]:
        matcher = check_condition(name)
        assert any(matches(matcher, i) for i in produced), name
    assert check_condition("report:oom") == "report:oom:*"
    grad = incident("drift:train/grad_norm", "drift")
    for name in ("drift", "drift:*", "drift:train/grad_norm"):  # all drifts, or one metric's
        assert matches(check_condition(name), grad), name
    assert not matches("drift:train/other", grad)
    assert check_condition("report:oom:github:o/r#1") == "report:oom:github:o/r#1"
    for typo in ("evrything", "stal", "report:nope:*", "report:", "report"):
        with pytest.raises(UserFacingError, match="unknown condition") as caught:
            check_condition(typo)
        assert "`stall`" in str(caught.value) and "`oom`" in str(caught.value)


@pytest.mark.parametrize("glob", ["*", " * ", "**", "?*", "[a-z]*"])
def test_a_glob_that_matches_everything_is_refused(glob: str) -> None:
    """`condition:*` silenced everything (issue 35): a pattern that would cover every condition
    is refused with what to say instead; `all` does it on purpose, and narrower globs stay."""
    with pytest.raises(UserFacingError, match="would silence every condition") as caught:
        check_condition(glob)
    assert "`all`" in str(caught.value)
    assert check_condition("all") == "all"
    crash = incident("wandb-state", "crash")
    assert matches(check_condition("all"), crash)
    assert check_condition("loss-*") == "loss-*" and not matches("loss-*", crash)
    assert check_condition("report:*") == "report:*"
    assert matches("*", crash)  # a silence stored before keeps its meaning


def test_responders_are_the_role_or_manage_server() -> None:
    require_responder("hero", 7, role_ids={7, 8}, manages_server=False)
    require_responder("hero", 7, role_ids=set(), manages_server=True)
    require_responder("hero", None, role_ids=set(), manages_server=True)
    with pytest.raises(UserFacingError, match="needs the oncall role or Manage Server"):
        require_responder("hero", 7, role_ids={8}, manages_server=False, role_name="oncall")
    with pytest.raises(UserFacingError, match="set `responder_role`"):
        require_responder("hero", None, role_ids={7}, manages_server=False)


def test_a_silence_lasts_a_positive_time() -> None:
    with pytest.raises(UserFacingError, match="positive"):
        parse_duration("0h")
    assert parse_duration("1.5 d") == timedelta(days=1.5)
