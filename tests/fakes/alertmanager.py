"""Alertmanager's webhook messages (JSON version 4) as `notify/webhook` sends them: the
`template.Data` of one alert group plus `version`, `groupKey` and `truncatedAlerts`, posted with
`Content-Type: application/json` and Alertmanager's User-Agent. Fingerprints are computed as
Prometheus computes them (FNV-1a 64 over the sorted label names and values, `%016x`), so the same
labels always give the same fingerprint."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp

ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time, what an alert with no end carries
_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_SEP = 0xFF


def fingerprint(labels: dict[str, str]) -> str:
    """`model.LabelSet.Fingerprint()`: FNV-1a 64 over name, 0xff, value, 0xff for each label in
    name order."""
    h = _FNV_OFFSET
    for name in sorted(labels):
        for part in (name, labels[name]):
            for byte in part.encode():
                h ^= byte
                h = (h * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
            h ^= _SEP
            h = (h * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def rfc3339(value: datetime) -> str:
    """Go's RFC 3339 with nanoseconds, as encoding/json writes a time.Time."""
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond:06d}000Z"


@dataclass
class Alert:
    labels: dict[str, str]
    starts_at: datetime
    annotations: dict[str, str] = field(default_factory=dict)
    ends_at: datetime | None = None  # set when it resolves
    generator_url: str = "http://prometheus.example:9090/graph?g0.expr=DCGM_FI_DEV_XID_ERRORS"

    @property
    def status(self) -> str:
        return "resolved" if self.ends_at is not None else "firing"

    def json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "startsAt": rfc3339(self.starts_at),
            "endsAt": rfc3339(self.ends_at) if self.ends_at else ZERO_TIME,
            "generatorURL": self.generator_url,
            "fingerprint": fingerprint(self.labels),
        }


def message(
    alerts: list[Alert], *, receiver: str = "runscribe", group_by: tuple[str, ...] = ("alertname",)
) -> dict[str, Any]:
    """One notification of one alert group."""
    items = [a.json() for a in alerts]
    common = dict(items[0]["labels"]) if items else {}
    for item in items[1:]:
        common = {k: v for k, v in common.items() if item["labels"].get(k) == v}
    common_annotations = dict(items[0]["annotations"]) if items else {}
    for item in items[1:]:
        common_annotations = {
            k: v for k, v in common_annotations.items() if item["annotations"].get(k) == v
        }
    group = {k: common[k] for k in group_by if k in common}
    firing = any(a.status == "firing" for a in alerts)
    return {
        "receiver": receiver,
        "status": "firing" if firing else "resolved",
        "alerts": items,
        "groupLabels": group,
        "commonLabels": common,
        "commonAnnotations": common_annotations,
        "externalURL": "http://alertmanager.example:9093",
        "version": "4",
        "groupKey": "{}:{" + ",".join(f'{k}="{v}"' for k, v in group.items()) + "}",
        "truncatedAlerts": 0,
    }


async def post(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any] | bytes, token: str | None
) -> tuple[int, dict[str, Any]]:
    """POST a message as Alertmanager does; (status, JSON answer or {})."""
    data = body if isinstance(body, bytes) else (json.dumps(body) + "\n").encode()
    headers = {"Content-Type": "application/json", "User-Agent": "Alertmanager/0.28.1"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with http.post(url, data=data, headers=headers) as response:
        try:
            answer = await response.json(content_type=None)
        except (ValueError, aiohttp.ContentTypeError):
            answer = {}
        return response.status, answer if isinstance(answer, dict) else {}
