#!/usr/bin/env bash
# Fuzzes the frontend (lexer, literals, parser, AST dump) with libFuzzer.
# Usage: scripts/fuzz.sh [seconds]   (default 60)
# Builds with clang + ASan/UBSan into build-fuzz, replays fuzz/corpus and
# fuzz/regressions, then fuzzes; any crash is written to fuzz/regressions/
# (commit it: ctest's fuzz_replay runs every file there from then on).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
sanitizers="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$sanitizers" \
  -DNPUFUSE_BUILD_FUZZ=ON -DNPUFUSE_JEMALLOC=OFF -DNPUFUSE_BUILD_TESTS=OFF -DNPUFUSE_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz --target frontend_fuzz -j "${NPUFUSE_JOBS:-2}"
fuzzer=build-fuzz/fuzz/frontend_fuzz
mkdir -p fuzz/regressions build-fuzz/corpus

echo "== replaying the seed corpus and past crashes"
replay_failed=0
while IFS= read -r -d '' input; do
  if ! "$fuzzer" -runs=1 "$input" >build-fuzz/replay.log 2>&1; then
    echo "FAIL: $input"
    grep -m3 -E "ERROR|SUMMARY" build-fuzz/replay.log || true
    replay_failed=1
  fi
done < <(find fuzz/corpus fuzz/regressions -type f -print0)

echo "== fuzzing for ${seconds}s"
# New interesting inputs go to build-fuzz/corpus (first directory); the seeds stay as written.
"$fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -dict=fuzz/python.dict -artifact_prefix=fuzz/regressions/ -print_final_stats=1 build-fuzz/corpus fuzz/corpus
exit "$replay_failed"
