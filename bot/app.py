"""The Discord client: a `commands.Bot` subclass that receives its services (a Runtime), loads an
explicit list of extensions, and owns the background loops (poll, narrative, digest, outbox).

Only this module and `cogs/` import discord. Everything the loops do is plain async Python in
`bot.pipeline`, `bot.outbox` and `bot.digests`; here it is wired to Discord and kept alive: no
exception ends a loop (it is logged and the loop backs off), and `CancelledError` always
propagates. The card → embed conversion and the Discord time formatter live here too, for the
outbox transport and for the cogs.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.ext import commands

from bot.delivery import (
    gateway_down,
    gateway_up,
    integrity_checked,
    outbox_failed,
    outbox_ok,
)
from bot.digests import DigestComposer, run_due_digests
from bot.errors import UserFacingError
from bot.flight import SingleFlight
from bot.heap import freeze_long_lived, give_back_free_heap, install_memory_dump
from bot.limits import MESSAGE_LIMIT, THREAD_NAME_LIMIT
from bot.live import refresh_live, repost_live
from bot.loops import Retries, repeat
from bot.mentions import defuse_mentions
from bot.models import OutboxItem
from bot.outbox.payload import ButtonPayload, fit_card, make_payload
from bot.outbox.poster import (
    DeliveryError,
    OutboxPoster,
    OutgoingMessage,
    Posted,
    SeenMessage,
    Upload,
)
from bot.pipeline import FAMILIES, THREADS, WANDB
from bot.render.cards import Card, TimeStyle
from bot.render.chart import REDRAW_EVERY, ChartCache
from bot.render.drawer import IDLE_SECONDS, ChartDrawer
from bot.render.stamps import render_card_stamps, render_stamps
from bot.services.commands import commands_changed, commands_published
from bot.services.status import chart_series
from bot.settings import ConfigError, RunConfig, RunsFile, Settings, load_runs_file
from bot.store import Store
from bot.store.integrity import quick_check
from bot.store.metrics import NO_POINTS
from bot.timeutil import utcnow

if TYPE_CHECKING:
    from bot.runtime import Runtime

log = logging.getLogger(__name__)

DEFAULT_EXTENSIONS: tuple[str, ...] = (
    "cogs.status",
    "cogs.forecast",
    "cogs.timeline",
    "cogs.digest",
    "cogs.ask",
    "cogs.incidents",
    "cogs.watch",
    "cogs.live",
    "cogs.admin",
)
NO_MENTIONS = discord.AllowedMentions.none()  # the one lock: every post and reply pings nobody
APOLOGY = "Sorry, something went wrong on our side; it has been logged."
# Commands answered at once before the next ones acknowledge first (`RunscribeBot.busy`).
ANSWERED_AT_ONCE = 2
STORE_CHECK_EVERY = timedelta(days=1)
#: Statuses discord.py's HTTP client retries by itself (`HTTPClient.request`, 5 tries, 25 s).
DISCORD_PY_RETRIES = frozenset({500, 502, 504, 524})
THREAD_EXISTS = 160004  # Discord error code: "a thread has already been created for this message"

NarrativeRefresher = Callable[[str, datetime], Awaitable[object]]
COLORS: dict[str, int] = {
    "ok": 0x2ECC71,  # green: running and healthy
    "warning": 0xF1C40F,  # yellow: stalled, pending
    "bad": 0xE74C3C,  # red: crashed, failed, killed
    "stale": 0x95A5A6,  # grey: the monitor cannot see W&B (the run may be fine)
    "done": 0x3498DB,  # blue: finished
    "unknown": 0x7F8C8D,
    "info": 0x5865F2,  # blurple: timelines, digests
}
_STYLES: dict[str, discord.utils.TimestampStyle] = {
    "date": "D",
    "datetime": "f",
    "relative": "R",
    "time": "t",
}


def discord_time(value: datetime, style: TimeStyle) -> str:
    """`<t:…:D>` and friends, so every reader sees their own local time."""
    return discord.utils.format_dt(value, _STYLES.get(style, "f"))


def discord_text(text: str) -> str:
    """Post text for Discord: neutral time stamps become `<t:…>`."""
    return render_stamps(text, discord_time)


def card_to_embed(card: Card, *, color: int | None = None) -> discord.Embed:
    """A platform-neutral card as an embed within Discord's limits, mentions escaped (embeds
    never ping, but text copied out of them could). Used by the cogs and the outbox transport.
    Neutral time stamps (`bot.render.stamps`) become Discord timestamps."""
    card = fit_card(render_card_stamps(card, discord_time))
    embed = discord.Embed(
        title=card.title or None,
        description=card.description or None,
        url=card.url,
        color=color if color is not None else COLORS.get(card.color, COLORS["info"]),
    )
    for item in card.fields:
        embed.add_field(name=item.name, value=item.value, inline=item.inline)
    if card.footer:
        embed.set_footer(text=card.footer)
    if card.image:
        url = card.image if "://" in card.image else f"attachment://{card.image}"
        embed.set_image(url=url)
    return embed


#: Gateway close codes discord.py does not reconnect after: all need the operator.
GATEWAY_CLOSES = {
    4004: "Discord closed the gateway: authentication failed (4004). The bot token was reset "
    "or revoked: put the current one in DISCORD_TOKEN and start again",
    4010: "Discord closed the gateway: invalid shard (4010)",
    4011: "Discord closed the gateway: this bot needs sharding (4011)",
    4012: "Discord closed the gateway: invalid API version (4012)",
    4013: "Discord closed the gateway: invalid intents (4013)",
}


class BotServices(Protocol):
    """What the bot needs from `bot.runtime.Runtime` (structural, so tests can hand in less)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def runs(self) -> RunsFile: ...
    @property
    def store(self) -> Store: ...

    async def cycle(self, now: datetime) -> Any: ...

    async def poll(self, family: str, now: datetime) -> Any: ...

    async def enrich(self, now: datetime) -> Any: ...

    async def ingest_pushed(self, now: datetime, *, judge: bool = True) -> Any: ...

    async def judge(self, now: datetime) -> Any: ...

    async def reload(self, runs: RunsFile) -> BotServices: ...


#: Seconds a command waits for a run's first chart before answering without it: as long as the
#: chart process may take (its start imports matplotlib, which takes seconds on a loaded machine),
#: well inside the 15 minutes Discord gives a deferred answer.
FIRST_CHART_WAIT = 60.0


@dataclass(slots=True)
class LoopIntervals:
    """Seconds between runs of each background loop. `poll` paces each source family's loop
    (W&B, the threads) on its own; `enrich` how often the enrichment queue is looked at (it
    sends a request only when a batch is worth it)."""

    poll: float = 60.0
    enrich: float = 10.0
    outbox: float = 2.0
    digest: float = 20.0
    narrative: float = 300.0  # the refresher decides whether a new narrative is due
    # pushed deliveries are read when the doorbell rings; between rings, open alert incidents
    # are judged this often (their resolution is due once the clear has held, 2 min)
    hooks: float = 15.0
    live: float = 15.0  # live status messages: whether one is due (woken after every round)
    integrity: float = 3600.0  # looks each hour whether the daily quick_check is due
    # free heap pages given back to the OS (bot.heap): often, so what a sample of the
    # process's memory sees is never far from the trimmed level (a trim costs ~0.2 ms)
    heap: float = 10.0
    max_backoff: float = 300.0


def apply_endpoints(settings: Settings) -> None:
    """Point discord.py at DISCORD_API_BASE and DISCORD_GATEWAY_URL. A plain Bot never asks the
    REST API for the gateway, so both are class attributes set before connecting."""
    if settings.discord_api_base:
        discord.http.Route.BASE = settings.discord_api_base
        log.info("Discord REST base: %s", settings.discord_api_base)
    if settings.discord_gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.discord_gateway_url)
        log.info("Discord gateway: %s", settings.discord_gateway_url)


async def reply_private(interaction: discord.Interaction, text: str) -> None:
    """An ephemeral answer; a followup when the interaction was already deferred or answered.
    The text may echo what the user typed, so mentions are escaped as well as disabled."""
    text = defuse_mentions(text)[:MESSAGE_LIMIT]
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.send_message(
                text, ephemeral=True, allowed_mentions=NO_MENTIONS
            )
    except discord.HTTPException:
        log.warning("could not answer interaction %s (expired or deleted)", interaction.id)


def user_message(error: app_commands.AppCommandError) -> str | None:
    """The private reply for an error the user can act on, or None for a bug."""
    original = getattr(error, "original", error)
    if isinstance(original, UserFacingError):
        return str(original)
    if isinstance(error, app_commands.MissingPermissions):
        return "You need the Manage Server permission for this command."
    if isinstance(error, app_commands.NoPrivateMessage):
        return "This command works only in a server."
    if isinstance(error, app_commands.CheckFailure):
        return "You cannot use this command here."
    if isinstance(error, app_commands.TransformerError):
        return f"{error.value!r} is not a valid value for that option."
    if isinstance(error, app_commands.CommandNotFound | app_commands.CommandSignatureMismatch):
        return "This command changed since Discord last saw it; try again in a minute."
    return None


class RunscribeTree(app_commands.CommandTree):
    """The command tree with the one error handler (passed to the bot as `tree_cls`). Errors
    the user can fix (unknown run, bad filter, missing data, missing permission) become a short
    private reply; anything else is logged with the command, the user and the arguments, and
    answered with a short apology."""

    async def on_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        message = user_message(error)
        if message is None:
            command = interaction.command.qualified_name if interaction.command else "?"
            log.error(
                "command /%s failed for user %s (%s) with arguments %r",
                command,
                interaction.user,
                interaction.user.id,
                dict(interaction.namespace.__dict__),
                exc_info=getattr(error, "original", error),
            )
            message = APOLOGY
        await reply_private(interaction, message)


class RunscribeBot(commands.Bot):
    def __init__(
        self,
        runtime: BotServices,
        *,
        extensions: Sequence[str] = DEFAULT_EXTENSIONS,
        narrative: NarrativeRefresher | None = None,
        digest_composer: DigestComposer | None = None,
        clock: Callable[[], datetime] = utcnow,
        intervals: LoopIntervals | None = None,
        outbox_backoff: float = 2.0,
        run_loops: bool = True,
        warm_charts: bool = True,
        **options: Any,
    ):
        # The bot has no voice: discord.py's warnings that PyNaCl and davey (voice libraries)
        # are missing would only look like something to fix at every start.
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
        intents = discord.Intents.default()
        intents.message_content = True  # channel watch needs message text (privileged intent)
        options.pop("allowed_mentions", None)  # never anything but none
        # No message cache: every watched message is stored in SQLite as it arrives, edits and
        # deletions come as raw events, and the default 1,000 cached messages (with their
        # authors and members) were resident memory nothing read.
        options.setdefault("max_messages", None)
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents,
            allowed_mentions=NO_MENTIONS,
            help_command=None,
            tree_cls=RunscribeTree,
            **options,
        )
        self.runtime = runtime
        self.initial_extensions = tuple(extensions)
        self.narrative = narrative
        self.digest_composer = digest_composer
        self.clock = clock
        # Until W&B answers this process, /status and the live message show the state stored
        # before it started, marked so (`bot.services.status.stored_state_at`).
        self.started_at = clock()
        self.intervals = intervals or LoopIntervals(poll=runtime.settings.runscribe_poll_interval)
        self.run_loops = run_loops
        self.warm_charts_at_start = warm_charts
        self.chart_cache = ChartCache()
        # Charts are drawn in a child process that ends when idle: matplotlib's memory never
        # stays in the bot after a run goes quiet. While a run logs, its chart is redrawn after
        # W&B rounds (at most once a minute, so the next redraw comes up to a minute and a poll
        # later), and the child outlives that gap and two poll intervals: a redraw never pays its
        # start while the run logs.
        poll = self.intervals.poll
        self.charts = ChartDrawer(idle=max(IDLE_SECONDS, 2 * poll + 30, REDRAW_EVERY + poll + 30))
        self._chart_refresh: asyncio.Task[None] | None = None
        self._closing = False
        self._chart_tasks: set[asyncio.Task[bytes | None]] = set()
        self.poster = OutboxPoster(
            runtime.store,
            DiscordTransport(self),
            clock=clock,
            backoff_base=outbox_backoff,
            charts=self.status_chart,
            hold=timedelta(hours=runtime.settings.runscribe_delivery_hold_hours),
        )
        # Every message the gateway delivers moves its channel's delivery anchor up (the poster's
        # "already sent?" check then starts from a recent message, however busy the channel).
        self.add_listener(self._saw_message, "on_message")
        self._tasks: list[asyncio.Task[None]] = []
        self._loops_started = False
        # A reload never swaps sources under a running poll: one lock per loop (so the loops
        # never wait for each other), all of them taken by a reload.
        self._loop_locks = {name: asyncio.Lock() for name in (*FAMILIES, "enrich", "hooks")}
        # rounds finished (or failed) per polling loop (`cycles`)
        self._rounds = dict.fromkeys((*FAMILIES, "enrich"), 0)
        # per source family: enrichment rounds finished when its first round ended
        self._enriched_before: dict[str, int] = {}
        self._answering = 0  # commands between `answering()` enter and exit
        # Set when a loop round queued posts (an alert): the outbox delivers them now instead of
        # at its next tick, so an alert never waits for the outbox's interval.
        self._outbox_due = asyncio.Event()
        self._outbox_failing = False  # the last outbox round raised (recorded for /healthz)
        # Set when pushed deliveries brought events: enrichment looks at them now, so they are
        # enriched and judged like polled ones without waiting for its interval.
        self._enrich_due = asyncio.Event()
        self._rings_seen = 0  # the doorbell's count when the hooks loop last looked
        # Set after every loop round (and when a live message was deleted): the live status
        # messages are looked at now, so a state change shows within the round that saw it.
        self._live_due = asyncio.Event()
        # A loop that goes through after failing (the store writable again) retries every loop
        # still backing off at once (`bot.loops`).
        self._retries = Retries()
        self._live_updated: set[str] = set()  # runs whose live message this process updated
        self._live_lock = asyncio.Lock()
        # `runscribe run` checked the store at start; the bot again each day it runs.
        self._store_checked_at = clock()
        # Concurrent identical reads (a burst of /status for one run) share one computation.
        self.flights: SingleFlight[Any] = SingleFlight()

    # --- services for cogs ----------------------------------------------------------------------

    @property
    def store(self) -> Store:
        return self.runtime.store

    @property
    def reader(self) -> Store:
        """The store as commands read it: read-only connections that never wait on the poll
        cycle, the enricher or a chart query (`Store.reader`)."""
        return self.runtime.store.reader

    @property
    def busy(self) -> bool:
        """A command should acknowledge before reading: a poll cycle is running (its work shares
        this event loop), other commands are being answered (a burst: each waits its turn on
        the loop and the read connections), or every read connection is taken."""
        return (
            any(lock.locked() for lock in self._loop_locks.values())
            or self._answering > ANSWERED_AT_ONCE
            or self.reader.db.saturated
        )

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Around a command's work, so `busy` knows how many are being answered."""
        self._answering += 1
        try:
            yield
        finally:
            self._answering -= 1

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def runs(self) -> list[RunConfig]:
        return list(self.runtime.runs.runs)

    @property
    def default_run(self) -> str | None:
        """The runs file's `default_run`: what a command means when nothing else says."""
        return self.runtime.runs.default_run

    def run_config(self, slug: str) -> RunConfig | None:
        return self.runtime.runs.get(slug)

    async def reload_runs(self) -> RunsFile:
        """Re-read the runs file (raises ConfigError), record its runs in the store and rebuild
        the sources from it: new repositories, labels and W&B runs are polled from the next
        cycle on."""
        runs = load_runs_file(self.settings.runscribe_config)
        async with AsyncExitStack() as held:
            for lock in self._loop_locks.values():
                await held.enter_async_context(lock)
            self.runtime = await self.runtime.reload(runs)
        log.info("runs file reloaded: %s", ", ".join(r.slug for r in runs.runs))
        return runs

    # --- lifecycle ------------------------------------------------------------------------------

    async def setup_hook(self) -> None:
        # The first import of the extensions' dependencies costs 50 ms and more of CPU (regexes
        # compiled, dataclasses built): done in a worker thread while the loop goes on. Then
        # `load_extension` executes only each cog's own module (it always does), one per turn.
        await asyncio.to_thread(_import_all, self.initial_extensions)
        for extension in self.initial_extensions:
            await self.load_extension(extension)
            await asyncio.sleep(0)
        freeze_long_lived()
        await self._sync_at_start()
        if self.run_loops:
            self.start_loops()

    async def _sync_at_start(self) -> None:
        """Publish the slash commands (to DISCORD_GUILD_ID, else globally) when their definition
        differs from what this application last published there: a hash in the store, so a
        first start publishes and a restart with the same commands costs no request."""
        guild_id = self.settings.discord_guild_id
        guild = discord.Object(id=guild_id) if guild_id is not None else None
        if guild is not None:
            self.tree.copy_global_to(guild=guild)
        where = f"guild {guild_id}" if guild is not None else "every server (global)"
        definition = [command.to_dict(self.tree) for command in self.tree.get_commands(guild=guild)]
        key = f"{self.application_id}:{guild_id or 'global'}"
        if not await commands_changed(self.store, key, definition):
            log.info("slash commands unchanged since last published to %s", where)
            return
        try:
            synced = await self.tree.sync(guild=guild)
        except discord.HTTPException as exc:
            log.error(
                "could not publish slash commands to %s (%s); retried at next start", where, exc
            )
            return
        await commands_published(self.store, key, definition)
        log.info(
            "published %d slash commands to %s%s",
            len(synced),
            where,
            "" if guild is not None else "; Discord may take up to an hour to show them",
        )

    def start_loops(self) -> None:
        """Start the background loops (once: a later call, e.g. the login after Discord was
        unreachable at start, finds them running)."""
        if self._loops_started:
            return
        self._loops_started = True
        every = self.intervals
        self._spawn("outbox", every.outbox, self.drain_outbox, wake=self._outbox_due)
        # Each source family in its own loop with its own backoff, enrichment in a third: a
        # GitHub backfill or a slow LLM never delays a W&B crash alert.
        for family in FAMILIES:
            self._spawn(f"poll-{family}", every.poll, partial(self.poll_family, family))
        self._spawn("enrich", every.enrich, self.enrich_once, wake=self._enrich_due)
        # What the push endpoints (`bot.hooks`) stored, read as soon as they ring.
        doorbell = getattr(self.runtime, "doorbell", None)
        if doorbell is not None:
            self._spawn("hooks", every.hooks, self.ingest_pushed, wake=doorbell.event)
        self._spawn("digest", every.digest, self.schedule_digests)
        self._spawn("live", every.live, self.refresh_live, wake=self._live_due)
        self._spawn("integrity", every.integrity, self.check_store)
        self._spawn("heap", every.heap, self.give_back_heap)
        if self.warm_charts_at_start:
            warm = asyncio.create_task(self.warm_charts(), name="runscribe-warm-charts")
            self._tasks.append(warm)
        if self.narrative is not None:
            self._spawn("narrative", every.narrative, self.refresh_narratives)

    async def give_back_heap(self) -> None:
        """Free heap pages back to the OS (`bot.heap.give_back_free_heap`), in a worker thread:
        the loop's small objects (pymalloc's) need no malloc lock meanwhile."""
        await asyncio.to_thread(give_back_free_heap)

    def _spawn(
        self,
        name: str,
        interval: float,
        body: Callable[[], Awaitable[object]],
        *,
        wake: asyncio.Event | None = None,
    ) -> None:
        task = asyncio.create_task(
            self._forever(name, interval, body, wake), name=f"runscribe-{name}"
        )
        self._tasks.append(task)

    async def _forever(
        self,
        name: str,
        interval: float,
        body: Callable[[], Awaitable[object]],
        wake: asyncio.Event | None = None,
    ) -> None:
        """Run `body` every `interval` seconds while the bot is open (`bot.loops.repeat`, the
        one supervisor); the modules and clients its first round built are then frozen."""
        await repeat(
            name,
            interval,
            body,
            max_backoff=self.intervals.max_backoff,
            wake=wake,
            retries=self._retries,
            probe=self.store.db.came_back,
            running=lambda: not self.is_closed(),
            first_done=freeze_long_lived,
        )

    # --- the gateway, as /healthz sees it (bot.delivery) -----------------------------------------

    async def login(self, token: str) -> None:
        await super().login(token)
        await gateway_down(self.store, utcnow(), "connecting to the Discord gateway")

    async def _saw_message(self, message: discord.Message) -> None:
        self.poster.saw(message.channel.id, message.id)

    async def on_ready(self) -> None:
        await gateway_up(self.store, utcnow())

    async def on_resumed(self) -> None:
        await gateway_up(self.store, utcnow())

    async def on_disconnect(self) -> None:
        if not self.is_closed():
            await gateway_down(self.store, utcnow(), "disconnected from the Discord gateway")

    async def close(self) -> None:
        self._closing = True  # from here no background chart is started
        if not self.is_closed():
            await gateway_down(self.store, utcnow(), "the bot is stopped")
        background: list[asyncio.Future[Any]] = [*self._tasks, *self._chart_tasks]
        if self._chart_refresh is not None:
            background.append(self._chart_refresh)
        for task in background:
            task.cancel()
        for task in background:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self.chart_cache.aclose()
        await self.charts.aclose()
        await super().close()

    # --- loop bodies (each safe to call on its own, e.g. from tests or an admin command) --------

    async def drain_outbox(self) -> object:
        """One outbox round. A failing round (a damaged outbox table, a full disk) is recorded
        for /healthz and raised, so the loop logs it and backs off: alerts never stop silently."""
        if self.user is None:
            return None  # not logged in yet (Discord unreachable at start): posts wait queued
        try:
            report = await self.poster.drain()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._outbox_failing = True
            await outbox_failed(self.store, utcnow(), f"{type(exc).__name__}: {exc}"[:300])
            raise
        if self._outbox_failing:
            self._outbox_failing = False
            await outbox_ok(self.store, utcnow())
        return report

    def _delivered_soon(self, result: object) -> object:
        """A round that queued alerts wakes the outbox loop, so they are posted at once; every
        round wakes the live status loop (what it saw may change a live message)."""
        if getattr(result, "alerts_queued", 0):
            self._outbox_due.set()
        self._live_due.set()
        return result

    async def refresh_live(self) -> dict[str, int]:
        """Queue the live status updates that are due (`bot.live`), and deliver them now."""
        async with self._live_lock:  # the loop and a caller never both queue the same update
            queued = await refresh_live(
                self.store,
                self.runs,
                self.clock(),
                updated=self._live_updated,
                started_at=self.started_at,
            )
        if queued:
            self._live_updated.update(queued)
            self._outbox_due.set()
        return queued

    async def repost_live(self, run: RunConfig, key: str) -> int | None:
        """A new live status message for `run` in its `status_channel`, the old one deleted
        (`/admin live-status`). None when that request (`key`) was already queued."""
        async with self._live_lock:
            item_id = await repost_live(
                self.store, run, self.clock(), key, started_at=self.started_at
            )
        self._live_updated.add(run.slug)
        self._outbox_due.set()
        return item_id

    async def live_message_deleted(self, message_id: int) -> bool:
        """Someone deleted a message: if it was a run's live status message, forget it and
        post a new one now (rather than at the next update's 404)."""
        row = await self.store.live.by_message(message_id)
        if row is None or not await self.store.live.forget(row.run_slug, message_id):
            return False
        log.info("the live status message of %s was deleted; posting a new one", row.run_slug)
        self._live_due.set()
        return True

    async def poll_once(self) -> object:
        """One cycle of everything (all families, enrichment, detection)."""
        async with AsyncExitStack() as held:
            for lock in self._loop_locks.values():
                await held.enter_async_context(lock)
            try:
                return self._delivered_soon(await self.runtime.cycle(self.clock()))
            finally:
                for family in FAMILIES:  # this cycle enriched after polling
                    self._enriched_before.setdefault(family, self._rounds["enrich"])
                for name in self._rounds:
                    self._rounds[name] += 1
                self.refresh_charts_soon()

    async def poll_family(self, family: str) -> object:
        async with self._loop_locks[family]:
            try:
                return self._delivered_soon(await self.runtime.poll(family, self.clock()))
            finally:
                self._rounds[family] += 1
                self._enriched_before.setdefault(family, self._rounds["enrich"])
                if family == WANDB:
                    self.refresh_charts_soon()

    async def ingest_pushed(self) -> object:
        """Read what the push endpoints stored, judge it, and wake the enrichment (GitHub
        events) and the outbox (alerts queued) at once."""
        doorbell = getattr(self.runtime, "doorbell", None)
        rings = doorbell.rings if doorbell is not None else 0
        rung, self._rings_seen = rings != self._rings_seen, rings
        async with self._loop_locks["hooks"]:
            result = await self.runtime.ingest_pushed(self.clock(), judge=rung)
        hooks = getattr(result, "poll", None)
        pushed = hooks.results.get("hooks") if hooks is not None else None
        if pushed is not None and pushed.events:
            self._enrich_due.set()
        return self._delivered_soon(result)

    async def acknowledged(self) -> object:
        """After an acknowledgement (the button or `/incidents ack`): judge now, so the alert's
        head says who acknowledged it at once, and deliver the edit."""
        async with self._loop_locks[WANDB]:  # judged between polls, never inside one
            return self._delivered_soon(await self.runtime.judge(self.clock()))

    async def enrich_once(self) -> object:
        async with self._loop_locks["enrich"]:
            try:
                return self._delivered_soon(await self.runtime.enrich(self.clock()))
            finally:
                self._rounds["enrich"] += 1

    async def check_store(self, *, force: bool = False) -> list[str]:
        """The daily `PRAGMA quick_check`, on a read connection (never holding up writes). Damage
        is logged, shown by /healthz and posted once a day in every alerts channel, so it never
        goes unnoticed while commands keep answering."""
        now = self.clock()
        if not force and now - self._store_checked_at < STORE_CHECK_EVERY:
            return []
        self._store_checked_at = now
        found = await quick_check(self.reader.db)
        await integrity_checked(self.store, utcnow(), found)
        if not found:
            return found
        log.error("the database %s is damaged: %s", self.store.db.path, found[0][:300])
        text = (
            f"⚠️ Runscribe's database is damaged: {found[0][:300]}. Alerts may stop: stop "
            "Runscribe, run `runscribe repair` (it keeps a copy of the damaged file), then start "
            "it again; or restore the database from a backup."
        )
        for channel in sorted({r.alerts_channel for r in self.runs if r.alerts_channel}):
            item = OutboxItem(
                channel_id=channel,
                kind="alert",
                payload=make_payload(text),
                dedup_key=f"store-damaged:{now:%Y-%m-%d}:{channel}",
            )
            try:
                await self.store.outbox.enqueue(item)
            except Exception as exc:  # the damage may be in the outbox itself: the log has it
                log.error("could not queue the damaged-database alert: %s", exc)
        self._outbox_due.set()
        return found

    # --- charts ---------------------------------------------------------------------------------

    async def status_chart(self, slug: str, version: str) -> bytes | None:
        """The /status chart at this data version: cached, or drawn once however many ask at
        once (`ChartCache`); None if it cannot be drawn (a broken chart never costs a card)."""
        return await self.chart_cache.get_or_draw(slug, version, partial(self._draw_chart, slug))

    async def first_chart(self, slug: str, version: str) -> bytes | None:
        """A run's first chart, waited for at most `FIRST_CHART_WAIT` seconds (a cold chart
        process on a loaded machine); past it the answer goes without, and the draw goes on."""
        try:
            return await asyncio.wait_for(self.status_chart(slug, version), FIRST_CHART_WAIT)
        except TimeoutError:
            log.warning("the first chart of %s is still being drawn; answering without it", slug)
            return None

    async def _draw_chart(self, slug: str) -> bytes | None:
        try:
            return await self.charts.loss_chart(await chart_series(self.reader, slug))
        except Exception:
            log.exception("chart for %s failed; answering without it", slug)
            return None

    def chart_soon(self, slug: str, version: str) -> None:
        """Draw this version of the run's chart in the background (single flight: a draw under
        way or one less than a minute old is not repeated); `/status` meanwhile attaches the
        newest finished chart."""
        if self._closing:
            return
        task = asyncio.create_task(self.status_chart(slug, version), name=f"chart-{slug}")
        self._chart_tasks.add(task)
        task.add_done_callback(self._chart_tasks.discard)

    def refresh_charts_soon(self) -> None:
        """After a W&B round: each run whose data changed gets its chart redrawn in the
        background, so `/status` answers with a current chart and never draws one itself. One
        refresh at a time; off with `warm_charts=False` (tests that want a cold cache)."""
        if not self.warm_charts_at_start or self._closing:
            return
        if self._chart_refresh is not None and not self._chart_refresh.done():
            return
        self._chart_refresh = asyncio.create_task(self._refresh_charts(), name="chart-refresh")

    async def _refresh_charts(self) -> None:
        for run in self.runs:
            version = await self.reader.metrics.version(run.slug)
            # a run with no points has nothing to draw; one drawn at this version is current
            if version != NO_POINTS and self.chart_cache.version_of(run.slug) != version:
                await self.status_chart(run.slug, version)

    async def warm_charts(self, *, first_poll_within: float = 60.0) -> None:
        """Each run's chart drawn once at start (runs with points), after the first W&B round (or
        `first_poll_within` seconds): the first /status of a run answers without drawing while
        its data has not changed. Later rounds redraw it when its data changed
        (`refresh_charts_soon`)."""
        waited = 0.0
        while self._rounds[WANDB] == 0 and waited < first_poll_within:
            await asyncio.sleep(0.5)
            waited += 0.5
        await self._refresh_charts()

    @property
    def cycles(self) -> int:
        """Full cycles since start: rounds that every loop (each family, enrichment) has done."""
        return min(self._rounds.values())

    async def schedule_digests(self) -> object:
        return await run_due_digests(
            self.store,
            self.runs,
            self.clock(),
            fmt=discord_time,
            composer=self.digest_composer,
            ready=self.heard_since_start,
        )

    def heard_since_start(self, run: RunConfig) -> bool:
        """Whether every source the run uses has finished a round since this process started
        (W&B, the GitHub threads, the read-back of watched channels) and enrichment has run
        after them: what a digest may be composed from."""
        families = [WANDB] if run.wandb_runs or run.wandb_run_pattern else []
        if run.github_repo:
            families.append(THREADS)
        if any(family not in self._enriched_before for family in families):
            return False
        if run.watch_channels:
            watch = self.get_cog("Watch")
            if watch is None or getattr(watch, "read_backs", 0) == 0:
                return False
        after = max((self._enriched_before[f] for f in families), default=0)
        return self._rounds["enrich"] > after

    async def refresh_narratives(self) -> None:
        assert self.narrative is not None
        for run in self.runs:
            try:
                await self.narrative(run.slug, self.clock())
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("narrative refresh failed for %s", run.slug)


class DiscordTransport:
    """`bot.outbox.poster.Transport` over discord.py: posts as the bot user, no mentions, nonce set
    (discord.py adds enforce_nonce). Errors become DeliveryError(permanent=…)."""

    def __init__(self, bot: commands.Bot):
        self.bot = bot

    def _channel(self, channel_id: int) -> discord.PartialMessageable:
        return self.bot.get_partial_messageable(channel_id)

    async def send(self, channel_id: int, message: OutgoingMessage) -> int:
        embed = card_to_embed(message.card, color=message.color_value) if message.card else None
        extra: dict[str, Any] = {}
        if message.buttons:
            extra["view"] = _buttons_view(message.buttons)
        try:
            sent = await self._channel(channel_id).send(
                content=discord_text(message.content) if message.content else message.content,
                embed=embed,  # type: ignore[arg-type]
                nonce=message.nonce,
                allowed_mentions=_mentions(message.ping_role),
                **extra,
            )
        except Exception as exc:
            raise _delivery_error(exc) from exc
        return sent.id

    async def edit(self, channel_id: int, message_id: int, message: OutgoingMessage) -> None:
        embed = card_to_embed(message.card, color=message.color_value) if message.card else None
        partial = self._channel(channel_id).get_partial_message(message_id)
        extra: dict[str, Any] = {}
        if message.buttons is not None:  # None keeps the buttons, [] removes them
            extra["view"] = _buttons_view(message.buttons) if message.buttons else None
        try:
            await partial.edit(
                content=discord_text(message.content) if message.content else message.content,
                embed=embed,
                allowed_mentions=NO_MENTIONS,
                **extra,
            )
        except Exception as exc:
            raise _delivery_error(exc) from exc

    async def publish(self, channel_id: int, message: OutgoingMessage) -> Posted:
        embed = card_to_embed(message.card, color=message.color_value) if message.card else None
        extra: dict[str, Any] = {}
        if message.files:
            extra["files"] = [_file(upload) for upload in message.files]
        try:
            sent = await self._channel(channel_id).send(
                content=discord_text(message.content) if message.content else message.content,
                embed=embed,  # type: ignore[arg-type]
                nonce=message.nonce,
                allowed_mentions=NO_MENTIONS,
                **extra,
            )
        except Exception as exc:
            raise _delivery_error(exc) from exc
        return Posted(sent.id, tuple(a.id for a in sent.attachments))

    async def revise(self, channel_id: int, message_id: int, message: OutgoingMessage) -> Posted:
        """PATCH the message; `attachments` lists what stays (kept by id, no re-upload) and the
        new files, so an unchanged chart is never uploaded again."""
        embed = card_to_embed(message.card, color=message.color_value) if message.card else None
        partial = self._channel(channel_id).get_partial_message(message_id)
        extra: dict[str, Any] = {}
        if message.keep is not None or message.files:
            kept: list[Any] = [_KeptAttachment(a) for a in message.keep or ()]
            extra["attachments"] = kept + [_file(upload) for upload in message.files]
        try:
            edited = await partial.edit(
                content=discord_text(message.content) if message.content else message.content,
                embed=embed,
                allowed_mentions=NO_MENTIONS,
                **extra,
            )
        except Exception as exc:
            raise _delivery_error(exc) from exc
        return Posted(edited.id, tuple(a.id for a in edited.attachments))

    async def pin(self, channel_id: int, message_id: int) -> None:
        try:
            await self._channel(channel_id).get_partial_message(message_id).pin()
        except Exception as exc:
            raise _delivery_error(exc) from exc

    async def delete(self, channel_id: int, message_id: int) -> None:
        try:
            await self._channel(channel_id).get_partial_message(message_id).delete()
        except Exception as exc:
            raise _delivery_error(exc) from exc

    async def open_thread(self, channel_id: int, message_id: int, name: str) -> int | None:
        # Through the HTTP client: a PartialMessage needs guild info the outbox does not have.
        try:
            data = await self.bot.http.start_thread_with_message(
                channel_id,
                message_id,
                name=name[:THREAD_NAME_LIMIT] or "Updates",
                auto_archive_duration=1440,
            )
        except discord.HTTPException as exc:
            if exc.code == THREAD_EXISTS:
                return message_id  # a thread started from a message shares its id
            error = _delivery_error(exc)
            if error.permanent:
                log.info("cannot open a thread in %s (%s); posting in the channel", channel_id, exc)
                return None
            raise error from exc
        except Exception as exc:
            raise _delivery_error(exc) from exc
        return int(data["id"])

    async def archive_thread(self, thread_id: int) -> None:
        # PATCH /channels/{thread id} {"archived": true}, as Discord documents for threads.
        try:
            await self.bot.http.edit_channel(thread_id, archived=True)
        except Exception as exc:
            raise _delivery_error(exc) from exc

    async def recent(self, channel_id: int, limit: int) -> list[SeenMessage]:
        seen = []
        try:
            async for message in self._channel(channel_id).history(limit=limit):
                if message.author.id != getattr(self.bot.user, "id", None):
                    continue
                parts = [message.content or ""]
                for embed in message.embeds:
                    parts.extend([embed.footer.text or "", embed.description or ""])
                seen.append(SeenMessage(message.id, "\n".join(parts), message.created_at))
        except Exception as exc:
            raise _delivery_error(exc) from exc
        return seen

    async def newest_id(self, channel_id: int) -> int | None:
        try:
            async for message in self._channel(channel_id).history(limit=1):
                return message.id
        except Exception as exc:
            raise _delivery_error(exc) from exc
        return None

    async def after(self, channel_id: int, after_id: int, limit: int) -> list[SeenMessage]:
        me = getattr(self.bot.user, "id", None)
        seen = []
        try:
            history = self._channel(channel_id).history(
                limit=limit, after=discord.Object(id=after_id), oldest_first=True
            )
            async for message in history:
                parts = [message.content or ""] if message.author.id == me else []
                for embed in message.embeds if message.author.id == me else []:
                    parts.extend([embed.footer.text or "", embed.description or ""])
                seen.append(SeenMessage(message.id, "\n".join(parts), message.created_at))
        except Exception as exc:
            raise _delivery_error(exc) from exc
        return seen


def _file(upload: Upload) -> discord.File:
    return discord.File(io.BytesIO(upload.data), filename=upload.filename)


class _KeptAttachment:
    """An attachment kept on an edit, by id (what Discord's `attachments` array takes): a full
    `discord.Attachment` needs state the outbox does not have."""

    def __init__(self, attachment_id: int):
        self.id = attachment_id

    def to_dict(self) -> dict[str, Any]:
        return {"id": str(self.id)}


def _mentions(ping_role: int | None) -> discord.AllowedMentions:
    """Nobody, or exactly the one role an incident's first post pages (`alert_role`)."""
    if ping_role is None:
        return NO_MENTIONS
    return discord.AllowedMentions(
        everyone=False, users=False, roles=[discord.Object(id=ping_role)], replied_user=False
    )


def _buttons_view(buttons: Sequence[ButtonPayload]) -> discord.ui.View:
    """Buttons for an outbox post. Their clicks are handled by persistent handlers matching the
    custom_id (e.g. the incident cog's DynamicItem), so the view itself is stopped: it only
    serialises the components and is never kept in discord.py's view store."""
    view = discord.ui.View(timeout=None)
    for button in buttons[:5]:
        view.add_item(
            discord.ui.Button(
                label=button["label"],
                custom_id=button["custom_id"],
                style=discord.ButtonStyle.secondary,
            )
        )
    view.stop()
    return view


def _delivery_error(exc: BaseException) -> DeliveryError:
    if isinstance(exc, discord.RateLimited):
        return DeliveryError(
            f"rate limited for {exc.retry_after:.1f} s", retry_after=exc.retry_after
        )
    if isinstance(exc, discord.HTTPException):
        text = f"HTTP {exc.status}: {exc.text or exc.__class__.__name__}"[:300]
        if exc.status == 429:  # discord.py's own tries are used up: wait what Discord says
            return DeliveryError(text, retry_after=_retry_after(exc), status=exc.status)
        if exc.status >= 500:  # discord.py has retried some five times over 25 s already
            retried = exc.status in DISCORD_PY_RETRIES
            return DeliveryError(text, status=exc.status, retried=retried)
        return DeliveryError(
            text, permanent=True, status=exc.status, code=exc.code or None, detail=exc.text or None
        )
    if isinstance(exc, aiohttp.ClientError | OSError | TimeoutError):
        return DeliveryError(f"{type(exc).__name__}: {exc}"[:300])
    return DeliveryError(f"unexpected {type(exc).__name__}: {exc}"[:300])


def _retry_after(exc: discord.HTTPException) -> float:
    """Seconds a surfaced 429 asks to wait: its Retry-After or X-RateLimit-Reset-After header,
    else one second."""
    headers = getattr(exc.response, "headers", None) or {}
    for name in ("X-RateLimit-Reset-After", "Retry-After"):
        try:
            return max(0.0, float(headers[name]))
        except (KeyError, TypeError, ValueError):
            continue
    return 1.0


#: Seconds between tries to reach Discord at start; the last one repeats.
LOGIN_WAITS: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


async def login_until_reached(
    bot: RunscribeBot, token: str, *, waits: Sequence[float] = LOGIN_WAITS
) -> None:
    """Log in, trying again with a growing wait while Discord cannot be reached (connection
    refused, a timeout, a 5xx): one log line per attempt, and meanwhile the poll loops run and
    alerts queue (the outbox waits for the login). A rejected token is not retried."""
    attempt = 0
    while True:
        attempt += 1
        try:
            await bot.login(token)
        except discord.LoginFailure:
            raise
        except (aiohttp.ClientError, OSError, TimeoutError, discord.HTTPException) as exc:
            client_error = isinstance(exc, discord.HTTPException) and 400 <= exc.status < 500
            if client_error and getattr(exc, "status", None) != 429:
                raise  # Discord answered and refused: waiting will not change its mind
            delay = waits[min(attempt - 1, len(waits) - 1)]
            why = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            log.warning(
                "cannot reach Discord (attempt %d: %s); trying again in %.0f s",
                attempt,
                why,
                delay,
            )
            await gateway_down(bot.store, utcnow(), f"cannot reach Discord: {why}")
            if bot.run_loops:
                bot.start_loops()  # poll and queue while Discord is away
            await bot.http.close()
            bot.http.connector = discord.utils.MISSING  # the next login builds a fresh one
            await asyncio.sleep(delay)
            continue
        if attempt > 1:
            log.info("reached Discord after %d attempts", attempt)
        return


def _import_all(modules: Sequence[str]) -> None:
    for name in modules:
        importlib.import_module(name)


async def run_bot(
    runtime: Runtime,
    *,
    narrative: NarrativeRefresher | None = None,
    digest_composer: DigestComposer | None = None,
    extensions: Sequence[str] = DEFAULT_EXTENSIONS,
    **options: Any,
) -> None:
    """`runscribe run`: connect and serve until the process is stopped (SIGINT/SIGTERM)."""
    token = runtime.settings.discord_token
    if token is None:
        raise ConfigError(["DISCORD_TOKEN: required to start the bot"])
    apply_endpoints(runtime.settings)

    async def refresh(slug: str, now: datetime) -> object:
        return await runtime.refresh_narratives(now, [slug])

    bot = RunscribeBot(
        runtime,
        extensions=extensions,
        narrative=narrative or refresh,
        digest_composer=digest_composer or runtime.digest_composer,
        **options,
    )
    loop = asyncio.get_running_loop()
    install_memory_dump(loop)  # kill -USR1 / -USR2: where the memory is (bot.heap)
    async with bot:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, lambda: asyncio.ensure_future(bot.close()))
        try:
            await login_until_reached(bot, token.get_secret_value())
            await bot.connect(reconnect=True)
        except discord.LoginFailure:
            raise ConfigError(["DISCORD_TOKEN: Discord rejected the token"]) from None
        except discord.ConnectionClosed as exc:  # e.g. the token was reset while running
            text = GATEWAY_CLOSES.get(exc.code, f"Discord closed the gateway ({exc.code})")
            raise UserFacingError(text) from None
        except discord.PrivilegedIntentsRequired:
            raise ConfigError(
                [
                    "Discord refused the message content intent: enable it for the bot in the "
                    "Developer Portal (Bot → Privileged Gateway Intents)"
                ]
            ) from None
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGTERM)
