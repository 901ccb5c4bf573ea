#!/usr/bin/env bash
# Installs the Debian packages npufuse needs to build and test, if missing.
# Sourced by scripts/demo.sh and scripts/test.sh.
set -euo pipefail
NPUFUSE_PACKAGES=(cmake ninja-build g++ clang libclang-rt-14-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libtomlplusplus-dev libssl-dev libxxhash-dev rapidjson-dev libjemalloc-dev libgtest-dev libgmock-dev libbenchmark-dev pkg-config python3 python3-torch
  python3-jsonschema python3-venv)
missing=()
for p in "${NPUFUSE_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "npufuse: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The virtual environment with torch 2.13 and the pinned transformers (scripts/venv.sh).
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
