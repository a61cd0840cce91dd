"""GitHub webhook deliveries as the GitHub source reads them.

A delivery carries the thread in the shape the REST listing gives it (`issues`, `issue_comment`:
the `issue` object) or as a pull request (`pull_request`, `pull_request_review`: the
`pull_request` object, which the listing shows as an issue with a `pull_request` key). Each is
turned into what the poller reads, a `Pushed` item (the thread as an issue, and the comment or
review when there is one), and handed to `GitHubSource.ingest`, which filters and stores it
exactly as a poll would: same tracking rules, same events, same keys.

Webhook JSON differs from REST JSON in two places that reach an event: a review's `state` is
lower case (`approved`; REST says `APPROVED`), and a pull request's labels, body and merge time
live on the pull request object. Both are normalised here, so an event pushed and the same
event polled have the same content and the store keeps one."""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from bot.sources.github_threads import Pushed

HOOK = "github"  # deliveries are kept under this name (`hook_deliveries.hook`)
#: The events Runscribe reads; others are acknowledged and ignored.
EVENTS = frozenset({"ping", "issues", "issue_comment", "pull_request", "pull_request_review"})
#: Actions after which the thread (or comment, review) is gone: nothing to store.
GONE = frozenset({"deleted", "transferred"})


def repository_of(payload: dict[str, Any]) -> str | None:
    repo = payload.get("repository")
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return name if isinstance(name, str) and "/" in name else None


def pushed(event: str, payload_text: str) -> Pushed | None:
    """What a stored delivery brings the GitHub source (None: nothing, e.g. a ping, a deleted
    comment, an event without a thread)."""
    try:
        payload = json.loads(payload_text)
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("action") in GONE:
        return None
    repo = repository_of(payload)
    if repo is None:
        return None
    if event in ("issues", "issue_comment"):
        issue = payload.get("issue")
        if not _thread(issue):
            return None
        comment = payload.get("comment") if event == "issue_comment" else None
        if comment is not None and not (isinstance(comment, dict) and "id" in comment):
            return None
        return Pushed(repo, issue, comment=comment)
    if event in ("pull_request", "pull_request_review"):
        pull = payload.get("pull_request")
        if not _thread(pull):
            return None
        review = payload.get("review") if event == "pull_request_review" else None
        if review is not None:
            if not (isinstance(review, dict) and "id" in review):
                return None
            review = dict(review, state=str(review.get("state") or "").upper() or None)
        return Pushed(repo, pull_as_issue(pull), review=review)
    return None


def _thread(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict) and isinstance(value.get("number"), int)


def pull_as_issue(pull: dict[str, Any]) -> dict[str, Any]:
    """A pull request object as the issues listing shows the same thread."""
    html = pull.get("html_url")
    return {
        "url": pull.get("issue_url") or pull.get("url"),
        "html_url": html,
        "id": pull.get("id"),
        "number": pull["number"],
        "title": pull.get("title"),
        "user": pull.get("user"),
        "labels": pull.get("labels") or [],
        "state": pull.get("state"),
        "created_at": pull.get("created_at"),
        "updated_at": pull.get("updated_at"),
        "closed_at": pull.get("closed_at"),
        "author_association": pull.get("author_association"),
        "body": pull.get("body"),
        "pull_request": {
            "url": pull.get("url"),
            "html_url": html,
            "diff_url": pull.get("diff_url"),
            "patch_url": pull.get("patch_url"),
            "merged_at": pull.get("merged_at"),
        },
    }
