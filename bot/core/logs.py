"""Logging, configured once by the entry point. Long-running processes log to stdout; the query
commands log to stderr so their stdout stays clean text or JSON."""

from __future__ import annotations

import logging
import sys

_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def configure(level: str = "INFO", *, stream: str = "stdout") -> None:
    handler = logging.StreamHandler(sys.stdout if stream == "stdout" else sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Third-party chatter that is noise at INFO.
    for noisy in ("httpx", "httpcore", "discord.gateway", "wandb", "matplotlib", "anthropic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
