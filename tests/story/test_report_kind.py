"""A report's incident kind is what its own words say: a hang right after a restore, reported
in a thread about out-of-memory kills, is not an OOM."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.incidents.detectors import report_kind
from bot.models import Event, GithubComment

AT = datetime(2026, 9, 1, 23, 50, tzinfo=UTC)
OOM_THREAD = "[incident] Hero: host OOM during checkpoint save"


def comment(body: str, thread_title: str = OOM_THREAD) -> Event:
    return Event(
        run_slug="hero",
        source="github",
        external_id=f"comment:{abs(hash(body))}",
        kind="comment",
        at=AT,
        author="rjpower",
        ref="#8506",
        url="https://github.com/o/r/issues/8506#issuecomment-2",
        body=body,
        thread="github:o/r#8506",
        extra=GithubComment(thread_title=thread_title, thread_kind="issue").to_json(),
    )


@pytest.mark.parametrize(
    "body",
    [
        "Still waiting at the barrier after the restore, no step since 50,196.",
        "Still blocked right after restoring the checkpoint; every rank sits in the first barrier.",
    ],
)
def test_a_hang_after_a_restore_in_an_oom_thread_is_not_an_oom(body: str) -> None:
    assert report_kind(comment(body)) != "oom"


def test_an_oom_in_its_own_words_is_an_oom() -> None:
    assert report_kind(comment("Still OOMing: the coordinator ran out of memory again.")) == "oom"
    assert report_kind(comment("The restore hangs at the first barrier again.")) == "hang"
