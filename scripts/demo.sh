#!/usr/bin/env bash
# Set-up command 1: install what is missing, build the npufuse executable (and
# nothing else: no tests, no benchmarks) in build/quick/ with the Quick build
# type (-O1, no debug information, unity sources), and run it on the bundled
# example model. It ends with analyze's one-screen summary and the paths of
# the full reports, written under build/demo/. scripts/test.sh builds the
# optimised build/npufuse with everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
NPUFUSE_DEPS=build
source scripts/deps.sh
scripts/build.sh --dir build/quick --target npufuse -DCMAKE_BUILD_TYPE=Quick -DNPUFUSE_BUILD_TESTS=OFF \
  -DNPUFUSE_BUILD_BENCH=OFF
npufuse=build/quick/npufuse
example=examples/llama_like/modeling_llama_like.py
config=examples/llama_like/config.json
out=build/demo
mkdir -p "$out"
echo "== npufuse parse $example"
$npufuse parse "$example"
echo
echo "== npufuse inspect $example --config $config > $out/llama_like.inspect.md"
$npufuse inspect "$example" --config "$config" >"$out/llama_like.inspect.md"
echo "module tree, sizes, dataflow and sub-chains: $out/llama_like.inspect.md"
echo
echo "== npufuse analyze $example --config $config --chip A2 --tp 1 --format summary --out $out"
$npufuse analyze "$example" --config "$config" --chip A2 --tp 1 --format summary --out "$out"
