#!/usr/bin/env bash
# Configures and builds npufuse into build/ (Release-with-debug-info, Ninja).
#   scripts/build.sh                     every target: npufuse, tests, benchmarks
#   scripts/build.sh --target npufuse    only the named target(s) and what they need
#   scripts/build.sh --dir DIR ...       build in DIR instead of build/
# Other arguments go to the cmake configure step (-DNAME=VALUE ...).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
targets=()
configure=()
dir=build
while [ $# -gt 0 ]; do
  case "$1" in
    --target)
      [ $# -ge 2 ] || { echo "scripts/build.sh: --target needs a target name" >&2; exit 2; }
      targets+=(--target "$2")
      shift 2
      ;;
    --dir)
      [ $# -ge 2 ] || { echo "scripts/build.sh: --dir needs a folder" >&2; exit 2; }
      dir="$2"
      shift 2
      ;;
    --target=*)
      targets+=(--target "${1#--target=}")
      shift
      ;;
    *)
      configure+=("$1")
      shift
      ;;
  esac
done
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${configure[@]}" >/dev/null
cmake --build "$dir" -j "$jobs" "${targets[@]}"
