"""Which run a command shows: the one place a requested run name is matched, for the CLI
(`--run`), Discord (the `run` option) and any other surface.

A name matches a run's slug whatever its case and surrounding spaces (`status --run AURORA`
and `/status run: Aurora` both show `aurora`); with no name, the one run there is. Each surface
says in its own words how to pick a run (`none`, `several`)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.errors import UserFacingError


class UnknownRun(UserFacingError):
    """No run with that slug is recorded in the store."""

    def __init__(self, slug: str, known: list[str] | None = None):
        self.slug = slug
        hint = f"; known runs: {', '.join(known)}" if known else ""
        super().__init__(f"unknown run {slug!r}{hint}")


def pick_run(slugs: Sequence[str], requested: str | None, *, none: str, several: str) -> str:
    """The slug to show: `requested` matched against `slugs` (case and spaces ignored), else
    the only run. `none` is the message when there is no run; `several` when there are several
    and none was named (`{slugs}` in it becomes the list)."""
    known = list(slugs)
    if requested is not None and requested.strip():
        wanted = requested.strip().lower()
        for slug in known:
            if slug.lower() == wanted:
                return slug
        raise UnknownRun(requested.strip(), known)
    if len(known) == 1:
        return known[0]
    if not known:
        raise UserFacingError(none)
    raise UserFacingError(several.format(slugs=", ".join(known)))


__all__ = ["UnknownRun", "pick_run"]
