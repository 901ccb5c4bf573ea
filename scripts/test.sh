#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
