"""Cluster alerts from Alertmanager (`alert:<name>:<fingerprint>`)."""

from __future__ import annotations

from bot.incidents.detectors.base import (
    ALERT_PREFIX,
    OUTAGE,
    Detection,
    DetectorSpec,
    Finding,
    RunData,
)
from bot.models import AlertData, Event


def alert_fingerprint(event: Event) -> str:
    """`alert:<alertname>:<Alertmanager fingerprint>`: one condition per alert, so a silence can
    name every alert of a name (`alert:GPUXidError:*`) or the name alone (its kind)."""
    data = AlertData.of(event)
    return f"{ALERT_PREFIX}{data.alertname or 'alert'}:{data.fingerprint}"


def alert_words(alert: AlertData) -> tuple[str, str]:
    """(title, cause) of an alert, each saying a thing once: the title names the alert and its
    subject ("GPUXidError on node-17: Xid 79 on GPU 3", the instance only when the summary does
    not already name its host), the cause is the description (or, without one, says it fires).
    The summary is not repeated in the cause, nor the instance added to it."""
    name = alert.alertname or "alert"
    host = (alert.instance or "").rsplit(":", 1)[0] if alert.instance else ""
    summary = alert.summary
    subject = f" on {host}" if host and host not in summary and host not in name else ""
    title = f"{name}{subject}: {summary}" if summary else f"{name}{subject}"
    description = alert.description
    if description and description != summary:
        return title, description
    return title, f"Alertmanager reports {name} firing."


def detect_alerts(data: RunData) -> Detection:
    """One finding per alert episode Alertmanager sent (`bot.hooks.alertmanager`): from its
    start, until Alertmanager said resolved. Of the "run is down" group, so an alert and the
    crash it causes (a GPU Xid and the W&B run crashing) are one incident. The alert already
    waited its own `for:` duration at its source. A `resolved` for an alert never seen firing
    (`AlertData.unseen`) is no finding: the event records it, nothing announces it."""
    findings = []
    for event in data.alerts:
        alert = AlertData.of(event)
        ends = alert.ends_at if event.state == "resolved" else None
        if event.state == "resolved" and (ends is None or ends < data.eval_start):
            continue  # judged by an earlier cycle
        if alert.unseen:
            continue  # resolved before Runscribe saw it fire: recorded (the event), not news
        if alert.always_firing:
            continue  # the alerting pipeline's heartbeat (Watchdog): recorded, not an incident
        name = alert.alertname or "alert"
        title, cause = alert_words(alert)
        instance = alert.instance
        links = {"Runbook": alert.runbook_url, "Prometheus": alert.generator_url}
        findings.append(
            Finding(
                fingerprint=alert_fingerprint(event),
                kind=name,
                severity=alert.severity or "warning",
                title=title[:300],
                cause=cause[:1000],
                since=event.at,
                until=ends,
                resolution=f"Alertmanager resolved {name}." if ends else None,
                group=OUTAGE,
                event_ids=[event.id] if event.id is not None else [],
                facts={
                    "alertname": name,
                    "instance": instance,
                    "labels": alert.labels,
                    "truncated": alert.truncated or 0,
                    "links": {label: url for label, url in links.items() if url},
                },
            )
        )
    return Detection(findings)


#: The alerts detector's one registration (listed in `registry.DETECTORS`).
ALERTS_DETECTOR = DetectorSpec(
    ALERT_PREFIX,
    detect_alerts,
    "alerts",
    default_resolution="Alertmanager resolved the alert.",
    family=True,
    description="every cluster alert from Alertmanager (one alert: its name, e.g. `GPUXidError`)",
)
