"""Errors whose message is safe and useful to show the person who caused them. The CLI prints
them without a traceback; the Discord error handler turns them into a private reply."""

from __future__ import annotations


class UserFacingError(Exception):
    """Something the user can fix: an unknown run, a bad filter, missing data."""
