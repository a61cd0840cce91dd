"""Month names as people write them ("Sep", "sept", "September") and their numbers: one table
for every reader of dates (questions to `/ask`, the hindsight pass, the grounding check)."""

from __future__ import annotations

from typing import Final

_NAMES: Final = (
    ("jan", "january"),
    ("feb", "february"),
    ("mar", "march"),
    ("apr", "april"),
    ("may",),
    ("jun", "june"),
    ("jul", "july"),
    ("aug", "august"),
    ("sep", "sept", "september"),
    ("oct", "october"),
    ("nov", "november"),
    ("dec", "december"),
)
#: Every name of a month, lower case, each month's short name first, with the month's number.
MONTH_NUMBERS: Final[dict[str, int]] = {
    name: number for number, names in enumerate(_NAMES, 1) for name in names
}
#: The names as a pattern's alternatives (a group that captures nothing), longest first.
_LONGEST_FIRST: Final = sorted(MONTH_NUMBERS, key=len, reverse=True)
MONTH_NAMES: Final = "(?:" + "|".join(_LONGEST_FIRST) + ")"
#: The same without "may", which in a post is far more often the verb.
MONTH_NAMES_BUT_MAY: Final = "(?:" + "|".join(n for n in _LONGEST_FIRST if n != "may") + ")"


def month_number(name: str) -> int:
    """The number of the month a name says ("Sep.", "sept", "September": 9)."""
    return MONTH_NUMBERS[name.lower().rstrip(".")[:3]]
