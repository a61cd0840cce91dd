"""`POST /hooks/alertmanager` through the real web server, a real SQLite store and the real
incident engine (driven by the scripted run of tests/incidents/scenario.py): Alertmanager's
messages as it sends them become incident signals, posted, grouped with W&B's, resolved."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from bot.config.runsfile import ConfigError, parse_runs
from bot.config.settings import RunConfig
from bot.core.errors import UserFacingError
from bot.hooks.alertmanager import alert_event, parse_message
from bot.hooks.routes import ALERTMANAGER_MAX_BODY, HookEndpoints
from bot.incidents.silences import add_silence
from bot.models import Event, RunInfo
from bot.process.pipeline import fact_enrichment
from bot.store import Database, Store
from bot.web.server import serve
from tests.fakes.alertmanager import Alert, message, post
from tests.incidents.scenario import CHANNEL, MIN, Saved, Scenario, content, save

TOKEN = "alertmanager-token-0123456789"
T0 = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


@dataclass
class Receiver:
    url: str
    http: aiohttp.ClientSession
    store: Store
    run: Scenario
    hooks: HookEndpoints

    async def send(
        self, *alerts: Alert, token: str | None = TOKEN
    ) -> tuple[int, dict[str, object]]:
        return await post(self.http, self.url, message(list(alerts)), token)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory, empty_database: Path) -> Saved:
    """The run after 30 minutes of training, healthy: driven once per module, resumed from a
    copy by each test's `receiver`."""

    async def drive(store: Store) -> tuple[Scenario, None]:
        run = Scenario(store, T0)
        await run.start()
        await run.run_for(30)  # training, healthy
        return run, None

    saved, _ = save(tmp_path_factory.mktemp("healthy") / "healthy.db", empty_database, drive)
    return saved


@pytest.fixture
async def receiver(healthy: Saved, db_path: Path) -> AsyncIterator[Receiver]:
    shutil.copy(healthy.path, db_path)
    async with Database.open(db_path) as db:
        store = Store(db)
        run = healthy.resume(store)
        hooks = HookEndpoints(store, github_secret=None, token=TOKEN)
        async with (
            serve(store, "127.0.0.1", 0, poll_interval=60.0, hooks=hooks) as (_, port),
            aiohttp.ClientSession() as http,
        ):
            yield Receiver(f"http://127.0.0.1:{port}/hooks/alertmanager", http, store, run, hooks)


def xid(at: datetime, **labels: str) -> Alert:
    return Alert(
        labels={
            "alertname": "GPUXidError",
            "run": "hero",
            "instance": "node-17:9400",
            "severity": "critical",
            "gpu": "3",
            **labels,
        },
        annotations={
            "summary": "Xid 79 on GPU 3",
            "description": "GPU 3 on node-17 has fallen off the bus (Xid 79).",
        },
        starts_at=at,
    )


async def alert_rows(store: Store) -> list[tuple[str, str]]:
    rows = await store.db.fetchall(
        "SELECT run_slug, state FROM events WHERE source = 'alertmanager' ORDER BY id"
    )
    return [(row[0], row[1]) for row in rows]


async def test_a_firing_xid_alert_is_posted_then_resolved(receiver: Receiver) -> None:
    run = receiver.run
    alert = xid(run.now)
    status, answer = await receiver.send(alert)
    assert status == 200 and answer["stored"] == 1
    await run.tick()
    [posted] = await run.alerts_posted()
    assert posted.channel_id == CHANNEL
    text = content(posted)
    assert "GPUXidError" in text and "node-17" in text, text
    [incident] = await receiver.store.incidents.find("hero", open_only=True)
    assert incident.kind == "GPUXidError" and incident.severity == "critical"
    assert "fallen off the bus" in (incident.cause or "")

    # Alertmanager repeats the firing notification: nothing new.
    assert (await receiver.send(alert))[1]["stored"] == 0
    await run.tick()
    assert len(await run.alerts_posted()) == 1

    alert.ends_at = run.now
    assert (await receiver.send(alert))[1]["stored"] == 1
    assert await alert_rows(receiver.store) == [("hero", "resolved")]  # the same event, ended
    await run.tick()
    assert await run.resolutions() == []  # the hold: a clear must last 2 min
    await run.run_for(3)
    [resolved] = await run.resolutions()
    assert "GPUXidError" in content(resolved) or "resolved" in content(resolved).lower()
    assert await receiver.store.incidents.find("hero", open_only=True) == []


async def test_an_xid_alert_and_the_crash_it_causes_are_one_incident(receiver: Receiver) -> None:
    run = receiver.run
    await receiver.send(xid(run.now))
    await run.tick()
    run.training = False
    await run.set_state("crashed")
    await run.run_for(3)
    [posted] = await run.alerts_posted()
    [incident] = await receiver.store.incidents.find("hero", open_only=True)
    members = set(incident.details.members)
    assert "wandb-state" in members and any(m.startswith("alert:GPUXidError:") for m in members)
    assert "GPUXidError" in content(posted)


async def test_a_silence_of_the_alerts_kind_holds_its_posts(receiver: Receiver) -> None:
    run = receiver.run
    first = xid(run.now, gpu="1", instance="node-3:9400")
    await receiver.send(first)  # seen once: its name is now a kind a silence may name
    first.ends_at = run.now
    await receiver.send(first)
    await run.run_for(5)
    before = len(await run.alerts_posted())
    await add_silence(
        receiver.store, "hero", "GPUXidError", timedelta(hours=2), "amara", "", run.now
    )
    await receiver.send(xid(run.now + MIN, gpu="2", instance="node-9:9400"))
    await run.run_for(2)
    assert len(await run.alerts_posted()) == before
    [incident] = await receiver.store.incidents.find("hero", open_only=True)
    assert incident.details.silenced_by is not None


async def test_a_silence_named_before_any_alert_arrives(receiver: Receiver) -> None:
    run = receiver.run
    silence = await add_silence(
        receiver.store, "hero", "alert:GPUXidError", timedelta(hours=2), "amara", "", run.now
    )
    assert silence.matcher == "alert:GPUXidError:*"
    await receiver.send(xid(run.now))
    await run.run_for(2)
    assert await run.alerts_posted() == []
    [incident] = await receiver.store.incidents.find("hero", open_only=True)
    assert incident.details.silenced_by == silence.id
    with pytest.raises(UserFacingError):  # a bare name nobody has seen is a typo until then
        await add_silence(
            receiver.store, "hero", "GPUXidEror", timedelta(hours=1), "a", "", run.now
        )


async def test_alert_labels_claim_alerts_without_a_run_label(receiver: Receiver) -> None:
    east = RunConfig(
        slug="east", name="East", github_repo="lab/east", alert_labels={"cluster": "gb200-east"}
    )
    await receiver.store.runs.upsert(RunInfo.from_config(east))
    claimed = Alert(
        labels={"alertname": "NodeDown", "cluster": "gb200-east", "instance": "n1"},
        starts_at=receiver.run.now,
    )
    partial = Alert(  # only some of the labels match: not east's
        labels={"alertname": "NodeDown", "cluster": "gb200-west", "instance": "n2"},
        starts_at=receiver.run.now,
    )
    status, answer = await receiver.send(claimed, partial)
    assert status == 200 and answer == {"stored": 1, "unchanged": 0, "unknown": 1}
    assert await alert_rows(receiver.store) == [("east", "firing")]


# --- what is refused --------------------------------------------------------------------------


async def test_refusals_store_nothing(receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    alert = xid(receiver.run.now)
    assert (await receiver.send(alert, token=None))[0] == 401
    assert (await receiver.send(alert, token="wrong"))[0] == 401
    http, url = receiver.http, receiver.url
    assert (await post(http, url, b"{not json", TOKEN))[0] == 400
    assert (await post(http, url, {**message([alert]), "version": "3"}, TOKEN))[0] == 400
    assert (await post(http, url, {**message([alert]), "alerts": {"a": 1}}, TOKEN))[0] == 400
    bad_status = message([alert])
    bad_status["alerts"][0]["status"] = "exploding"
    assert (await post(http, url, bad_status, TOKEN))[0] == 400
    big = message([alert])
    big["commonAnnotations"] = {"padding": "x" * ALERTMANAGER_MAX_BODY}
    status, answer = await post(http, url, big, TOKEN)
    assert status == 413 and "over" in str(answer["error"])
    with caplog.at_level(logging.WARNING, logger="bot.hooks.routes"):
        for _ in range(3):
            status, answer = await receiver.send(xid(receiver.run.now, run="nobody"))
            assert status == 202 and answer == {"stored": 0, "unknown": 1}
    assert len([r for r in caplog.records if "matches no run" in r.message]) == 1
    assert await alert_rows(receiver.store) == []
    await receiver.run.tick()
    assert await receiver.run.alerts_posted() == []


async def test_without_a_token_the_endpoint_does_not_exist(store: Store) -> None:
    hooks = HookEndpoints(store, github_secret=None, token=None)
    async with (
        serve(store, "127.0.0.1", 0, poll_interval=60.0, hooks=hooks) as (_, port),
        aiohttp.ClientSession() as http,
    ):
        url = f"http://127.0.0.1:{port}/hooks/alertmanager"
        status, _ = await post(http, url, message([xid(T0)]), TOKEN)
        assert status == 404
        async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
            body = await response.json()
        assert body["hooks"]["alertmanager"] == {"enabled": False, "last_delivery_at": None}


async def test_healthz_says_when_each_hook_last_took_a_delivery(receiver: Receiver) -> None:
    await receiver.send(xid(receiver.run.now))
    base = receiver.url.removesuffix("/hooks/alertmanager")
    async with receiver.http.get(base + "/healthz") as response:
        body = await response.json()
    assert body["hooks"]["alertmanager"]["enabled"] is True
    assert body["hooks"]["alertmanager"]["last_delivery_at"] is not None
    assert body["hooks"]["github"] == {"enabled": False, "last_delivery_at": None}


@pytest.mark.parametrize(
    ("labels", "problem"),
    [
        ({"bad-name": "x"}, "not a Prometheus label name"),
        ({"cluster": ""}, "empty value"),
        ({f"l{n}": "x" for n in range(21)}, "at most 20"),
    ],
)
def test_alert_labels_are_validated(labels: dict[str, str], problem: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_runs(
            {"runs": [{"slug": "hero", "name": "Hero", "github_repo": "lab/hero",
                       "alert_labels": labels}]}
        )  # fmt: skip
    assert any("alert_labels" in p and problem in p for p in raised.value.problems), raised.value


async def test_an_oversize_body_is_refused_before_it_is_read(receiver: Receiver) -> None:
    """Refused on its Content-Length: the answer comes while the sender has sent no byte of the
    body (a server that read it first would wait for it for ever)."""
    host, port = receiver.url.split("//")[1].split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(
            (
                "POST /hooks/alertmanager HTTP/1.1\r\n"
                f"Host: {host}\r\n"
                f"Authorization: Bearer {TOKEN}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {50 * ALERTMANAGER_MAX_BODY}\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        status = await reader.readline()
        assert status.startswith(b"HTTP/1.1 413"), status
    finally:
        writer.close()
    assert await alert_rows(receiver.store) == []


async def test_a_chunked_body_over_the_limit_is_refused(receiver: Receiver) -> None:
    """Without a Content-Length, the body is read only until it passes the limit."""
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        chunk = b"x" * 65_536
        for _ in range(64):  # 4 MB, if the server kept reading
            sent += len(chunk)
            yield chunk

    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    try:
        async with receiver.http.post(receiver.url, data=body(), headers=headers) as response:
            assert response.status == 413
    except aiohttp.ClientError:
        pass  # the server may close the connection while the client still sends: also refused
    assert await alert_rows(receiver.store) == []


async def test_the_hooks_round_resolves_an_alert_after_its_hold_without_a_poll(
    tmp_path: Path,
) -> None:
    """Nothing polls Alertmanager: after `resolved`, the hooks loop's own rounds (no doorbell,
    no poll) judge the open alert incident until its clear has held."""
    from bot.config.settings import Settings
    from bot.hooks.alertmanager import alert_event, parse_message
    from bot.incidents.engine import IncidentEngine
    from bot.posts.incidents import IncidentPosts
    from bot.process.runtime import Runtime, record_runs
    from bot.store import Database

    runs = parse_runs(
        {"runs": [{"slug": "hero", "name": "Hero", "github_repo": "lab/hero",
                   "alerts_channel": CHANNEL}]}
    )  # fmt: skip
    async with Database.open(tmp_path / "r.db") as db:
        store = Store(db)
        await record_runs(store, runs)
        runtime = Runtime(
            settings=Settings(_env_file=None),  # type: ignore[call-arg]
            runs=runs,
            store=store,
            detector=IncidentEngine(IncidentPosts()),
        )
        alert = xid(T0)

        async def pushed() -> None:
            [parsed] = parse_message(json.dumps(message([alert])).encode())
            await store.events.upsert_many([alert_event("hero", parsed)])

        await pushed()
        await runtime.ingest_pushed(T0 + MIN)  # the doorbell rang
        [incident] = await store.incidents.find("hero", open_only=True)
        alert.ends_at = T0 + 2 * MIN
        await pushed()
        await runtime.ingest_pushed(T0 + 2 * MIN)
        assert await store.incidents.find("hero", open_only=True) != []  # the hold
        await runtime.ingest_pushed(T0 + 5 * MIN, judge=False)  # a round with nothing pushed
        assert await store.incidents.find("hero", open_only=True) == []
        resolved = await store.incidents.get(incident.id or 0)
        assert resolved is not None and resolved.resolved_at == T0 + 2 * MIN
        assert not await store.incidents.alerts_open()


async def test_a_wrong_token_is_refused_before_the_body_is_sent(receiver: Receiver) -> None:
    """The token is a header: a sender without it is answered 401 while its 4 MB body is still
    unsent (a server that read the body first would wait for it for ever)."""
    host, port = receiver.url.split("//")[1].split("/")[0].split(":")
    for auth in ("Bearer wrong-token", None):
        reader, writer = await asyncio.open_connection(host, int(port))
        head = (
            "POST /hooks/alertmanager HTTP/1.1\r\n"
            f"Host: {host}\r\n"
            + (f"Authorization: {auth}\r\n" if auth else "")
            + "Content-Type: application/json\r\n"
            f"Content-Length: {4 * ALERTMANAGER_MAX_BODY}\r\n\r\n"
        )
        writer.write(head.encode())
        await writer.drain()
        status = await reader.readline()
        writer.close()
        assert status.startswith(b"HTTP/1.1 401"), status
    assert await alert_rows(receiver.store) == []


@pytest.mark.parametrize("levels", [40, 100_000])
async def test_a_body_nested_too_deep_is_a_400(receiver: Receiver, levels: int) -> None:
    """Deeper than any Alertmanager message: refused as malformed, whether the parser gives up
    (100,000 levels) or not (40)."""
    alert = message([xid(receiver.run.now)])
    text = json.dumps(alert)
    deep = "[" * levels + "]" * levels
    body = text.replace('"truncatedAlerts": 0', f'"truncatedAlerts": 0, "extra": {deep}')
    status, answer = await post(receiver.http, receiver.url, body.encode(), TOKEN)
    assert status == 400 and "nests deeper" in str(answer["error"]), answer
    assert await alert_rows(receiver.store) == []


# --- Alertmanager's semantics ---------------------------------------------------------------


async def thread_posts(run: Scenario) -> list[str]:
    """What the incident's thread got besides the alert: updates, and edits of them."""
    return [
        f"{item.kind}: {item.payload.get('content')}"
        for item in await run.outbox()
        if item.kind in ("update", "edit") and item.payload.get("card") is None
    ]


async def test_a_persons_report_of_the_fault_clears_with_the_alert(receiver: Receiver) -> None:
    """The node is down (no step logged), a person reports it on GitHub, the report joins the
    alert's incident; Alertmanager's `resolved` ends the incident after the clear hold, not
    after a long quiet of reports."""
    run = receiver.run
    alert = xid(run.now)
    await receiver.send(alert)
    run.training = False  # the node is gone: no step while it is down
    await run.tick()
    await run.report("Hero is down: node-17 lost, GPU 3 fell off the bus (Xid 79).")
    await run.tick()
    [incident] = await receiver.store.incidents.find("hero", open_only=True)
    assert any(fp.startswith("report:") for fp in incident.details.members), incident.details
    alert.ends_at = run.now
    assert (await receiver.send(alert))[1]["stored"] == 1
    await run.tick()
    assert await receiver.store.incidents.find("hero", open_only=True) != []  # the hold
    await run.run_for(2)
    assert await receiver.store.incidents.find("hero", open_only=True) == []
    resolved = await receiver.store.incidents.get(incident.id or 0)
    assert resolved is not None and resolved.resolved_at == alert.ends_at
    assert "Alertmanager resolved" in (resolved.resolution or "")
    [said] = await run.resolutions()
    assert "Resolved" in content(said)


async def test_a_group_of_many_alerts_is_one_post_and_one_summary(receiver: Receiver) -> None:
    run = receiver.run
    nodes = [xid(run.now, instance=f"node-{n}:9400", gpu=str(n % 8)) for n in range(100)]
    status, _ = await receiver.send(nodes[0])
    assert status == 200
    await run.tick()
    assert len(await run.alerts_posted()) == 1 and await thread_posts(run) == []
    group = message(nodes)
    group["truncatedAlerts"] = 40
    status, answer = await post(receiver.http, receiver.url, group, TOKEN)
    assert status == 200 and answer["stored"] >= 99  # 99 new (the first: now with the count)
    await run.tick()
    assert len(await run.alerts_posted()) == 1
    [summary] = await thread_posts(run)
    assert summary.startswith("update: **Alertmanager alerts: 100** (100 firing, 0 resolved)")
    assert "and 40 more not sent by Alertmanager" in summary
    assert summary.count("• 🔥") == 5 and "… and 95 more" in summary
    await run.tick()  # nothing changed: nothing more
    assert len(await thread_posts(run)) == 1

    for node in nodes[:30]:
        node.ends_at = run.now
    group = message(nodes)
    group["truncatedAlerts"] = 0
    await post(receiver.http, receiver.url, group, TOKEN)
    await run.tick()
    [_, edit] = await thread_posts(run)
    assert edit.startswith("edit: **Alertmanager alerts: 100** (70 firing, 30 resolved)")
    assert "not sent by Alertmanager" not in edit
    items = {item.id: item for item in await run.outbox()}
    [edit_item] = [i for i in items.values() if i.kind == "edit" and not i.payload.get("card")]
    edited = items[edit_item.payload["edit_of"]]
    assert edited.kind == "update" and edited.reply_to == (await run.alerts_posted())[0].id
    assert len(await run.alerts_posted()) == 1


async def test_a_resolved_alert_never_seen_firing_is_recorded_not_announced(
    receiver: Receiver,
) -> None:
    run = receiver.run
    alert = xid(run.now - 30 * MIN)  # fired for half an hour while Runscribe was not told
    alert.ends_at = run.now - MIN
    status, answer = await receiver.send(alert)
    assert status == 200 and answer["stored"] == 1
    assert await alert_rows(receiver.store) == [("hero", "resolved")]  # recorded
    await receiver.send(alert)  # sent again: still never seen firing
    await run.run_for(5)
    assert await run.alerts_posted() == [] and await run.resolutions() == []
    assert await receiver.store.incidents.find("hero") == []

    seen = xid(run.now, instance="node-5:9400")  # one seen firing, then resolved: announced
    await receiver.send(seen)
    await run.tick()
    seen.ends_at = run.now
    await receiver.send(seen)
    await run.run_for(3)
    assert len(await run.alerts_posted()) == 1 and len(await run.resolutions()) == 1


async def test_a_first_notification_of_many_alerts_opens_one_incident(receiver: Receiver) -> None:
    run = receiver.run
    nodes = [xid(run.now, instance=f"node-{n}:9400") for n in range(100)]
    assert (await post(receiver.http, receiver.url, message(nodes), TOKEN))[0] == 200
    await run.run_for(2)
    assert len(await run.alerts_posted()) == 1
    [summary] = await thread_posts(run)
    assert summary.startswith("update: **Alertmanager alerts: 100** (100 firing, 0 resolved)")
    assert len(await receiver.store.incidents.find("hero", open_only=True)) == 1


async def test_the_alerting_pipelines_heartbeat_is_recorded_never_an_incident(
    receiver: Receiver,
) -> None:
    """Alertmanager's Watchdog fires always, to prove the pipeline works; a team routing its
    cluster's alerts by a label gets it too. Recorded, never paged; a real alert beside it is."""
    run = receiver.run
    watchdog = Alert(
        labels={"alertname": "Watchdog", "run": "hero", "severity": "none"},
        annotations={"summary": "An alert that should always be firing."},
        starts_at=run.now,
    )
    meta = Alert(
        labels={"alertname": "InfoInhibitor", "run": "hero", "severity": "none"},
        annotations={"summary": "Inhibits info-level alerts."},
        starts_at=run.now,
    )
    status, answer = await receiver.send(watchdog, meta)
    assert status == 200 and answer["stored"] == 2
    await run.run_for(5)
    assert await run.alerts_posted() == []
    assert await receiver.store.incidents.find("hero") == []
    assert await alert_rows(receiver.store) == [("hero", "firing"), ("hero", "firing")]

    await receiver.send(xid(run.now))
    await run.tick()
    [posted] = await run.alerts_posted()
    assert "GPUXidError" in content(posted) and "Watchdog" not in content(posted)


def test_the_heartbeat_alert_is_no_timeline_incident() -> None:
    def event(name: str, severity: str) -> Event:
        body = json.dumps(message([xid(T0, alertname=name, severity=severity)])).encode()
        [alert] = parse_message(body)
        return alert_event("hero", alert)  # as the hook stores it

    quiet = fact_enrichment(event("Watchdog", "none"))
    assert not quiet.incident and not quiet.newsworthy
    loud = fact_enrichment(event("GPUXidError", "critical"))
    assert loud.incident and loud.tag == "incident"
