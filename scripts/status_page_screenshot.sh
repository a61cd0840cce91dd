#!/usr/bin/env bash
# Regenerate docs/status-page.png: the bundled demo run's status page, rendered by headless
# Chromium. Usage: scripts/status_page_screenshot.sh [path/to/runscribe]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNSCRIBE="${1:-.venv/bin/runscribe}"
CHROMIUM="${RUNSCRIBE_CHROMIUM:-$(command -v chromium || command -v chromium-browser)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$RUNSCRIBE" demo --db "$work/demo.db" >/dev/null
RUNSCRIBE_DB="$work/demo.db" "$RUNSCRIBE" page --out "$work/site" >/dev/null
slug="$(basename "$(ls "$work"/site/*.html | grep -v '/index.html$' | head -1)")"
"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/profile" --hide-scrollbars --window-size=900,1500 \
  --screenshot="$PWD/docs/status-page.png" "file://$work/site/$slug" 2>/dev/null
echo "docs/status-page.png written from $slug"
