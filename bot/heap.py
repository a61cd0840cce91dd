"""Long-lived objects out of the garbage collector's way.

A full collection walks every object the process tracks. With discord.py, anthropic, wandb and
matplotlib imported that is about 250,000 objects, and one full collection took 50–300 ms on the
event loop (measured with the e2e slow-callback check: every callback over 100 ms of CPU in the
suite was a collection). Modules, classes and clients built at start live as long as the process;
`freeze_long_lived` moves them to the permanent generation (`gc.freeze`), so later collections
walk only what was made since. O(1); reference counting still frees everything as before, only
cyclic garbage existing at the moment of the call is kept for good (there is little at start)."""

from __future__ import annotations

import gc


def freeze_long_lived() -> None:
    """Call after a phase that built long-lived state: the bot's start, a loop's first round,
    the first import of a heavy library."""
    gc.freeze()
