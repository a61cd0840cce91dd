"""`runscribe` (== `python -m bot`): the composition root for every command.

Exit codes: 0 fine, 1 unexpected failure, 2 a problem the user can fix (bad configuration, an
unknown run, a bad argument). User-fixable problems never print a traceback."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sqlite3
import sys
import tempfile
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bot.config.environment import database_path
from bot.config.runsfile import ConfigError, RunsFile, example_leftovers, load_runs_file
from bot.core import logs
from bot.core.errors import UserFacingError
from bot.core.timeutil import humanize_delta, utcnow
from bot.models import SOURCE_SPECS, TAGS
from bot.store import Database, Store, StoreError
from bot.store.db import existing_problem, path_problem, write_problem
from bot.store.errors import BUSY_SECONDS
from bot.store.runs import slugs_in_file

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.process.pipeline import CycleSummary
    from bot.process.runtime import Runtime
    from bot.sources.poller import CycleReport

log = logging.getLogger("runscribe")

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
ENRICH_EVERY = 10.0  # seconds between looks at the enrichment queue in `poll` without --once
HISTORICAL = "historical: replayed by `runscribe demo`, never posted"
_RUN_HELP = "the run's slug (needed only when several runs are recorded)"


def _width() -> int:
    """Text wraps to the terminal (or 100 columns when not a terminal), within sane bounds."""
    import shutil

    return max(40, min(shutil.get_terminal_size((100, 24)).columns, 160))


_DESCRIPTIONS = {
    "run": (
        "Start the Discord bot: poll W&B and GitHub, watch the runs' channels, answer the "
        "slash commands, post incidents and digests. Needs DISCORD_TOKEN (a bot token) "
        "and the runs file (RUNSCRIBE_CONFIG, default ./runscribe.toml); writes the "
        "database RUNSCRIBE_DB (default ./runscribe.db). Slash commands are published at "
        "the first start, to DISCORD_GUILD_ID when set. With RUNSCRIBE_WEB_PORT set, also "
        "serves the status page and /healthz. Runs until stopped (Ctrl-C or SIGTERM)."
    ),
    "poll": (
        "Poll every source of the runs file (W&B, GitHub), enrich the new events and "
        "detect incidents, writing everything to RUNSCRIBE_DB; alerts stay queued for the "
        "bot to post. Without --once, repeats every RUNSCRIBE_POLL_INTERVAL seconds."
    ),
    "status": (
        "Print what /status shows for a run, from the database (RUNSCRIBE_DB) alone: "
        "progress, state, projected end, last restart, loss, open incidents, freshness of "
        "each source, the narrative and links."
    ),
    "timeline": (
        "Print what /timeline shows for a run, newest first, from the database "
        "(RUNSCRIBE_DB) alone."
    ),
    "digest": (
        "Compose a run's digest of the last 24 hours from the database and print it "
        "(written by Claude when ANTHROPIC_API_KEY is set, else from the template); "
        "nothing is posted."
    ),
    "incident": (
        "Print a resolved incident's write-up as Markdown, from the database (RUNSCRIBE_DB) "
        "alone: what happened, the reported cause, who acted, how training came back, the "
        "cost, follow-ups and sources."
    ),
    "check-config": (
        "Validate the environment (.env included), the runs file (RUNSCRIBE_CONFIG) and "
        "the database path (RUNSCRIBE_DB): one line per problem and exit 2, notes for "
        "what is missing or still the example's, exit 0 otherwise."
    ),
    "ask": (
        "Answer a question about a run from its stored history, with numbered citations "
        "(by Claude when ANTHROPIC_API_KEY is set, else the matching entries)."
    ),
    "usage": (
        "Print the LLM spend recorded in the database today and this month, by task, "
        "against RUNSCRIBE_LLM_DAILY_BUDGET_USD."
    ),
    "page": (
        "Write the static status page from the database: DIR/index.html (every run) and "
        "DIR/<slug>.html for each run."
    ),
    "web": (
        "Serve the status pages (/ and /runs/<slug>) and /healthz (JSON, 503 when a "
        "source is failing) from the database, without Discord. Runs until stopped."
    ),
    "repair": (
        "Mend a damaged database (RUNSCRIBE_DB) so `run` and `poll` start again: a copy of "
        "the damaged file is kept beside it, its indexes are rebuilt, and when a table's "
        "own page is damaged every readable row is copied into a new file that takes its "
        "place. Stop the bot first."
    ),
}


# Long on purpose: a flat table of subcommands and their options, read top to bottom.
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="runscribe",
        description="Runscribe: one voice about a long training run, in Discord.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser(
        "run",
        help="start the Discord bot",
        description=_DESCRIPTIONS["run"],
    )
    poll = sub.add_parser(
        "poll",
        help="poll every source, enrich and detect incidents",
        description=_DESCRIPTIONS["poll"],
    )
    poll.add_argument("--once", action="store_true", help="one cycle, then exit")
    status = sub.add_parser(
        "status",
        help="what /status shows",
        description=_DESCRIPTIONS["status"],
    )
    status.add_argument("--run", metavar="SLUG", help=_RUN_HELP)
    status.add_argument(
        "--json",
        action="store_true",
        help="print JSON (its fields: README, Commands)",
    )
    timeline = sub.add_parser(
        "timeline",
        help="what /timeline shows",
        description=_DESCRIPTIONS["timeline"],
    )
    timeline.add_argument("--run", metavar="SLUG", help=_RUN_HELP)
    timeline.add_argument(
        "--days", type=int, default=7, metavar="N", help="how many days back (default 7)"
    )
    timeline.add_argument(
        "--tag", choices=TAGS, metavar="TAG", help=f"only this tag: {', '.join(TAGS)}"
    )
    timeline.add_argument(
        "--source",
        choices=SOURCE_SPECS.names(),
        metavar="SOURCE",
        help=f"only this source: {', '.join(SOURCE_SPECS.names())}",
    )
    timeline.add_argument(
        "--limit", type=int, default=200, metavar="N", help="at most N entries (default 200)"
    )
    timeline.add_argument("--json", action="store_true", help="print a JSON list of entries")
    digest = sub.add_parser(
        "digest",
        help="compose the digest of the last 24 h and print it",
        description=_DESCRIPTIONS["digest"],
    )
    digest.add_argument("--run", metavar="SLUG", help=_RUN_HELP)
    digest.add_argument("--json", action="store_true", help="print the digest's facts as JSON")
    demo = sub.add_parser(
        "demo",
        help="the whole pipeline on a bundled sample run, offline",
        description=(
            "Replay the bundled three-week sample run through the real pipeline (sources, "
            "enrichment, incident detection, narrative, digest) and print /status, /timeline "
            "and the digest. Offline, no keys. The sample goes into a temporary database, "
            "never into RUNSCRIBE_DB: your own runs are never mixed with it."
        ),
    )
    demo.add_argument(
        "--db",
        type=Path,
        metavar="PATH",
        help=(
            "keep the demo's database at PATH (a new file, or one an earlier demo wrote); "
            "refused when PATH holds other runs"
        ),
    )
    incident = sub.add_parser(
        "incident",
        help="print an incident's write-up (Markdown)",
        description=_DESCRIPTIONS["incident"],
    )
    incident.add_argument("incident_id", type=int, metavar="ID", help="the incident's number")
    sub.add_parser(
        "check-config",
        help="validate the environment and the runs file",
        description=_DESCRIPTIONS["check-config"],
    )
    ask = sub.add_parser(
        "ask",
        help="answer a question from the stored history, with citations",
        description=_DESCRIPTIONS["ask"],
    )
    ask.add_argument("--run", metavar="SLUG", help=_RUN_HELP)
    ask.add_argument("--json", action="store_true", help="print the answer and citations as JSON")
    ask.add_argument("--limit", type=int, default=8, metavar="N", help="citations at most (1-20)")
    ask.add_argument("question", nargs="+", metavar="QUESTION", help="the question, in words")
    usage = sub.add_parser(
        "usage",
        help="LLM spend today and this month, by task",
        description=_DESCRIPTIONS["usage"],
    )
    usage.add_argument("--json", action="store_true", help="print the spend report as JSON")
    page = sub.add_parser(
        "page",
        help="write the status page: DIR/index.html and DIR/<slug>.html",
        description=_DESCRIPTIONS["page"],
    )
    page.add_argument("--run", metavar="SLUG", help="only this run's page (default: every run)")
    page.add_argument(
        "--days", type=int, default=30, metavar="N", help="timeline days on the page (default 30)"
    )
    page.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="directory to write the pages to"
    )
    sub.add_parser(
        "repair",
        help="mend a damaged database (keeps a copy of it)",
        description=_DESCRIPTIONS["repair"],
    )
    web = sub.add_parser(
        "web",
        help="serve the status pages and /healthz from the store",
        description=_DESCRIPTIONS["web"],
    )
    web.add_argument(
        "--host", metavar="H", help="address to listen on (default RUNSCRIBE_WEB_HOST, 127.0.0.1)"
    )
    web.add_argument(
        "--port", type=int, metavar="P", help="port (default RUNSCRIBE_WEB_PORT, else 8080)"
    )
    return parser


class DatabaseOnly(Protocol):
    """What `status` and `timeline` need of the environment: they only read the database."""

    @property
    def runscribe_db(self) -> Path: ...


@dataclass(frozen=True, slots=True)
class _DatabasePath:
    runscribe_db: Path


# One-shot commands that only read the database: they skip pydantic-settings (its import and
# the validation of every other variable cost more than the answer) and read RUNSCRIBE_DB alone.
READ_ONLY = frozenset({"status", "timeline", "incident"})
DATABASE_ONLY = READ_ONLY | {"repair"}  # need RUNSCRIBE_DB alone


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    long_running = args.command in ("run", "poll", "web")
    level = "WARNING"
    settings: Settings | DatabaseOnly
    if args.command in DATABASE_ONLY:
        settings = _DatabasePath(database_path())
    else:
        from bot.config.settings import load_settings

        try:
            settings = load_settings()
        except ConfigError as exc:
            _problems(exc.problems)
            return EXIT_USAGE
        if long_running:
            level = settings.runscribe_log_level
    logs.configure(level, stream="stdout" if long_running else "stderr")
    handler = _COMMANDS[args.command]
    try:
        return asyncio.run(handler(settings, args))
    except ConfigError as exc:
        _problems(exc.problems)
        return EXIT_USAGE
    except (UserFacingError, StoreError) as exc:
        print(f"runscribe: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except sqlite3.Error as exc:  # locked past busy_timeout, a full disk, a damaged file
        from bot.store.integrity import describe_sqlite_error

        said = describe_sqlite_error(exc, settings.runscribe_db, _busy_timeout(settings))
        if said is None and "readonly" in str(exc):
            # A command that writes (a digest's composed text, LLM spend) on a read-only file.
            said = write_problem(settings.runscribe_db) or str(exc)
        if said is None:
            raise
        print(f"runscribe: {said}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `runscribe timeline | head`: the reader left, not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return EXIT_OK


def _problems(problems: list[str]) -> None:
    """One line per problem, each saying where it is: one problem is one line."""
    for problem in problems:
        print(f"runscribe: {problem}", file=sys.stderr)


# Steps that work on a fresh clone: the demo writes its sample only where --db says.
_FILL_HINT = (
    "write a runs file (copy runscribe.example.toml) and run `runscribe poll --once` to fill "
    "it; for the bundled sample, `runscribe demo --db demo.db` then "
    "`RUNSCRIBE_DB=demo.db runscribe status`"
)


async def _resolve_slug(store: Store, requested: str | None) -> str:
    from bot.services.runs import pick_run

    return pick_run(
        [r.slug for r in await store.runs.all()],
        requested,
        none=f"no runs recorded in {store.db.path}: {_FILL_HINT}",
        several="several runs recorded; pick one with --run ({slugs}) or set default_run in "
        "the runs file",
        default=_default_run(),
    )


def _default_run() -> str | None:
    """The runs file's top-level `default_run`, read without validating the rest of the file
    (the read-only commands answer from the database; a runs file is optional for them)."""
    import tomllib

    from bot.config.environment import config_path

    try:
        data = tomllib.loads(config_path().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = data.get("default_run")
    return value.strip() if isinstance(value, str) and value.strip() else None


def _existing_db(settings: DatabaseOnly) -> Path:
    path = Path(settings.runscribe_db)
    problem = path_problem(path)
    if problem is not None:
        raise StoreError(problem)
    if not path.exists():
        raise UserFacingError(f"no database at {path}; set RUNSCRIBE_DB, or {_FILL_HINT}")
    return path


def _busy_timeout(settings: Settings | DatabaseOnly) -> float:
    """RUNSCRIBE_DB_BUSY_TIMEOUT; `status` and `timeline`, which only read (WAL readers wait
    on no writer) and skip the settings, keep the default."""
    return getattr(settings, "runscribe_db_busy_timeout", BUSY_SECONDS)


def _open_db(settings: Settings | DatabaseOnly) -> AbstractAsyncContextManager[Database]:
    """The existing database, waiting the configured busy timeout for another's lock."""
    return Database.open(_existing_db(settings), busy_timeout=_busy_timeout(settings))


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


async def cmd_status(settings: DatabaseOnly, args: argparse.Namespace) -> int:
    from bot.render.cards import status_card
    from bot.render.json import status_json
    from bot.render.terminal import local_formatter, render_card
    from bot.services.narrative import status_with_narrative

    async with _open_db(settings) as db:
        store = Store(db)
        slug = await _resolve_slug(store, args.run)
        now = utcnow()
        report, narrative = await status_with_narrative(store, slug, now)
    if args.json:
        _print_json(status_json(report, narrative))
    else:
        fmt = local_formatter(report.run.timezone, now)
        print(render_card(status_card(report, narrative, fmt), width=_width()))
    return EXIT_OK


async def cmd_timeline(settings: DatabaseOnly, args: argparse.Namespace) -> int:
    from bot.render.json import timeline_json
    from bot.render.terminal import local_formatter, render_timeline
    from bot.services.timeline import build_timeline, validate_filters

    validate_filters(args.days, args.tag, args.source)
    if args.limit < 1:
        raise UserFacingError("--limit must be at least 1")
    async with _open_db(settings) as db:
        store = Store(db)
        slug = await _resolve_slug(store, args.run)
        now = utcnow()
        run = await store.runs.get(slug)
        entries = await build_timeline(
            store, slug, now, days=args.days, tag=args.tag, source=args.source, limit=args.limit
        )
    if args.json:
        _print_json(timeline_json(entries))
    else:
        zone = run.timezone if run else "UTC"
        name = run.name if run else slug
        heading = f"{name} — timeline, last {args.days} day{'s' if args.days != 1 else ''}"
        filters = [f"{k} {v}" for k, v in (("tag", args.tag), ("source", args.source)) if v]
        if filters:
            heading += f" ({', '.join(filters)})"
        print(heading)
        print("=" * min(len(heading), _width()))
        print(render_timeline(entries, local_formatter(zone, now), width=_width()))
    return EXIT_OK


async def cmd_incident(settings: DatabaseOnly, args: argparse.Namespace) -> int:
    from bot.incidents.writeup import report_for
    from bot.posts.writeup import writeup_markdown

    async with _open_db(settings) as db:
        writeup, prose = await report_for(Store(db), args.incident_id)
    print(writeup_markdown(writeup, prose), end="")
    return EXIT_OK


async def cmd_digest(settings: Settings, args: argparse.Namespace) -> int:
    from bot.outputs.digests import compose_text
    from bot.process import wiring
    from bot.render.json import digest_json
    from bot.services.digest import build_digest

    async with _open_db(settings) as db:
        store = Store(db)
        slug = await _resolve_slug(store, args.run)
        facts = await build_digest(store, slug, utcnow())
        async with wiring.open_llm(store, settings) as llm:
            facts.text = await compose_text(facts, wiring.digest_composer(store, llm))
    if args.json:
        _print_json(digest_json(facts))
    else:
        from bot.render.terminal import plain

        print(f"Digest — {facts.run_name}")
        print(plain(facts.text))  # its citations are links a terminal cannot show
    return EXIT_OK


async def cmd_check_config(settings: Settings, args: argparse.Namespace) -> int:
    runs = _load_config(settings)
    database = settings.runscribe_db
    problem = (
        path_problem(database)
        or await asyncio.to_thread(write_problem, database)
        or await asyncio.to_thread(existing_problem, database)  # as `run` would open it
    )
    if problem is not None:
        raise StoreError(f"RUNSCRIBE_DB: {problem}")
    print(f"{settings.runscribe_config}: {len(runs.runs)} run(s) OK")
    exists = await asyncio.to_thread(os.path.exists, database)
    print(f"{database}: {'writable' if exists else 'will be created'}")
    _print_run_sources(runs)
    print(hooks_line(settings))
    for warning in config_warnings(settings, runs):
        print(f"note: {warning}")
    return EXIT_OK


def _print_run_sources(runs: RunsFile) -> None:
    for run in runs.runs:
        sources = []
        if run.wandb_runs:
            sources.append(f"W&B ({len(run.wandb_runs)} run(s))")
        if run.github_repo:
            sources.append(f"GitHub {run.github_repo}")
        if run.watch_channels:
            sources.append(f"Discord ({len(run.watch_channels)} channel(s))")
        print(f"  {run.slug}: {run.name} — {', '.join(sources)}")


def config_warnings(settings: Settings, runs: RunsFile) -> list[str]:
    """What `check-config` notes: settings that are valid but likely not what was meant."""
    from bot.services.status import tracks_no_thread

    warnings = []
    for index, run in enumerate(runs.runs):
        if tracks_no_thread(run):
            warnings.append(
                f"runs[{index}] ({run.slug}): github_repo {run.github_repo} alone tracks no "
                "thread: add github_issues, github_labels or github_keywords"
            )
        leftovers = example_leftovers(run)
        if leftovers:
            warnings.append(
                f"runs[{index}] ({run.slug}): {', '.join(leftovers)} still hold the example's "
                "values: replace them (or delete the keys), or they reach the /status card as "
                "written"
            )
    if settings.discord_token is None:
        warnings.append("DISCORD_TOKEN is not set: `runscribe run` will refuse to start")
    if settings.anthropic_api_key is None:
        warnings.append(
            "ANTHROPIC_API_KEY is not set: summaries and digests are written from the data alone, "
            "without AI"
        )
    if settings.wandb_api_key is None and any(r.wandb_runs for r in runs.runs):
        warnings.append(
            "WANDB_API_KEY is not set but W&B runs are configured: the W&B source will fail "
            "to authenticate"
        )
    if settings.github_token is None and any(r.github_repo for r in runs.runs):
        warnings.append("GITHUB_TOKEN is not set: GitHub allows 60 requests an hour")
    if settings.github_webhook_secret is not None and not any(r.github_repo for r in runs.runs):
        warnings.append(
            "GITHUB_WEBHOOK_SECRET is set but no run has github_repo: every delivery is ignored"
        )
    if settings.runscribe_web_port is None and (
        settings.github_webhook_secret is not None or settings.runscribe_hook_token is not None
    ):
        warnings.append(
            "a hook is enabled but RUNSCRIBE_WEB_PORT is not set: `runscribe run` serves no "
            "endpoint (`runscribe web` does)"
        )
    warnings.extend(_live_status_hints(settings, runs))
    warnings.extend(_refusal_hints(settings))
    warnings.extend(ops_log_hints(settings, runs))
    warnings.extend(reopen_hints(runs))
    return warnings


def reopen_hints(runs: RunsFile) -> list[str]:
    """When each run's resolved incidents reopen (`[runs.alerts] reopen_minutes`)."""
    hints = []
    for run in runs.runs:
        minutes = run.alerts.reopen_minutes
        if not minutes:
            hints.append(f"{run.slug}: a resolved incident never reopens (reopen_minutes = 0)")
        else:
            hints.append(
                f"{run.slug}: an incident whose condition returns within {minutes:g} "
                "min of its resolution reopens (one alert, one write-up edited); later it is a "
                "new incident (reopen_minutes)"
            )
    return hints


def ops_log_hints(settings: Settings, runs: RunsFile) -> list[str]:
    """Why incident write-ups are (or are not) written to each run's GitHub ops-log issue."""
    hints = []
    for run in runs.runs:
        issue, repo = run.github_ops_issue, run.github_repo
        where = f"{run.slug}: incident write-ups"
        if issue is None:
            hints.append(f"{where} stay in Discord: no github_ops_issue names an ops-log issue")
        elif repo is None:
            hints.append(f"{where} are not written to GitHub: github_ops_issue needs github_repo")
        elif settings.github_token is None:
            hints.append(f"{where} are not written to {repo}#{issue}: GITHUB_TOKEN is not set")
        else:
            hints.append(
                f"{where} go to {repo}#{issue}, one comment each, if GITHUB_TOKEN may write "
                "issues (a refusal is logged and nothing is written)"
            )
    return hints


def hooks_line(settings: Settings) -> str:
    """'hooks: POST /hooks/github enabled, POST /hooks/alertmanager off (RUNSCRIBE_HOOK_TOKEN
    unset)'."""
    parts = []
    for path, secret, name in (
        ("/hooks/github", settings.github_webhook_secret, "GITHUB_WEBHOOK_SECRET"),
        ("/hooks/alertmanager", settings.runscribe_hook_token, "RUNSCRIBE_HOOK_TOKEN"),
    ):
        parts.append(f"POST {path} " + ("enabled" if secret is not None else f"off ({name} unset)"))
    return "hooks: " + ", ".join(parts)


def _refusal_hints(settings: Settings) -> list[str]:
    """Channels where the running bot's last post was refused (the database says)."""
    from bot.store.delivery import refused_channels

    return [
        f"Discord refuses the bot's posts in channel {channel} ({why}): give the bot View "
        "Channel, Send Messages, Send Messages in Threads, Create Public Threads, Embed Links "
        "and Read Message History there; the posts wait until then"
        for channel, why in sorted(refused_channels(settings.runscribe_db).items())
    ]


def _live_status_hints(settings: Settings, runs: RunsFile) -> list[str]:
    """The live status message is pinned only with Manage Messages: said for every run with a
    `status_channel`, and more plainly where the running bot was refused (the database says)."""
    from bot.store.live import pin_refusals

    refused = pin_refusals(settings.runscribe_db)
    hints = []
    for run in runs.runs:
        if run.status_channel is None:
            continue
        if run.slug in refused:
            hints.append(
                f"{run.slug}: Discord refused to pin the live status message in channel "
                f"{refused[run.slug]}: give the bot Manage Messages there (it works unpinned)"
            )
        else:
            hints.append(
                f"{run.slug}: the live status message in channel {run.status_channel} is pinned "
                "only if the bot has Manage Messages there (else it stays unpinned)"
            )
    return hints


def _load_config(settings: Settings) -> RunsFile:
    """The runs file, its `[runs.alerts]` judged against every declared detector threshold
    (the built-in ones need no import first; see `bot.config.runsfile.THRESHOLDS`)."""
    return load_runs_file(settings.runscribe_config)


def _log_summary(summary: CycleSummary, what: str, now: datetime) -> None:
    for key, result in summary.poll.results.items():
        log.info(
            "%s: %d event(s), %d point(s), %d request(s), %d not modified",
            key,
            result.events,
            result.points,
            result.requests,
            result.not_modified,
        )
    for key, error in summary.poll.failures.items():
        log.warning("%s failed: %s", key, error)
    for key in summary.poll.skipped:
        log.warning("%s", skipped_line(key, summary.poll, now))
    log.info(
        "%s done in %.0f ms: %d enriched, %d alert(s) queued",
        what,
        summary.seconds * 1000,
        summary.enriched,
        summary.alerts_queued,
    )


def _poll_exit(summary: CycleSummary) -> int:
    """`poll --once`'s exit status. One failing source is isolated (logged, its health
    recorded, the others ran): 0. No source polled at all: 2 when each failed on its
    configuration (a refused token, a missing run or repository: fix it, then run again), like
    any configuration error; 1 for an outage (try again later)."""
    report = summary.poll
    if report.results or not report.failures:
        return EXIT_OK
    if set(report.failures) <= report.misconfigured:
        print(
            "runscribe: no source could be polled: fix the configuration named above "
            "(token, run or repository)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return EXIT_FAILURE


async def cmd_poll(settings: Settings, args: argparse.Namespace) -> int:
    from bot.process.wiring import open_runtime
    from bot.store.integrity import check_integrity

    runs = _load_config(settings)
    async with open_runtime(settings, runs) as runtime:
        await check_integrity(runtime.store.db)
        if args.once:
            now = utcnow()
            summary = await runtime.cycle(now)
            try:
                await runtime.refresh_narratives(now)
            except Exception:  # a narrative problem never fails the poll
                log.exception("narrative refresh failed")
            await _write_writeups(runtime, now)
            _log_summary(summary, "cycle", now)
            return _poll_exit(summary)
        await _poll_forever(settings, runtime)
    return EXIT_OK


async def _write_writeups(runtime: Runtime, now: datetime) -> None:
    """With a model key: the model's write-ups of resolved incidents, then detection, which
    queues what was stored (after the cycle's alerts and resolutions, never before them)."""
    try:
        if await runtime.write_writeups(now):
            await runtime.judge(now)
    except Exception:  # a write-up problem never fails the poll
        log.exception("incident write-ups failed")


async def _write_writeups_now(runtime: Runtime) -> None:
    await _write_writeups(runtime, utcnow())


async def _poll_forever(settings: Settings, runtime: Runtime) -> None:
    """`poll` without --once: the loops, until SIGTERM or SIGINT."""
    from bot.core.loops import Retries, repeat
    from bot.process.pipeline import FAMILIES

    # Each source family and the enrichment in its own loop with its own backoff, as in
    # the bot: a GitHub backfill or a slow LLM never delays a W&B crash alert.
    async def poll(family: str) -> None:
        now = utcnow()
        _log_summary(await runtime.poll(family, now), f"{family} poll", now)

    async def enrich() -> None:
        now = utcnow()
        summary = await runtime.enrich(now)
        if summary.enriched or summary.errors:
            _log_summary(summary, "enrichment", now)
        await runtime.refresh_narratives(now)

    interval = settings.runscribe_poll_interval
    # The loops run until SIGTERM (`docker stop`) or SIGINT: then they are cancelled (a
    # write under way rolls back, and the next start reads it again) and the store closes.
    # A loop backing off from a full disk or a lock retries as soon as the store takes a
    # write again, or another loop went through (`bot.core.loops`).
    retries, probe = Retries(), runtime.store.db.came_back
    bodies: list[tuple[str, float, Callable[[], Awaitable[None]]]] = [
        (f"poll-{family}", interval, partial(poll, family)) for family in FAMILIES
    ]
    bodies.append(("enrich", min(interval, ENRICH_EVERY), enrich))
    if runtime.pen is not None:  # write-ups by the model, in a loop of their own
        bodies.append(("writeups", ENRICH_EVERY, partial(_write_writeups_now, runtime)))
    with stop_signals() as stop:
        async with asyncio.TaskGroup() as group:
            loops = [
                group.create_task(repeat(name, every, body, retries=retries, probe=probe))
                for name, every, body in bodies
            ]
            print(f"polling every {interval:g} s; stop with SIGTERM or Ctrl-C", flush=True)
            await stop.wait()
            log.info("stopping: the poll loops are cancelled and the store closed")
            for task in loops:
                task.cancel()


def skipped_line(key: str, report: CycleReport, now: datetime) -> str:
    """Like "github:o/r skipped (backing off after: …); next try at 03:15 UTC, in 9 min"."""
    line = f"{key} skipped (backing off after: {report.backoff_errors.get(key, 'a failure')})"
    retry = report.retry_at.get(key)
    if retry is not None:
        line += f"; next try at {retry:%H:%M:%S} UTC, in {humanize_delta(retry - now)}"
    return line


async def cmd_run(settings: Settings, args: argparse.Namespace) -> int:
    if settings.discord_token is None:
        raise ConfigError(["DISCORD_TOKEN: required to start the bot"])
    runs = _load_config(settings)
    from bot.core.heap import fixed_malloc_thresholds, one_malloc_arena

    one_malloc_arena()  # before any thread starts (bot.core.heap)
    fixed_malloc_thresholds()
    from bot.app import run_bot
    from bot.process.wiring import COMMAND_READERS, open_runtime
    from bot.store.integrity import check_integrity

    async with (
        open_runtime(settings, runs, readers=COMMAND_READERS) as runtime,
        AsyncExitStack() as stack,
    ):
        await check_integrity(runtime.store.db)
        if settings.runscribe_web_port is not None:
            from bot.hooks.routes import HookEndpoints
            from bot.web.server import serve

            host = settings.runscribe_web_host
            _, bound = await stack.enter_async_context(
                serve(
                    runtime.store.reader,  # pages read like commands: never behind the poll cycle
                    host,
                    settings.runscribe_web_port,
                    poll_interval=settings.runscribe_poll_interval,
                    # pushes are stored through the writer and wake the bot's hooks loop
                    hooks=HookEndpoints.from_settings(runtime.store, settings, runtime.doorbell),
                )
            )
            say_serving(host, bound)
        await run_bot(runtime)
    return EXIT_OK


def say_serving(host: str, port: int) -> None:
    """The line a served status page announces, with the port bound (port 0 picks a free one,
    and tests and operators read which from here)."""
    print(f"serving the status page on http://{host}:{port}/", flush=True)


async def cmd_page(settings: Settings, args: argparse.Namespace) -> int:
    from bot.outputs.statuspage import render_pages, validate_days, write_pages

    validate_days(args.days)
    async with _open_db(settings) as db:
        store = Store(db)
        only = await _resolve_slug(store, args.run) if args.run is not None else None
        if not await store.runs.all():
            await _resolve_slug(store, None)  # the one clear "no runs recorded" message
        pages = await render_pages(store, utcnow(), days=args.days, only=only)
    try:
        written = await asyncio.to_thread(write_pages, args.out, pages)
    except OSError as exc:
        raise UserFacingError(f"cannot write to {args.out}: {exc.strerror or exc}") from None
    for path in written:
        print(path)
    return EXIT_OK


async def cmd_web(settings: Settings, args: argparse.Namespace) -> int:
    from bot.web.server import DEFAULT_PORT, serve

    host = args.host or settings.runscribe_web_host
    port = args.port if args.port is not None else settings.runscribe_web_port
    if port is None:
        port = DEFAULT_PORT
    if not 0 <= port <= 65535:
        raise UserFacingError("--port must be between 0 and 65535")
    if settings.github_webhook_secret or settings.runscribe_hook_token:
        return await _web_with_hooks(settings, host, port)
    async with (
        _open_db(settings) as db,
        serve(Store(db), host, port, poll_interval=settings.runscribe_poll_interval) as (_, bound),
    ):
        with stop_signals() as stop:
            say_serving(host, bound)
            await stop.wait()
    return EXIT_OK


@contextlib.contextmanager
def stop_signals() -> Iterator[asyncio.Event]:
    """An event set when the process is asked to stop: SIGTERM (`docker stop`) or SIGINT
    (Ctrl-C), handled here so the server closes its connections and the store whatever the
    signals' inherited disposition (a shell's background job starts with SIGINT ignored). Enter
    before saying the server is up, so a stop that follows at once is never missed."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGTERM, signal.SIGINT)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


async def _web_with_hooks(settings: Settings, host: str, port: int) -> int:
    """`runscribe web` with a push endpoint enabled: the runs file's sources read what is
    pushed (GitHub deliveries filtered as a poll filters them) and the incident engine judges it
    at once; posting to Discord stays with `runscribe run` (its outbox loop sends what is
    queued)."""
    from bot.hooks.routes import HookEndpoints
    from bot.process.wiring import open_runtime
    from bot.web.server import serve

    runs = _load_config(settings)
    async with open_runtime(settings, runs) as runtime:
        hooks = HookEndpoints.from_settings(runtime.store, settings, runtime.doorbell)

        async def woken() -> None:
            """Read and judge what was pushed as soon as the doorbell rings (and every 15 s for
            anything left waiting, and open alert incidents)."""
            doorbell = runtime.doorbell
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(doorbell.event.wait(), 15.0)
                rung = doorbell.event.is_set()
                doorbell.event.clear()
                now = utcnow()
                try:
                    summary = await runtime.ingest_pushed(now, judge=rung)
                    if rung or summary.poll.results["hooks"].events:
                        await runtime.enrich(now)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("reading pushed deliveries failed; retried on the next one")

        poll = settings.runscribe_poll_interval
        async with (
            serve(runtime.store, host, port, poll_interval=poll, hooks=hooks) as (_, bound),
            asyncio.TaskGroup() as group,
        ):
            reader = group.create_task(woken())
            with stop_signals() as stop:
                say_serving(host, bound)
                for hook, on in hooks.enabled.items():
                    print(f"  POST /hooks/{hook}: {'enabled' if on else 'off'}", flush=True)
                await stop.wait()
            reader.cancel()
    return EXIT_OK


async def cmd_demo(settings: Settings, args: argparse.Namespace) -> int:
    from bot.outputs.digests import compose_text
    from bot.process import demo, wiring
    from bot.render.cards import status_card
    from bot.render.terminal import local_formatter, plain, render_card, render_timeline
    from bot.services.digest import build_digest
    from bot.services.narrative import refresh_narratives, status_with_narrative
    from bot.services.timeline import build_timeline

    # The sample never joins a database of real runs: a temporary one, unless --db names one.
    explicit = args.db is not None
    with tempfile.TemporaryDirectory(prefix="runscribe-demo-") as tmp:
        path = Path(args.db) if explicit else Path(tmp) / "demo.db"
        now = utcnow()
        sample = demo.load(now)
        _check_demo_db(path, explicit, str(sample.run_config["slug"]))
        async with Database.open(path, busy_timeout=_busy_timeout(settings)) as db:
            store = Store(db)
            runs = demo.sample_runs_file(sample)
            async with wiring.open_llm(store, settings) as llm:
                stats = await demo.replay_into(
                    store,
                    sample,
                    enricher=wiring.llm_enricher(llm, runs.runs),
                    detector=wiring.incident_detector(runs.runs),
                )
                slug = sample.run_config["slug"]
                # The sample's incidents are history: a bot started on this database later
                # must not announce them (or post its old digests).
                retired = await store.outbox.retire_queued(slug, HISTORICAL)
                await refresh_narratives(store, wiring.narrative_writer(store, llm), [slug], now)
                facts = await build_digest(store, slug, now)
                facts.text = await compose_text(facts, wiring.digest_composer(store, llm))
            report, narrative = await status_with_narrative(store, slug, now)
            fmt = local_formatter(report.run.timezone, now)
            entries = await build_timeline(store, slug, now, days=7)
        card = render_card(status_card(report, narrative, fmt), width=_width())
        timeline = render_timeline(entries, fmt, width=_width())
        _print_demo_sections(card, timeline, plain(facts.text))
        where = (
            f"database kept at {path}: try `RUNSCRIBE_DB={path} runscribe status`"
            if explicit
            else "temporary database removed (`runscribe demo --db demo.db` keeps one)"
        )
        print(
            f"demo: {stats.events} events, {stats.points} metric points, "
            f"{stats.enriched} enriched, {stats.alerts} alert(s) recorded as history "
            f"({retired} never to be posted); {where}"
        )
    return EXIT_OK


def _check_demo_db(path: Path, explicit: bool, slug: str) -> None:
    """Refuse a --db that cannot be written or holds runs other than the sample's."""
    problem = write_problem(path) if explicit else None
    if problem is not None:
        raise StoreError(problem)
    others = [other for other in slugs_in_file(path) if other != slug]
    if others:
        raise UserFacingError(
            f"{path} holds other runs ({', '.join(others)}); the demo keeps its sample "
            "only in a database of its own: name a new file with --db"
        )


def _print_demo_sections(card: str, timeline: str, digest: str) -> None:
    print(card)
    print()
    print("Timeline (last 7 days)")
    print("======================")
    print(timeline)
    print()
    print("Daily digest")
    print("============")
    print(digest)
    print()


async def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    from bot.ask.query import parse_question
    from bot.ask.service import MAX_LIMIT, AskService
    from bot.process import wiring
    from bot.render.ask import answer_text
    from bot.render.terminal import local_formatter

    question = " ".join(args.question)
    parse_question(question)  # a bad question is reported before the database is opened
    if not 1 <= args.limit <= MAX_LIMIT:
        raise UserFacingError(f"--limit must be between 1 and {MAX_LIMIT}")
    async with _open_db(settings) as db:
        store = Store(db)
        slug = await _resolve_slug(store, args.run)
        now = utcnow()
        async with wiring.open_llm(store, settings) as llm:
            writer = wiring.answer_writer(store, llm, model=settings.runscribe_enrich_model)
            service = AskService(store, writer)
            answer = await service.ask(slug, question, now, limit=args.limit)
        run = await store.runs.get(slug)
    if args.json:
        _print_json(answer.as_json())
    else:
        print(answer_text(answer, local_formatter(run.timezone if run else "UTC", now)))
    return EXIT_OK


async def cmd_usage(settings: Settings, args: argparse.Namespace) -> int:
    from bot.process import wiring

    async with _open_db(settings) as db:
        print(await wiring.usage_text(Store(db), settings, utcnow(), as_json=args.json))
    return EXIT_OK


async def cmd_repair(settings: DatabaseOnly, args: argparse.Namespace) -> int:
    from bot.store.repair import repair

    path = _existing_db(settings)
    done = await repair(path)
    if done.how == "sound":
        print(f"{path}: the check finds no damage; nothing to repair")
        return EXIT_OK
    print(f"{path}: the damaged file is kept as {done.backup}")
    if done.how == "reindexed":
        print(f"{path}: repaired: its indexes were rebuilt and the check passes")
        return EXIT_OK
    lost = ", ".join(f"{table}: {n}" for table, n in sorted(done.lost.items()))
    print(
        f"{path}: repaired: {sum(done.kept.values())} row(s) copied into a new database; "
        + (f"unreadable parts skipped ({lost})" if lost else "every row was readable")
    )
    return EXIT_OK


# A handler takes `Settings`, or for READ_ONLY commands just the database path (`DatabaseOnly`).
_COMMANDS: dict[str, Callable[[Any, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "run": cmd_run,
    "poll": cmd_poll,
    "status": cmd_status,
    "timeline": cmd_timeline,
    "digest": cmd_digest,
    "incident": cmd_incident,
    "demo": cmd_demo,
    "check-config": cmd_check_config,
    "usage": cmd_usage,
    "ask": cmd_ask,
    "page": cmd_page,
    "web": cmd_web,
    "repair": cmd_repair,
}
