"""One way to write a run's numbers (`bot.core.numbers`): the formatters themselves, the same value
read the same on the status card, in the digest, in the facts the LLM writes from and on the
status page (a real store), and a guard that keeps number formatting out of the surfaces."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.core.numbers import fmt_big, fmt_int, fmt_percent, fmt_rate, fmt_value
from bot.llm.grounded import render_facts
from bot.models import RESTORE, MetricPoint, Restart, RunInfo
from bot.outputs.statuspage import gather_run_page
from bot.render.cards import restart_text, status_card
from bot.render.page import render_run_page
from bot.render.terminal import local_formatter, render_card
from bot.services.digest import build_digest
from bot.services.narrative import build_narrative_facts, status_with_narrative
from bot.store import Store

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_steps_and_counts_are_exact_and_grouped() -> None:
    assert [fmt_int(v) for v in (54_000, 7, 245.6, 0, None)] == ["54,000", "7", "246", "0", "—"]


def test_tokens_have_three_significant_digits() -> None:
    values = (9.8624e11, 2.46e12, 18e12, 8e12, 5.3e8, 1e11, 999.0, 0.0, None)
    assert [fmt_big(v) for v in values] == [
        "986B",
        "2.46T",
        "18T",
        "8T",
        "530M",  # never '53M': zeros of a whole number stay
        "100B",
        "999",
        "0",
        "—",
    ]


def test_metric_values_have_four_significant_digits() -> None:
    values = (2.34567, 0.012, 0.0123456, 41.23, 2.0, 12_345.6, 1.5e7, float("nan"), None)
    assert [fmt_value(v) for v in values] == [
        "2.346",
        "0.012",
        "0.01235",
        "41.23",
        "2",
        "12,346",
        "15M",
        "nan",  # a NaN loss is shown as what it is
        "—",
    ]


def test_percentages_and_rates() -> None:
    assert fmt_percent(48.04) == "48.0%" and fmt_percent(None) == "—"
    assert fmt_percent(45.4, 0) == "45%" and fmt_percent(12.5, None) == "12.5%"
    assert fmt_rate(245.6, "steps/h") == "246 steps/h"
    assert fmt_rate(1.234e9, "tokens/h") == "1.23B tokens/h"


def test_a_downtime_reads_as_a_duration_on_the_card() -> None:
    """The card said "after just now down" for a 5 s restart; like the narrative, a duration
    under a minute is "under a minute"."""
    restart = Restart(
        NOW,
        RESTORE,
        "e/p/a",
        to_step=5000,
        stopped_at=NOW - timedelta(seconds=5),
        resumed_at=NOW,
    )
    assert restart_text(restart) == "resumed from step 5,000 after under a minute down"


STEP, TOTAL = 48_037, 100_000
TOKENS, TARGET = 9.8624e11, 18e12
LOSS = 2.34567


async def _seed(store: Store) -> None:
    await store.runs.upsert(
        RunInfo(
            slug="hero",
            name="Hero 70B",
            total_steps=TOTAL,
            target_tokens=TARGET,
            launched_at=NOW - timedelta(days=3),
            timezone="UTC",
            config={"slug": "hero", "name": "Hero 70B", "wandb_runs": ["e/p/hero-1"]},
        )
    )
    points = [
        MetricPoint(
            "e/p/hero-1",
            STEP - 10 * (60 - i),
            NOW - timedelta(minutes=60 - i),
            tokens=TOKENS - 2e8 * (60 - i),
            loss=LOSS + 0.001 * (60 - i),
        )
        for i in range(61)
    ]
    await store.metrics.add_points("hero", points)
    await store.health.record_success("wandb", "hero", NOW - timedelta(seconds=30))


async def test_the_same_numbers_read_the_same_on_every_surface(store: Store) -> None:
    """The card used to say 986.24B and a loss of 2.3457 where the narrative's facts said 986B
    and 2.346: now the card (and the terminal), the digest, the LLM's facts and the page all
    write each number with the one formatter."""
    await _seed(store)
    report, narrative = await status_with_narrative(store, "hero", NOW)
    assert report.progress.step == STEP and report.progress.percent is not None
    step, total = fmt_int(STEP), fmt_int(TOTAL)
    tokens, target = fmt_big(TOKENS), fmt_big(TARGET)
    percent = fmt_percent(report.progress.percent)
    assert (step, tokens, target, percent) == ("48,037", "986B", "18T", "48.0%")

    card = status_card(report, narrative, local_formatter("UTC", NOW))
    card_text = render_card(card)
    facts = render_facts(await build_narrative_facts(store, "hero", NOW, report=report))
    digest = (await build_digest(store, "hero", NOW)).text
    page = render_run_page(await gather_run_page(store, "hero", NOW))
    surfaces = {"card": card_text, "facts": facts, "digest": digest, "page": page}
    for name, text in surfaces.items():
        assert f"{step} of {total}" in text, name
        assert f"{tokens} of {target}" in text, name
        assert percent in text, name
    # the loss: the card's field and the LLM's facts (the page draws it, the digest leaves it)
    loss = fmt_value(LOSS)
    assert loss == "2.346"
    assert {f.name: f.value for f in card.fields}["Loss"].startswith(loss)
    assert f"latest loss: {loss}" in facts


# --- the guard ------------------------------------------------------------------------------

# Where a run's numbers reach people: each formats them through `bot.core.numbers`.
SURFACES = (
    "bot/analysis",
    "bot/outputs/digests.py",
    "bot/incidents",
    "bot/outputs/live.py",
    "bot/llm/enrich.py",
    "bot/llm/grounded.py",
    "bot/narrative",
    "bot/posts",
    "bot/render",
    "bot/services",
    "bot/sources/wandb.py",
    "bot/sources/wandb_restarts.py",
    "bot/sources/wandb_state.py",
    "bot/outputs/statuspage.py",
    "cogs",
)
# Not a number for people: SVG geometry on the page ("x1=12.5").
GEOMETRY = {
    ("bot/render/page.py", "chart_svg"),
    ("bot/render/page.py", "_ticks"),  # chart_svg's axes, split out of it
    ("bot/render/page.py", "_bar"),
}
NUMERIC_KINDS = set("eEfFgGn%")


def _numeric(spec: str) -> bool:
    """A format spec that formats a number for reading: grouping, a precision, or a float
    presentation ('02d' pads a clock's minutes, '%H:%M' is a datetime's own)."""
    if spec.startswith("%") or not spec:
        return False
    return "," in spec or "_" in spec or "." in spec or spec[-1] in NUMERIC_KINDS


def formatted_numbers(path: Path, rel: str) -> list[str]:
    """`file:line spec` for each f-string value of `path` formatted as a number, outside the
    geometry functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name if function == "" else function
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            assert isinstance(node.format_spec, ast.JoinedStr)
            spec = "".join(
                str(v.value) if isinstance(v, ast.Constant) else "{}"
                for v in node.format_spec.values
            )
            if _numeric(spec) and (rel, function) not in GEOMETRY:
                found.append(f"{rel}:{node.lineno} :{spec} ({ast.unparse(node.value)})")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "format"
            and len(node.args) == 2
        ):
            found.append(f"{rel}:{node.lineno} format(…)")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "")
    return found


def _surface_files() -> list[Path]:
    files: list[Path] = []
    for name in SURFACES:
        path = ROOT / name
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def test_surfaces_format_numbers_only_through_bot_numbers() -> None:
    offenders = [
        hit
        for path in _surface_files()
        for hit in formatted_numbers(path, path.relative_to(ROOT).as_posix())
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ('x = f"loss {loss:.4f}"', True),
        ('x = f"{step:,} steps"', True),
        ('x = f"{rate:,.0f} steps/h"', True),
        ('x = f"{pct:.0f}%"', True),
        ('x = format(value, ".3g")', True),
        ('x = f"{at:%Y-%m-%d %H:%M}"', False),
        ('x = f"{local.minute:02d}"', False),
        ('x = f"step {fmt_int(step)}"', False),
    ],
)
def test_the_guard_sees_number_formats(tmp_path: Path, source: str, caught: bool) -> None:
    path = tmp_path / "surface.py"
    path.write_text(source + "\n")
    assert bool(formatted_numbers(path, "surface.py")) is caught
