"""`runscribe check-config` says which push endpoints are enabled, and validates
`[runs.alert_labels]` like every key (a real process, real files)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_check_config import GOOD, check


def test_each_hook_is_reported_enabled_or_off(tmp_path: Path) -> None:
    off = check(tmp_path, GOOD, GITHUB_WEBHOOK_SECRET="", RUNSCRIBE_HOOK_TOKEN="")
    assert off.returncode == 0, off.stderr
    assert "POST /hooks/github off (GITHUB_WEBHOOK_SECRET unset)" in off.stdout
    assert "POST /hooks/alertmanager off (RUNSCRIBE_HOOK_TOKEN unset)" in off.stdout
    on = check(
        tmp_path, GOOD, GITHUB_WEBHOOK_SECRET="s3cret-value", RUNSCRIBE_HOOK_TOKEN="t0ken-value"
    )
    assert on.returncode == 0, on.stderr
    assert "POST /hooks/github enabled" in on.stdout
    assert "POST /hooks/alertmanager enabled" in on.stdout
    assert "RUNSCRIBE_WEB_PORT is not set" in on.stdout  # nothing serves them in `run`
    assert "s3cret-value" not in on.stdout + on.stderr and "t0ken-value" not in on.stdout


def test_alert_labels_are_checked_with_their_path(tmp_path: Path) -> None:
    good = check(tmp_path, GOOD + '\n[runs.alert_labels]\ncluster = "gb200-east"\n')
    assert good.returncode == 0, good.stderr
    bad = check(tmp_path, GOOD + '\n[runs.alert_labels]\n"gpu-node" = "x"\n')
    assert bad.returncode == 2
    assert "runs[0].alert_labels" in bad.stderr and "Prometheus label name" in bad.stderr
