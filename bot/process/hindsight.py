"""The pipeline's thread pass of `bot.enrich.hindsight`: once a GitHub issue or a comment of
its thread is enriched, an issue the rules left unmarked is marked 🚨 `incident` when a comment
soon after it is about an incident, whichever of the two was stored first. Only the rules'
reading is revisited (a model's is its own), and only the timeline's mark and tag change: no
alert, no severity."""

from __future__ import annotations

from collections.abc import Iterable

from bot.enrich.hindsight import HINDSIGHT, reported_in_hindsight
from bot.models import Event
from bot.store import Store

#: The enrichment labels the pass may revisit: the rules' own, no model's.
_RULES = "rules"


async def mark_reports_in_hindsight(store: Store, events: Iterable[Event]) -> int:
    """Run the pass over the threads of freshly enriched GitHub issues and comments. Returns
    how many issues it marked."""
    threads = {
        (e.run_slug, e.thread)
        for e in events
        if e.source == "github" and e.kind in ("issue", "comment") and e.thread
    }
    marked = 0
    for slug, thread in sorted(threads):
        marked += await _mark_thread(store, slug, thread)
    return marked


async def _mark_thread(store: Store, slug: str, thread: str) -> bool:
    issues = await store.events.in_thread(slug, thread, kind="issue")
    if len(issues) != 1:
        return False
    issue = issues[0]
    if issue.incident or not issue.newsworthy or issue.enriched_by != _RULES or issue.deleted:
        return False
    replies = await store.events.in_thread(
        slug, thread, since=issue.at, until=issue.at + HINDSIGHT, kind="comment"
    )
    told = [r for r in replies if r.incident and not r.deleted]
    if not told or not reported_in_hindsight(issue, told[0]):
        return False
    return await store.events.set_enrichment(
        issue,
        summary=issue.summary or "",
        tag="incident",
        incident=True,
        severity=None,
        newsworthy=True,
        enriched_by=_RULES,
        live_report=False,
    )
