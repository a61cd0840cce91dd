"""Prompt files: one Markdown file per LLM task in the top-level `prompts` package, loaded with
importlib.resources and rendered with `string.Template` (`$name` placeholders, `$$` for a literal
dollar sign). Rendering is strict both ways: a placeholder the file uses but the caller did not give
is an error, and so is a value the caller gave that the file does not use (usually a typo or a
stale prompt). Every stored output records the prompt's name and hash."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from string import Template

from bot.core.hashing import short_hash

PROMPT_NAMES: tuple[str, ...] = (
    "system",
    "enrich",
    "enrich_batch",
    "enrich_retry",
    "narrative",
    "digest",
    "grounding_retry",
    "ask",
    "writeup",
)


class PromptError(ValueError):
    """A prompt file is missing, malformed, or rendered with the wrong placeholders."""


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    text: str

    @property
    def placeholders(self) -> frozenset[str]:
        template = Template(self.text)
        if not template.is_valid():
            raise PromptError(f"prompt {self.name!r} has a malformed placeholder (use $$ for $)")
        return frozenset(template.get_identifiers())

    def render(self, **values: object) -> str:
        """Fill every placeholder. Missing or unexpected names raise PromptError."""
        expected = self.placeholders
        given = set(values)
        missing = sorted(expected - given)
        extra = sorted(given - expected)
        if missing or extra:
            parts = []
            if missing:
                parts.append("missing " + ", ".join(missing))
            if extra:
                parts.append("unexpected " + ", ".join(extra))
            raise PromptError(f"prompt {self.name!r}: {'; '.join(parts)}")
        return Template(self.text).substitute({key: str(value) for key, value in values.items()})


@functools.cache
def load_prompt(name: str) -> Prompt:
    """Read `prompts/<name>.md` from the installed package (cached: prompts ship with the code)."""
    if name not in PROMPT_NAMES:
        raise PromptError(f"unknown prompt {name!r}; known: {', '.join(PROMPT_NAMES)}")
    try:
        text = resources.files("prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise PromptError(f"prompt file prompts/{name}.md not found") from exc
    prompt = Prompt(name=name, text=text.strip() + "\n")
    prompt.placeholders  # noqa: B018 - validate syntax at load time
    return prompt


__all__ = ["PROMPT_NAMES", "Prompt", "PromptError", "load_prompt", "short_hash"]
