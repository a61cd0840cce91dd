"""No test depends on timing: a guard over the test sources themselves.

- a loop that sleeps until something happens is `tests.waiting.until` (one patience, a hang
  guard) rather than `for _ in range(N): … await asyncio.sleep(…)`, whose N × sleep is a guess
  of how long the thing takes on a quiet machine;
- no `pytest.mark.timeout` below the configured hang guard (600 s): a busy machine is slow.

The fakes and the slow-callback instrument are servers and tools, not tests: not checked."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HANG_GUARD = 600  # seconds: pyproject's pytest-timeout
EXEMPT = {TESTS / "waiting.py", TESTS / "slow_callbacks.py", TESTS / "test_slow_callbacks.py"}
SOURCES = sorted(
    p for p in TESTS.rglob("*.py") if p not in EXEMPT and (TESTS / "fakes") not in p.parents
)


def is_sleep(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Await)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "sleep"
    )


def guessed_waits(tree: ast.AST) -> list[int]:
    """Lines of `for … in range(…)` loops that sleep: polling for a guessed number of rounds."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.For | ast.AsyncFor)
            and isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name)
            and node.iter.func.id == "range"
            and any(is_sleep(inner) for inner in ast.walk(node))
        ):
            lines.append(node.lineno)
    return lines


def short_timeouts(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "timeout"
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "mark"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, int | float)
            and node.args[0].value < HANG_GUARD
        ):
            lines.append(node.lineno)
    return lines


def test_waits_are_for_the_thing_itself() -> None:
    """Every test source at once (one test, not one per file: each check is a parse)."""
    guessed, timeouts = [], []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(TESTS)
        guessed += [f"{where}:{n}" for n in guessed_waits(tree)]
        timeouts += [f"{where}:{n}" for n in short_timeouts(tree)]
    assert len(SOURCES) > 100  # the guard reads the whole suite
    assert not guessed, (
        f"a loop sleeps a guessed number of rounds (use tests.waiting.until): {guessed}"
    )
    assert not timeouts, f"a per-test timeout (the hang guard is pyproject's): {timeouts}"


def test_the_guard_sees_a_guessed_wait() -> None:
    guessed = "async def f():\n    for _ in range(100):\n        await asyncio.sleep(0.02)\n"
    assert guessed_waits(ast.parse(guessed)) == [2]
    fine = "async def f():\n    for x in items:\n        await asyncio.sleep(0)\n"
    assert guessed_waits(ast.parse(fine)) == []
    assert short_timeouts(ast.parse("pytestmark = pytest.mark.timeout(60)\n")) == [1]
    assert short_timeouts(ast.parse("pytestmark = pytest.mark.timeout(600)\n")) == []
