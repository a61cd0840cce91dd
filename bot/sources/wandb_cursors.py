"""Where reading a W&B chain stopped, stored between polls (table `source_cursors`, source
"wandb"): `<path>:history` a run's history position (`HistoryCursor`), `<slug>:chain` the chain
(`ChainCursor`). The JSON shapes are documented in `bot.sources.wandb`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

# Forward steps in a row that must agree before they are the run's logging interval (rows logged
# by time, at irregular steps, rarely agree: their first step after a restore is then taken as
# the checkpoint's).
STEADY_ROWS = 3


# ----------------------------------------------------------------------------- cursors


@dataclass(slots=True)
class HistoryCursor:
    step: int = -1  # last `_step` covered by every scan
    check_step: int | None = None  # `_step` of the last primary (loss) row read
    check_ts: float | None = None  # its `_timestamp`
    value: int | None = None  # last training step stored (the configured step key)
    value_ts: float | None = None
    first: int | None = None  # first training step of this W&B run
    gap: int | None = None  # steps between the last two training rows that moved forward
    steady: int = 0  # how many forward steps in a row were `gap` long

    @classmethod
    def load(cls, text: str | None) -> HistoryCursor:
        if not text:
            return cls()
        data = json.loads(text)
        if isinstance(data, int):  # a bare `_step`
            return cls(step=data)
        return cls(**{k: data.get(k) for k in cls.__slots__ if k in data})

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    def moved(self, gap: int) -> None:
        """The training step moved forward by `gap` from the previous row."""
        self.steady = self.steady + 1 if gap == self.gap else 1
        self.gap = gap

    @property
    def interval(self) -> int | None:
        """The run's fixed logging interval, once STEADY_ROWS forward steps in a row agree."""
        return self.gap if self.gap and self.steady >= STEADY_ROWS else None


@dataclass(slots=True)
class ChainCursor:
    members: list[str] = field(default_factory=list)
    discovered: dict[str, str | None] = field(default_factory=dict)  # path -> raw createdAt
    since: str | None = None  # raw createdAt: discovery looks at runs created from here on

    @classmethod
    def load(cls, text: str | None) -> ChainCursor:
        if not text:
            return cls()
        data = json.loads(text)
        return cls(
            members=list(data.get("members") or []),
            discovered=dict(data.get("discovered") or {}),
            since=data.get("since"),
        )

    def dump(self) -> str:
        return json.dumps(
            {"members": self.members, "discovered": self.discovered, "since": self.since},
            separators=(",", ":"),
            sort_keys=True,
        )
