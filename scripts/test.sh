#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
# The HTML report's browser test (ctest html_report_browser) needs headless Chromium.
if ! command -v chromium >/dev/null 2>&1; then
  echo "npufuse: installing chromium for the HTML report's browser test" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
# Fuzz the frontend for a bounded time, after replaying the seed corpus and
# past crashes (scripts/fuzz.sh); NPUFUSE_FUZZ_SECONDS=0 skips it.
fuzz_seconds=${NPUFUSE_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
  scripts/fuzz.sh "$fuzz_seconds"
fi
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
