"""Every LLM output with its prompt name and hash, its tokens and its cost."""

from __future__ import annotations

from datetime import datetime

import aiosqlite

from bot.core.timeutil import from_db, to_db
from bot.models import (
    LLMOutput,
)
from bot.store.db import Database


def _llm_from_row(row: aiosqlite.Row) -> LLMOutput:
    return LLMOutput(
        id=row["id"],
        run_slug=row["run_slug"],
        task=row["task"],
        prompt_name=row["prompt_name"],
        prompt_hash=row["prompt_hash"],
        model=row["model"],
        content=row["content"],
        created_at=from_db(row["created_at"]),  # type: ignore[arg-type]
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost_usd=row["cost_usd"],
        fallback=bool(row["fallback"]),
        cache_key=row["cache_key"],
    )


class LLMRepo:
    def __init__(self, db: Database):
        self.db = db

    async def record(self, output: LLMOutput) -> int:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO llm_outputs (run_slug, task, prompt_name, prompt_hash, model, "
                "content, created_at, input_tokens, output_tokens, cost_usd, fallback, cache_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    output.run_slug,
                    output.task,
                    output.prompt_name,
                    output.prompt_hash,
                    output.model,
                    output.content,
                    to_db(output.created_at),
                    output.input_tokens,
                    output.output_tokens,
                    output.cost_usd,
                    int(output.fallback),
                    output.cache_key,
                ),
            )
            output.id = int(cursor.lastrowid or 0)
            return output.id

    async def latest(self, run_slug: str | None, task: str) -> LLMOutput | None:
        row = await self.db.fetchone(
            "SELECT * FROM llm_outputs WHERE run_slug IS ? AND task = ? "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            (run_slug, task),
        )
        return _llm_from_row(row) if row else None

    async def by_cache_key(self, cache_key: str) -> LLMOutput | None:
        row = await self.db.fetchone(
            "SELECT * FROM llm_outputs WHERE cache_key = ? ORDER BY id DESC LIMIT 1", (cache_key,)
        )
        return _llm_from_row(row) if row else None

    async def latest_keyed(self, prefix: str) -> LLMOutput | None:
        """The newest output whose cache key starts with `prefix` (a range on the key's index)."""
        row = await self.db.fetchone(
            "SELECT * FROM llm_outputs WHERE cache_key >= ? AND cache_key < ? "
            "ORDER BY id DESC LIMIT 1",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)),
        )
        return _llm_from_row(row) if row else None

    async def spend(self, since: datetime) -> dict[str, dict[str, float]]:
        """Per task: calls, input/output tokens and dollars since `since`."""
        rows = await self.db.fetchall(
            "SELECT task, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cost_usd) "
            "FROM llm_outputs WHERE created_at >= ? AND fallback = 0 GROUP BY task ORDER BY task",
            (to_db(since),),
        )
        return {
            row[0]: {
                "calls": row[1],
                "input_tokens": row[2] or 0,
                "output_tokens": row[3] or 0,
                "cost_usd": row[4] or 0.0,
            }
            for row in rows
        }
