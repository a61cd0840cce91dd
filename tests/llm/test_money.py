"""Money is shown in dollars and cents, and a spend under a cent says so rather than $0.00."""

from __future__ import annotations

from bot.llm.client import format_usage, money


def test_money_has_two_decimals() -> None:
    assert money(5) == "$5.00"
    assert money(1234.5) == "$1,234.50"
    assert money(0.0049) == "<$0.01"
    assert money(0.005) == "$0.01"
    assert money(0) == "$0.00"


def test_usage_table_uses_cents() -> None:
    row = {"calls": 3, "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.123456}
    section = {"since": "2026-12-01T00:00:00+00:00", "by_task": {"enrich": row}, "total": row}
    text = format_usage(
        {
            "today": section,
            "month": section,
            "daily_budget_usd": 5.0,
            "budget_left_today_usd": 4.876544,
        }
    )
    assert "$0.12" in text and "0.1234" not in text
    assert "Daily budget $5.00, $4.88 left today." in text
