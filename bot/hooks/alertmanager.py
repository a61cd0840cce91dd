"""Alertmanager's webhook message (JSON version 4) as Runscribe reads it: the alerts, the runs
they belong to, and each alert as an event of the `alertmanager` source.

The shape is Alertmanager's own (`notify/webhook/webhook.go`, `template.Data`): `version`,
`groupKey`, `truncatedAlerts`, `status`, `receiver`, `groupLabels`, `commonLabels`,
`commonAnnotations`, `externalURL`, and `alerts`, each with `status` (firing | resolved),
`labels`, `annotations`, `startsAt`, `endsAt` (RFC 3339; Go's zero time while unknown),
`generatorURL` and `fingerprint` (a hash of the labels: the same alert always has the same one).

One event per alert episode: `alert:<fingerprint>:<startsAt>`. A notification repeated while the
alert fires changes nothing; `resolved` updates the same event (state and end time), which the
incident engine reads as the condition's end. A `resolved` for an episode never seen firing is
kept as an event marked `unseen`, which the engine never announces. `truncatedAlerts` (alerts of
the group the notification left out) is kept on each alert of the notification, for the
incident's alert summary to say."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import quote

from bot.config.runsfile import RunConfig
from bot.core.timeutil import parse_time
from bot.hooks.jsonbody import TooDeep, load_json
from bot.models import AlertData, Event

SOURCE = "alertmanager"
VERSION = "4"
STATUSES = ("firing", "resolved")
TEXT_CAP = 2_000  # characters kept of a summary or description
LABEL_CAP = 200  # characters kept of a label value
MAX_LABELS = 50
_URL = re.compile(r"^https?://\S+$")

# Alertmanager's severities are free-form labels; Runscribe's are three.
_SEVERITIES = {
    "critical": "critical",
    "page": "critical",
    "error": "critical",
    "high": "critical",
    "warning": "warning",
    "warn": "warning",
    "medium": "warning",
    "info": "info",
    "informational": "info",
    "low": "info",
    "none": "info",
}


class MalformedMessage(ValueError):
    """Not an Alertmanager version 4 message; the text says what is wrong."""


@dataclass(frozen=True, slots=True)
class Alert:
    status: str  # firing | resolved
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: datetime
    ends_at: datetime | None  # set when resolved
    generator_url: str | None
    fingerprint: str
    truncated: int = 0  # alerts of its group the notification left out (`truncatedAlerts`)
    external_url: str | None = None  # the notification's `externalURL`: Alertmanager itself

    @property
    def runbook_url(self) -> str | None:
        """The `runbook_url` annotation, when it is a web address."""
        url = self.annotations.get("runbook_url", "").strip()
        return url if _URL.match(url) else None

    @property
    def alertmanager_url(self) -> str | None:
        """The alert in Alertmanager's own page (its `externalURL`), filtered to its name."""
        if self.external_url is None:
            return None
        matcher = quote(f'{{alertname="{self.alertname}"}}', safe="")
        return f"{self.external_url.rstrip('/')}/#/alerts?filter={matcher}"

    @property
    def alertname(self) -> str:
        return self.labels.get("alertname") or "alert"

    @property
    def instance(self) -> str | None:
        return self.labels.get("instance") or None

    @property
    def severity(self) -> str:
        return _SEVERITIES.get(self.labels.get("severity", "").strip().lower(), "warning")

    @property
    def summary(self) -> str:
        return self.annotations.get("summary", "").strip()

    @property
    def description(self) -> str:
        return self.annotations.get("description", "").strip()


def parse_message(body: bytes) -> list[Alert]:
    """The alerts of one webhook message; `MalformedMessage` for anything else."""
    try:
        data = load_json(body)
    except TooDeep as exc:
        raise MalformedMessage(str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedMessage(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise MalformedMessage("not a JSON object")
    version = data.get("version")
    if version != VERSION:
        raise MalformedMessage(f"version {version!r}: only Alertmanager's version 4 is read")
    alerts = data.get("alerts")
    if not isinstance(alerts, list):
        raise MalformedMessage("`alerts` is not a list")
    common_labels = _strings(data.get("commonLabels"), "commonLabels")
    common_annotations = _strings(data.get("commonAnnotations"), "commonAnnotations")
    truncated = data.get("truncatedAlerts", 0)
    if truncated is None:
        truncated = 0
    if not isinstance(truncated, int) or isinstance(truncated, bool) or truncated < 0:
        raise MalformedMessage("`truncatedAlerts` is not a count")
    external = data.get("externalURL")
    external = external if isinstance(external, str) and _URL.match(external) else None
    return [
        replace(
            _alert(item, n, common_labels, common_annotations),
            truncated=truncated,
            external_url=external,
        )
        for n, item in enumerate(alerts)
    ]


def _alert(
    item: Any, n: int, common_labels: dict[str, str], common_annotations: dict[str, str]
) -> Alert:
    if not isinstance(item, dict):
        raise MalformedMessage(f"alerts[{n}] is not an object")
    status = item.get("status")
    if status not in STATUSES:
        raise MalformedMessage(f"alerts[{n}].status is {status!r}, not firing or resolved")
    labels = {**common_labels, **_strings(item.get("labels"), f"alerts[{n}].labels")}
    annotations = {
        **common_annotations,
        **_strings(item.get("annotations"), f"alerts[{n}].annotations"),
    }
    starts = _time(item.get("startsAt"), f"alerts[{n}].startsAt")
    if starts is None:
        raise MalformedMessage(f"alerts[{n}].startsAt is missing")
    ends = _time(item.get("endsAt"), f"alerts[{n}].endsAt")
    fingerprint = item.get("fingerprint")
    if fingerprint is not None and not isinstance(fingerprint, str):
        raise MalformedMessage(f"alerts[{n}].fingerprint is not a string")
    if not fingerprint:
        # Alertmanager always sends one; a hand-written message gets one from its labels.
        fingerprint = hashlib.sha256(json.dumps(sorted(labels.items())).encode()).hexdigest()[:16]
    url = item.get("generatorURL")
    return Alert(
        status=status,
        labels=labels,
        annotations=annotations,
        starts_at=starts,
        ends_at=ends if status == "resolved" else None,
        generator_url=url if isinstance(url, str) and _URL.match(url) else None,
        fingerprint=re.sub(r"[^\w.-]", "", fingerprint)[:64] or "alert",
    )


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise MalformedMessage(f"{where} is not an object of strings")
    return {str(k)[:LABEL_CAP]: v for k, v in list(value.items())[:MAX_LABELS]}


def _time(value: Any, where: str) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MalformedMessage(f"{where} is not an RFC 3339 time")
    try:
        parsed = parse_time(value)
    except ValueError:
        raise MalformedMessage(f"{where} is not an RFC 3339 time") from None
    if parsed is None or parsed.year <= 1:  # Go's zero time: not known
        return None
    return parsed


def episode_id(alert: Alert) -> str:
    """The event's `external_id`: one per alert episode."""
    return f"alert:{alert.fingerprint}:{int(alert.starts_at.timestamp())}"


def owners(alert: Alert, runs: Sequence[RunConfig]) -> list[str]:
    """The runs an alert belongs to: the one whose slug is its `run` label, and those whose
    `[runs.alert_labels]` all match its labels."""
    found = []
    for run in runs:
        if alert.labels.get("run") == run.slug or _all_match(run.alert_labels, alert.labels):
            found.append(run.slug)
    return found


def _all_match(wanted: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def _cap(text: str, limit: int = TEXT_CAP) -> str:
    text = text.replace("\x00", "\ufffd")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def alert_title(alert: Alert) -> str:
    """'GPUXidError on node-17:9400' (the alert and where it fired)."""
    where = f" on {alert.instance}" if alert.instance else ""
    return _cap(f"{alert.alertname}{where}", 300)


def alert_event(slug: str, alert: Alert, *, unseen: bool = False) -> Event:
    """The alert as an event: when it started (the time it happened at its source), what it
    says, where it fired. Resolved: the same event, with its end; `unseen`: resolved before
    Runscribe saw it fire (recorded, never announced)."""
    text = "\n".join(part for part in (alert.summary, alert.description) if part)
    data = AlertData(
        fingerprint=alert.fingerprint,
        alertname=alert.alertname,
        severity=alert.severity,
        instance=alert.instance,
        summary=_cap(alert.summary),
        description=_cap(alert.description),
        labels={k: _cap(v, LABEL_CAP) for k, v in sorted(alert.labels.items())},
        ends_at=alert.ends_at,
        truncated=alert.truncated or None,
        unseen=True if unseen else None,
        runbook_url=alert.runbook_url,
        generator_url=alert.generator_url,
    )
    return Event(
        run_slug=slug,
        source=SOURCE,
        external_id=episode_id(alert),
        kind="alert",
        at=alert.starts_at,
        updated_at=alert.ends_at or alert.starts_at,
        author="Alertmanager",
        ref=_cap(alert.alertname, 100),
        # the event's link is the alert in Alertmanager (its source); the graph that raised it
        # (`generatorURL`, Prometheus's) and the runbook ride in its data
        url=alert.alertmanager_url,
        state=alert.status,
        title=alert_title(alert),
        body=_cap(text),
        thread=f"{SOURCE}:{alert.fingerprint}",
        extra=data.to_json(),
    )
