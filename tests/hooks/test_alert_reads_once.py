"""An Alertmanager alert as the alerts channel reads it, through the real receiver, engine and
outbox: the title says the alert and its subject once, the runbook is a link labelled "Runbook",
each link is labelled by what it opens (Alertmanager's page, Prometheus's graph); a silenced
incident's thread is closed and archived when it resolves, and its ✅ head keeps who
acknowledged it."""

from __future__ import annotations

from datetime import timedelta

from bot.incidents.service import acknowledge
from bot.incidents.silences import add_silence
from bot.models import OutboxItem
from tests.fakes.alertmanager import Alert
from tests.hooks.test_alertmanager_hook import Receiver, healthy, receiver, xid  # noqa: F401

RUNBOOK = "https://runbooks.example/gpu-xid"


def with_runbook(alert: Alert) -> Alert:
    alert.annotations["runbook_url"] = RUNBOOK
    return alert


def head(item: OutboxItem) -> tuple[str, str, dict[str, str]]:
    """(headline, description, links field) of an alert or edit payload: the headline is the
    message's text (the card's title names only the run: said once)."""
    card = item.payload["card"]
    fields = {f["name"]: f["value"] for f in card.get("fields", [])}
    headline = f"{item.payload.get('content') or ''}\n{card['title']}"
    return headline, card["description"], fields


def links_of(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(" · ") if " · " in text else text.splitlines():
        label, url = part.strip()[1:-1].split("](")
        out[label] = url
    return out


async def test_an_alert_with_a_runbook_reads_once_and_links_what_it_opens(
    receiver: Receiver,  # noqa: F811
) -> None:
    run = receiver.run
    await receiver.send(with_runbook(xid(run.now)))
    await run.tick()
    [posted] = await run.alerts_posted()
    title, description, fields = head(posted)
    shown = f"{title}\n{description}"
    assert title.count("GPUXidError") == 1 and title.count("node-17") == 1, title
    assert shown.count("node-17") <= 2, shown  # the title, and the description as written
    links = links_of(fields["Links"])
    assert links["Runbook"] == RUNBOOK
    assert links["Prometheus"].startswith("http://prometheus.example:9090/graph")
    alertmanager = [u for label, u in links.items() if label.startswith("Alertmanager")]
    assert alertmanager and all(
        u.startswith("http://alertmanager.example:9093/") for u in alertmanager
    ), links
    # every link to Alertmanager's or Prometheus's host says which it is
    for label, url in links.items():
        if "prometheus.example" in url:
            assert label == "Prometheus", (label, url)
        if "alertmanager.example" in url:
            assert label.startswith("Alertmanager"), (label, url)


async def test_a_silenced_incident_is_archived_on_resolution_and_keeps_its_acknowledger(
    receiver: Receiver,  # noqa: F811
) -> None:
    run = receiver.run
    alert = xid(run.now)
    await receiver.send(alert)
    await run.tick()
    [posted] = await run.alerts_posted()
    [incident] = await receiver.store.incidents.find("hero", open_only=True)
    assert incident.id is not None
    await acknowledge(receiver.store, incident.id, "amara", run.now)
    await add_silence(
        receiver.store, "hero", "GPUXidError", timedelta(hours=2), "amara", "", run.now
    )
    await run.run_for(2)
    alert.ends_at = run.now
    await receiver.send(alert)
    await run.run_for(4)
    [resolved] = await receiver.store.incidents.find("hero")
    assert resolved.status == "resolved" and resolved.details.silenced_by is not None
    items = await run.outbox()
    thread = [i for i in items if i.reply_to == posted.id and i.payload.get("archive_thread")]
    assert thread, [(i.kind, i.payload.get("content")) for i in items]
    edits = [i for i in items if i.kind == "edit" and i.payload.get("card")]
    title, description, _ = head(edits[-1])
    assert title.startswith("✅") and "acknowledged by amara" in description, description
