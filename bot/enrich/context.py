"""Where an event was said: the thread around a comment, the channel around a message.

A comment's own words rarely say what it is about ("rerun with the fix, same result"); the thread
does: its title, a title prefix (``[infra] …``, ``small-scale ablation: …``), its labels and whether
it is an issue or a pull request. The GitHub source records these on every comment and review
(its data, ``bot.models.GithubComment``) together with GitHub's ``author_association``; a Discord
message carries its channel (and thread) name in its ref (``#ablations › lr sweep``).
``ThreadContext.of`` reads either back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from bot.models import SOURCE_SPECS, Event, GithubComment, GithubReview, GithubThread

#: Title markers that say how finished a thread is, not what it is about.
_STATUS_MARKERS: Final = frozenset({"wip", "draft", "rfc", "dnm", "do not merge", "pr", "mr"})
_BRACKETS = re.compile(r"\s*[\[(]([^\[\]()\n]{1,40})[\])]\s*")
# "small-scale ablation: …", "infra: …", "feat(data): …": a few words, then a colon and the rest
_COLON_PREFIX = re.compile(r"\s*([A-Za-z][\w .&/+-]{0,38}?(?:\([\w ./-]{1,20}\))?)\s*:\s+(?=\S)")
#: GitHub's author_association values for people with a standing in the repository.
TRUSTED_ASSOCIATIONS: Final = frozenset({"OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR"})


def split_prefix(title: str | None) -> tuple[str, str]:
    """``(prefix, rest)`` of a thread title: ``"[grug][infra] Bump jax"`` → ``("grug infra",
    "Bump jax")``, ``"small-scale ablation: gate decay"`` → ``("small-scale ablation",
    "gate decay")``. Status markers (WIP, draft) are dropped; no prefix gives ``("", title)``."""
    rest = " ".join((title or "").split())
    parts: list[str] = []
    while True:
        m = _BRACKETS.match(rest)
        if not m:
            break
        token = m.group(1).strip().lower()
        if token and token not in _STATUS_MARKERS:
            parts.append(token)
        rest = rest[m.end() :]
    m = _COLON_PREFIX.match(rest)
    if m and len(m.group(1).split()) <= 4:
        token = m.group(1).strip().lower()
        if token not in _STATUS_MARKERS:
            parts.append(token)
        rest = rest[m.end() :]
    return " ".join(parts), rest.strip()


@dataclass(frozen=True, slots=True)
class ThreadContext:
    """The thread (or channel) an event belongs to, as far as it is known."""

    title: str = ""  # the thread's title (GitHub) or thread name (Discord)
    prefix: str = ""  # title prefix or Discord channel name, lower case: "infra", "ablations"
    labels: tuple[str, ...] = ()
    kind: str = ""  # issue | pull | channel | "" when unknown
    association: str | None = None  # GitHub author_association of the event's author

    @property
    def known(self) -> bool:
        return bool(self.title or self.prefix or self.labels)

    @property
    def topic(self) -> str:
        """Prefix, title and labels as one line of words, for scoring."""
        return " ".join([self.prefix, split_prefix(self.title)[1], *self.labels]).strip()

    @property
    def trusted(self) -> bool | None:
        """Whether the author has a standing in the repository; None when unknown."""
        if not self.association:
            return None
        return self.association.upper() in TRUSTED_ASSOCIATIONS

    @classmethod
    def of(cls, event: Event) -> ThreadContext:
        if SOURCE_SPECS.is_chat(event.source):  # a chat message: its channel says
            return cls.of_channel(event.ref)
        if event.source != "github" or event.kind not in ("issue", "pull", "comment", "review"):
            return cls()  # a W&B or system event, a thread's state change: no thread of its own
        if event.kind in ("issue", "pull"):
            thread = GithubThread.of(event)
            title = event.title or ""
            return cls(
                title=title,
                prefix=split_prefix(title)[0],
                labels=_labels(thread.labels),
                kind=event.kind,
                association=thread.author_association or None,
            )
        post = (GithubReview if event.kind == "review" else GithubComment).of(event)
        title = post.thread_title or ""
        prefix = post.thread_prefix
        return cls(
            title=title,
            prefix=prefix if prefix is not None else split_prefix(title)[0],
            labels=_labels(post.thread_labels or ()),
            kind=post.thread_kind or "",
            association=post.author_association or None,
        )

    @classmethod
    def of_channel(cls, ref: str | None, association: str | None = None) -> ThreadContext:
        """A Discord ref: ``#channel`` or ``#channel › thread name``."""
        name = (ref or "").lstrip("#").strip()
        channel, _, thread = name.partition("›")
        channel = channel.strip()
        if channel.isdigit():  # an id, not a name
            channel = ""
        return cls(
            title=thread.strip(),
            prefix=channel.replace("-", " ").replace("_", " ").lower(),
            kind="channel",
            association=association,
        )


def _labels(labels: Iterable[str]) -> tuple[str, ...]:
    return tuple(label for label in labels if label)


def thread_data(title: str | None, labels: Iterable[str], *, pull: bool) -> GithubComment:
    """What a source records about its thread on a comment or review (its author's standing
    is the comment's own)."""
    title = title or ""
    return GithubComment(
        thread_title=title,
        thread_prefix=split_prefix(title)[0],
        thread_labels=tuple(str(label) for label in labels),
        thread_kind="pull" if pull else "issue",
    )
