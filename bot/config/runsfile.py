"""The runs file (`runscribe.toml`): one `[[runs]]` table per tracked run, validated up front;
every problem is reported with its path, e.g. `runs[0].timezone: unknown time zone 'Mars/Base'`.
`RunConfig` is also the stored run's typed config (`models.RunInfo`), so reading a run from the
database needs this module and not the environment's (`bot.config.settings`, pydantic-settings).
Nothing here runs at import time."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from bot.core.timeutil import resolve_zone

log = logging.getLogger(__name__)


class ConfigError(Exception):
    """A configuration problem a user can fix. `problems` are `path: message` lines."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


class MetricKeys(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: str = "_step"
    tokens: str | None = None
    loss: str | None = "train/loss"


@dataclass(frozen=True, slots=True)
class Threshold:
    """One tunable of `[runs.alerts]`: its name, default, type and bounds. Declared once, by the
    detector that reads it (`DetectorSpec.thresholds`); a runs file's value is checked against
    this declaration (`runs[0].alerts.<name>: Input should be greater than 0 (got -1)`)."""

    name: str
    default: float
    integer: bool = False  # a count (whole numbers only), else a float
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"threshold {self.name!r}: use a lowercase identifier (stall_minutes)")
        try:
            default = TypeAdapter(self.annotation).validate_python(self.default)
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]["msg"]
            raise ValueError(f"threshold {self.name!r}: its default: {problem}") from None
        object.__setattr__(self, "default", default)  # 15 → 15.0 for a float, as a runs file's

    @property
    def annotation(self) -> Any:
        bounds = Field(gt=self.gt, ge=self.ge, lt=self.lt, le=self.le)
        return Annotated[int if self.integer else float, bounds]


class ThresholdRegistry:
    """The declared thresholds, each with its owner (a detector's fingerprint). Built holding
    the built-in detectors' (`BUILT_IN_THRESHOLDS`), so `[runs.alerts]` is judged the same
    however the runs file is loaded; a detector registered later (`DetectorRegistry.register`)
    declares its own here. Engine-wide tunables (`pending_minutes`, `reminder_minutes`,
    `reopen_minutes`) are `Thresholds`' own fields."""

    def __init__(self, declared: Mapping[str, Iterable[Threshold]] | None = None) -> None:
        self._declared: dict[str, tuple[str, Threshold]] = {}
        self._model: type[BaseModel] | None = None
        for owner, thresholds in (declared or {}).items():
            self.declare(owner, thresholds)

    def declare(self, owner: str, thresholds: Iterable[Threshold]) -> None:
        """Declare `owner`'s thresholds; declaring the same ones again is a no-op (a built-in
        detector's registration repeats what `BUILT_IN_THRESHOLDS` declared)."""
        thresholds = list(thresholds)
        if len({t.name for t in thresholds}) != len(thresholds):
            raise ValueError(f"{owner!r} declares a threshold twice")
        for threshold in thresholds:
            name = threshold.name
            held = self._declared.get(name)
            if held == (owner, threshold):
                continue
            if name in _EngineThresholds.model_fields or held is not None:
                by = held[0] if held is not None else "the engine"
                raise ValueError(f"{owner!r} reuses a threshold name: {name!r} is {by!r}'s")
        self._declared.update((t.name, (owner, t)) for t in thresholds)
        self._model = None

    def withdraw(self, owner: str) -> None:
        self._declared = {n: d for n, d in self._declared.items() if d[0] != owner}
        self._model = None

    def __iter__(self) -> Iterator[Threshold]:
        return iter([threshold for _, threshold in self._declared.values()])

    def __contains__(self, name: object) -> bool:
        return name in self._declared

    def default(self, name: str) -> float:
        if name not in self._declared:
            raise KeyError(f"no detector declares the threshold {name!r}")
        return self._declared[name][1].default

    def model(self) -> type[BaseModel]:
        """`[runs.alerts]` as a model: the engine-wide fields and every declared threshold
        (nothing else), built again after each change."""
        if self._model is None:
            fields: dict[str, Any] = {
                t.name: (t.annotation, t.default) for _, t in self._declared.values()
            }
            for name, info in _EngineThresholds.model_fields.items():
                fields[name] = (info.annotation, info)
            config = ConfigDict(extra="forbid")
            self._model = create_model("DeclaredThresholds", __config__=config, **fields)
        return self._model


class _EngineThresholds(BaseModel):
    """Engine-wide tunables of `[runs.alerts]`, no detector's: how long a condition must last
    before it alerts (`pending_minutes`), how often a firing incident is recalled, and how long
    after an incident resolved its condition coming back reopens it (`reopen_minutes`; 0: never,
    each return is a new incident)."""

    model_config = ConfigDict(extra="forbid")
    pending_minutes: float = Field(default=0, ge=0)
    reminder_minutes: float | None = Field(default=None, gt=0)
    reopen_minutes: float = Field(default=60, ge=0)


class Thresholds(_EngineThresholds):
    """A run's `[runs.alerts]`: the engine-wide fields, and the values the runs file sets for
    declared detector thresholds (`THRESHOLDS`); read a detector's with `value(name)`, which
    falls back to its declared default. Any other key is refused with its path."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="wrap")
    @classmethod
    def _declared(cls, data: Any, handler: ModelWrapValidatorHandler[Thresholds],
                  info: ValidationInfo) -> Thresholds:  # fmt: skip
        if not isinstance(data, Mapping):
            return handler(data)
        own = {k: v for k, v in data.items() if k in _EngineThresholds.model_fields}
        tuned = {k: v for k, v in data.items() if k not in own}
        if info.context == _STORED:
            retired = sorted(k for k in tuned if k not in THRESHOLDS)
            if retired:
                log.warning("ignoring stored thresholds no detector declares: %s", retired)
            tuned = {k: v for k, v in tuned.items() if k in THRESHOLDS}
        checked = THRESHOLDS.model().model_validate({**own, **tuned})
        values = checked.model_dump(include=set(own) | set(tuned))
        return handler(values)

    def value(self, name: str) -> float:
        """A declared threshold's value for this run: the runs file's, else its default."""
        extra = self.model_extra or {}
        if name in extra:
            return extra[name]
        return THRESHOLDS.default(name)


#: The built-in detectors' thresholds, by the detector's fingerprint (`bot.incidents.detectors`
#: registers each detector with its entry here). Declared below the detectors, not by importing
#: them, so nothing has to be imported first for a runs file to be judged.
BUILT_IN_THRESHOLDS: dict[str, tuple[Threshold, ...]] = {
    "heartbeat": (Threshold("heartbeat_minutes", 15, gt=0),),
    "stall": (Threshold("stall_minutes", 20, gt=0),),
    "throughput": (
        Threshold("throughput_drop_percent", 25, gt=0, lt=100),
        Threshold("throughput_minutes", 30, gt=0),
    ),
    "loss-spike": (
        Threshold("loss_spike_percent", 25, gt=0),
        Threshold("loss_spike_points", 3, integer=True, ge=1),
    ),
}

#: Every detector's declared thresholds: the built-in ones, and those a registration adds.
THRESHOLDS = ThresholdRegistry(BUILT_IN_THRESHOLDS)


class ForecastConfig(BaseModel):
    """One `[[runs.forecasts]]` entry: a W&B metric to forecast from its own history and watch
    for drift (see `bot.analysis.forecast`). The defaults are chosen not to fire on noise."""

    model_config = ConfigDict(extra="forbid")
    metric: str = Field(min_length=1, max_length=200)
    label: str | None = Field(default=None, max_length=100)
    direction: Literal["up", "down", "both"] = "both"
    points: int = Field(default=5, ge=1, le=1000)  # K: consecutive points outside (or back in)
    window: int = Field(default=200, ge=10, le=5000)  # trailing points the trend is fitted on
    holdout: int = Field(default=20, ge=1, le=5000)  # newest points left out of the fit
    band: float = Field(default=5.0, gt=0, le=100)  # band half-width in robust sigmas
    min_points: int = Field(default=60, ge=10, le=10000)  # learning until this many

    @field_validator("metric")
    @classmethod
    def _metric(cls, value: str) -> str:
        if value != value.strip() or value.startswith("_"):
            raise ValueError(f"{value!r} is not a W&B history key to forecast")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ForecastConfig:
        if self.holdout < self.points:
            raise ValueError(
                f"holdout ({self.holdout}) must be at least points ({self.points}): the newest "
                "points are judged against a fit that does not contain them"
            )
        if self.min_points < self.holdout + 10:
            raise ValueError(
                f"min_points ({self.min_points}) must be at least holdout + 10 "
                f"({self.holdout + 10})"
            )
        return self

    @property
    def name(self) -> str:
        return self.label or self.metric


# Validation context of a config read back from the store (see `RunConfig.stored`).
_STORED = {"stored": True}

_WANDB_PATH = re.compile(r"^[\w.\-]+/[\w.\-]+/[\w.\-]+$")
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_REPO = re.compile(r"^[\w.\-]+/[\w.\-]+$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
MAX_ALERT_LABELS = 20
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


class RunConfig(BaseModel):
    """One `[[runs]]` table. Keys and meanings are a fixed interface (README: The runs file)."""

    model_config = ConfigDict(extra="forbid")

    slug: str = Field(min_length=1, max_length=32)
    name: str = Field(min_length=1, max_length=200)
    wandb_runs: list[str] = Field(default_factory=list)
    wandb_run_pattern: str | None = None
    total_steps: int | None = Field(default=None, gt=0)
    target_tokens: float | None = Field(default=None, gt=0)
    launched_at: datetime | None = None
    github_repo: str | None = None
    github_issues: list[int] = Field(default_factory=list)
    github_labels: list[str] = Field(default_factory=list)
    github_keywords: list[str] = Field(default_factory=list)
    github_include_bots: bool = False
    # the run's ops-log issue: each resolved incident's write-up is one comment there, edited
    # in place (needs a GITHUB_TOKEN that may write issues)
    github_ops_issue: int | None = Field(default=None, gt=0)
    watch_channels: list[int] = Field(default_factory=list)
    alerts_channel: int | None = None
    digest_channel: int | None = None
    status_channel: int | None = None  # one live /status message, edited in place (pinned)
    status_refresh_minutes: int = Field(default=15, ge=1, le=1440)
    responder_role: int | None = None  # who may silence alerts (besides Manage Server)
    alert_role: int | None = None  # the one role an incident's first post pings (opt-in)
    gpus: int | None = Field(default=None, gt=0)  # the run's GPU count: write-ups cost GPU-hours
    digest_time: str = "09:00"
    timezone: str = "UTC"
    metrics: MetricKeys = Field(default_factory=MetricKeys)
    links: dict[str, str] = Field(default_factory=dict)
    alerts: Thresholds = Field(default_factory=Thresholds)
    loss_forecast: list[tuple[float, float]] | None = None
    forecasts: list[ForecastConfig] = Field(default_factory=list)
    # Alertmanager alerts whose labels all match belong to this run (besides label run = slug).
    alert_labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("slug")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", value):
            raise ValueError("use lowercase letters, digits, '-' and '_' (e.g. 'hero')")
        return value

    @field_validator("wandb_runs")
    @classmethod
    def _wandb_runs(cls, value: list[str]) -> list[str]:
        for path in value:
            if not _WANDB_PATH.match(path):
                raise ValueError(f"{path!r} is not an entity/project/run_id path")
        if len(set(value)) != len(value):
            raise ValueError("lists the same W&B run twice")
        return value

    @field_validator("wandb_run_pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
        return value

    @model_validator(mode="before")
    @classmethod
    def _launched_in_zone(cls, data: Any) -> Any:
        """`launched_at = 2026-08-20` (a date) or a date-time without an offset is the run's
        own calendar: midnight (or that time) in its `timezone`, not in UTC (a New York run
        launched on Aug 20 was shown as launched on Aug 19)."""
        if not isinstance(data, Mapping) or "launched_at" not in data:
            return data
        value = data["launched_at"]
        if isinstance(value, str) and _DATE_ONLY.match(value.strip()):
            value = date.fromisoformat(value.strip())
        if isinstance(value, date) and not isinstance(value, datetime):
            value = datetime(value.year, value.month, value.day)
        if isinstance(value, datetime) and value.tzinfo is None:
            zone = data.get("timezone", "UTC")
            local = value.replace(tzinfo=resolve_zone(zone if isinstance(zone, str) else "UTC"))
            return {**data, "launched_at": local.astimezone(UTC)}
        return data

    @field_validator("launched_at", mode="before")
    @classmethod
    def _launched(cls, value: Any) -> Any:
        if isinstance(value, date) and not isinstance(value, datetime):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        if isinstance(value, time):
            raise ValueError("must be a date or a date-time")
        return value

    @field_validator("launched_at")
    @classmethod
    def _launched_utc(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @field_validator("github_repo")
    @classmethod
    def _repo(cls, value: str | None) -> str | None:
        if value is not None and not _REPO.match(value):
            raise ValueError(f"{value!r} is not an owner/name repository")
        return value

    @field_validator("github_issues")
    @classmethod
    def _issues(cls, value: list[int]) -> list[int]:
        if any(n <= 0 for n in value):
            raise ValueError("issue numbers must be positive")
        return value

    @field_validator("watch_channels")
    @classmethod
    def _channels(cls, value: list[int]) -> list[int]:
        for channel in value:
            _check_snowflake(channel)
        return value

    @field_validator(
        "alerts_channel", "digest_channel", "status_channel", "responder_role", "alert_role"
    )
    @classmethod
    def _channel(cls, value: int | None) -> int | None:
        if value is not None:
            _check_snowflake(value)
        return value

    @field_validator("digest_time")
    @classmethod
    def _digest_time(cls, value: str) -> str:
        if not _HHMM.match(value):
            raise ValueError(f"must be HH:MM in 24-hour time, got {value!r}")
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        resolve_zone(value, strict=True)
        return value

    @field_validator("links")
    @classmethod
    def _links(cls, value: dict[str, str]) -> dict[str, str]:
        for label, url in value.items():
            if not re.match(r"^https?://\S+$", url):
                raise ValueError(f"link {label!r} must be an http(s) URL")
        return value

    @field_validator("loss_forecast")
    @classmethod
    def _loss_forecast(cls, value: list[tuple[float, float]] | None) -> Any:
        if value is None:
            return None
        if len(value) < 2:
            raise ValueError("needs at least 2 [step, loss] points")
        for index, (step, loss) in enumerate(value):
            if not (math.isfinite(step) and math.isfinite(loss)) or step <= 0 or loss <= 0:
                raise ValueError(f"point {index} {[step, loss]}: step and loss must be positive")
            if index and step <= value[index - 1][0]:
                raise ValueError(f"point {index}: steps must increase ({step:g} after "
                                 f"{value[index - 1][0]:g})")  # fmt: skip
        return value

    @field_validator("alert_labels")
    @classmethod
    def _alert_labels(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_ALERT_LABELS:
            raise ValueError(f"at most {MAX_ALERT_LABELS} labels")
        for name, wanted in value.items():
            if not _LABEL_NAME.match(name):
                raise ValueError(
                    f"{name!r} is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"
                )
            if not wanted:
                raise ValueError(f"label {name!r}: an empty value matches no alert")
            if len(wanted) > 200:
                raise ValueError(f"label {name!r}: the value is longer than 200 characters")
        return value

    @field_validator("forecasts")
    @classmethod
    def _forecasts(cls, value: list[ForecastConfig]) -> list[ForecastConfig]:
        seen: set[str] = set()
        for entry in value:
            if entry.metric in seen:
                raise ValueError(f"metric {entry.metric!r} is listed twice")
            seen.add(entry.metric)
        return value

    @model_validator(mode="after")
    def _has_source(self, info: ValidationInfo) -> RunConfig:
        if info.context == _STORED:
            return self  # a runs-file rule; the store may hold runs recorded without sources
        if not self.wandb_runs and not self.wandb_run_pattern and not self.github_repo:
            raise ValueError("needs at least one source: wandb_runs or github_repo")
        if self.wandb_run_pattern and not self.wandb_runs:
            raise ValueError("wandb_run_pattern needs wandb_runs (it names the project to watch)")
        if self.forecasts and not self.wandb_runs:
            raise ValueError("forecasts need wandb_runs (the metrics come from W&B)")
        if self.loss_forecast and not self.metrics.loss:
            raise ValueError("loss_forecast needs metrics.loss (the W&B key of the loss)")
        watched = {self.metrics.step, self.metrics.tokens, self.metrics.loss}
        for entry in self.forecasts:
            if entry.metric in watched:
                raise ValueError(
                    f"forecasts: {entry.metric!r} is already a [runs.metrics] key; "
                    "use loss_forecast for the loss"
                )
        return self

    @property
    def zone(self) -> ZoneInfo:
        return resolve_zone(self.timezone, strict=True)

    @classmethod
    def stored(cls, data: Mapping[str, Any]) -> RunConfig:
        """Re-validate a config the store kept (`model_dump(mode="json")` of one written by any
        earlier version). A key this version cannot read is dropped, with a warning, rather than
        losing the whole run: an invalid `alerts` table falls back to the default thresholds."""
        values = dict(data)
        while True:
            try:
                return cls.model_validate(values, context=_STORED)
            except ValidationError as exc:
                bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]} - {"slug", "name"}
                if not bad or not bad & values.keys():
                    raise
                log.warning(
                    "run %s: ignoring invalid stored %s", values.get("slug"), ", ".join(sorted(bad))
                )
                for key in bad:
                    values.pop(key, None)

    def wandb_chain(self, discovered: Iterable[str] = ()) -> list[str]:
        """The W&B runs of the chain in order: those listed in the runs file, then any other
        `discovered` (e.g. forks matched by `wandb_run_pattern`, in the order given)."""
        listed = list(self.wandb_runs)
        return listed + [path for path in dict.fromkeys(discovered) if path not in listed]

    @property
    def digest_clock(self) -> time:
        hour, minute = self.digest_time.split(":")
        return time(int(hour), int(minute), tzinfo=self.zone)


def _check_snowflake(value: int) -> None:
    if not 0 < value < 2**64:
        raise ValueError(f"{value} is not a Discord id")


class RunsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    runs: list[RunConfig] = Field(min_length=1)
    # The run a command means when it names none and its channel belongs to no single run.
    default_run: str | None = None

    def get(self, slug: str) -> RunConfig | None:
        return next((run for run in self.runs if run.slug == slug), None)


def _loc(parts: tuple[int | str, ...]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _known_keys() -> set[str]:
    """Every key a runs file may hold, at any level: what a near-miss is compared with."""
    models: tuple[type[BaseModel], ...] = (RunsFile, RunConfig, MetricKeys, ForecastConfig)
    keys = {name for model in models for name in model.model_fields}
    return keys | {threshold.name for threshold in THRESHOLDS} | set(_EngineThresholds.model_fields)


def _unknown_key(name: object) -> str:
    """'unknown key', with the nearest known key when the name looks like a typo of one."""
    import difflib

    if isinstance(name, str):
        near = difflib.get_close_matches(name, sorted(_known_keys()), n=1, cutoff=0.75)
        if near:
            return f"unknown key (did you mean {near[0]!r}?)"
    return "unknown key"


def _messages(error: ValidationError, prefix: str = "") -> list[str]:
    problems = []
    for item in error.errors(include_url=False):
        path = _loc(tuple(item["loc"]))
        message = item["msg"]
        message = message.removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = _unknown_key(item["loc"][-1] if item["loc"] else None)
        elif item["loc"] == ("runs",) and item["type"] == "list_type":
            message = "each run is a [[runs]] table (two brackets), not [runs]"
        elif item["type"] == "missing":
            message = "required key is missing"
        elif "input" in item and item["type"] not in {"value_error", "assertion_error"}:
            message = f"{message} (got {item['input']!r})"[:300]
        where = f"{prefix}{path}" if path else prefix.rstrip(".") or "runs file"
        problems.append(f"{where}: {message}")
    return problems


# runscribe.example.toml marks every value a person must replace with this; its loss curve
# only shows the format.
PLACEHOLDER = "CHANGE-ME"
EXAMPLE_LOSS_FORECAST = ((1000, 3.10), (10000, 2.62), (100000, 2.25))


def example_leftovers(run: RunConfig) -> list[str]:
    """The keys of `run` that still hold the example runs file's values (a CHANGE-ME
    placeholder, its made-up loss curve): they would reach the /status card as written."""
    found: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, str) and PLACEHOLDER in value:
            found.append(path)
        elif isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list | tuple):
            for index, inner in enumerate(value):
                walk(inner, f"{path}[{index}]")

    walk(run.model_dump(mode="json", exclude={"loss_forecast"}), "")
    curve = [tuple(point) for point in run.model_dump(mode="json").get("loss_forecast") or []]
    if curve and curve == [tuple(point) for point in EXAMPLE_LOSS_FORECAST]:
        found.append("loss_forecast (the example's made-up curve)")
    return found


def parse_runs(data: dict[str, Any], source: str = "runs file") -> RunsFile:
    try:
        runs = RunsFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_messages(exc)) from None
    first: dict[str, int] = {}
    problems = []
    for index, run in enumerate(runs.runs):
        if run.slug in first:
            problems.append(
                f"runs[{index}].slug: {run.slug!r} is already used by runs[{first[run.slug]}]"
            )
        first.setdefault(run.slug, index)
    if runs.default_run is not None and runs.default_run not in first:
        problems.append(
            f"default_run: {runs.default_run!r} is not a run's slug "
            f"(the runs are: {', '.join(first)})"
        )
    if problems:
        raise ConfigError(problems)
    return runs


def load_runs_file(path: Path) -> RunsFile:
    """Read and validate the runs file; raise ConfigError with every problem found."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            [f"{path}: runs file not found (set RUNSCRIBE_CONFIG or create it)"]
        ) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read runs file: {exc.strerror}"]) from None
    import tomllib  # only when a runs file is read

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: invalid TOML: {exc}"]) from None
    return parse_runs(data, str(path))
