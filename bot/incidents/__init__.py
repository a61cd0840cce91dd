"""Incident engine (issue 6): detectors over the store, a lifecycle with one alert and one
resolution per incident, grouping across W&B, GitHub and Discord, silences and acknowledgements.

Public API: `IncidentEngine` (the pipeline's Detector) and the services in
`bot.incidents.service` used by `/incidents`, `/status` and the digest."""

from bot.incidents.engine import IncidentEngine, Policy
from bot.incidents.service import (
    IncidentStats,
    IncidentView,
    acknowledge,
    incident_stats,
    list_incidents,
)

__all__ = [
    "IncidentEngine",
    "IncidentStats",
    "IncidentView",
    "Policy",
    "acknowledge",
    "incident_stats",
    "list_incidents",
]
