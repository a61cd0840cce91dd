"""Configuration: the environment (pydantic-settings, `.env` supported) and, re-exported from
`bot.config.runsfile`, the runs file (`runscribe.toml`). Both are validated up front; every problem
is reported with its path. Nothing here runs at import time."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.config.runsfile import (
    ConfigError,
    ForecastConfig,
    MetricKeys,
    RunConfig,
    RunsFile,
    Thresholds,
    load_runs_file,
    parse_runs,
)

DEFAULT_MODEL = "claude-sonnet-4-6"
# Enrichment is many small structured calls: a fast, cheap model does it well.
DEFAULT_ENRICH_MODEL = "claude-haiku-4-5"
# Live batching: queued events wait up to this many seconds for others to share one request (its
# fixed prompt is ~1,150 tokens and is not cached under the enrich model's 4,096-token minimum),
# or until a batch is full. A busy day brings ~550 enrichable events (GitHub comments, settled
# Discord conversations), one every ~2.6 min: 15 minutes made requests of 6.5 events, 30 make
# 12.5 (bench/bench_llm.py). Incident reports never wait (the rules flag them at once).
DEFAULT_ENRICH_WINDOW = 1800.0
DEFAULT_ENRICH_BATCH = 30


class Settings(BaseSettings):
    """Process environment. Secrets are SecretStr so they never reach logs or reprs."""

    # env_ignore_empty: `NAME=` (in the environment or .env) means unset, its default applies:
    # .env.example copied as is sets nothing.
    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        case_sensitive=False,
        env_ignore_empty=True,
    )

    discord_token: SecretStr | None = None
    discord_api_base: str | None = None
    discord_gateway_url: str | None = None
    discord_guild_id: int | None = None
    github_token: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    wandb_api_key: SecretStr | None = None
    wandb_base_url: str | None = None
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None
    runscribe_config: Path = Path("runscribe.toml")
    runscribe_db: Path = Path("runscribe.db")
    # Seconds a database statement waits for another process's lock before it gives up (the
    # store's own default, `bot.store.errors.BUSY_SECONDS`).
    runscribe_db_busy_timeout: float = Field(default=10.0, gt=0, le=600)

    # Tunables (all optional).
    runscribe_model: str = DEFAULT_MODEL
    runscribe_enrich_model: str = DEFAULT_ENRICH_MODEL
    runscribe_llm_timeout: float = Field(default=60.0, gt=0)
    runscribe_llm_max_retries: int = Field(default=2, ge=0, le=10)
    runscribe_llm_daily_budget_usd: float = Field(default=5.0, ge=0)
    runscribe_poll_interval: float = Field(default=60.0, gt=0)
    # Enrichment in the running bot: seconds of work per round (the rest resumes next round),
    # and live batching: events wait up to WINDOW seconds or until BATCH of them are queued.
    runscribe_enrich_budget: float = Field(default=20.0, gt=0)
    runscribe_enrich_window: float = Field(default=DEFAULT_ENRICH_WINDOW, ge=0)
    runscribe_enrich_batch: int = Field(default=DEFAULT_ENRICH_BATCH, ge=1, le=100)
    runscribe_log_level: str = "INFO"
    # Hours a post Discord refuses (403 no permission, 404 unknown channel) is retried before it
    # is given up (and reported in its channel once a post gets through there).
    runscribe_delivery_hold_hours: float = Field(default=24.0, gt=0, le=24 * 30)
    # The status page and /healthz: `runscribe web`, and `runscribe run` when a port is set.
    runscribe_web_port: int | None = Field(default=None, ge=0, le=65535)
    runscribe_web_host: str = "127.0.0.1"
    # Push endpoints on that server (each off while its secret is unset).
    github_webhook_secret: SecretStr | None = None  # POST /hooks/github (X-Hub-Signature-256)
    runscribe_hook_token: SecretStr | None = None  # POST /hooks/alertmanager (Bearer)

    @field_validator(
        "discord_token",
        "github_token",
        "wandb_api_key",
        "anthropic_api_key",
        "runscribe_web_port",
        "github_webhook_secret",
        "runscribe_hook_token",
        mode="before",
    )
    @classmethod
    def _blank_secret(cls, value: object) -> object:
        """`DISCORD_TOKEN=` in a .env copied from .env.example means unset, not an empty key."""
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("github_api_url", "discord_api_base", "wandb_base_url", "anthropic_base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None if value == "" else value
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError(f"must be an http(s) URL, got {value!r}")
        return value.rstrip("/")

    @field_validator("discord_gateway_url")
    @classmethod
    def _ws_url(cls, value: str | None) -> str | None:
        if value and not re.match(r"^wss?://[^\s/]+", value):
            raise ValueError(f"must be a ws(s):// URL, got {value!r}")
        return value or None

    @field_validator("runscribe_log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError(f"unknown log level {value!r}")
        return level


_SECRETS = frozenset(
    {
        "discord_token",
        "github_token",
        "wandb_api_key",
        "anthropic_api_key",
        "github_webhook_secret",
        "runscribe_hook_token",
    }
)


def _problem(item: Any) -> str:
    """`NAME=value: what is wrong` (a secret's value is never shown)."""
    field = str(item["loc"][0]) if item["loc"] else ""
    name = field.upper() or "environment"
    message = str(item["msg"]).removeprefix("Value error, ")
    value = item.get("input")
    if not isinstance(value, str) or field in _SECRETS:
        return f"{name}: {message}"
    problem = f"{name}={value}: {message}"
    if "#" in value:
        problem += " (a comment after the value is part of it: put comments on their own line)"
    return problem


def load_settings(**overrides: Any) -> Settings:
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError([_problem(item) for item in exc.errors(include_url=False)]) from None


__all__ = [
    "DEFAULT_ENRICH_BATCH",
    "DEFAULT_ENRICH_MODEL",
    "DEFAULT_ENRICH_WINDOW",
    "DEFAULT_MODEL",
    "ConfigError",
    "ForecastConfig",
    "MetricKeys",
    "RunConfig",
    "RunsFile",
    "Settings",
    "Thresholds",
    "load_runs_file",
    "load_settings",
    "parse_runs",
]
