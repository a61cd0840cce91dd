"""The one adapter on `anthropic.AsyncAnthropic`.

- The SDK is built with `max_retries=0`: the SDK honours any `retry-after` with no upper bound, so
  this class runs the retry loop itself and caps every wait at `max_retry_wait` seconds.
- Retried: 408, 409, 429, every 5xx (529 overloaded included), connection errors and timeouts,
  unless the server sends `x-should-retry: false`. Anything else fails at once.
- No key, a spent daily budget, or a call that failed after its retries raise `LLMUnavailable`;
  callers catch it and use their deterministic path. The client logs one line for each such
  fallback (no key: once per client; budget: once per UTC day) and never logs the key.
- Cost: a small per-family price table; an unknown model is priced like the most expensive family
  so the budget errs on the safe side.
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bot.config.settings import Settings
from bot.models import LLMOutput
from bot.store import Store

if TYPE_CHECKING:
    import anthropic  # ~45 MB and ~0.7 s to import: only a client with a key loads it

log = logging.getLogger(__name__)

# USD per million tokens (input, output), by model family. Most specific prefix first.
PRICES: tuple[tuple[str, float, float], ...] = (
    ("claude-opus-4-6", 5.0, 25.0),
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4", 15.0, 75.0),  # 4 and 4.1
    ("claude-sonnet-4", 3.0, 15.0),  # 4, 4.5, 4.6
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-haiku-4", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("claude-3-haiku", 0.25, 1.25),
    ("claude-3-opus", 15.0, 75.0),
)
DEFAULT_PRICE = (15.0, 75.0)  # unknown model: assume the dearest family
CACHE_WRITE_MULTIPLIER = 1.25  # 5-minute cache write
CACHE_READ_MULTIPLIER = 0.1

RETRY_STATUSES = frozenset({408, 409, 429})


def price_for(model: str) -> tuple[float, float]:
    name = model.lower()
    for prefix, input_price, output_price in PRICES:
        if name.startswith(prefix):
            return input_price, output_price
    return DEFAULT_PRICE


def cost_usd(
    model: str,
    input_tokens: int,
    output_tokens: int,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
) -> float:
    input_price, output_price = price_for(model)
    return (
        input_tokens * input_price
        + cache_write_tokens * input_price * CACHE_WRITE_MULTIPLIER
        + cache_read_tokens * input_price * CACHE_READ_MULTIPLIER
        + output_tokens * output_price
    ) / 1_000_000


def estimate_tokens(text: str) -> int:
    """Rough count (~4 characters a token) for batching and budget checks, not for billing."""
    return max(1, (len(text) + 3) // 4)


def start_of_day(now: datetime) -> datetime:
    now = now.astimezone(UTC)
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def start_of_month(now: datetime) -> datetime:
    return start_of_day(now).replace(day=1)


class LLMUnavailable(Exception):
    """The model cannot be used for this call; use the deterministic path. `reason` is one of
    no-key | budget | error | invalid."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(slots=True)
class LLMResult:
    model: str
    text: str
    tool_input: Any  # the first tool_use block's input, as sent (not yet validated)
    stop_reason: str | None
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    cost_usd: float
    attempts: int
    request_id: str | None = None

    def output(
        self,
        *,
        task: str,
        prompt_name: str,
        prompt_hash: str,
        content: str,
        created_at: datetime,
        run_slug: str | None = None,
        cache_key: str | None = None,
        share: tuple[int, int] = (0, 1),
    ) -> LLMOutput:
        """An LLMOutput row carrying this call's usage, or the `share[0]`-th of `share[1]` equal
        parts of it (batches); the parts add up exactly to the whole."""
        index, parts = share

        def part(total: int) -> int:
            base, extra = divmod(total, parts)
            return base + (1 if index < extra else 0)

        return LLMOutput(
            task=task,
            prompt_name=prompt_name,
            prompt_hash=prompt_hash,
            model=self.model,
            content=content,
            created_at=created_at,
            run_slug=run_slug,
            input_tokens=part(self.input_tokens + self.cache_write_tokens + self.cache_read_tokens),
            output_tokens=part(self.output_tokens),
            cost_usd=self.cost_usd / parts,
            cache_key=cache_key,
        )


Sleep = Callable[[float], Awaitable[None]]


def _system_param(system: str | Sequence[str], cache_system: bool) -> str | list[dict[str, Any]]:
    """The system prompt as the API takes it: text blocks when several or cached (the last
    block then carries `cache_control`)."""
    if isinstance(system, str) and not cache_system:
        return system
    parts = [system] if isinstance(system, str) else list(system)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": p} for p in parts]
    if cache_system and blocks:
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return blocks


class LLMClient:
    """Messages API calls with a budget, capped retries and cost accounting."""

    def __init__(
        self,
        store: Store,
        *,
        api_key: str | None,
        model: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        daily_budget_usd: float = 5.0,
        max_retry_wait: float = 10.0,
        enrich_model: str | None = None,
        sleep: Sleep = asyncio.sleep,
    ):
        self.store = store
        self.model = model
        self.enrich_model = enrich_model or model
        self.timeout = timeout
        self.max_retries = max_retries
        self.daily_budget_usd = daily_budget_usd
        self.max_retry_wait = max_retry_wait
        self._sleep = sleep
        self._logged: set[str] = set()
        self._api_key = api_key or None
        self._base_url = base_url
        # Built at the first call: importing the SDK takes ~0.7 s of CPU (done in a worker
        # thread, never on the event loop) and ~45 MB that a process without a key never pays.
        self._sdk: anthropic.AsyncAnthropic | None = None

    @classmethod
    def from_settings(cls, settings: Settings, store: Store, **overrides: Any) -> LLMClient:
        key = settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None
        kwargs: dict[str, Any] = {
            "api_key": key or None,
            "base_url": settings.anthropic_base_url,
            "model": settings.runscribe_model,
            "timeout": settings.runscribe_llm_timeout,
            "max_retries": settings.runscribe_llm_max_retries,
            "daily_budget_usd": settings.runscribe_llm_daily_budget_usd,
        }
        kwargs.update(overrides)
        return cls(store, **kwargs)

    @property
    def enabled(self) -> bool:
        """A key is configured and the budget is not zero (budget may still be spent today)."""
        return self._api_key is not None and self.daily_budget_usd > 0

    async def _client(self) -> anthropic.AsyncAnthropic:
        if self._sdk is None:
            # Both in a worker thread: the import, and the client's TLS context (the CA bundle
            # is parsed when it is built, tens of ms of CPU).
            sdk = await asyncio.to_thread(self._build_sdk)
            if self._sdk is None:  # another call may have built one meanwhile
                self._sdk = sdk
        return self._sdk

    def _build_sdk(self) -> anthropic.AsyncAnthropic:
        module = importlib.import_module("anthropic")
        sdk: anthropic.AsyncAnthropic = module.AsyncAnthropic(
            api_key=self._api_key, base_url=self._base_url, timeout=self.timeout, max_retries=0
        )
        return sdk

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- budget ---------------------------------------------------------------------------

    async def spent_today(self, now: datetime) -> float:
        spend = await self.store.llm.spend(start_of_day(now))
        return float(sum(row["cost_usd"] for row in spend.values()))

    async def _check_budget(self, now: datetime, estimated_input_tokens: int, model: str) -> None:
        if self.daily_budget_usd <= 0:
            raise LLMUnavailable("budget", "the daily LLM budget is 0 (LLM disabled)")
        spent = await self.spent_today(now)
        estimate = cost_usd(model, estimated_input_tokens, 0)
        if spent + estimate > self.daily_budget_usd:
            raise LLMUnavailable(
                "budget",
                f"today's spend {money(spent)} + this call would pass the daily cap "
                f"{money(self.daily_budget_usd)}",
            )

    def note_fallback(self, exc: LLMUnavailable, task: str, now: datetime) -> None:
        """The one log line for a fallback. Repeating conditions are logged once."""
        if exc.reason == "no-key":
            key = "no-key"
        elif exc.reason == "budget":
            key = f"budget:{start_of_day(now).date()}"
        else:
            key = ""
        if key and key in self._logged:
            return
        if key:
            self._logged.add(key)
        level = logging.INFO if exc.reason == "no-key" else logging.WARNING
        log.log(level, "LLM %s unavailable (%s); using the deterministic text", task, exc)

    # -- calls ----------------------------------------------------------------------------

    async def complete(
        self,
        *,
        system: str | Sequence[str],
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        now: datetime,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_name: str | None = None,
        model: str | None = None,
        cache_system: bool = False,
    ) -> LLMResult:
        """One Messages API call (with capped retries). With `tool_name`, that tool is forced and
        its input is returned in `tool_input`. `system` may be several text blocks; with
        `cache_system` the last one carries `cache_control` (ephemeral, 5 minutes), so the tools
        and the system prompt are a cached prefix: a cache write costs 1.25x the input price,
        each read 0.1x. Raises LLMUnavailable on any failure."""
        model = model or self.model
        if self._api_key is None:
            raise LLMUnavailable("no-key", "ANTHROPIC_API_KEY is not set")
        parts = [system] if isinstance(system, str) else list(system)
        estimated = sum(estimate_tokens(p) for p in parts) + sum(
            estimate_tokens(str(m.get("content", ""))) for m in messages
        )
        await self._check_budget(now, estimated, model)
        kwargs: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "system": _system_param(system, cache_system),
            "messages": list(messages),
            "timeout": self.timeout,
        }
        if tools:
            kwargs["tools"] = list(tools)
        if tool_name:
            kwargs["tool_choice"] = {"type": "tool", "name": tool_name}
        return await self._create(kwargs, model)

    async def _create(self, kwargs: dict[str, Any], model: str) -> LLMResult:
        """`messages.create`, retried on a retryable status or a connection error."""
        sdk = await self._client()
        import anthropic  # imported by `_client` (for its exception classes)

        attempts = self.max_retries + 1
        started = time.monotonic()
        for attempt in range(attempts):
            try:
                message = await sdk.messages.create(**kwargs)
            except anthropic.APIStatusError as exc:
                retry = _retryable_status(exc.status_code, exc.response.headers)
                detail = f"HTTP {exc.status_code} {exc.type or ''}".strip()
                if not retry or attempt + 1 >= attempts:
                    raise LLMUnavailable(
                        "error", f"{detail} after {attempt + 1} attempt(s)"
                    ) from exc
                wait = self._wait(attempt, exc.response.headers)
                log.debug("LLM call got %s; retry %d in %.2fs", detail, attempt + 1, wait)
            except anthropic.APIConnectionError as exc:  # includes APITimeoutError
                kind = "timeout" if isinstance(exc, anthropic.APITimeoutError) else "connection"
                if attempt + 1 >= attempts:
                    raise LLMUnavailable(
                        "error", f"{kind} error after {attempt + 1} attempt(s)"
                    ) from exc
                wait = self._wait(attempt, None)
                log.debug("LLM call %s error; retry %d in %.2fs", kind, attempt + 1, wait)
            except anthropic.AnthropicError as exc:
                raise LLMUnavailable("error", type(exc).__name__) from exc
            else:
                return _result(message, model, attempt + 1, time.monotonic() - started)
            await self._sleep(wait)
        raise LLMUnavailable("error", "no attempt made")  # pragma: no cover - attempts >= 1

    def _wait(self, attempt: int, headers: Mapping[str, str] | None) -> float:
        retry_after = _retry_after(headers) if headers is not None else None
        if retry_after is None:
            retry_after = 0.5 * 2**attempt * random.uniform(0.75, 1.0)
        return max(0.0, min(retry_after, self.max_retry_wait))


def _retryable_status(status: int, headers: Mapping[str, str]) -> bool:
    should = (headers.get("x-should-retry") or "").lower()
    if should == "false":
        return False
    if should == "true":
        return True
    return status in RETRY_STATUSES or status >= 500


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms`, `retry-after` seconds or date)."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _result(message: Any, model: str, attempts: int, elapsed: float) -> LLMResult:
    text_parts: list[str] = []
    tool_input: Any = None
    for block in message.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            text_parts.append(block.text)
        elif kind == "tool_use" and tool_input is None:
            tool_input = block.input
    usage = message.usage
    input_tokens = int(getattr(usage, "input_tokens", 0) or 0)
    output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
    cache_write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    cache_read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    used_model = getattr(message, "model", None) or model
    log.debug(
        "LLM call ok: model=%s in=%d out=%d attempts=%d %.2fs",
        used_model,
        input_tokens,
        output_tokens,
        attempts,
        elapsed,
    )
    return LLMResult(
        model=used_model,
        text="".join(text_parts).strip(),
        tool_input=tool_input,
        stop_reason=getattr(message, "stop_reason", None),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_write_tokens=cache_write,
        cache_read_tokens=cache_read,
        cost_usd=cost_usd(used_model, input_tokens, output_tokens, cache_write, cache_read),
        attempts=attempts,
        request_id=getattr(message, "_request_id", None),
    )


# -- `runscribe usage` ---------------------------------------------------------------------


async def usage_report(
    store: Store, now: datetime, *, daily_budget_usd: float | None = None
) -> dict:
    """Today's and this month's (UTC) LLM spend by task, for `runscribe usage [--json]`.
    Rejected drafts (`<task>.rejected`) are listed as their own line: they were paid for."""

    def section(spend: dict[str, dict[str, float]], since: datetime) -> dict[str, Any]:
        by_task = {
            task: {
                "calls": int(row["calls"]),
                "input_tokens": int(row["input_tokens"]),
                "output_tokens": int(row["output_tokens"]),
                "cost_usd": round(float(row["cost_usd"]), 6),
            }
            for task, row in spend.items()
        }
        total = {
            key: sum(row[key] for row in by_task.values())
            for key in ("calls", "input_tokens", "output_tokens", "cost_usd")
        }
        total["cost_usd"] = round(float(total["cost_usd"]), 6)
        return {"since": since.isoformat(), "by_task": by_task, "total": total}

    today = start_of_day(now)
    month = start_of_month(now)
    report: dict[str, Any] = {
        "today": section(await store.llm.spend(today), today),
        "month": section(await store.llm.spend(month), month),
    }
    if daily_budget_usd is not None:
        report["daily_budget_usd"] = daily_budget_usd
        report["budget_left_today_usd"] = round(
            max(0.0, daily_budget_usd - report["today"]["total"]["cost_usd"]), 6
        )
    return report


def money(usd: float) -> str:
    """Dollars with two decimals; a spend too small to show as cents says so instead of $0.00."""
    if 0 < usd < 0.005:
        return "<$0.01"
    return f"${usd:,.2f}"


def format_usage(report: dict) -> str:
    """Plain-text table of a `usage_report`."""
    lines: list[str] = []
    for label, key in (("Today (UTC)", "today"), ("This month", "month")):
        section = report[key]
        lines.append(f"{label}, since {section['since'][:10]}:")
        if not section["by_task"]:
            lines.append("  no LLM calls")
        else:
            lines.append(
                f"  {'task':<20} {'calls':>6} {'tokens in':>11} {'tokens out':>11} {'cost':>10}"
            )
            rows = [*section["by_task"].items(), ("total", section["total"])]
            for task, row in rows:
                lines.append(
                    f"  {task:<20} {row['calls']:>6} {row['input_tokens']:>11,} "
                    f"{row['output_tokens']:>11,} {money(row['cost_usd']):>10}"
                )
        lines.append("")
    if "daily_budget_usd" in report:
        lines.append(
            f"Daily budget {money(report['daily_budget_usd'])}, "
            f"{money(report['budget_left_today_usd'])} left today."
        )
    return "\n".join(lines).rstrip() + "\n"


__all__ = [
    "DEFAULT_PRICE",
    "PRICES",
    "LLMClient",
    "LLMResult",
    "LLMUnavailable",
    "cost_usd",
    "estimate_tokens",
    "format_usage",
    "price_for",
    "start_of_day",
    "usage_report",
]
