"""The Discord client: a `commands.Bot` subclass that receives its services (a Runtime), loads an
explicit list of extensions, and starts the background loops (poll, narrative, digest, outbox).

Only this module and `cogs/` import discord. What the bot does besides Discord is in plain
services it builds and the cogs call: the loops' supervision, locks and wake-ups
(`bot.process.scheduler`), their bodies (`bot.process.rounds`), the charts (`bot.outputs.charting`),
the live status messages (`bot.outputs.live`) and what /healthz records (`bot.web.health`). No
exception ends a loop (it is logged and the loop backs off), and `CancelledError` always propagates.
The card → embed conversion and the Discord time formatter live here too, for the outbox transport
and the cogs.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import logging
import signal
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.ext import commands

from bot.config.settings import ConfigError, RunConfig, RunsFile, Settings, load_runs_file
from bot.core.errors import UserFacingError
from bot.core.flight import SingleFlight
from bot.core.heap import freeze_long_lived, install_memory_dump, settle_heap
from bot.core.limits import MESSAGE_LIMIT, THREAD_NAME_LIMIT
from bot.core.mentions import defuse_mentions
from bot.core.timeutil import utcnow
from bot.outbox.payload import ButtonPayload, fit_card
from bot.outbox.poster import (
    DeliveryError,
    OutboxPoster,
    OutgoingMessage,
    Posted,
    SeenMessage,
    Upload,
)
from bot.outputs.charting import ChartService
from bot.outputs.digests import DigestComposer
from bot.outputs.live import LiveMessages
from bot.process.pipeline import FAMILIES, WANDB
from bot.process.rounds import BotServices, LoopRounds, NarrativeRefresher
from bot.process.scheduler import LoopIntervals, LoopScheduler
from bot.render.cards import Card, TimeStyle
from bot.render.stamps import render_card_stamps, render_stamps
from bot.services.commands import commands_changed, commands_published
from bot.store import Store
from bot.web.health import HealthRecorder

if TYPE_CHECKING:
    from bot.process.runtime import Runtime

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
#: Statuses discord.py's HTTP client retries by itself (`HTTPClient.request`, 5 tries, 25 s).
DISCORD_PY_RETRIES = frozenset({500, 502, 504, 524})
THREAD_EXISTS = 160004  # Discord error code: "a thread has already been created for this message"

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
    """The Discord edge: the slash commands' tree, the gateway's events and sending. What the
    loops, charts and live messages do is in plain services (`loops`, `rounds`, `charting`,
    `live`, `health`) that the cogs call too."""

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
        _client_options(options)
        super().__init__(**options)
        self.initial_extensions = tuple(extensions)
        self.clock = clock
        self.run_loops = run_loops
        now = self._now  # services read `self.clock` at each call (tests move it)
        every = intervals or LoopIntervals(poll=runtime.settings.runscribe_poll_interval)
        self.loops = LoopScheduler(every, FAMILIES, running=lambda: not self.is_closed())
        self.charting = ChartService(lambda: self.reader, lambda: self.runs, poll=every.poll)
        self.charting.warm = warm_charts
        self.rounds = LoopRounds(
            runtime,
            self.loops,
            now,
            after_wandb=self.charting.refresh_soon,
            fmt=discord_time,
            read_backs=lambda: getattr(self.get_cog("Watch"), "read_backs", 0),
            narrative=narrative,
            digest_composer=digest_composer,
        )
        wake_outbox, wake_live = self.loops.outbox_due.set, self.loops.live_due.set
        self.live = LiveMessages(
            lambda: self.store,
            lambda: self.runs,
            now,
            started_at=clock(),
            wake_outbox=wake_outbox,
            wake_live=wake_live,
        )
        self.health = HealthRecorder(lambda: self.store, now)
        self.poster = OutboxPoster(
            runtime.store,
            DiscordTransport(self),
            clock=clock,
            backoff_base=outbox_backoff,
            charts=self.charting.status_chart,
            hold=timedelta(hours=runtime.settings.runscribe_delivery_hold_hours),
        )
        # Every message the gateway delivers moves its channel's delivery anchor up (the poster's
        # "already sent?" check then starts from a recent message, however busy the channel).
        self.add_listener(self._saw_message, "on_message")
        # Concurrent identical reads (a burst of /status for one run) share one computation.
        self.flights: SingleFlight[Any] = SingleFlight()

    def _now(self) -> datetime:
        return self.clock()

    # --- services for cogs ----------------------------------------------------------------------

    @property
    def runtime(self) -> BotServices:
        return self.rounds.runtime

    @runtime.setter
    def runtime(self, runtime: BotServices) -> None:
        self.rounds.runtime = runtime

    @property
    def intervals(self) -> LoopIntervals:
        return self.loops.intervals

    @property
    def started_at(self) -> datetime:
        """When this process started: until W&B answers it, /status and the live message show
        the state stored before, marked so (`bot.services.status.stored_state_at`)."""
        return self.live.started_at

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
        return self.loops.busy(self.reader.db.saturated)

    def answering(self) -> contextlib.AbstractContextManager[None]:
        """Around a command's work, so `busy` knows how many are being answered."""
        return self.loops.answering()

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def runs(self) -> list[RunConfig]:
        return self.rounds.runs

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
        await self.rounds.reload(runs)
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
        loops, rounds, every = self.loops, self.rounds, self.loops.intervals
        if loops.started:
            return
        loops.started = True
        spawn = partial(loops.spawn, probe=self.store.db.came_back)
        spawn("outbox", every.outbox, self.drain_outbox, wake=loops.outbox_due)
        # Each source family in its own loop with its own backoff, enrichment in a third: a
        # GitHub backfill or a slow LLM never delays a W&B crash alert.
        for family in FAMILIES:
            spawn(f"poll-{family}", every.poll, partial(self.poll_family, family))
        spawn("enrich", every.enrich, self.enrich_once, wake=loops.enrich_due)
        # What the push endpoints (`bot.hooks`) stored, read as soon as they ring.
        doorbell = getattr(self.runtime, "doorbell", None)
        if doorbell is not None:
            spawn("hooks", every.hooks, rounds.ingest_pushed, wake=doorbell.event)
        spawn("digest", every.digest, self.schedule_digests)
        spawn("live", every.live, self.live.refresh, wake=loops.live_due)
        spawn("integrity", every.integrity, self.check_store)
        spawn("heap", every.heap, settle_heap, wake=loops.heap_due)
        if self.charting.warm:
            warm = self.charting.warm_up(lambda: loops.rounds[WANDB] > 0)
            loops.add(asyncio.create_task(warm, name="runscribe-warm-charts"))
        if rounds.narrative is not None:
            spawn("narrative", every.narrative, rounds.refresh_narratives)
        if getattr(self.runtime, "pen", None) is not None:  # write-ups by the model
            spawn("writeups", every.writeups, rounds.write_writeups)

    # --- the gateway, as /healthz sees it (bot.web.health) ------------------------------------

    async def login(self, token: str) -> None:
        await super().login(token)
        await self.health.gateway_down("connecting to the Discord gateway")

    async def _saw_message(self, message: discord.Message) -> None:
        self.poster.saw(message.channel.id, message.id)

    async def on_ready(self) -> None:
        await self.health.gateway_up()

    async def on_resumed(self) -> None:
        await self.health.gateway_up()

    async def on_disconnect(self) -> None:
        if not self.is_closed():
            await self.health.gateway_down("disconnected from the Discord gateway")

    async def close(self) -> None:
        self.charting.stop()  # from here no background chart is started
        if not self.is_closed():
            await self.health.gateway_down("the bot is stopped")
        await self.loops.cancel()
        await self.charting.aclose()
        # discord.py waits `guild_ready_timeout` after READY before it dispatches `ready`, in a
        # task close() leaves running: stopped within that wait, the task woke to a closed
        # client and died with a traceback ('_MissingSentinel' has no 'create_task'). Cancelled
        # here, it ends quietly.
        ready = getattr(self._connection, "_ready_task", None)
        if ready is not None and not ready.done():
            ready.cancel()
        await super().close()

    # --- loop bodies (each safe to call on its own, e.g. from tests or an admin command) --------

    async def drain_outbox(self) -> object:
        """One outbox round (`HealthRecorder.outbox_round`: a failure is recorded for /healthz)."""
        if self.user is None:
            return None  # not logged in yet (Discord unreachable at start): posts wait queued
        return await self.health.outbox_round(self.poster.drain)

    async def poll_once(self) -> object:
        return await self.rounds.poll_once()

    async def poll_family(self, family: str) -> object:
        return await self.rounds.poll_family(family)

    async def enrich_once(self) -> object:
        return await self.rounds.enrich_once()

    async def schedule_digests(self) -> object:
        return await self.rounds.schedule_digests()

    async def check_store(self, *, force: bool = False) -> list[str]:
        """The daily integrity check (`HealthRecorder.check_store`); damage is posted at once."""
        found = await self.health.check_store(self.runs, force=force)
        if found:
            self.loops.outbox_due.set()
        return found

    @property
    def cycles(self) -> int:
        """Full cycles since start: rounds that every loop (each family, enrichment) has done."""
        return self.loops.cycles


def _client_options(options: dict[str, Any]) -> None:
    """The discord.py client options every RunscribeBot uses, set in `options`."""
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
    options.update(
        command_prefix=commands.when_mentioned,
        intents=intents,
        allowed_mentions=NO_MENTIONS,
        help_command=None,
        tree_cls=RunscribeTree,
    )


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

    async def archive_thread(self, thread_id: int, *, archived: bool = True) -> None:
        # PATCH /channels/{thread id} {"archived": …}, as Discord documents for threads.
        try:
            await self.bot.http.edit_channel(thread_id, archived=archived)
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
            await bot.health.gateway_down(f"cannot reach Discord: {why}")
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
    install_memory_dump(loop)  # kill -USR1 / -USR2: where the memory is (bot.core.heap)
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
