#!/usr/bin/env bash
# Installs the Debian packages npufuse needs, if missing. Sourced by
# scripts/demo.sh (NPUFUSE_DEPS=build: what configuring and building the
# npufuse executable needs) and scripts/test.sh (the default, all: also the
# compilers, Python packages and libraries the tests, fuzzing and benchmarks use).
set -euo pipefail
# Configure and build the npufuse executable (the demo configures without the
# tests and benchmarks, so it needs no GoogleTest).
NPUFUSE_BUILD_PACKAGES=(cmake ninja-build g++ pkg-config libfmt-dev libcli11-dev nlohmann-json3-dev
  libtomlplusplus-dev libssl-dev libxxhash-dev rapidjson-dev libjemalloc-dev)
# Tests, benchmarks, fuzzing (clang) and the Python side.
NPUFUSE_TEST_PACKAGES=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev python3 python3-torch
  python3-jsonschema python3-venv)
wanted=("${NPUFUSE_BUILD_PACKAGES[@]}")
apt_options=()
if [ "${NPUFUSE_DEPS:-all}" = build ]; then
  apt_options+=(--no-install-recommends)  # the demo builds one executable: nothing optional
else
  wanted+=("${NPUFUSE_TEST_PACKAGES[@]}")
fi
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "npufuse: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${apt_options[@]}" "${missing[@]}" >/dev/null
fi
# The virtual environment with torch 2.13 and the pinned transformers (scripts/venv.sh),
# for the tests; the demo runs the npufuse executable only and does without it.
if [ "${NPUFUSE_DEPS:-all}" != build ]; then
  source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
fi
