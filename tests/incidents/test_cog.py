"""The /incidents cog's shape and the platform-neutral listing it renders."""

from __future__ import annotations

from datetime import datetime

from bot.incidents.service import list_incidents
from bot.posts.incidents import listing_card
from bot.store import Store
from cogs.incidents import AckButton, Incidents
from tests.incidents.scenario import Scenario
from tests.incidents.test_engine import crash


def test_group_and_persistent_button() -> None:
    names = {c.name for c in Incidents.__cog_app_commands__}
    assert names == {"list", "report", "silence", "unsilence", "ack"}
    assert Incidents.__cog_group_name__ == "incidents"
    assert AckButton.__discord_ui_compiled_template__.fullmatch("runscribe:incident-ack:42")


async def test_listing_card(store: Store, now: datetime) -> None:
    sc = Scenario(store, now)
    await sc.start()
    await sc.run_for(10)
    await crash(sc)
    await sc.run_for(5)
    card = listing_card(await list_incidents(store, "hero"), "Hero", open_only=False, now=sc.now)
    assert len(card.fields) == 1
    assert "ongoing" in card.fields[0].value
    alert = (await sc.alerts_posted())[0]
    assert alert.payload["buttons"][0]["custom_id"].startswith("runscribe:incident-ack:")
