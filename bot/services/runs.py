"""Which run a command shows: the one place a requested run name is matched, for the CLI
(`--run`), Discord (the `run` option) and any other surface.

A name matches a run's slug whatever its case and surrounding spaces (`status --run AURORA`
and `/status run: Aurora` both show `aurora`). With no name, the run a person means: the run the
channel belongs to (its watched, alerts, digest or status channel, or a thread in one), else the
runs file's `default_run`, else the one run there is. Each surface says in its own words how to
pick a run (`none`, `several`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.config.runsfile import RunConfig
from bot.core.errors import UserFacingError


class UnknownRun(UserFacingError):
    """No run with that slug is recorded in the store."""

    def __init__(self, slug: str, known: list[str] | None = None):
        self.slug = slug
        hint = f"; known runs: {', '.join(known)}" if known else ""
        super().__init__(f"unknown run {slug!r}{hint}")


def channel_run(runs: Iterable[RunConfig], *channels: int | None) -> str | None:
    """The one run a channel belongs to: the first of `channels` (a channel, then the channel a
    thread sits in) that exactly one run names as its watched, alerts, digest or status channel.
    A channel two runs share says nothing: the next one (or `default_run`) decides."""
    configs = list(runs)
    for channel in channels:
        if channel is None:
            continue
        owners = [run.slug for run in configs if channel in run_channels(run)]
        if len(owners) == 1:
            return owners[0]
        if owners:
            return None  # shared: the parent of a thread in a shared channel does not decide
    return None


def run_channels(run: RunConfig) -> set[int]:
    """Every Discord channel the runs file ties to `run`."""
    named = (run.alerts_channel, run.digest_channel, run.status_channel)
    return {*run.watch_channels, *(channel for channel in named if channel is not None)}


def pick_run(
    slugs: Sequence[str],
    requested: str | None,
    *,
    none: str,
    several: str,
    channel: str | None = None,
    default: str | None = None,
) -> str:
    """The slug to show: `requested` matched against `slugs` (case and spaces ignored), else
    the channel's run, else the `default` run, else the only run. `none` is the message when
    there is no run; `several` when there are several and nothing decides (`{slugs}` in it
    becomes the list)."""
    known = list(slugs)
    if requested is not None and requested.strip():
        wanted = requested.strip().lower()
        for slug in known:
            if slug.lower() == wanted:
                return slug
        raise UnknownRun(requested.strip(), known)
    for preferred in (channel, default):
        if preferred is not None and preferred in known:
            return preferred
    if len(known) == 1:
        return known[0]
    if not known:
        raise UserFacingError(none)
    raise UserFacingError(several.format(slugs=", ".join(known)))


__all__ = ["UnknownRun", "channel_run", "pick_run", "run_channels"]
