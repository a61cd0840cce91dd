"""Fixture facts for the narrative and digest tests (a made-up run; no real text)."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.models import RESTORE, Restart
from bot.narrative.facts import (
    DigestFacts,
    Highlight,
    IncidentFact,
    NarrativeFacts,
    OpenThread,
)


def narrative_facts(now: datetime) -> NarrativeFacts:
    return NarrativeFacts(
        run_slug="hero",
        run_name="Hero 70B",
        now=now,
        timezone="America/New_York",
        state="running",
        step=54_000,
        total_steps=100_000,
        percent=54.0,
        tokens=2.46e12,
        target_tokens=18e12,
        launched_at=now - timedelta(days=12),
        projected_end=now + timedelta(days=10),
        loss=2.314,
        last_restart=Restart(
            at=now - timedelta(hours=18),
            kind=RESTORE,
            wandb_run="lab/hero/hero-1",
            from_step=50_400,
            to_step=50_195,
            stopped_at=now - timedelta(hours=18, minutes=47),
            resumed_at=now - timedelta(hours=18),
        ),
        restart_incident=IncidentFact(
            title="Node lost during training",
            status="resolved",
            started_at=now - timedelta(hours=19),
            resolved_at=now - timedelta(hours=18),
            severity="critical",
            cause="InfiniBand port flapping on host node-17",
        ),
        incidents=[
            IncidentFact(
                title="Node lost during training",
                status="resolved",
                started_at=now - timedelta(hours=19),
                resolved_at=now - timedelta(hours=18),
                severity="critical",
                cause="InfiniBand port flapping",
            )
        ],
        counts_by_tag={"optimizer": 4, "incident": 1, "ablation": 2},
        highlights=[
            Highlight(
                at=now - timedelta(hours=2),
                summary="Proposes light weight decay on the attention gate, lowered to 0.02.",
                source="github",
                author="Larry",
                ref="#8833",
                url="https://github.com/acme/llm/pull/8833",
                tag="optimizer",
                state="open",
            ),
            Highlight(
                at=now - timedelta(hours=20),
                summary="The job lost a node after an InfiniBand fault and resumed by itself.",
                source="github",
                author="ops-bot",
                ref="#8506",
                url="https://github.com/acme/llm/issues/8506",
                tag="incident",
                incident=True,
            ),
        ],
        open_threads=[
            OpenThread(
                title="Attention gate norm keeps growing",
                source="github",
                ref="#8818",
                url="https://github.com/acme/llm/issues/8818",
                author="Larry",
                opened_at=now - timedelta(days=3),
                kind="issue",
            )
        ],
        links={"W&B report": "https://wandb.ai/acme/hero/reports/1"},
    )


def digest_facts(now: datetime) -> DigestFacts:
    base = narrative_facts(now)
    fields = {name: getattr(base, name) for name in base.__dataclass_fields__}
    return DigestFacts(
        **fields,
        window_start=now - timedelta(hours=24),
        window_end=now,
        step_at_start=51_000,
        events_in_window=9,
        restarts_in_window=[base.last_restart] if base.last_restart else [],
    )
